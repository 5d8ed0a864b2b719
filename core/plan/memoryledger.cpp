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

    // The tree nodes that hold each storage: the ancestors of every tensor viewing it, once each
    // (the stamp stops a walk where this storage has been, which also ends any cycle).
    const std::size_t treeSize = checkpoint.tree.size();
    const std::size_t storageCount = checkpoint.storages.size();
    std::vector<std::uint32_t> stamp(treeSize, UINT32_MAX);
    auto forEachNodeOf = [&](std::uint32_t s, auto&& visit) {
        for (std::uint32_t t : checkpoint.storages[s].tensors) {
            if (t >= checkpoint.tensors.size())
                continue;
            std::uint32_t node = checkpoint.tensors[t].treeNode;
            while (node < treeSize && stamp[node] != s) {
                stamp[node] = s;
                visit(node);
                if (node == 0)
                    break;
                node = checkpoint.tree[node].parent;
            }
        }
    };

    // First which nodes hold one storage and which several (marked kSharedSlot for now), then the
    // shared ones numbered in tree order.
    m_nodeSlot.assign(treeSize, kNoSlot);
    for (std::uint32_t s = 0; s < storageCount; ++s)
        forEachNodeOf(s, [&](std::uint32_t node) {
            std::uint32_t& slot = m_nodeSlot[node];
            slot = slot == kNoSlot ? s : kSharedSlot; // a second storage here: shared
        });
    for (std::uint32_t& slot : m_nodeSlot)
        if (slot == kSharedSlot)
            slot = kSharedSlot | m_sharedSlotCount++;
    m_sharedBytes.resize(m_sharedSlotCount);

    // Each storage's shared slots, counted and then filled, so the rows are allocated once.
    m_slotsOfStorageStart.assign(storageCount + 1, 0);
    std::fill(stamp.begin(), stamp.end(), UINT32_MAX);
    for (std::uint32_t s = 0; s < storageCount; ++s) {
        std::size_t count = 0;
        forEachNodeOf(s, [&](std::uint32_t node) { count += (m_nodeSlot[node] & kSharedSlot) ? 1 : 0; });
        m_slotsOfStorageStart[s + 1] = m_slotsOfStorageStart[s] + count;
    }
    m_slotsOfStorage.reserve(m_slotsOfStorageStart[storageCount]);
    std::fill(stamp.begin(), stamp.end(), UINT32_MAX);
    for (std::uint32_t s = 0; s < storageCount; ++s)
        forEachNodeOf(s, [&](std::uint32_t node) {
            if (m_nodeSlot[node] & kSharedSlot)
                m_slotsOfStorage.push_back(m_nodeSlot[node] & ~kSharedSlot);
        });
    stamp = {};

    m_storageDevice.assign(storageCount, 0);
    for (std::uint32_t s = 0; s < storageCount; ++s) {
        const StorageRecord& storage = checkpoint.storages[s];
        const std::int32_t unit = plan.unitOfStorage(s);
        const int recorded = unit < 0
            ? deviceIndex(storage.device ? std::optional<std::string>(*storage.device) : std::nullopt)
            : deviceIndexOfPlanTag(plan.recordedTag(static_cast<std::uint32_t>(unit)));
        m_recorded[static_cast<std::size_t>(recorded)] += storage.nbytes;
        const int planned = unit < 0
            ? deviceIndex(std::nullopt)
            : deviceIndexOfPlanTag(plan.plannedTag(static_cast<std::uint32_t>(unit)));
        m_storageDevice[s] = planned;
        m_planned[static_cast<std::size_t>(planned)] += storage.nbytes;
        m_allocated[static_cast<std::size_t>(planned)] += allocationSize(storage.nbytes);
        ++m_count[static_cast<std::size_t>(planned)];
        for (std::size_t i = m_slotsOfStorageStart[s]; i < m_slotsOfStorageStart[s + 1]; ++i)
            bytesOfDevice(m_sharedBytes[m_slotsOfStorage[i]], planned) += storage.nbytes;
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

int MemoryLedger::deviceIndexOfPlanTag(std::uint32_t planTag)
{
    // A plan names a handful of devices: each looked up once, not once per storage.
    if (planTag >= m_indexOfPlanTag.size())
        m_indexOfPlanTag.resize(planTag + 1, -1);
    int& index = m_indexOfPlanTag[planTag];
    if (index < 0)
        index = deviceIndex(m_plan.tag(planTag));
    return index;
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
    for (std::size_t i = m_slotsOfStorageStart[storage]; i < m_slotsOfStorageStart[storage + 1]; ++i) {
        std::vector<std::pair<int, WideBytes>>& slotBytes = m_sharedBytes[m_slotsOfStorage[i]];
        bytesOfDevice(slotBytes, from) -= bytes;
        bytesOfDevice(slotBytes, to) += bytes;
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
        const int to = deviceIndexOfPlanTag(m_plan.plannedTag(unit));
        move(static_cast<std::uint32_t>(storage), from, to);
    }
}

std::vector<DeviceLedgerLine> MemoryLedger::lines() const
{
    std::vector<DeviceLedgerLine> lines;
    auto lineFor = [&](int index) {
        DeviceLedgerLine line;
        line.tag = m_tags[static_cast<std::size_t>(index)];
        line.recordsNoDevice = index == kNoDeviceIndex;
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
        if (line.tag.starts_with("cuda") && line.storageCount > 0) {
            line.contextBytes = m_assumptions.contextBytesFor(m_machine, line.tag);
            line.contextMeasured = m_machine.measuredContextOf(line.tag).has_value();
        }
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
    if (treeNode >= m_nodeSlot.size() || m_nodeSlot[treeNode] == kNoSlot)
        return bytes;
    const std::uint32_t slot = m_nodeSlot[treeNode];
    if (!(slot & kSharedSlot)) {
        // Under one storage only: its bytes, where it is planned now.
        const std::uint64_t nbytes = m_checkpoint.storages[slot].nbytes;
        if (nbytes > 0)
            bytes.emplace_back(m_tags[static_cast<std::size_t>(m_storageDevice[slot])], nbytes);
        return bytes;
    }
    const std::uint32_t shared = slot & ~kSharedSlot;
    for (const auto& [device, value] : m_sharedBytes[shared])
        if (value > 0)
            bytes.emplace_back(m_tags[static_cast<std::size_t>(device)], saturated(value));
    std::sort(bytes.begin(), bytes.end());
    return bytes;
}

} // namespace ckpt
