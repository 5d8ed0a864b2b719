// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/checkpoint.h"
#include "core/pickle/picklemachine.h"
#include "core/read/checkpointbuilder.h"

#include <cstdint>
#include <string>

namespace ckpt {

// Runs one pickle into checkpoint.graph for `section` (whose record and fileOffset are set) and
// records what lets the safety verdict reuse the run: its nodes, its limits, and, when `inFile`
// (the bytes are Checkpoint::file's own from section.fileOffset, not inflated or copied), how
// many bytes the machine was given. There, the pages the machine has walked go back to the page
// cache as it goes (the graph holds what they said).
void runPickleSection(
    Checkpoint& checkpoint, PickleSection& section, ByteView bytes, bool inFile, const PickleLimits& limits);

// One rule, for every pickle-based format, for what a pickle run adds to the tree: its root when
// the pickle reached its STOP; otherwise the partial containers left on the machine's stack, as
// "(incomplete 0)", "(incomplete 1)", ..., because they may still hold complete tensors (salvage).
void addPickleRoots(CheckpointBuilder& builder, const PickleRun& run, std::uint32_t treeParent = 0,
    const std::string& baseName = {});

struct ReadOptions;

// Whether the reader was asked to have the graph judged (ReadOptions::judgeGraph) and `run` is a
// plain state_dict: a dict or OrderedDict of tensors rebuilt by torch's rebuild functions, nothing
// else called, which CheckpointBuilder can consume entry by entry. Then the reader runs the rest of
// its pickles, calls judgeGraphBeforeRecords and builds with releaseGraphAsConsumed.
bool judgeableBeforeRecords(const PickleGraph& graph, const PickleRun& run, const ReadOptions& options);

// Judges the graph now (ReadOptions::judgeGraph), with `section` counted among the checkpoint's
// pickles as it will be once its records are built.
void judgeGraphBeforeRecords(Checkpoint& checkpoint, PickleSection& section, const ReadOptions& options);

// The error finding for a pickle that stopped before its STOP. `what` names the pickle for a person
// ("the main pickle", "the pickle in archive/data.pkl"); `pickleOffset` is where it starts in the file.
void addUnreadablePickleFinding(Checkpoint& checkpoint, const PickleRun& run, const std::string& what,
    const std::string& record, std::uint64_t pickleOffset);

} // namespace ckpt
