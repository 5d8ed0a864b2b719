// SPDX-License-Identifier: MIT
#pragma once

#include "core/compare/checkpointdiff.h"
#include "core/compare/valuedelta.h"
#include "core/tasks/valueshelper.h"

#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace ckpt {

struct Checkpoint;
struct JobProgress;

// The open checkpoint against another file or folder: what `ckpt-inspect diff` reports, with the
// two sides kept alive because the diff points into them.
struct Comparison {
    QString pathA, pathB;
    DiffSide a, b;
    CheckpointDiff diff;
    // per diff.changed: value differences the ckpt-inspect-values helper measured (libtorch, in its
    // own process: the GUI never loads libtorch)
    std::vector<std::optional<ValueDelta>> deltas;
    std::vector<QString> deltaErrors; // per diff.changed: why the helper could not measure
    QString valuesProblem; // why no value differences were measured at all (no helper, it failed)
    QString error; // B could not be read: nothing else is set
    bool cancelled = false;
};

// Runs on a worker thread: the comparison task of `ckpt-inspect diff` (core/tasks/comparison.h)
// with `a` as already open: reads `pathB` (a file, an index, a folder of shards, a DCP folder),
// hashes both sides with progress and cancel through `progress`, then, for float tensors whose
// bytes changed, asks `valuesHelper` (`ckpt-inspect-values --diff A B`; findValuesHelper() gives
// the one both faces use) for the largest differences; without a helper the comparison is complete
// but for those numbers (valuesProblem says why).
Comparison compareWithFile(std::shared_ptr<const Checkpoint> a, const QString& pathB,
    const ValuesHelper& valuesHelper, JobProgress& progress);

} // namespace ckpt
