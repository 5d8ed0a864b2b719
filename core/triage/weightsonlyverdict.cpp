// The weights_only verdict: what torch.load(weights_only=True) of torch 1.13 and of 2.6+ would say
// about a checkpoint, found without unpickling anything (torch-format.md §6).
//
// The pickle bytes are walked exactly as torch's weights-only unpickler reads them, stopping where
// it stops: the first GLOBAL it does not allow or the first opcode it does not know. Structural
// checks (BUILD on a non-allowlisted type, ...) can only fire after an allowed GLOBAL produced such
// an object, which the default allowlists never do, so they are not modelled.

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/pickle/opcodes.h"
#include "core/triage/picklecatalog.h"
#include "core/triage/triage.h"

#include <algorithm>
#include <array>
#include <set>
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

bool isAllowed(std::string_view path, TorchGeneration generation)
{
    return onTorchDefaultAllowlist(path, generation);
}

std::pair<std::string, std::string> mapPython2Name(std::string module, std::string name)
{
    return python3Name(std::move(module), std::move(name));
}

// A global the catalog knows to be dangerous, with the reason (the verdict is allowlist-first:
// unknown names are "Unknown", which rates the file dangerous too).
std::optional<std::string> blockedReason(const std::string& module, const std::string& name)
{
    return knownDanger(module + "." + name);
}

