// SPDX-License-Identifier: MIT
// The weights_only verdict: what torch.load(weights_only=True) of torch 1.13 and of 2.6+ would say
// about a checkpoint, found without unpickling anything (torch-format.md §6).
//
// The pickle bytes are walked exactly as torch's weights-only unpickler reads them, stopping where
// it stops: the first GLOBAL it does not allow or the first opcode it does not know. Structural
// checks (BUILD on a non-allowlisted type, ...) can only fire after an allowed GLOBAL produced such
// an object, which the default allowlists never do, so they are not modelled.

#include "core/triage/weightsonlyverdict.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/pickle/opcodes.h"
#include "core/pickle/picklesummary.h"
#include "core/safety/picklecatalog.h"
#include "core/triage/torchmessages.h"

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

const char* globalVerdictName(GlobalVerdict verdict)
{
    switch (verdict) {
    case GlobalVerdict::Allowed:
        return "allowed";
    case GlobalVerdict::NeedsAllowlist:
        return "needs-allowlist";
    case GlobalVerdict::Blocked:
        return "blocked";
    case GlobalVerdict::Unknown:
        return "unknown";
    }
    return "unknown";
}

const char* safetyRatingName(SafetyRating rating)
{
    switch (rating) {
    case SafetyRating::LoadsWithWeightsOnly:
        return "loads-with-weights-only";
    case SafetyRating::NeedsAllowlist:
        return "needs-allowlist";
    case SafetyRating::Dangerous:
        return "dangerous";
    case SafetyRating::NotApplicable:
        return "not-applicable";
    }
    return "not-applicable";
}

