// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

struct Checkpoint;
struct MachineInventory;
class PlacementPlan;

// A plan said the way Hugging Face's from_pretrained(device_map=..., max_memory=...) takes it, for
// checkpoints whose files record no device (safetensors) or cannot be rewritten (DCP). The CLI and
// the app both export through this, so the two say the same thing.
struct DeviceMapExport {
    // module or parameter name -> device: a CUDA ordinal as a bare number ("0"), else "cpu",
    // "disk" or the tag; in order of the names.
    std::vector<std::pair<std::string, std::string>> deviceMap;
    // device -> bytes the plan puts there (capacity when known is larger); keys as device_map's.
    std::vector<std::pair<std::string, std::uint64_t>> maxMemory;

    // {"device_map": {...}, "max_memory": {...}}: CUDA ordinals are JSON integers in device_map
    // (torch.device("0") fails, torch.device(0) is cuda:0); max_memory's keys are strings, as JSON
    // keys must be, and the Python form turns them back into integers.
    std::string json() const;
    // A from_pretrained call with both dicts as Python literals (integer keys and values).
    std::string python(const std::string& folder) const;
};

// Groups tensors by their block (the no-split prefix, "model.layers.3"); a block whose tensors all
// go to one device is one entry, a split block one entry per tensor. Tensors the plan leaves
// without a device (safetensors records none) go to the CPU. max_memory is the machine's capacity
// per device used, or the planned bytes where the machine does not say.
// The device_map alone, as JSON, the form from_pretrained(device_map=...) and accelerate take: GPU
// devices ("0", "cuda:1", a bare "cuda") as JSON integers, everything else ("cpu", "disk", other
// tags) as strings. torch.device("0") fails where torch.device(0) is cuda:0, so an ordinal must
// never be written as a string. The CLI's `plan --export device-map` and the app's File > Export
// Plan as device_map both write through this one function (issue 12: the app once wrote "0").
std::string deviceMapJson(const std::vector<std::pair<std::string, std::string>>& deviceMap);

DeviceMapExport exportDeviceMap(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const MachineInventory* machine, int noSplitDepth = -1);

} // namespace ckpt