std::string repr(std::string_view text, std::size_t limit)
{
    const bool hasSingle = text.find('\'') != std::string_view::npos;
    const bool hasDouble = text.find('"') != std::string_view::npos;
    const char quote = hasSingle && !hasDouble ? '"' : '\'';
    std::string out(1, quote);
    std::size_t count = 0;
    for (char c : text) {
        if (count++ >= limit) {
            out += "...";
            break;
        }
        if (c == quote || c == '\\')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    out += quote;
    return out;
}

// A call's arguments in Python syntax, summarised: strings cut, nested calls kept (they are the
// chain a person needs to see: eval(compile(...))).
std::string summarise(const PickleGraph& graph, NodeId id, int depth)
{
    if (depth > 4)
        return "...";
    switch (graph.kind(id)) {
    case NodeKind::None:
        return "None";
    case NodeKind::Bool:
        return graph.intValue(id) ? "True" : "False";
    case NodeKind::Int:
        return std::to_string(graph.intValue(id));
    case NodeKind::Float:
        return std::to_string(graph.floatValue(id));
    case NodeKind::String:
        return repr(graph.text(id), 120);
    case NodeKind::Bytes:
        return "b" + repr(graph.text(id), 60);
    case NodeKind::Global:
        return graph.qualifiedName(id);
    case NodeKind::Call:
    case NodeKind::NewObject: {
        auto callee = graph.calleeName(id);
        if (callee.empty())
            callee = summarise(graph, graph.callee(id), depth + 1);
        std::string out = callee + "(";
        const auto args = graph.arguments(id);
        if (graph.kind(args) == NodeKind::Tuple) {
            const auto items = graph.sequence(args);
            for (std::size_t i = 0; i < items.size(); ++i) {
                if (i)
                    out += ", ";
                if (i >= 4) {
                    out += "...";
                    break;
                }
                out += summarise(graph, items[i], depth + 1);
            }
        } else {
            out += "*" + summarise(graph, args, depth + 1);
        }
        return out + ")";
    }
    case NodeKind::Tuple:
    case NodeKind::List: {
        const auto items = graph.sequence(id);
        const bool tuple = graph.kind(id) == NodeKind::Tuple;
        std::string out = tuple ? "(" : "[";
        for (std::size_t i = 0; i < items.size() && i < 4; ++i)
            out += (i ? ", " : "") + summarise(graph, items[i], depth + 1);
        if (items.size() > 4)
            out += ", ...";
        if (tuple && items.size() == 1)
            out += ",";
        return out + (tuple ? ")" : "]");
    }
    case NodeKind::Dict:
        return "{...}";
    default:
        return "<...>";
    }
}

// Where the weights-only unpickler stops in one pickle, read from its bytes.
struct Rejection {
    std::uint64_t offset = 0;
    std::string innerMessage;
    bool isGlobal = false;
};

constexpr std::string_view kUnsafe26
    = "In PyTorch 2.6, we changed the default value of the `weights_only` argument "
      "in `torch.load` from `False` to `True`. Re-running `torch.load` with "
      "`weights_only` set to `False` will likely succeed, but it can result in "
      "arbitrary code execution. Do it only if you got the file from a trusted "
      "source.";
constexpr std::string_view kDocs26
    = "\n\nCheck the documentation of torch.load to learn more about types accepted "
      "by default with weights_only "
      "https://pytorch.org/docs/stable/generated/torch.load.html.";

// The inner WeightsUnpickler message for a rejected GLOBAL.
std::string globalRejectionMessage(
    const std::string& module, const std::string& name, TorchGeneration generation)
{
    if (generation == TorchGeneration::Torch113)
        return "Unsupported class " + module + "." + name;
    static const std::array<std::string_view, 3> njt {"torch.nested._internal.nested_tensor.NestedTensor",
        "torch.nested._internal.nested_tensor._rebuild_njt", "torch._dynamo.decorators._DimRange"};
    static const std::array<std::string_view, 7> dtensor {"torch.distributed.device_mesh.DeviceMesh",
        "torch.distributed.tensor._dtensor_spec.DTensorSpec",
        "torch.distributed.tensor._dtensor_spec.TensorMeta", "torch.distributed.tensor.DTensor",
        "torch.distributed.tensor.placement_types.Partial",
        "torch.distributed.tensor.placement_types.Replicate",
        "torch.distributed.tensor.placement_types.Shard"};
    std::string path = module + "." + name;
    if (module == "sys" || module == "os" || module == "posix" || module == "nt")
        return "Trying to load unsupported GLOBAL " + path + " whose module " + module + " is blocked.";
    if (std::find(njt.begin(), njt.end(), path) != njt.end())
        return "``torch.nested`` and ``torch._dynamo`` must be imported to load nested jagged tensors (NJTs)";
    if (std::find(dtensor.begin(), dtensor.end(), path) != dtensor.end())
        return "``torch.distributed.tensor`` must be imported to load DTensors";
    // torch 2.x drops a leading "builtins." from the name it prints (builtins.eval -> eval).
    if (path.starts_with("builtins")) {
        path = path.substr(8);
        path = !path.empty() && path[0] == '.' ? path.substr(1) : "builtins" + path;
    }
    return "Unsupported global: GLOBAL " + path
        + " was not an allowed global by default. Please use `torch.serialization.add_safe_globals([" + path
        + "])` or the `torch.serialization.safe_globals([" + path
        + "])` context manager to allowlist this global if you trust this class/function.";
}

// torch.load's wrapping of the inner message (1.13: serialization.py UNSAFE_MESSAGE; 2.x:
// _get_wo_message), i.e. str() of the exception torch.load raises.
std::string wrapWeightsOnlyMessage(const std::string& inner, TorchGeneration generation)
{
    if (generation == TorchGeneration::Torch113)
        return "Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will "
               "likely "
               "succeed, but it can result in arbitrary code execution.Do it only if you get the file from a "
               "trusted source. WeightsUnpickler error: "
            + inner;
    const std::string unsafe(kUnsafe26);
    if (inner.find("was not an allowed global by default.") != std::string::npos)
        return "Weights only load failed. This file can still be loaded, to do so you have two options, "
               "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) "
            + unsafe
            + "\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in "
              "the "
              "following error message.\n\tWeightsUnpickler error: "
            + inner + std::string(kDocs26);
    if (inner.find(" must be imported to load") != std::string::npos)
        return "Weights only load failed. " + inner + "\n " + unsafe + "\n";
    std::string out = "Weights only load failed. " + unsafe + "\n";
    if (inner.find(" is blocked.") == std::string::npos)
        out += "Please file an issue with the following so that we can make `weights_only=True` compatible "
               "with "
               "your use case: WeightsUnpickler error: ";
    return out + "\n\n" + inner + std::string(kDocs26);
}

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
std::optional<std::optional<Rejection>> scanPickle(ByteView data, TorchGeneration generation)
{
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
            std::string mappedModule = module, mappedName = name;
            if (generation == TorchGeneration::Torch26Plus)
                std::tie(mappedModule, mappedName) = mapPython2Name(module, name);
            if (!isAllowed(mappedModule + "." + mappedName, generation))
                return std::optional<Rejection>(
                    Rejection {at, globalRejectionMessage(mappedModule, mappedName, generation), true});
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

WeightsOnlyVerdict judgeWeightsOnly(const Checkpoint& checkpoint, TorchGeneration generation)
{
    WeightsOnlyVerdict verdict;
    verdict.generation = generation;
    if (checkpoint.format != CheckpointFormat::TorchZip && checkpoint.format != CheckpointFormat::TorchLegacy
        && checkpoint.format != CheckpointFormat::TorchScript
        && checkpoint.format != CheckpointFormat::TorchTar) {
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
            auto [module, name] = generation == TorchGeneration::Torch26Plus
                ? mapPython2Name(global.module, global.name)
                : std::pair {global.module, global.name};
            // Blocked names are judged on the Python 3 name whatever the generation: __builtin__.eval
            // is eval.
            const auto [module3, name3] = mapPython2Name(global.module, global.name);
            const std::string path = module + "." + name;
            const std::string path3 = module3 + "." + name3;
            GlobalClassification classification;
            classification.name = written;
            classification.offset = global.offset;
            classification.record = section.record;
            const auto inert = findInertGlobal(module3, name3);
            if (const auto danger = blockedReason(module3, name3); danger && !inert) {
                classification.verdict = GlobalVerdict::Blocked;
                classification.reason = *danger;
                if (path3 != written)
                    classification.reason += " (" + written + " is " + path3 + ")";
                blockedNames.insert(written);
            } else if (isAllowed(path, generation)) {
                classification.verdict = GlobalVerdict::Allowed;
                classification.reason = std::string("on ") + torchGenerationName(generation)
                    + "'s default weights_only allowlist";
            } else if (module.starts_with("__torch__")) {
                classification.verdict = GlobalVerdict::NeedsAllowlist;
                classification.reason
                    = "a TorchScript class type: loaded by torch.jit.load, not by the unpickler";
            } else if (inert) {
                classification.verdict = GlobalVerdict::NeedsAllowlist;
                classification.reason = inert->reason + "; vetted inert, but not on "
                    + std::string(torchGenerationName(generation)) + "'s default allowlist";
                if (inert->offerAllowlist)
                    rejectedNames.push_back(path);
            } else {
                // Allowlist-first: a name the vetted catalog does not hold may run anything.
                classification.verdict = GlobalVerdict::Unknown;
                classification.reason = "not on the vetted list of inert classes: cannot verify what "
                    + written + " does; treat as dangerous";
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
    const auto& graph = checkpoint.graph;
    for (NodeId id = 0; id < graph.size(); ++id) {
        const auto kind = graph.kind(id);
        if (kind != NodeKind::Call && kind != NodeKind::NewObject)
            continue;
        const auto callee = graph.callee(id);
        if (graph.kind(callee) != NodeKind::Global)
            continue;
        if (!blockedNames.contains(graph.qualifiedName(callee))
            && !unknownNames.contains(graph.qualifiedName(callee)))
            continue;
        if (verdict.dangerousCallChains.size() < 20)
            verdict.dangerousCallChains.push_back(summarise(graph, id, 0));
    }

    // Where the weights-only unpickler stops first, and what it says.
    for (const auto& section : checkpoint.pickles) {
        if (!readByTorchLoad(checkpoint, section))
            continue;
        std::optional<std::optional<Rejection>> scanned;
        if (checkpoint.file) {
            const auto bytes = checkpoint.file->bytes();
            if (auto view = subView(bytes, section.fileOffset, section.run.endOffset);
                view && !view->empty() && view->back() == '.')
                scanned = scanPickle(*view, generation);
        }
        if (!scanned) {
            // Bytes not at hand (compressed record, truncated): the first rejected GLOBAL by offset.
            for (const auto& global : section.run.globals) {
                auto [module, name] = generation == TorchGeneration::Torch26Plus
                    ? mapPython2Name(global.module, global.name)
                    : std::pair {global.module, global.name};
                if (!isAllowed(module + "." + name, generation)) {
                    scanned = std::optional<Rejection>(
                        Rejection {global.offset, globalRejectionMessage(module, name, generation), true});
                    break;
                }
            }
        }
        if (scanned && *scanned) {
            verdict.firstRejectionOffset = (*scanned)->offset;
            verdict.firstRejectionRecord = section.record;
            verdict.torchMessage = wrapWeightsOnlyMessage((*scanned)->innerMessage, generation);
            break;
        }
    }

    if (checkpoint.format == CheckpointFormat::TorchScript) {
        // torch.load hands TorchScript to torch.jit.load; 2.6+ refuses that with weights_only=True.
        verdict.rating = blockedNames.empty() && unknownNames.empty() ? SafetyRating::NotApplicable
                                                                      : SafetyRating::Dangerous;
        if (generation == TorchGeneration::Torch26Plus)
            verdict.torchMessage = "Cannot use ``weights_only=True`` with TorchScript archives passed to "
                                   "``torch.load``. "
                + std::string(kUnsafe26);
        verdict.firstRejectionOffset.reset();
        return verdict;
    }
    if (checkpoint.format == CheckpointFormat::TorchTar && generation == TorchGeneration::Torch26Plus) {
        verdict.torchMessage = "Cannot use ``weights_only=True`` with files saved in the legacy .tar format. "
            + std::string(kUnsafe26);
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

} // namespace ckpt