namespace {

bool isAllowed(std::string_view path, TorchGeneration generation, const TorchImports& imports)
{
    return onTorchDefaultAllowlist(path, generation, imports);
}

std::pair<std::string, std::string> mapPython2Name(const std::string& module, const std::string& name)
{
    return python3Name(module, name);
}

// The name torch's unpickler looks up: 2.x maps Python 2 names with its own (smaller) tables.
std::pair<std::string, std::string> torchName(
    const std::string& module, const std::string& name, TorchGeneration generation)
{
    return generation == TorchGeneration::Torch26Plus ? torch2Python3Name(module, name)
                                                      : std::pair {module, name};
}

// A global the catalog knows to be dangerous, with the reason (the verdict is allowlist-first:
// unknown names are "Unknown", which rates the file dangerous too).
std::optional<std::string> blockedReason(const std::string& module, const std::string& name)
{
    return knownDanger(module + "." + name);
}

// Where the weights-only unpickler stops in one pickle, read from its bytes.
struct Rejection {
    std::uint64_t offset = 0;
    std::string innerMessage;
    bool isGlobal = false;
};

bool opcodeAccepted(std::uint8_t op, TorchGeneration generation)
{
    switch (op) {
    case pickleop::GLOBAL:
    case pickleop::NEWOBJ:
    case pickleop::REDUCE:
    case pickleop::BUILD:
    case pickleop::APPEND:
    case pickleop::APPENDS:
    case pickleop::SETITEM:
    case pickleop::SETITEMS:
    case pickleop::MARK:
    case pickleop::TUPLE:
    case pickleop::TUPLE1:
    case pickleop::TUPLE2:
    case pickleop::TUPLE3:
    case pickleop::NONE:
    case pickleop::NEWFALSE:
    case pickleop::NEWTRUE:
    case pickleop::EMPTY_TUPLE:
    case pickleop::EMPTY_LIST:
    case pickleop::EMPTY_DICT:
    case pickleop::EMPTY_SET:
    case pickleop::BININT:
    case pickleop::BININT1:
    case pickleop::BININT2:
    case pickleop::BINUNICODE:
    case pickleop::SHORT_BINSTRING:
    case pickleop::BINPERSID:
    case pickleop::BINGET:
    case pickleop::LONG_BINGET:
    case pickleop::BINPUT:
    case pickleop::LONG_BINPUT:
    case pickleop::LONG1:
    case pickleop::PROTO:
    case pickleop::STOP:
        return true;
    case pickleop::BINFLOAT: // 1.13's unpickler lacks it ("Unsupported operand 71")
        return generation == TorchGeneration::Torch26Plus;
    default:
        return false;
    }
}

// Walks one pickle as the weights-only unpickler would and returns where it gives up, if it does.
// nullopt from an unreadable pickle too: then the caller falls back to the recorded globals.
// `data` lies at `fileOffset` in `file` where a file is given: the pages walked go back to the page
// cache a few MB at a time (at 200,000 legacy storages the main pickle's 22 MB were resident at
// the peak of check, beside the graph and the records).
std::optional<std::optional<Rejection>> scanPickle(ByteView data, TorchGeneration generation,
    const TorchImports& imports, const MappedFile* file = nullptr, std::uint64_t fileOffset = 0)
{
    constexpr std::uint64_t kPiece = std::uint64_t(4) << 20;
    std::uint64_t released = 0;
    std::uint64_t pos = 0;
    auto readLine = [&](std::string& out) {
        const auto start = pos;
        while (pos < data.size() && data[pos] != '\n')
            ++pos;
        if (pos >= data.size())
            return false;
        out.assign(reinterpret_cast<const char*>(data.data()) + start, pos - start);
        ++pos;
        return true;
    };
    while (pos < data.size()) {
        if (file && pos - released >= kPiece) {
            file->releaseResidentPages(fileOffset + released, pos - released);
            released = pos;
        }
        const auto at = pos;
        const std::uint8_t op = data[pos++];
        if (!opcodeAccepted(op, generation))
            return std::optional<Rejection>(
                Rejection {at, "Unsupported operand " + std::to_string(op), false});
        std::uint64_t skip = 0;
        switch (op) {
        case pickleop::GLOBAL: {
            std::string module, name;
            if (!readLine(module) || !readLine(name))
                return std::nullopt;
            const auto [mappedModule, mappedName] = torchName(module, name, generation);
            if ((generation == TorchGeneration::Torch26Plus && torch2BlocksModule(mappedModule))
                || !isAllowed(mappedModule + "." + mappedName, generation, imports))
                return std::optional<Rejection>(Rejection {
                    at, torchmessages::unsupportedGlobal(mappedModule, mappedName, generation), true});
            continue;
        }
        case pickleop::BININT:
        case pickleop::LONG_BINGET:
        case pickleop::LONG_BINPUT:
            skip = 4;
            break;
        case pickleop::BININT1:
        case pickleop::BINGET:
        case pickleop::BINPUT:
        case pickleop::PROTO:
            skip = 1;
            break;
        case pickleop::BININT2:
            skip = 2;
            break;
        case pickleop::BINFLOAT:
            skip = 8;
            break;
        case pickleop::BINUNICODE: {
            auto length = readLittleEndian<std::uint32_t>(data, pos);
            if (!length)
                return std::nullopt;
            skip = 4 + *length;
            break;
        }
        case pickleop::SHORT_BINSTRING:
        case pickleop::LONG1:
            if (pos >= data.size())
                return std::nullopt;
            skip = 1 + data[pos];
            break;
        case pickleop::STOP:
            return std::optional<Rejection>();
        default:
            break;
        }
        pos += skip;
    }
    return std::nullopt;
}

// The pickles torch.load reads with the weights-only unpickler: data.pkl of a torch zip, the main
// pickle of the legacy format (its header pickles use only accepted opcodes and no GLOBAL).
bool readByTorchLoad(const Checkpoint& checkpoint, const PickleSection& section)
{
    if (checkpoint.format == CheckpointFormat::TorchZip)
        return section.record.ends_with("data.pkl");
    if (checkpoint.format == CheckpointFormat::TorchLegacy)
        return section.record == "main pickle";
    return false;
}

std::string importLine(const std::string& path)
{
    const auto dot = path.rfind('.');
    if (dot == std::string::npos)
        return {};
    return "from " + path.substr(0, dot) + " import " + path.substr(dot + 1);
}

} // namespace

