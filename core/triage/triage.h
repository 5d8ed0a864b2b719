// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/base/finding.h"
#include "core/base/internedstring.h"
#include "core/devices/machineinventory.h"
#include "core/safety/pickleverdict.h"
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

// Every GLOBAL of the pickles, classified against torch's weights-only unpickler.
enum class GlobalVerdict {
    Allowed, // accepted by default
    NeedsAllowlist, // a harmless class torch rejects until add_safe_globals([...])
    Blocked, // runs code or reaches the system: os, subprocess, eval, getattr, ...
    Unknown, // a third-party class the tool knows nothing about
};
const char* globalVerdictName(GlobalVerdict verdict);

struct GlobalClassification {
    std::string name; // "torch.nn.modules.linear.Linear"
    GlobalVerdict verdict = GlobalVerdict::Unknown;
    std::string reason;
    std::uint64_t offset = 0; // first occurrence, within its pickle
    std::string record; // the pickle it is in
    std::string module, attribute; // as written in the pickle ("__builtin__", "eval")
    // The name the safety verdict lists it under when it is not vetted (the Python 3 spelling,
    // "builtins.eval"): every Blocked or Unknown global is among its unsafe callables (triage()).
    std::string safetyName;
};

enum class SafetyRating {
    LoadsWithWeightsOnly, // torch.load(weights_only=True) accepts it
    NeedsAllowlist, // only harmless classes stand in the way: the add_safe_globals call is given
    Dangerous, // would run code under weights_only=False
    NotApplicable, // safetensors or not a checkpoint: no pickle to judge
};
const char* safetyRatingName(SafetyRating rating);

struct WeightsOnlyVerdict {
    SafetyRating rating = SafetyRating::NotApplicable;
    TorchGeneration generation = TorchGeneration::Torch26Plus; // which allowlist was applied
    TorchImports imports; // and in which state of the process (see TorchImports)
    std::vector<GlobalClassification> globals;
    std::vector<std::string> rejectedOpcodes; // opcode names the weights-only unpickler refuses
    std::string addSafeGlobalsCall; // "torch.serialization.add_safe_globals([...])" when useful
    std::vector<std::string>
        dangerousCallChains; // "builtins.eval('__import__(\"os\")...')" quoted from the pickle
    std::string torchMessage; // the message torch.load(weights_only=True) would print, when it fails
    // Where the weights-only unpickler stops (the first rejected GLOBAL or opcode, in stream order),
    // so the load simulation can tell whether it or a storage's device fails first.
    std::optional<std::uint64_t> firstRejectionOffset;
    std::string firstRejectionRecord;
};

// The CRC-32 of a stored record's bytes, computed elsewhere in a read the caller made anyway
// (`check --values`: the value helper reads every tensor's bytes and computes it in the same pass).
// The integrity check uses it for the record at exactly this offset and length instead of reading
// the record again; the comparison with the recorded CRC, and every finding, stay its own.
struct KnownRecordCrc {
    std::string record;
    std::uint64_t offset = 0, length = 0;
    std::uint32_t crc = 0;
};

struct TriageOptions {
    std::optional<MachineInventory> target; // the machine torch.load would run on (default: this one)
    MapLocation mapLocation;
    // Python modules (and their submodules) importable where torch.load runs, beyond the standard
    // library, torch and numpy (`check --importable models`); "__main__" declares the saving
    // script's classes defined.
    std::vector<std::string> importableModules;
    // The torch whose torch.load is simulated (`check --torch`): nullopt simulates both 1.13 and
    // 2.6+ and judges weights_only as 2.6+ does; and what its process has imported (`--assume-imports`).
    std::optional<TorchGeneration> torch;
    TorchImports imports;
    bool values = false; // compute value statistics (through libtorch; see torchbridge)
    std::vector<KnownRecordCrc> knownRecordCrcs;
};

struct TriageReport {
    std::vector<Finding> findings; // every check's findings, most severe first
    std::vector<LoadSimulation> loadSimulations; // one per torch generation
    WeightsOnlyVerdict weightsOnly;
    SafetyVerdict safety; // every pickle a loader could run, rated allowlist-first (pickleverdict.h)
    // 0 clean, 1 warnings, 2 errors, 4 dangerous or cannot verify (before all others: loading it may
    // run code); 3 "could not read" is decided by the caller.
    int exitCode() const;
};

// The load simulation alone (also used by the desktop app when the target or map_location changes).
// With weights_only=False the unpickler also imports the module of every GLOBAL: those not in
// `importableModules` (see TriageOptions) fail as Python would (importrequirements.h).
LoadSimulation simulateLoad(const Checkpoint& checkpoint, const MachineInventory& machine,
    const MapLocation& mapLocation, TorchGeneration generation,
    std::optional<bool> weightsOnly = std::nullopt, const std::vector<std::string>& importableModules = {},
    const TorchImports& imports = {});
WeightsOnlyVerdict judgeWeightsOnly(
    const Checkpoint& checkpoint, TorchGeneration generation, const TorchImports& imports = {});

// Integrity (CRC of every record, sizes, views, truncation and salvage), placement smells (mixed
// devices in a module, optimizer state away from its parameters, TorchScript code that names a
// device) and the two above, as findings.
std::vector<Finding> checkIntegrity(
    const Checkpoint& checkpoint, const std::vector<KnownRecordCrc>& knownRecordCrcs = {});
std::vector<Finding> checkPlacementSmells(const Checkpoint& checkpoint);
// Globals under a module path that another library version keeps elsewhere (numpy._core vs
// numpy.core, pytorch_lightning vs lightning.pytorch), with the remap --rename-global that fixes it.
std::vector<Finding> checkKnownGlobalMoves(const Checkpoint& checkpoint);
// Checks across the files of a checkpoint of several files (Checkpoint::shardSet; §7): the index
// against the shards, tensors in two shards, total_size, odd dtypes or devices per shard, each
// shard's own integrity, and for DCP that every chunk's bytes exist and the chunks tile each tensor.
std::vector<Finding> checkShards(const Checkpoint& checkpoint);
// The pickle safety verdict of a checkpoint of several files: every usable shard (and DCP's
// .metadata) rated on its own bytes; the worst rating, with every shard's findings named by shard.
SafetyVerdict rateShardSafety(const Checkpoint& checkpoint);
TriageReport triage(const Checkpoint& checkpoint, const TriageOptions& options);

} // namespace ckpt
