// SPDX-License-Identifier: MIT
#include "core/plan/memoryledger.h"

#include "core/devices/machineinventory.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"

#include <algorithm>

namespace ckpt {

namespace {

__extension__ typedef unsigned __int128 WideBytes;

WideBytes& bytesOfDevice(std::vector<std::pair<int, WideBytes>>& bytes, int device)
{
    for (auto& [index, value] : bytes)
        if (index == device)
            return value;
    return bytes.emplace_back(device, 0).second;
}

std::uint64_t saturated(WideBytes value)
{
    return value > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(value);
}

} // namespace

std::int64_t DeviceLedgerLine::headroom() const
{
    if (!capacity)
        return 0;
    // In 128 bits, then clamped: an allocation claimed by a hostile file must read as "far over
    // capacity", never wrap round to plenty of room.
    __extension__ typedef __int128 Wide;
    const Wide room = static_cast<Wide>(*capacity) - static_cast<Wide>(allocatedBytes)
        - static_cast<Wide>(contextBytes) - static_cast<Wide>(reservedBytes);
    return room < INT64_MIN ? INT64_MIN : room > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(room);
}

MemoryLedger::MemoryLedger(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const MachineInventory& machine, LedgerAssumptions assumptions)
    : m_checkpoint(checkpoint)
    , m_plan(plan)
    , m_machine(machine)
    , m_assumptions(assumptions)
{
    deviceIndex(std::nullopt);
    for (const DeviceInfo& device : machine.devices)
        deviceIndex(device.tag);

    // The tree nodes that hold each storage: the ancestors of every tensor viewing it, once each.
    m_nodeBytes.resize(checkpoint.tree.size());
    m_nodesOfStorage.resize(checkpoint.storages.size());
    std::vector<std::uint32_t> stamp(checkpoint.tree.size(), UINT32_MAX);
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        for (std::uint32_t t : checkpoint.storages[s].tensors) {
            std::uint32_t node = checkpoint.tensors[t].treeNode;
            for (;;) {
                if (node >= checkpoint.tree.size() || stamp[node] == s)
                    break;
                stamp[node] = s;
                m_nodesOfStorage[s].push_back(node);
                if (node == 0)
                    break;
                node = checkpoint.tree[node].parent;
            }
        }
    }

    m_storageDevice.assign(checkpoint.storages.size(), 0);
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        const StorageRecord& storage = checkpoint.storages[s];
        const int recorded = deviceIndex(storage.device);
        m_recorded[static_cast<std::size_t>(recorded)] += storage.nbytes;
        const int planned = deviceIndex(plan.plannedDeviceOfStorage(s));
        m_storageDevice[s] = planned;
        m_planned[static_cast<std::size_t>(planned)] += storage.nbytes;
        m_allocated[static_cast<std::size_t>(planned)] += allocationSize(storage.nbytes);
        ++m_count[static_cast<std::size_t>(planned)];
        for (std::uint32_t node : m_nodesOfStorage[s])
            bytesOfDevice(m_nodeBytes[node], planned) += storage.nbytes;
    }
}

int MemoryLedger::deviceIndex(const std::optional<std::string>& tag)
{
    const std::string key = tag.value_or("(none)");
    auto [it, inserted] = m_tagIndex.emplace(key, static_cast<int>(m_tags.size()));
    if (inserted) {
        m_tags.push_back(key);
        m_planned.push_back(0);
        m_allocated.push_back(0);
        m_recorded.push_back(0);
        m_count.push_back(0);
    }
    return it->second;
}

std::uint64_t MemoryLedger::allocationSize(std::uint64_t bytes) const
{
    if (!m_assumptions.allocatorRounding || bytes == 0)
        return bytes;
    // PyTorch's CUDA caching allocator rounds requests to 512 bytes; large ones (> 1 MiB) are
    // carved from segments rounded to 2 MiB.
    constexpr std::uint64_t small = 512, large = 2ull << 20;
    if (bytes <= (1ull << 20))
        return (bytes + small - 1) / small * small;
    if (bytes > UINT64_MAX - large)
        return UINT64_MAX; // only a hostile size gets here; rounding up must not wrap to 0
    return (bytes + large - 1) / large * large;
}

