// SPDX-License-Identifier: MIT
#pragma once

#include "core/triage/loadsimulation.h"
#include "core/triage/weightsonlyverdict.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

class PlacementPlan;

// The device each storage of a planned copy is recorded on, two bytes a storage: the few distinct
// devices a plan names, and per storage an index into them or "as recorded". A plan over a million
// storages names a handful of devices; an optional string per storage would be 40 MB of copies of
// them, made again for every simulation after every move.
class StorageDevices {
public:
    static constexpr std::uint16_t kAsRecorded = 0xffff;

    StorageDevices() = default;
    explicit StorageDevices(std::size_t storages); // every storage as recorded

    // Records storage `storage` on `device`. False, and the storage stays as recorded, when the
    // storage is out of range or 65,535 distinct devices are named already (not a plan a person
    // makes).
    bool set(std::uint32_t storage, std::string_view device);
    // The device storage `storage` is recorded on instead of its own; nullptr: as recorded.
    const std::string* of(std::uint32_t storage) const
    {
        if (storage >= m_deviceOfStorage.size() || m_deviceOfStorage[storage] == kAsRecorded)
            return nullptr;
        return &m_devices[m_deviceOfStorage[storage]];
    }
    std::size_t size() const { return m_deviceOfStorage.size(); }
    const std::vector<std::string>& devices() const { return m_devices; } // distinct, first named first
    // Per storage an index into devices(), or kAsRecorded.
    const std::vector<std::uint16_t>& deviceIndices() const { return m_deviceOfStorage; }

    // What `plan` records each of the checkpoint's `storages` on where that differs from the file.
    static StorageDevices ofPlan(const PlacementPlan& plan, std::size_t storages);

private:
    std::vector<std::string> m_devices;
    std::vector<std::uint16_t> m_deviceOfStorage;
    std::uint16_t m_lastSet = kAsRecorded; // devices come in runs: the last one is tried first
};

// judgeWeightsOnly(checkpoint, generation), made once by a caller that simulates the same file
// again and again (the app, after every move; the triage, for its own report): the verdict depends
// on the pickles only, and judging a million-tensor pickle costs more than the simulation itself.
// Ignored when absent or made for another generation or other imports (then the simulation judges
// for itself).
struct KnownWeightsOnlyVerdict {
    const WeightsOnlyVerdict* verdict = nullptr;
};

// Told how many storages are simulated, every 65,536 of them and once when all are; false asks
// the simulation to stop (the app's job for a plan a newer one superseded).
using SimulationProgress = std::function<bool(std::uint64_t done, std::uint64_t total)>;

// The load simulation (triage.h) of the copy a plan would write: storage i recorded on
// storageDevices->of(i) instead of its own device (a remap rewrites device tags only); nullptr
// simulates the file as it is. The desktop app's "after this plan" line. Stopped by `progress`,
// it returns at once with what it had: not an outcome, and the caller that said stop drops it.
LoadSimulation simulateLoadWithDevices(const Checkpoint& checkpoint, const StorageDevices* storageDevices,
    const MachineInventory& machine, const MapLocation& mapLocation, TorchGeneration generation,
    const KnownWeightsOnlyVerdict& known = {}, std::optional<bool> weightsOnly = std::nullopt,
    const std::vector<std::string>& importableModules = {}, const SimulationProgress& progress = {},
    const TorchImports& imports = {});

} // namespace ckpt
