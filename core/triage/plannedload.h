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

} // namespace ckpt
