// SPDX-License-Identifier: MIT
#pragma once

#include "core/triage/triage.h"

#include <optional>
#include <string>
#include <vector>

namespace ckpt {

// The load simulation (triage.h) of the copy a plan would write: storage i recorded on
// (*storageDevices)[i] instead of its own device (a remap rewrites device tags only); nullptr
// simulates the file as it is. The desktop app's "after this plan" line.
LoadSimulation simulateLoadWithDevices(const Checkpoint& checkpoint,
    const std::vector<std::optional<std::string>>* storageDevices, const MachineInventory& machine,
    const MapLocation& mapLocation, TorchGeneration generation,
    std::optional<bool> weightsOnly = std::nullopt, const std::vector<std::string>& importableModules = {});

// judgeWeightsOnly(checkpoint, generation), made once by a caller that simulates the same file
// again and again (the app, after every move): the verdict depends on the pickles only, and judging
// a million-tensor pickle costs more than the simulation itself. Ignored when absent or made for
// another generation.
struct KnownWeightsOnlyVerdict {
    const WeightsOnlyVerdict* verdict = nullptr;
};

// The same, with the weights-only verdict already made.
LoadSimulation simulateLoadWithDevices(const Checkpoint& checkpoint,
    const std::vector<std::optional<std::string>>* storageDevices, const MachineInventory& machine,
    const MapLocation& mapLocation, TorchGeneration generation, const KnownWeightsOnlyVerdict& known,
    std::optional<bool> weightsOnly = std::nullopt, const std::vector<std::string>& importableModules = {});

} // namespace ckpt
