// SPDX-License-Identifier: MIT
// The load simulation: what torch.load would do with each storage on a given machine, with the
// messages torch prints (torch-format.md §3). The texts were checked against torch 1.13 and 2.14
// on a CPU-only machine (tests/core/tst_loadsimulation.cpp runs both).

#include "core/triage/loadsimulation.h"

#include "core/base/pythonliteral.h"
#include "core/model/checkpoint.h"
#include "core/model/dtype.h"
#include "core/triage/importrequirements.h"
#include "core/triage/plannedload.h"
#include "core/triage/torchmessages.h"
#include "core/triage/weightsonlyverdict.h"

#include <algorithm>
#include <cctype>
#include <deque>

namespace ckpt {

namespace {

std::string trim(std::string_view text)
{
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    return std::string(text);
}

// 'cpu', "cpu", torch.device('cpu') or cpu.
std::optional<std::string> unquoteDevice(std::string_view text)
{
    std::string value = trim(text);
    if (value.starts_with("torch.device(") && value.ends_with(")"))
        value = trim(std::string_view(value).substr(13, value.size() - 14));
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front())
        value = value.substr(1, value.size() - 2);
    if (value.empty() || value.find_first_of(" ,{}'\"=") != std::string::npos)
        return std::nullopt;
    return value;
}

std::string quote(const std::string& text)
{
    return pythonStringLiteral(text);
}

} // namespace

Expected<MapLocation> MapLocation::parse(const std::string& text)
{
    MapLocation location;
    const std::string value = trim(text);
    if (value.empty() || value == "none" || value == "None")
        return location;
    const bool pythonDict = value.front() == '{';
    if (pythonDict || value.find('=') != std::string::npos) {
        std::string body = value;
        if (pythonDict) {
            if (value.back() != '}')
                return makeError("map_location " + value + ": the dict has no closing '}'");
            body = value.substr(1, value.size() - 2);
        }
        location.kind = Kind::Dict;
        std::size_t start = 0;
        while (start <= body.size()) {
            auto comma = body.find(',', start);
            if (comma == std::string::npos)
                comma = body.size();
            const std::string pair = trim(std::string_view(body).substr(start, comma - start));
            start = comma + 1;
            if (pair.empty()) {
                if (comma == body.size())
                    break;
                continue;
            }
            // A Python key is quoted and holds a ':' itself ('cuda:1'): look past its closing quote.
            std::size_t keyEnd = 0;
            if (pythonDict && !pair.empty() && (pair[0] == '\'' || pair[0] == '"'))
                keyEnd = std::min(pair.find(pair[0], 1), pair.size());
            const auto separator = pair.find(pythonDict ? ':' : '=', keyEnd);
            if (separator == std::string::npos)
                return makeError("map_location entry \"" + pair + "\" is not "
                    + (pythonDict ? "'from': 'to'" : "from=to"));
            const auto from = unquoteDevice(std::string_view(pair).substr(0, separator));
            const auto to = unquoteDevice(std::string_view(pair).substr(separator + 1));
            if (!from || !to)
                return makeError("map_location entry \"" + pair + "\" does not name two devices");
            location.dict[*from] = *to;
        }
        if (location.dict.empty())
            return makeError("map_location " + value + " maps nothing");
        return location;
    }
    const auto device = unquoteDevice(value);
    if (!device)
        return makeError("map_location \"" + value + "\" is not a device (\"cpu\", \"cuda:0\")");
    location.kind = Kind::Device;
    location.device = *device;
    return location;
}

std::string MapLocation::python() const
{
    switch (kind) {
    case Kind::None:
        return "None";
    case Kind::Device:
        return quote(device);
    case Kind::Dict: {
        std::string out = "{";
        for (const auto& [from, to] : dict)
            out += (out.size() > 1 ? ", " : "") + quote(from) + ": " + quote(to);
        return out + "}";
    }
    }
    return "None";
}

