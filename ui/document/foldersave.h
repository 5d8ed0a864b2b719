// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"

#include <optional>
#include <string>

namespace ckpt {

struct Checkpoint;
struct MachineInventory;
class PlacementPlan;

// The main window's save for a checkpoint of several files (Checkpoint::shardSet).

// Why saving this checkpoint exports the plan instead of rewriting files (safetensors and DCP
// record no device), or nothing when a remapped folder can be written (.bin shards) or it is a
// single file. (.bin shards and single files are written by the save task, core/tasks/savecopy.h.)
std::optional<std::string> folderSaveExportsOnly(const Checkpoint& checkpoint);

// safetensors / DCP: writes device_map.json (device_map and max_memory, exportDeviceMap) and
// load_with_device_map.py into `outputFolder`; returns the sentence the window shows.
Expected<std::string> exportFolderPlan(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const MachineInventory& machine, const std::string& outputFolder);

} // namespace ckpt