WeightsOnlyVerdict judgeWeightsOnly(
    const Checkpoint& checkpoint, TorchGeneration generation, const TorchImports& imports)
{
    if (checkpoint.graph.released())
        throw std::logic_error("judgeWeightsOnly: the pickle graph was released before it was judged");
    WeightsOnlyVerdict verdict;
    verdict.generation = generation;
    verdict.imports = imports;
    if (!formatCapabilities(checkpoint.format).weightsOnlyJudged) {
        verdict.rating = SafetyRating::NotApplicable;
        return verdict;
    }

    // Classify every GLOBAL of every pickle, once per name (first occurrence).
    std::set<std::string> seen;
    std::set<std::string> blockedNames;
    std::set<std::string> unknownNames; // not vetted: the file cannot be rated loadable
    std::vector<std::string> rejectedNames; // in first-seen order, for add_safe_globals
    for (const auto& section : checkpoint.pickles) {
        for (const auto& global : section.run.globals) {
            const std::string written = global.module + "." + global.name;
            if (!seen.insert(written).second)
                continue;
            auto [module, name] = torchName(global.module, global.name, generation);
            // Blocked names are judged on the Python 3 name whatever the generation: __builtin__.eval
            // is eval.
            const auto [module3, name3] = mapPython2Name(global.module, global.name);
            const std::string path = module + "." + name;
            const std::string path3 = module3 + "." + name3;
            GlobalClassification classification;
            classification.name = written;
            classification.offset = global.offset;
            classification.record = section.record;
            classification.module = global.module;
            classification.attribute = global.name;
            classification.safetyName = path3;
            const auto inert = findInertGlobal(module3, name3);
            if (const auto danger = blockedReason(module3, name3); danger && !inert) {
                classification.verdict = GlobalVerdict::Blocked;
                classification.reason = *danger;
                if (path3 != written)
                    classification.reason += " (" + written + " is " + path3 + ")";
                blockedNames.insert(written);
            } else if (isAllowed(path, generation, imports)) {
                classification.verdict = GlobalVerdict::Allowed;
                classification.reason = std::string("on ") + torchGenerationName(generation)
                    + "'s weights_only list"
                    + (imports.modules.empty() ? std::string() : " (after import " + imports.text() + ")");
            } else if (module.starts_with("__torch__")) {
                classification.verdict = GlobalVerdict::NeedsAllowlist;
                classification.reason
                    = "a TorchScript class type: loaded by torch.jit.load, not by the unpickler";
            } else if (inert) {
                classification.verdict = GlobalVerdict::NeedsAllowlist;
                classification.reason = inert->reason + "; vetted inert, but not on the weights_only list of "
                    + simulatedTorchName(generation, imports);
                if (inert->offerAllowlist)
                    rejectedNames.push_back(path);
            } else {
                // Allowlist-first: a name the vetted catalog does not hold may run anything.
                classification.verdict = GlobalVerdict::Unknown;
                classification.reason = "not on the vetted list of inert classes: cannot verify what "
                    + written + " does; treat as dangerous";
                if (const auto base = vettedBaseOf(path3))
                    classification.reason += " (a subclass of the vetted " + *base
                        + " from another package: its own code is not vetted)";
                unknownNames.insert(written);
            }
            verdict.globals.push_back(std::move(classification));
        }
    }

    // Opcodes the unpickler refuses, over the pickles torch.load would read.
    for (const auto& section : checkpoint.pickles) {
        if (!readByTorchLoad(checkpoint, section))
            continue;
        for (std::size_t op = 0; op < 256; ++op)
            if (section.run.opcodesSeen.test(op)
                && !opcodeAccepted(static_cast<std::uint8_t>(op), generation)) {
                std::string opName = pickleOpcodeName(static_cast<std::uint8_t>(op));
                if (std::find(verdict.rejectedOpcodes.begin(), verdict.rejectedOpcodes.end(), opName)
                    == verdict.rejectedOpcodes.end())
                    verdict.rejectedOpcodes.push_back(opName);
            }
    }

    // Calls of blocked globals: the chain that would run under weights_only=False.
    // Only when some name is blocked or unknown: a checkpoint's million rebuild calls then need no
    // name composed each (two heap strings per call were a tenth of this verdict at 1M tensors).
    const auto& graph = checkpoint.graph;
    const bool anySuspectName = !blockedNames.empty() || !unknownNames.empty();
    for (NodeId id = 0; anySuspectName && id < graph.size(); ++id) {
        const auto kind = graph.kind(id);
        if (kind != NodeKind::Call && kind != NodeKind::NewObject)
            continue;
        const auto callee = graph.callee(id);
        if (graph.kind(callee) != NodeKind::Global)
            continue;
        const std::string calleeName = graph.qualifiedName(callee);
        if (!blockedNames.contains(calleeName) && !unknownNames.contains(calleeName))
            continue;
        if (verdict.dangerousCallChains.size() < 20)
            verdict.dangerousCallChains.push_back(summarisePickleValue(graph, id));
    }

    // Where the weights-only unpickler stops first, and what it says.
    for (const auto& section : checkpoint.pickles) {
        if (!readByTorchLoad(checkpoint, section))
            continue;
        std::optional<std::optional<Rejection>> scanned;
        if (checkpoint.file) {
            const auto bytes = checkpoint.file->bytes();
            if (auto view = subView(bytes, section.fileOffset, section.run.endOffset);
                view && !view->empty() && view->back() == '.') {
                scanned = scanPickle(*view, generation, imports, checkpoint.file.get(), section.fileOffset);
                checkpoint.file->releaseResidentPages(section.fileOffset, view->size());
            }
        }
        if (!scanned) {
            // Bytes not at hand (compressed record, truncated): the first rejected GLOBAL by offset.
            for (const auto& global : section.run.globals) {
                auto [module, name] = torchName(global.module, global.name, generation);
                if (!isAllowed(module + "." + name, generation, imports)) {
                    scanned = std::optional<Rejection>(Rejection {
                        global.offset, torchmessages::unsupportedGlobal(module, name, generation), true});
                    break;
                }
            }
        }
        if (scanned && *scanned) {
            verdict.firstRejectionOffset = (*scanned)->offset;
            verdict.firstRejectionRecord = section.record;
            verdict.torchMessage = torchmessages::weightsOnlyFailure((*scanned)->innerMessage, generation);
            break;
        }
    }

    if (checkpoint.format == CheckpointFormat::TorchScript) {
        // torch.load hands TorchScript to torch.jit.load; 2.6+ refuses that with weights_only=True.
        verdict.rating = blockedNames.empty() && unknownNames.empty() ? SafetyRating::NotApplicable
                                                                      : SafetyRating::Dangerous;
        if (generation == TorchGeneration::Torch26Plus)
            verdict.torchMessage = torchmessages::weightsOnlyTorchScript();
        verdict.firstRejectionOffset.reset();
        return verdict;
    }
    if (checkpoint.format == CheckpointFormat::TorchTar && generation == TorchGeneration::Torch26Plus) {
        verdict.torchMessage = torchmessages::weightsOnlyLegacyTar();
        verdict.firstRejectionOffset = 0;
    }

    if (!blockedNames.empty() || !unknownNames.empty()) {
        verdict.rating = SafetyRating::Dangerous;
    } else if (verdict.torchMessage.empty() && verdict.rejectedOpcodes.empty() && rejectedNames.empty()) {
        verdict.rating = SafetyRating::LoadsWithWeightsOnly;
    } else {
        verdict.rating = SafetyRating::NeedsAllowlist;
    }

    if (!rejectedNames.empty() && verdict.rating == SafetyRating::NeedsAllowlist) {
        std::string imports, list;
        for (const auto& path : rejectedNames) {
            imports += importLine(path) + "\n";
            list += (list.empty() ? "" : ", ") + path.substr(path.rfind('.') + 1);
        }
        verdict.addSafeGlobalsCall
            = "import torch\n" + imports + "torch.serialization.add_safe_globals([" + list + "])";
    }
    return verdict;
}

