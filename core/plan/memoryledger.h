// SPDX-License-Identifier: MIT
#pragma once

#include "core/devices/machineinventory.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;
struct PlacementChange;
struct MachineInventory;

// What the ledger assumes about memory that the checkpoint itself does not say. Each is shown to
// the user as an assumption, not a fact.
struct LedgerAssumptions {
    // Memory a CUDA context takes on every GPU torch touches. Hugging Face accelerate's big-model
    // documentation gives 1-2 GB for it; the default is the middle.
    std::uint64_t cudaContextBytes = 1536ull << 20;
    // Where the machine measured the device's context (MachineInventory::measuredContextBytes),
    // that figure instead of cudaContextBytes.
    std::uint64_t contextBytesFor(const MachineInventory& machine, std::string_view tag) const
    {
        return machine.measuredContextOf(tag).value_or(cudaContextBytes);
    }
    // Model the CUDA caching allocator: allocations round up to 512 bytes, those above 1 MiB to
    // 2 MiB segments. Off by default (an estimate, not a measurement).
    bool allocatorRounding = false;
    // Kept free on every device by the planner.
    std::uint64_t headroomBytes = 0;
};

struct DeviceLedgerLine {
    std::string tag;
    std::string name;
    bool inMachine = false; // the target machine has this device
    // The "(none)" line: storages the file records no device for (safetensors, DCP, numpy). Not a
    // device the load could miss: the loader places them (safetensors.torch.load_file: cpu unless told).
    bool recordsNoDevice = false;
    std::uint64_t recordedBytes = 0; // storages recorded on it in the file
    std::uint64_t plannedBytes = 0; // storages planned onto it, each counted once
    std::uint64_t allocatedBytes = 0; // planned, rounded like the caching allocator when enabled
    std::uint64_t storageCount = 0;
    std::uint64_t contextBytes = 0; // CUDA context, on GPUs that receive storages
    bool contextMeasured = false; // measured on this machine, not the assumption
    std::uint64_t reservedBytes = 0; // headroom the plan keeps free
    std::optional<std::uint64_t> capacity; // total memory of the device
    std::optional<std::uint64_t> freeNow; // free memory when detected (or measured)
    std::int64_t headroom() const; // capacity - allocated - context - reserved (0 without capacity)
    bool overCapacity() const { return capacity && headroom() < 0; }
};

// Bytes per device for a plan, kept up to date move by move: applying a change costs time in
// proportion to the storages it moved (and the modules that hold them), never to the checkpoint.
// The desktop app updates it on every drop.
class MemoryLedger {
public:
    MemoryLedger(const Checkpoint& checkpoint, const PlacementPlan& plan, const MachineInventory& machine,
        LedgerAssumptions assumptions = {});

    // After plan.apply(rule) returned `change`.
    void apply(const PlacementChange& change);

    std::vector<DeviceLedgerLine> lines() const; // devices of the machine first, then others planned
    const LedgerAssumptions& assumptions() const { return m_assumptions; }

    // CPU memory a plain torch.load needs on the way: it reads every storage into CPU memory
    // before moving it to its device (unless mmap=True), one storage at a time, so the peak is the
    // largest storage it moves plus everything that stays on the CPU.
    std::uint64_t cpuStagingBytes() const;

    // Bytes by planned device of the storages under one tree node (each storage counted once).
    std::vector<std::pair<std::string, std::uint64_t>> moduleBytes(std::uint32_t treeNode) const;

private:
    int deviceIndex(const std::optional<std::string>& tag);
    int deviceIndexOfPlanTag(std::uint32_t planTag); // deviceIndex(m_plan.tag(planTag)), cached
    std::uint64_t allocationSize(std::uint64_t bytes) const;
    void move(std::uint32_t storage, int from, int to);

    const Checkpoint& m_checkpoint;
    const PlacementPlan& m_plan;
    const MachineInventory& m_machine;
    LedgerAssumptions m_assumptions;

    static constexpr int kNoDeviceIndex = 0; // the constructor interns "(none)" first
    std::vector<std::string> m_tags; // interned device tags; index 0 is "(none)"
    std::unordered_map<std::string, int> m_tagIndex;
    std::vector<int>
        m_indexOfPlanTag; // per tag of the plan, its index in m_tags once looked up (-1: not yet)
    // Totals are kept in 128 bits: a damaged or hostile file may claim storages of nearly 2^64
    // bytes each, and a sum that wrapped would show a device as almost empty. Moves stay exact
    // (subtracting what was added) and lines() reports at most 2^64 - 1.
    __extension__ typedef unsigned __int128 WideBytes;
    std::vector<WideBytes> m_planned, m_allocated, m_recorded;
    std::vector<std::uint64_t> m_count;
    std::vector<int> m_storageDevice; // current device index of each storage

    // Bytes by device under each tree node, in flat tables (a million tensors make two million
    // nodes: a heap vector per node cost more than the rest of the ledger). A node under a single
    // storage (every tensor leaf, most small modules) needs no table: its bytes are that storage's,
    // on the storage's current device. A node under several storages gets a "shared slot" with
    // its bytes by device (few such nodes: 10,011 of 2,010,011 in a million-tensor state_dict).
    // Not one dense array per device over all slots: a hostile file can name thousands of devices,
    // and devices x slots would not fit in memory; a slot's list holds only devices it has bytes on.
    // Per tree node: kNoSlot (it holds no storage), a storage index (the one storage it holds:
    // below 2^31, as tensors refer to storages in 31 bits), or kSharedSlot | its slot.
    static constexpr std::uint32_t kNoSlot = UINT32_MAX;
    static constexpr std::uint32_t kSharedSlot = 1u << 31;
    std::vector<std::uint32_t> m_nodeSlot;
    std::uint32_t m_sharedSlotCount = 0;
    // Per storage, the shared slots of the nodes that hold it (compressed rows): storage s's are
    // m_slotsOfStorage[m_slotsOfStorageStart[s] .. m_slotsOfStorageStart[s + 1]).
    std::vector<std::size_t> m_slotsOfStorageStart;
    std::vector<std::uint32_t> m_slotsOfStorage;
    // Per shared slot: (device index, bytes) for the devices it has bytes on.
    std::vector<std::vector<std::pair<int, WideBytes>>> m_sharedBytes;
};

} // namespace ckpt
