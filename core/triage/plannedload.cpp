// SPDX-License-Identifier: MIT
#include "core/triage/plannedload.h"

#include "core/plan/placementplan.h"

#include <algorithm>

namespace ckpt {

StorageDevices::StorageDevices(std::size_t storages)
    : m_deviceOfStorage(storages, kAsRecorded)
{ }

bool StorageDevices::set(std::uint32_t storage, std::string_view device)
{
    if (storage >= m_deviceOfStorage.size())
        return false;
    if (m_lastSet == kAsRecorded || m_devices[m_lastSet] != device) {
        const auto known = std::find(m_devices.begin(), m_devices.end(), device);
        const auto index = static_cast<std::size_t>(known - m_devices.begin());
        if (known == m_devices.end()) {
            if (m_devices.size() >= kAsRecorded)
                return false;
            m_devices.emplace_back(device);
        }
        m_lastSet = static_cast<std::uint16_t>(index);
    }
    m_deviceOfStorage[storage] = m_lastSet;
    return true;
}

StorageDevices StorageDevices::ofPlan(const PlacementPlan& plan, std::size_t storages)
{
    StorageDevices devices(storages);
    const std::vector<PlacementUnit>& units = plan.units();
    for (std::uint32_t unit = 0; unit < units.size(); ++unit) {
        if (units[unit].storage < 0)
            continue; // a tensor without a storage: nothing of it is restored
        if (plan.plannedTag(unit) == units[unit].recordedTag)
            continue; // tags are interned: the same index is the same device
        const std::optional<std::string>& planned = plan.tag(plan.plannedTag(unit));
        // A storage the plan leaves without a device is simulated as "cpu", as one the file
        // records without a device is.
        devices.set(static_cast<std::uint32_t>(units[unit].storage),
            planned ? std::string_view(*planned) : std::string_view("cpu"));
    }
    return devices;
}

} // namespace ckpt
