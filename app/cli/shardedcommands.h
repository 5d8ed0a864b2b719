// SPDX-License-Identifier: MIT
#pragma once

#include <iosfwd>
#include <string>

namespace ckpt {
struct Checkpoint;
struct MachineInventory;
class PlacementPlan;
} // namespace ckpt

namespace ckpt::cli {

// `remap DIR -o OUTDIR` and `plan DIR ... --save OUTDIR` for a checkpoint of several files
// (Checkpoint::shardSet): .bin shards are written as a new folder (writeRemappedFolder); safetensors
// and DCP sets record no device, so OUTDIR receives the plan as device_map.json (device_map and
// max_memory for from_pretrained) and load_with_device_map.py, and the output says why nothing was
// rewritten. Returns the exit status (0 written or exported, 2 refused).
int saveShardedPlan(const Checkpoint& checkpoint, const PlacementPlan& plan, const MachineInventory& machine,
    const std::string& outputFolder, bool json, bool verify, std::ostream& out, std::ostream& err);

} // namespace ckpt::cli