std::shared_ptr<const WeightsOnlyVerdict> SharedWeightsOnlyVerdicts::get(
    const Checkpoint& checkpoint, TorchGeneration generation, const TorchImports& imports)
{
    const std::lock_guard lock(m_mutex); // held while judging: a second caller waits for the answer
    ++m_asked;
    if (!m_checkpoint)
        m_checkpoint = &checkpoint;
    if (m_checkpoint != &checkpoint)
        return std::make_shared<const WeightsOnlyVerdict>(judgeWeightsOnly(checkpoint, generation, imports));
    for (const std::shared_ptr<const WeightsOnlyVerdict>& judged : m_judged)
        if (judged->generation == generation && judged->imports == imports)
            return judged;
    constexpr std::size_t kKept = 8; // imports the person tried one after another
    if (m_judged.size() == kKept)
        m_judged.erase(m_judged.begin());
    ++m_judgements;
    return m_judged.emplace_back(
        std::make_shared<const WeightsOnlyVerdict>(judgeWeightsOnly(checkpoint, generation, imports)));
}

std::size_t SharedWeightsOnlyVerdicts::asked() const
{
    const std::lock_guard lock(m_mutex);
    return m_asked;
}

std::size_t SharedWeightsOnlyVerdicts::judged() const
{
    const std::lock_guard lock(m_mutex);
    return m_judgements;
}

} // namespace ckpt