namespace {

// A million storages simulate in about 80 ms: a report every 65,536 is a few milliseconds apart.
constexpr std::uint32_t kStoragesPerProgressReport = 1U << 16;

// Interned once per distinct tag (RestoreCache), so each storage's outcome copies two pointers.
struct Restore {
    std::optional<InternedString> landsOn;
    InternedString error;
};

// "cuda", "cuda:3", "cuda3" (torch's regex backend(:|[0-9]+) accepts the last too).
bool matchesBackend(const std::string& tag, std::string_view backend, bool prefixOnly)
{
    if (prefixOnly)
        return tag.starts_with(backend);
    if (tag == backend)
        return true;
    if (!tag.starts_with(backend) || tag.size() == backend.size())
        return false;
    const char next = tag[backend.size()];
    return next == ':' || std::isdigit(static_cast<unsigned char>(next));
}

// The index torch.device(tag) gives (nullopt for a bare backend name, -1 when it does not parse).
std::optional<long> deviceIndex(const std::string& tag, std::string_view backend)
{
    if (tag == backend)
        return std::nullopt;
    std::string_view rest = std::string_view(tag).substr(backend.size());
    if (rest.starts_with(':'))
        rest.remove_prefix(1);
    if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
        }))
        return -1;
    return std::stol(std::string(rest));
}

std::vector<const DeviceInfo*> devicesOf(const MachineInventory& machine, std::string_view backend)
{
    std::vector<const DeviceInfo*> out;
    for (const auto& device : machine.devices)
        if (device.tag == backend || device.tag.starts_with(std::string(backend) + ":"))
            out.push_back(&device);
    return out;
}

// torch's _validate_device then .to(device) for an indexed backend (cuda; xpu/mtia in 2.x).
Restore restoreIndexed(const std::string& tag, std::string_view backend, const MachineInventory& machine)
{
    const auto devices = devicesOf(machine, backend);
    if (devices.empty())
        return {std::nullopt, torchmessages::backendUnavailable(backend)};
    const auto index = deviceIndex(tag, backend);
    if (index && *index < 0)
        return {std::nullopt, torchmessages::invalidDeviceString(tag)};
    const long wanted = index ? *index : 0; // a bare "cuda" goes to the current device, 0
    if (wanted >= static_cast<long>(devices.size()))
        return {std::nullopt, torchmessages::deviceOutOfRange(backend, wanted, devices.size())};
    return {std::string(backend) + ":" + std::to_string(wanted), {}};
}

Restore unknownLocation(const std::string& tag)
{
    return {std::nullopt,
        "don't know how to restore data location of torch.storage.UntypedStorage (tagged with " + tag + ")"};
}

// default_restore_location(storage, tag) of the given torch (§3.1 registrations).
Restore restoreLocation(const std::string& tag, const MachineInventory& machine, TorchGeneration generation)
{
    const bool old = generation == TorchGeneration::Torch113;
    if (tag == "cpu")
        return {"cpu", {}};
    if (matchesBackend(tag, "cuda", old)) {
        if (old && tag != "cuda" && !matchesBackend(tag, "cuda", false))
            return {std::nullopt,
                "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, ort, "
                "xla, lazy, "
                "vulkan, mps, meta, hpu, privateuseone device type at start of device string: "
                    + tag};
        return restoreIndexed(tag, "cuda", machine);
    }
    // 1.13 matched mps only as "mps"; 2.x as any tag starting with it.
    if (old ? tag == "mps" : tag.starts_with("mps")) {
        if (!devicesOf(machine, "mps").empty())
            return {"mps", {}};
        return {std::nullopt, "torch.UntypedStorage(): Storage device not recognized: mps"};
    }
    if (tag == "meta")
        return {"meta", {}};
    if (old)
        return unknownLocation(tag);
    // 2.x: xpu and mtia modules exist in every build and say they are unavailable; hpu and the
    // privateuse1 backend are not registered in a build without them.
    for (std::string_view backend : {"xpu", "mtia"})
        if (matchesBackend(tag, backend, false))
            return restoreIndexed(tag, backend, machine);
    for (std::string_view backend : {"hpu", "privateuseone"})
        if (matchesBackend(tag, backend, false)) {
            if (!devicesOf(machine, backend).empty())
                return restoreIndexed(tag, backend, machine);
            return {std::nullopt, torchmessages::deviceModuleNotRegistered(backend)};
        }
    return unknownLocation(tag);
}

