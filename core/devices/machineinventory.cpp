// SPDX-License-Identifier: MIT
#include "core/devices/machineinventory.h"

namespace ckpt {

const DeviceInfo* MachineInventory::find(std::string_view tag) const
{
    for (const DeviceInfo& device : devices) {
        if (device.tag == tag)
            return &device;
    }
    return nullptr;
}

std::vector<const DeviceInfo*> MachineInventory::gpus() const
{
    std::vector<const DeviceInfo*> result;
    for (const DeviceInfo& device : devices) {
        if (device.tag == "cuda" || device.tag.rfind("cuda:", 0) == 0)
            result.push_back(&device);
    }
    return result;
}

} // namespace ckpt
