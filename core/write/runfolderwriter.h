// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/write/remapwriter.h"
#include "core/write/shardedwriter.h"

#include <string>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

// The files of a run folder (ShardLayout::RunFolder) whose storages the plan moves: their names,
// in the folder's order. Files that record no device (safetensors) never change.
std::vector<std::string> runFolderFilesToRewrite(const Checkpoint& checkpoint, const PlacementPlan& plan);

// Writes a new folder from a run folder: each file whose devices the plan changes is a remapped
// copy (writeRemappedCopy: only device tags change, storages byte-identical, read back and
// verified); every other file of the document (checkpoint files the plan leaves alone, JSON,
// `latest`, the step folder `latest` names) is copied byte for byte. Subfolders not part of the
// document (step folders `latest` does not name) are left out and named. All of it goes to a
// temporary folder beside the target, renamed only when everything is written: a failure leaves
// nothing under the target name. A file the plan changes that cannot be remapped (damaged,
// truncated) refuses the save, named; a damaged file the plan leaves alone is copied as it is.
// Callers check the output against the input first (writeRemappedFolder does).
Expected<ShardedRemapResult> writeRemappedRunFolder(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& temporaryFolder, const RemapOptions& options);

} // namespace ckpt