std::string mapTag(const std::string& recorded, const MapLocation& mapLocation)
{
    switch (mapLocation.kind) {
    case MapLocation::Kind::None:
        return recorded;
    case MapLocation::Kind::Device:
        return mapLocation.device;
    case MapLocation::Kind::Dict: {
        auto it = mapLocation.dict.find(recorded);
        return it == mapLocation.dict.end() ? recorded : it->second;
    }
    }
    return recorded;
}

// Where each storage is first named: its position in the storagesUsed of the pickle that first
// named it (storages are named in the order their pickle first reaches them; tied storages repeat,
// so the first position is the one that counts). Built once per simulation, and only when some
// storage fails: a search per failing storage would be quadratic when a million storages fail.
class FirstReferences {
public:
    explicit FirstReferences(const Checkpoint& checkpoint)
        : m_checkpoint(checkpoint)
    { }

    // Offset in its pickle of the first persistent id naming storage `index`.
    std::optional<std::uint64_t> of(std::uint32_t index, std::string& record)
    {
        if (m_positions.empty())
            build();
        const auto& storage = m_checkpoint.storages[index];
        if (storage.pickleSection >= m_checkpoint.pickles.size())
            return std::nullopt;
        const auto& section = m_checkpoint.pickles[storage.pickleSection];
        const std::uint32_t position = m_positions[index];
        if (position == kNotNamed || position >= section.run.persistentIdOffsets.size())
            return std::nullopt;
        record = section.record;
        return section.run.persistentIdOffsets[position];
    }

private:
    static constexpr std::uint32_t kNotNamed = ~std::uint32_t {0};

    void build()
    {
        m_positions.assign(m_checkpoint.storages.size(), kNotNamed);
        for (std::uint32_t s = 0; s < m_checkpoint.pickles.size(); ++s) {
            const auto& used = m_checkpoint.pickles[s].storagesUsed;
            for (std::uint32_t position = 0; position < used.size(); ++position) {
                const std::uint32_t storage = used[position];
                if (storage < m_positions.size() && m_positions[storage] == kNotNamed
                    && m_checkpoint.storages[storage].pickleSection == s)
                    m_positions[storage] = position;
            }
        }
    }

    const Checkpoint& m_checkpoint;
    std::vector<std::uint32_t> m_positions;
};

// default_restore_location of each distinct tag, worked out once: a checkpoint of a million
// storages names a handful of devices, and each restore builds strings.
class RestoreCache {
public:
    RestoreCache(const MachineInventory& machine, const MapLocation& mapLocation, TorchGeneration generation)
        : m_machine(machine)
        , m_mapLocation(mapLocation)
        , m_generation(generation)
    { }

    const Restore& of(std::string_view recorded)
    {
        for (const auto& [tag, restore] : m_known)
            if (tag == recorded)
                return restore;
        std::string tag(recorded);
        Restore restore = restoreLocation(mapTag(tag, m_mapLocation), m_machine, m_generation);
        return m_known.emplace_back(std::move(tag), restore).second;
    }

private:
    const MachineInventory& m_machine;
    const MapLocation& m_mapLocation;
    const TorchGeneration m_generation;
    std::deque<std::pair<std::string, Restore>> m_known; // stable references as it grows
};

