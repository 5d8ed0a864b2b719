// SPDX-License-Identifier: MIT
#pragma once
// "Compare two checkpoints", once for both faces: `ckpt-inspect diff` and the app's File > Compare
// With… run this task and render its outcome (core/report/diffreport.h). Content hashes first
// (core/compare, every storage in parallel straight from the file maps); then, for float tensors
// whose bytes changed with the same dtype and shape, how far their values moved, measured by the
// ckpt-inspect-values helper (valueshelper.h) in one run. Without a helper the comparison is
// complete but for those numbers (valuesProblem says why). The task never prints and never asks.
#include "core/compare/checkpointdiff.h"
#include "core/compare/valuedelta.h"
#include "core/tasks/valueshelper.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace ckpt {

struct Checkpoint;

struct ComparisonRequest {
    std::string pathA, pathB; // files, indexes, folders of shards, DCP folders
    // A as already read (the app's open document); else pathA is read. Its `path` is what the
    // helper opens.
    std::shared_ptr<const Checkpoint> openA;
    bool values = true; // ask the helper how far changed float values moved (`diff --no-values`: false)
    unsigned threads = 0; // hashing threads, 0: one per core
    // Hashing: bytes done and in all; then the value differences: pairs done and in all. False cancels.
    std::function<bool(std::uint64_t done, std::uint64_t total)> progress;
    std::optional<ValuesHelper> helper; // unset: findValuesHelper()
};

struct ComparisonOutcome {
    std::string pathA, pathB;
    DiffSide a, b; // kept alive: the diff points into them
    CheckpointDiff diff;
    ValueDeltas deltas; // per diff.changed (empty when none were measured)
    std::string valuesProblem; // why no value differences were measured at all; else empty
    // A side that could not be read: its path and why; nothing else is set.
    std::string unreadablePath, error;
    bool cancelled = false;
    bool compared() const { return error.empty() && !cancelled; }
    // ckpt-inspect diff's exit status: 0 identical, 1 different, 2 could not compare.
    int exitCode() const;
};

ComparisonOutcome compareCheckpoints(const ComparisonRequest& request);

} // namespace ckpt
