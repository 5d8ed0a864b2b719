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
// many bytes the machine was given.
void runPickleSection(Checkpoint& checkpoint, PickleSection& section, ByteView bytes, bool inFile,
    const PickleMachine& machine, const PickleLimits& limits);

// One rule, for every pickle-based format, for what a pickle run adds to the tree: its root when
// the pickle reached its STOP; otherwise the partial containers left on the machine's stack, as
// "(incomplete 0)", "(incomplete 1)", ..., because they may still hold complete tensors (salvage).
void addPickleRoots(CheckpointBuilder& builder, const PickleRun& run, std::uint32_t treeParent = 0,
    const std::string& baseName = {});

// The error finding for a pickle that stopped before its STOP. `what` names the pickle for a person
// ("the main pickle", "the pickle in archive/data.pkl"); `pickleOffset` is where it starts in the file.
void addUnreadablePickleFinding(Checkpoint& checkpoint, const PickleRun& run, const std::string& what,
    const std::string& record, std::uint64_t pickleOffset);

} // namespace ckpt