// The first GLOBAL, in stream order, that names a torch attribute torch 1.13 does not have: the
// rebuild function torch 2.2 added for dtypes without a legacy storage class, and the dtypes newer
// than 1.13 (docs/dtypes.md). Storage class names are not looked up (find_class maps them).
struct MissingIn113 {
    const GlobalReference* global = nullptr;
    const PickleSection* section = nullptr;
};
MissingIn113 firstMissingIn113(const Checkpoint& checkpoint)
{
    for (const PickleSection& section : checkpoint.pickles)
        for (const GlobalReference& global : section.run.globals) {
            bool missing = global.module == "torch._utils" && global.name == "_rebuild_tensor_v3";
            if (global.module == "torch")
                if (const auto info = dtypeByName(global.name); info && !info->firstTorch.empty())
                    missing = true;
            if (missing)
                return {&global, &section};
        }
    return {};
}

// Whether a module that cannot be imported is met before `offset` of `record`.
bool importFailsBefore(const Checkpoint& checkpoint, const std::vector<std::string>& importableModules,
    const std::string& record, std::uint64_t offset)
{
    for (const ImportRequirement& requirement : importRequirements(checkpoint, importableModules))
        if (!requirement.importable)
            return requirement.record == record && requirement.offset < offset;
    return false;
}

} // namespace

LoadSimulation simulateLoad(const Checkpoint& checkpoint, const MachineInventory& machine,
    const MapLocation& mapLocation, TorchGeneration generation, std::optional<bool> weightsOnly,
    const std::vector<std::string>& importableModules, const TorchImports& imports)
{
    return simulateLoadWithDevices(checkpoint, nullptr, machine, mapLocation, generation,
        KnownWeightsOnlyVerdict {}, weightsOnly, importableModules, {}, imports);
}