void MemoryLedger::move(std::uint32_t storage, int from, int to)
{
    if (from == to)
        return;
    const std::uint64_t bytes = m_checkpoint.storages[storage].nbytes;
    const std::uint64_t allocated = allocationSize(bytes);
    m_planned[static_cast<std::size_t>(from)] -= bytes;
    m_allocated[static_cast<std::size_t>(from)] -= allocated;
    --m_count[static_cast<std::size_t>(from)];
    m_planned[static_cast<std::size_t>(to)] += bytes;
    m_allocated[static_cast<std::size_t>(to)] += allocated;
    ++m_count[static_cast<std::size_t>(to)];
    for (std::uint32_t node : m_nodesOfStorage[storage]) {
        bytesOfDevice(m_nodeBytes[node], from) -= bytes;
        bytesOfDevice(m_nodeBytes[node], to) += bytes;
    }
    m_storageDevice[storage] = to;
}

void MemoryLedger::apply(const PlacementChange& change)
{
    for (std::uint32_t unit : change.unitsChanged) {
        const std::int32_t storage = m_plan.units()[unit].storage;
        if (storage < 0)
            continue; // storage-less tensors hold no bytes
        const int from = m_storageDevice[static_cast<std::size_t>(storage)];
        const int to = deviceIndex(m_plan.plannedDevice(unit));
        move(static_cast<std::uint32_t>(storage), from, to);
    }
}

std::vector<DeviceLedgerLine> MemoryLedger::lines() const
{
    std::vector<DeviceLedgerLine> lines;
    auto lineFor = [&](int index) {
        DeviceLedgerLine line;
        line.tag = m_tags[static_cast<std::size_t>(index)];
        line.recordedBytes = saturated(m_recorded[static_cast<std::size_t>(index)]);
        line.plannedBytes = saturated(m_planned[static_cast<std::size_t>(index)]);
        line.allocatedBytes = saturated(m_allocated[static_cast<std::size_t>(index)]);
        line.storageCount = m_count[static_cast<std::size_t>(index)];
        if (const DeviceInfo* device = m_machine.find(line.tag)) {
            line.inMachine = true;
            line.name = device->name;
            line.capacity = device->totalBytes;
            line.freeNow = device->freeBytes;
            line.reservedBytes = m_assumptions.headroomBytes;
        }
        if (line.tag.starts_with("cuda") && line.storageCount > 0)
            line.contextBytes = m_assumptions.cudaContextBytes;
        return line;
    };
    for (const DeviceInfo& device : m_machine.devices)
        lines.push_back(lineFor(m_tagIndex.at(device.tag)));
    for (std::size_t i = 0; i < m_tags.size(); ++i)
        if (!m_machine.find(m_tags[i]) && (m_count[i] > 0 || m_recorded[i] > 0))
            lines.push_back(lineFor(static_cast<int>(i)));
    return lines;
}

std::uint64_t MemoryLedger::cpuStagingBytes() const
{
    std::uint64_t largestMoved = 0;
    for (std::uint32_t s = 0; s < m_checkpoint.storages.size(); ++s)
        if (m_tags[static_cast<std::size_t>(m_storageDevice[s])] != "cpu")
            largestMoved = std::max(largestMoved, m_checkpoint.storages[s].nbytes);
    auto cpu = m_tagIndex.find("cpu");
    return saturated(WideBytes {largestMoved}
        + (cpu == m_tagIndex.end() ? 0 : m_planned[static_cast<std::size_t>(cpu->second)]));
}

std::vector<std::pair<std::string, std::uint64_t>> MemoryLedger::moduleBytes(std::uint32_t treeNode) const
{
    std::vector<std::pair<std::string, std::uint64_t>> bytes;
    if (treeNode >= m_nodeBytes.size())
        return bytes;
    for (const auto& [index, value] : m_nodeBytes[treeNode])
        if (value > 0)
            bytes.emplace_back(m_tags[static_cast<std::size_t>(index)], saturated(value));
    std::sort(bytes.begin(), bytes.end());
    return bytes;
}

} // namespace ckpt
