// SPDX-License-Identifier: MIT
#pragma once
// The load simulation: what torch.load of torch 1.13 and of 2.6+ would do with each storage on a
// given machine and map_location, in torch's own words (torch-format.md §3: §3.2 the restore, §3.3
// the device errors, §3.4 map_location), with the weights-only verdict and the imports a
// weights_only=False load needs deciding whether the unpickler gets that far (§6). Defined in
// loadsimulation.cpp.

#include "core/base/expected.h"
#include "core/base/internedstring.h"
#include "core/devices/machineinventory.h"
#include "core/safety/torchgeneration.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// The map_location a person would pass to torch.load (torch-format.md §3.4).
struct MapLocation {
    enum class Kind { None, Device, Dict };
    Kind kind = Kind::None;
    std::string device; // Kind::Device: "cpu", "cuda:0"
    std::map<std::string, std::string> dict; // Kind::Dict: recorded tag -> tag
    // "none", "cpu", "cuda:1", "cuda:1=cuda:0,cuda:2=cpu", or a Python dict literal
    // "{'cuda:1': 'cuda:0'}". Errors name the faulty part.
    static Expected<MapLocation> parse(const std::string& text);
    std::string python() const; // as it would be written in torch.load(..., map_location=...)
};

// What torch.load would do with one storage. One per storage and per simulation, and a handful of
// distinct outcomes among a million storages: the texts are interned (as two std::strings they were
// 80 bytes a storage, 32 MB of `check` on 200,000 storages).
struct StorageLoadOutcome {
    std::uint32_t storage = 0;
    std::optional<InternedString> landsOn; // the device it would be restored to, when it loads
    InternedString error; // torch's exact message when it does not
};

struct LoadSimulation {
    TorchGeneration generation = TorchGeneration::Torch26Plus;
    TorchImports imports; // what the process is assumed to have imported (grows 2.x's list)
    bool weightsOnly = true; // the default of that generation, or what the caller asked
    bool loads = false; // the whole torch.load call succeeds
    std::string error; // torch's exact message of the first failure (as torch prints it)
    // The Python exception class of that failure when it is not torch's own RuntimeError or
    // UnpicklingError: "ModuleNotFoundError", "AttributeError" (a class the unpickler must import).
    std::string errorType;
    std::vector<StorageLoadOutcome> storages;
};

// The load simulation alone (also used by the desktop app when the target or map_location changes).
// With weights_only=False the unpickler also imports the module of every GLOBAL: those not in
// `importableModules` (see TriageOptions) fail as Python would (importrequirements.h).
LoadSimulation simulateLoad(const Checkpoint& checkpoint, const MachineInventory& machine,
    const MapLocation& mapLocation, TorchGeneration generation,
    std::optional<bool> weightsOnly = std::nullopt, const std::vector<std::string>& importableModules = {},
    const TorchImports& imports = {});

} // namespace ckpt