LoadSimulation simulateLoadWithDevices(const Checkpoint& checkpoint, const StorageDevices* storageDevices,
    const MachineInventory& machine, const MapLocation& mapLocation, TorchGeneration generation,
    const KnownWeightsOnlyVerdict& known, std::optional<bool> weightsOnly,
    const std::vector<std::string>& importableModules, const SimulationProgress& progress,
    const TorchImports& imports)
{
    LoadSimulation simulation;
    simulation.generation = generation;
    simulation.imports = imports;
    simulation.weightsOnly = weightsOnly.value_or(generation == TorchGeneration::Torch26Plus);
    const bool old = generation == TorchGeneration::Torch113;

    auto fail = [&](std::string message) {
        simulation.loads = false;
        if (simulation.error.empty())
            simulation.error = std::move(message);
    };

    RestoreCache restores(machine, mapLocation, generation);
    FirstReferences firstReferences(checkpoint);

    // Per storage, regardless of which failure torch reports first.
    std::optional<std::uint32_t> firstFailing;
    std::uint64_t firstFailingOffset = 0;
    std::string firstFailingRecord;
    const bool metaEverywhere = mapLocation.kind == MapLocation::Kind::Device && mapLocation.device == "meta";
    // The restore of each device the plan names, looked up once per distinct device, not per storage.
    std::vector<const Restore*> plannedRestores(
        storageDevices ? storageDevices->devices().size() : 0, nullptr);
    // One outcome per storage: grown by doubling, the vector held its old and new blocks at once
    // (52 MB at the peak of check on 200,000 storages instead of 16).
    simulation.storages.reserve(checkpoint.storages.size());
    const std::uint64_t storageCount = checkpoint.storages.size();
    for (std::uint32_t index = 0; index < storageCount; ++index) {
        // A simulation the caller no longer wants (the app's, superseded by a newer plan) stops here.
        if (progress && index % kStoragesPerProgressReport == 0 && !progress(index, storageCount))
            return simulation;
        const auto& storage = checkpoint.storages[index];
        StorageLoadOutcome outcome;
        outcome.storage = index;
        if (metaEverywhere) {
            outcome.landsOn = "meta"; // nothing is read, restore_location is skipped (§3.2)
        } else {
            const std::uint16_t planned = storageDevices && index < storageDevices->size()
                ? storageDevices->deviceIndices()[index]
                : StorageDevices::kAsRecorded;
            const Restore* restored = nullptr;
            if (planned != StorageDevices::kAsRecorded) {
                const Restore*& cached = plannedRestores[planned];
                if (!cached)
                    cached = &restores.of(storageDevices->devices()[planned]);
                restored = cached;
            } else {
                restored = &restores.of(
                    storage.device ? std::string_view(*storage.device) : std::string_view("cpu"));
            }
            outcome.landsOn = restored->landsOn;
            outcome.error = restored->error;
        }
        if (!outcome.landsOn) {
            std::string record;
            const auto offset = firstReferences.of(index, record).value_or(index);
            if (!firstFailing || (record == firstFailingRecord && offset < firstFailingOffset)) {
                firstFailing = index;
                firstFailingOffset = offset;
                firstFailingRecord = record;
            }
        }
        simulation.storages.push_back(outcome);
    }

    if (progress && !progress(storageCount, storageCount))
        return simulation;

    switch (checkpoint.format) {
    case CheckpointFormat::Safetensors:
        // torch 2.x routes a path ending in .safetensors to safetensors.torch.load_file; torch 1.13
        // unpickles it and fails on its first byte. Neither is a pickle question.
        // Shards of a safetensors index are each loaded that way by from_pretrained.
        if (!old && (checkpoint.path.ends_with(".safetensors") || checkpoint.shardSet)) {
            if (mapLocation.kind == MapLocation::Kind::Dict)
                fail("Loading safetensors file with dict map_location is not supported. Use a device string "
                     "or "
                     "torch.device instead.");
            else
                simulation.loads = true;
        } else {
            fail("not a torch.load format: a safetensors file (load it with safetensors.torch.load_file)");
        }
        return simulation;
    case CheckpointFormat::Distributed:
        fail("not a torch.load format: a torch.distributed.checkpoint folder (load it into a state_dict "
             "with torch.distributed.checkpoint.load)");
        return simulation;
    case CheckpointFormat::ExportArchive:
        fail("not a torch.load format: a torch.export archive (load it with torch.export.load; torch.load "
             "fails "
             "with \"PytorchStreamReader failed locating file data.pkl: file not found\")");
        return simulation;
    case CheckpointFormat::NotACheckpoint:
        fail("not a checkpoint");
        return simulation;
    case CheckpointFormat::PlainPickle:
        fail("not a torch.load format: a plain pickle (pickle.dump) whose storages are torch.save files "
             "inside its bytes (load it with pickle.load)");
        return simulation;
    case CheckpointFormat::TorchScript:
        // torch.load dispatches to torch.jit.load, which takes only None, a string or a device.
        if (!old && simulation.weightsOnly) {
            fail(torchmessages::weightsOnlyTorchScript());
            return simulation;
        }
        if (mapLocation.kind == MapLocation::Kind::Dict) {
            fail(std::string(torchmessages::kTorchScriptMapLocationDict));
            return simulation;
        }
        break;
    case CheckpointFormat::TorchTar:
        if (!old && simulation.weightsOnly) {
            fail(torchmessages::weightsOnlyLegacyTar());
            return simulation;
        }
        break;
    case CheckpointFormat::TorchZip:
    case CheckpointFormat::TorchLegacy:
        break;
    case CheckpointFormat::TorchScriptJson:
        // torch.load finds no constants.pkl, so it reads the zip as torch.save's and finds no data.pkl.
        fail("PytorchStreamReader failed locating file data.pkl: file not found (TorchScript's model.json "
             "layout of PyTorch 1.0-1.3: only torch.jit.load of a torch with the legacy importer reads it)");
        return simulation;
    }

    // A Python 2 string that is not UTF-8 stops either unpickler where it stands (torch.load decodes
    // them with encoding='utf-8' unless told otherwise), as a raw UnicodeDecodeError.
    const PickleSection* undecodable = nullptr;
    if (checkpoint.format != CheckpointFormat::TorchScript)
        for (const PickleSection& section : checkpoint.pickles)
            if (section.run.undecodableStringOffset) {
                undecodable = &section;
                break;
            }
    auto before = [&](const std::string& record, std::uint64_t offset) {
        return !undecodable || record != undecodable->record
            || offset < *undecodable->run.undecodableStringOffset;
    };

    // The weights-only unpickler and the storage restores run interleaved in stream order: whichever
    // comes first is the error torch reports.
    if (simulation.weightsOnly
        && (checkpoint.format == CheckpointFormat::TorchZip
            || checkpoint.format == CheckpointFormat::TorchLegacy)) {
        // The verdict does not depend on devices: a caller that simulates many plans judges once.
        std::optional<WeightsOnlyVerdict> judged;
        if (!known.verdict || known.verdict->generation != generation || known.verdict->imports != imports)
            judged = judgeWeightsOnly(checkpoint, generation, imports);
        const WeightsOnlyVerdict& verdict = judged ? *judged : *known.verdict;
        if (verdict.firstRejectionOffset && !verdict.torchMessage.empty()) {
            const bool rejectionFirst = (!firstFailing || verdict.firstRejectionRecord != firstFailingRecord
                                            || *verdict.firstRejectionOffset < firstFailingOffset)
                && before(verdict.firstRejectionRecord, *verdict.firstRejectionOffset);
            if (rejectionFirst) {
                fail(verdict.torchMessage);
                return simulation;
            }
        }
    }
    // weights_only=False on torch 1.13: a torch attribute added later (_rebuild_tensor_v3, a newer
    // dtype) stops find_class where the unpickler meets it, as Python 3.11's pickle words it.
    if (old && !simulation.weightsOnly
        && (checkpoint.format == CheckpointFormat::TorchZip
            || checkpoint.format == CheckpointFormat::TorchLegacy)) {
        const MissingIn113 missing = firstMissingIn113(checkpoint);
        if (missing.global
            && (!firstFailing || missing.section->record != firstFailingRecord
                || missing.global->offset < firstFailingOffset)
            && before(missing.section->record, missing.global->offset)
            && !importFailsBefore(
                checkpoint, importableModules, missing.section->record, missing.global->offset)) {
            const std::string file
                = missing.global->module == "torch" ? "torch/__init__.py" : "torch/_utils.py";
            fail("Can't get attribute '" + missing.global->name + "' on <module '" + missing.global->module
                + "' from '<site-packages>/" + file + "'>");
            simulation.errorType = "AttributeError";
            return simulation;
        }
    }
    // weights_only=False: the unpickler imports each GLOBAL's module where it meets it; a missing
    // one stops the load there, unless a storage failed to restore earlier in the stream.
    if (!simulation.weightsOnly) {
        for (const ImportRequirement& requirement : importRequirements(checkpoint, importableModules)) {
            if (requirement.importable)
                continue;
            const bool importFirst = (!firstFailing || requirement.record != firstFailingRecord
                                         || requirement.offset < firstFailingOffset)
                && before(requirement.record, requirement.offset);
            if (importFirst) {
                fail(missingImportMessage(requirement, generation));
                simulation.errorType = requirement.provider == ImportProvider::MainScript
                    ? "AttributeError"
                    : "ModuleNotFoundError";
                return simulation;
            }
            break;
        }
    }
    if (undecodable && (!firstFailing || !before(firstFailingRecord, firstFailingOffset))) {
        fail(undecodable->run.undecodableStringError);
        simulation.errorType = "UnicodeDecodeError";
        return simulation;
    }
    if (firstFailing) {
        const auto& message = simulation.storages[*firstFailing].error;
        // 1.13 wraps every RuntimeError of a weights-only load; 2.x lets device errors through.
        if (old && simulation.weightsOnly && checkpoint.format != CheckpointFormat::TorchScript)
            fail(torchmessages::weightsOnlyFailure(message, TorchGeneration::Torch113));
        else
            fail(message);
        return simulation;
    }
    simulation.loads = true;
    return simulation;
}

} // namespace ckpt
