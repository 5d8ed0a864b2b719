// SPDX-License-Identifier: MIT
#include "core/write/extractwriter.h"
#include "core/io/inputdescriptor.h"

#include "core/format/inflate.h"
#include "core/format/ziparchive.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/dtype.h"
#include "core/model/quantgroups.h"
#include "core/pickle/pickleemitter.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/read/storagebytes.h"
#include "core/write/floatcast.h"
#include "core/write/readbackverifier.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <set>
#include <unistd.h>
#include <unordered_map>

namespace ckpt {

namespace {

// torch.save(obj, path) names the archive after the file: basename without its last extension.
std::string archiveNameFor(const std::string& outputPath)
{
    std::string name = outputPath.substr(outputPath.find_last_of('/') + 1);
    if (auto dot = name.find_last_of('.'); dot != std::string::npos && dot > 0)
        name = name.substr(0, dot);
    const bool ascii = std::all_of(
        name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80 && c != '/'; });
    if (name.empty() || !ascii)
        return "archive";
    return name;
}

bool underPrefix(std::string_view name, std::string_view prefix)
{
    return prefix.empty() || name == prefix
        || (name.size() > prefix.size() && name.starts_with(prefix) && name[prefix.size()] == '.');
}

std::string relativeName(std::string_view name, std::string_view root)
{
    if (root.empty())
        return std::string(name);
    return name.size() > root.size() ? std::string(name.substr(root.size() + 1)) : std::string();
}

bool holdsTensors(const Checkpoint& checkpoint, std::uint32_t treeNode)
{
    std::vector<std::uint32_t> stack {treeNode};
    while (!stack.empty()) {
        const TreeNode& node = checkpoint.tree[stack.back()];
        stack.pop_back();
        if (node.kind == TreeNodeKind::Tensor)
            return true;
        stack.insert(stack.end(), node.children.begin(), node.children.end());
    }
    return false;
}

// Why a tensor cannot be part of a plain state_dict written by this tool, or empty.
std::string unwritableReason(const Checkpoint& checkpoint, const TensorEntry& tensor)
{
    if (tensor.layout != TensorLayout::Strided)
        return std::string(tensorLayoutName(tensor.layout))
            + " tensor (only strided tensors are written; their parts are listed on their own)";
    if (!tensor.subclass.empty() && tensor.subclass != "torch.nn.parameter.Parameter")
        return "tensor subclass " + tensor.subclass;
    if (tensor.storage < 0)
        return "tensor without a storage";
    if (tensor.deviceRecordedOutsideStorage)
        return "tensor whose device is recorded outside its storage";
    if (!tensor.stride || !tensor.storageOffset)
        return "tensor without stride or offset";
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
    if (!storage.bytesReadable())
        return "its storage's bytes are not complete in the file";
    if (!dtypeByName(tensor.dtype))
        return "dtype '" + tensor.dtype + "' is unknown";
    return {};
}

// Names a classes/function of the input that the output needs no more than it did; the ones the
// output writes itself are left out.
bool writtenByExtract(const std::string& module, const std::string& name)
{
    if (module == "collections" && name == "OrderedDict")
        return true;
    if (module == "torch._utils" && name.starts_with("_rebuild_tensor"))
        return true;
    if ((module == "torch" || module == "torch.storage") && name.ends_with("Storage"))
        return true;
    return module == "torch" && dtypeByName(name).has_value();
}

// The names a pickled nn.Module contributes to its state_dict(): its _parameters and _buffers
// (without None entries and non-persistent buffers) and its _modules. Nothing when `object` does
// not look like a module's pickle.
std::optional<std::set<std::string>> moduleStateNames(const PickleGraph& graph, NodeId object)
{
    const ContainerBody* body = graph.bodyOf(object);
    if (!body)
        return std::nullopt;
    std::set<std::string> names;
    std::set<std::string> nonPersistent;
    bool sawModuleDicts = false;
    auto keysOf = [&](NodeId dict, bool skipNone) {
        std::vector<std::string> keys;
        if (const ContainerBody* entries = graph.bodyOf(dict))
            for (std::size_t k = 0; k + 1 < entries->dictItems.size(); k += 2)
                if (!skipNone || graph.kind(entries->dictItems[k + 1]) != NodeKind::None)
                    keys.emplace_back(graph.text(entries->dictItems[k]));
        return keys;
    };
    for (NodeId state : body->states) {
        const ContainerBody* attributes = graph.bodyOf(state);
        if (!attributes)
            continue;
        const auto& items = attributes->dictItems;
        for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
            const std::string_view attribute = graph.text(items[i]);
            const NodeId value = items[i + 1];
            if (attribute == "_parameters" || attribute == "_buffers" || attribute == "_modules") {
                sawModuleDicts = true;
                for (std::string& key : keysOf(value, true))
                    names.insert(std::move(key));
            } else if (attribute == "_non_persistent_buffers_set") {
                // set() pickles as builtins.set([...]) (protocol 2) or EMPTY_SET + ADDITEMS (4+).
                NodeId set = value;
                if (graph.kind(value) == NodeKind::Call)
                    set = graph.tupleItem(graph.arguments(value), 0);
                for (NodeId item : graph.sequence(set))
                    nonPersistent.emplace(graph.text(item));
                if (const ContainerBody* setBody = graph.bodyOf(set))
                    for (NodeId item : setBody->items)
                        nonPersistent.emplace(graph.text(item));
            }
        }
    }
    if (!sawModuleDicts)
        return std::nullopt;
    for (const std::string& name : nonPersistent)
        names.erase(name);
    return names;
}

struct PlannedStorage {
    std::uint32_t input = 0;
    std::string outputKey;
    std::string device;
    std::string writeDtype; // the dtype its persistent id names
    bool untyped = false; // torch UntypedStorage + _rebuild_tensor_v3 (dtypes without a legacy class)
    std::uint64_t numel = 0;
    std::string castFrom; // --dtype: the input's dtype when its values are cast to writeDtype
    std::uint64_t outputBytes = 0;
    bool inlineData = false; // --plain-values: a NumPy array's bytes from the pickle, not a storage
    ByteBuffer inlineBytes;
};

// A NumPy integer or bool scalar as the Python int or bool it equals. (Floating scalars become 0-d
// tensors: torch 1.13's weights_only unpickler has no BINFLOAT, so no Python float loads there.)
NodeId plainNumber(PickleGraph& graph, const NumpyValue& value)
{
    const ByteBuffer& b = value.bytes;
    auto unsignedBits = [&]() {
        std::uint64_t bits = 0;
        for (std::size_t i = b.size(); i-- > 0;)
            bits = (bits << 8) | b[i];
        return bits;
    };
    const std::string& type = value.torchDtype;
    if (type == "bool")
        return graph.addScalar(NodeKind::Bool, b[0] != 0);
    const std::uint64_t bits = unsignedBits();
    if (type == "uint8" || type.empty()) { // unsigned: above 2^63 a LONG1 of nine bytes
        if (bits <= static_cast<std::uint64_t>(INT64_MAX))
            return graph.addScalar(NodeKind::Int, static_cast<std::int64_t>(bits));
        std::string wide(9, '\0');
        for (std::size_t i = 0; i < 8; ++i)
            wide[i] = static_cast<char>(bits >> (8 * i));
        return graph.addText(NodeKind::BigInt, wide);
    }
    // Signed integers: sign-extend from their width.
    if (b.empty())
        return graph.addScalar(NodeKind::Int, 0);
    const unsigned width = static_cast<unsigned>(8 * b.size());
    const std::uint64_t sign = std::uint64_t {1} << (width - 1);
    const std::uint64_t extended = width == 64 ? bits : (bits ^ sign) - sign;
    return graph.addScalar(NodeKind::Int, static_cast<std::int64_t>(extended));
}

// Floating dtypes --dtype leaves as they are: their values mean something only with their scales.
bool floatingButNotCast(std::string_view dtype)
{
    return dtype.starts_with("float8") || dtype.starts_with("float4");
}

// An unsigned NumPy array as nested lists of Python ints, in C order (a Fortran-ordered array's
// bytes read accordingly).
NodeId plainList(PickleGraph& graph, const NumpyValue& value)
{
    const std::size_t size = value.bytes.size() / std::max<std::size_t>(1, [&] {
        std::size_t count = 1;
        for (std::int64_t dim : value.shape)
            count *= static_cast<std::size_t>(dim);
        return count;
    }());
    std::vector<std::int64_t> stride(value.shape.size(), 1);
    std::int64_t step = 1;
    for (std::size_t k = 0; k < value.shape.size(); ++k) {
        const std::size_t d = value.fortran ? k : value.shape.size() - 1 - k;
        stride[d] = step;
        step *= value.shape[d];
    }
    std::function<NodeId(std::size_t, std::int64_t)> build = [&](std::size_t dim, std::int64_t at) -> NodeId {
        if (dim == value.shape.size()) {
            NumpyValue element;
            element.torchDtype = value.torchDtype;
            const auto begin
                = value.bytes.begin() + static_cast<std::ptrdiff_t>(at) * static_cast<std::ptrdiff_t>(size);
            element.bytes.assign(begin, begin + static_cast<std::ptrdiff_t>(size));
            return plainNumber(graph, element);
        }
        const NodeId list = graph.addContainer(NodeKind::List);
        for (std::int64_t i = 0; i < value.shape[dim]; ++i) {
            const NodeId item = build(dim + 1, at + i * stride[dim]);
            graph.ensureBody(list).items.push_back(item);
        }
        return list;
    };
    return build(0, 0);
}

// --plain-values: the NumPy value at `node` (tree path `path`), or the NumPy values of a dict of
// values without tensors (a tree Value: "metrics" = {"loss": np.float32(...), "epoch": 3}), taken
// into the selection under their dotted names. Returns true when nothing of the node is left to
// drop; a dict's other entries are listed as dropped one by one.
bool takeNumpyValues(const PickleGraph& graph, NodeId node, const std::string& path, const std::string& what,
    const ExtractOptions& options, StateDictSelection& result, std::set<std::string>& keptNames,
    int depth = 0)
{
    if (!underPrefix(path, result.root) || path == result.root)
        return false;
    const std::string name = relativeName(path, result.root);
    if (isNumpyValueCall(graph, node)) {
        const bool selected = options.select.empty()
            || std::any_of(options.select.begin(), options.select.end(),
                [&](const std::string& prefix) { return underPrefix(name, prefix); });
        if (!selected)
            return false;
        auto value = decodeNumpyValue(graph, node);
        if (!value) {
            result.droppedObjects.push_back(
                {path, what + "; not written as a plain value: " + value.error().message});
            return true;
        }
        if (!keptNames.insert(name).second) {
            result.droppedObjects.push_back(
                {path, what + "; not written as a plain value: a tensor is named '" + name + "'"});
            return true;
        }
        result.numpyValues.push_back({name, path, std::move(*value)});
        return true;
    }
    const ContainerBody* body = graph.kind(node) == NodeKind::Dict ? graph.bodyOf(node) : nullptr;
    if (!body || depth > 16)
        return false;
    bool holdsNumpy = false;
    for (std::size_t k = 0; k + 1 < body->dictItems.size(); k += 2)
        holdsNumpy = holdsNumpy || isNumpyValueCall(graph, body->dictItems[k + 1])
            || graph.kind(body->dictItems[k + 1]) == NodeKind::Dict;
    if (!holdsNumpy)
        return false;
    const std::size_t droppedBefore = result.droppedObjects.size();
    const std::size_t takenBefore = result.numpyValues.size();
    std::vector<DroppedItem> rest;
    for (std::size_t k = 0; k + 1 < body->dictItems.size(); k += 2) {
        const NodeId key = body->dictItems[k];
        const NodeId item = body->dictItems[k + 1];
        const std::string itemPath
            = path + "." + (graph.isString(key) ? std::string(graph.text(key)) : std::string("?"));
        const std::string itemWhat = isNumpyValueCall(graph, item)
            ? graph.calleeName(item)
            : std::string("a value in a dict of values");
        if (!graph.isString(key)
            || !takeNumpyValues(graph, item, itemPath, itemWhat, options, result, keptNames, depth + 1))
            rest.push_back({itemPath, itemWhat});
    }
    if (result.numpyValues.size() == takenBefore) { // nothing taken: the dict is dropped whole, as before
        result.droppedObjects.resize(droppedBefore);
        return false;
    }
    result.droppedObjects.insert(result.droppedObjects.end(), rest.begin(), rest.end());
    return true;
}

} // namespace

std::pair<std::string, std::string> chooseStateRoot(const Checkpoint& checkpoint)
{
    if (checkpoint.tree.empty())
        return {"", "the whole file"};
    const TreeNode& top = checkpoint.tree[0];
    if (top.kind == TreeNodeKind::Module)
        return {"", "a whole pickled module: its state_dict names"};
    for (const char* candidate : {"state_dict", "model_state_dict", "model", "module"}) {
        for (std::uint32_t child : top.children) {
            const TreeNode& node = checkpoint.tree[child];
            if (node.name != candidate)
                continue;
            // A prefix of dotted state_dict names ("model.encoder.weight") is a state_dict already;
            // only a real entry (a pickled value) is a part of a larger checkpoint.
            if ((node.kind != TreeNodeKind::Dict && node.kind != TreeNodeKind::Module)
                || node.node == kNoNode)
                continue;
            if (!holdsTensors(checkpoint, child))
                continue;
            return {node.name.str(),
                std::string("a training checkpoint: the tensors of its '") + candidate
                    + "' entry (choose another with --root; --root '' takes the whole file)"};
        }
    }
    return {"", "the whole file"};
}

std::string ExtractResult::summary() const
{
    std::set<std::uint32_t> inputStorages;
    std::string text = "wrote " + formatThousands(tensors.size())
        + (tensors.size() == 1 ? " tensor" : " tensors") + " (" + formatThousands(storagesWritten)
        + " storages, " + formatBytes(bytesWritten) + ")";
    text += root.empty() ? " from the whole file" : " from '" + root + "'";
    text += "; dropped " + formatThousands(droppedTensors.size()) + " tensors, "
        + formatThousands(droppedObjects.size()) + " other values";
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", this->seconds);
    text += std::string("; ") + seconds + " s";
    if (!plainValues.empty())
        text += "; " + formatThousands(plainValues.size()) + " NumPy values as plain values";
    if (!castTo.empty())
        text += "; " + formatThousands(tensorsCast.size()) + " tensors (" + formatThousands(storagesCast)
            + " storages) cast to " + castTo;
    text += verified ? "; verified" : "; not verified";
    return text;
}

Expected<StateDictSelection> selectStateDict(const Checkpoint& checkpoint, const ExtractOptions& options)
{
    if (checkpoint.format == CheckpointFormat::NotACheckpoint || !checkpoint.file)
        return makeError("not a PyTorch checkpoint: " + checkpoint.container.description);
    if (checkpoint.format == CheckpointFormat::TorchTar && checkpoint.tarTensorsMember)
        return makeError("this 0.1.x tar file keeps its tensors in a 'tensors' member, whose layout is not "
                         "supported for writing");
    for (const PickleSection& section : checkpoint.pickles)
        if (!section.run.complete())
            return makeError("the pickle in " + section.record + " could not be read to its end ("
                + section.run.error.value_or("incomplete")
                + "); the names of its tensors are not all known, so no state_dict is written");

    StateDictSelection result;
    if (options.root) {
        result.root = *options.root;
        result.rootReason = "given";
    } else {
        std::tie(result.root, result.rootReason) = chooseStateRoot(checkpoint);
    }
    if (!result.root.empty()) {
        bool found = false;
        for (const TensorEntry& tensor : checkpoint.tensors)
            found = found || underPrefix(tensor.name, result.root);
        if (!found)
            return makeError("the checkpoint has no tensor under '" + result.root + "'");
    }

    // 1. The tensors in tree order (the order state_dict() gives), with the second names of
    // submodules reached twice.
    struct Named {
        std::string fullName;
        std::uint32_t tensor;
    };
    std::vector<Named> named;
    std::unordered_map<std::string, std::uint32_t> tensorByName;
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
        tensorByName.emplace(checkpoint.tensors[t].name, t);
    std::vector<DroppedItem> excluded;
    std::set<std::uint32_t> skipped; // tree nodes outside what state_dict() would give
    if (!checkpoint.tree.empty()) {
        std::vector<std::uint32_t> stack {0};
        while (!stack.empty()) {
            const std::uint32_t index = stack.back();
            stack.pop_back();
            const TreeNode& node = checkpoint.tree[index];
            if (node.kind == TreeNodeKind::Module && node.node != kNoNode) {
                // state_dict() leaves out a module's plain attributes and non-persistent buffers.
                if (auto names = moduleStateNames(checkpoint.graph, node.node)) {
                    for (std::uint32_t child : node.children) {
                        if (names->count(checkpoint.tree[child].name.str()))
                            continue;
                        std::vector<std::uint32_t> inner {child};
                        while (!inner.empty()) {
                            const TreeNode& leaf = checkpoint.tree[inner.back()];
                            inner.pop_back();
                            if (leaf.kind == TreeNodeKind::Tensor && leaf.tensor >= 0)
                                excluded.push_back(
                                    {std::string(
                                         checkpoint.tensors[static_cast<std::size_t>(leaf.tensor)].name),
                                        "module attribute or non-persistent buffer, which state_dict() "
                                        "leaves out"});
                            inner.insert(inner.end(), leaf.children.begin(), leaf.children.end());
                        }
                        skipped.insert(child);
                    }
                }
            }
            if (node.kind == TreeNodeKind::Tensor && node.tensor >= 0) {
                named.push_back({std::string(checkpoint.tensors[static_cast<std::size_t>(node.tensor)].name),
                    static_cast<std::uint32_t>(node.tensor)});
            } else if (node.kind == TreeNodeKind::Alias) {
                const std::string prefix = "same object as ";
                const std::string original
                    = node.summary.starts_with(prefix) ? node.summary.substr(prefix.size()) : std::string();
                const std::string aliasPath = checkpoint.treePath(index);
                // The original was walked first (pickles memoize on first use), so its state_dict
                // entries are known, in order, without the attributes state_dict() leaves out.
                if (!original.empty() && original != "(root)") {
                    const std::size_t count = named.size();
                    for (std::size_t k = 0; k < count; ++k) {
                        const std::string name = named[k].fullName;
                        if (name.size() > original.size() && underPrefix(name, original))
                            named.push_back({aliasPath + name.substr(original.size()), named[k].tensor});
                    }
                }
            }
            for (std::size_t i = node.children.size(); i-- > 0;)
                if (!skipped.count(node.children[i]))
                    stack.push_back(node.children[i]);
        }
    }
    // Tensors that no tree node shows (none expected) are still considered, after the others.
    {
        std::vector<bool> seen(checkpoint.tensors.size(), false);
        for (const Named& entry : named)
            seen[entry.tensor] = true;
        for (const DroppedItem& item : excluded)
            if (auto it = tensorByName.find(item.path); it != tensorByName.end())
                seen[it->second] = true;
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
            if (!seen[t] && !checkpoint.tensors[t].name.empty())
                named.push_back({std::string(checkpoint.tensors[t].name), t});
    }

    // 2. Which are written. A selected quantized weight takes its scales, zero points and group
    // index along (core/model/quantgroups.h): without them its values mean nothing.
    std::vector<char> takenAlong;
    if (!options.select.empty()) {
        takenAlong.assign(checkpoint.tensors.size(), 0);
        const std::shared_ptr<const QuantScan> quantScan = quantScanOf(checkpoint);
        for (const QuantGroup& group : quantScan->groups) {
            const std::string_view weight = checkpoint.tensors[group.weight].name;
            if (!underPrefix(weight, result.root) || weight == result.root)
                continue;
            const std::string name = relativeName(weight, result.root);
            if (std::any_of(options.select.begin(), options.select.end(),
                    [&](const std::string& prefix) { return underPrefix(name, prefix); }))
                for (const QuantScale& scale : group.scales)
                    takenAlong[scale.tensor] = 1;
        }
    }
    std::vector<Named> kept;
    std::set<std::string> keptNames;
    result.droppedTensors = excluded;
    for (const Named& entry : named) {
        const TensorEntry& tensor = checkpoint.tensors[entry.tensor];
        if (!underPrefix(entry.fullName, result.root) || entry.fullName == result.root) {
            result.droppedTensors.push_back({entry.fullName,
                entry.fullName == result.root ? "tensor at the root itself (it has no name in a state_dict)"
                                              : "tensor outside the root '" + result.root + "'"});
            continue;
        }
        const std::string name = relativeName(entry.fullName, result.root);
        if (!options.select.empty() && !takenAlong[entry.tensor]
            && std::none_of(options.select.begin(), options.select.end(),
                [&](const std::string& prefix) { return underPrefix(name, prefix); })) {
            result.droppedTensors.push_back({entry.fullName, "not selected"});
            continue;
        }
        if (std::string reason = unwritableReason(checkpoint, tensor); !reason.empty()) {
            result.droppedTensors.push_back({entry.fullName, reason});
            continue;
        }
        if (!keptNames.insert(name).second) {
            result.droppedTensors.push_back({entry.fullName, "a second tensor named '" + name + "'"});
            continue;
        }
        kept.push_back({name, entry.tensor});
        result.tensors.push_back({name, entry.tensor});
    }
    if (checkpoint.tensors.empty())
        return makeError("the checkpoint holds no tensor (" + std::to_string(checkpoint.tree.size())
            + " values read); there is no state_dict to write");
    if (kept.empty() && checkpoint.tensors.size() == 1 && checkpoint.tensors[0].name.empty())
        return makeError(
            "the checkpoint is a single tensor, not a dict of named tensors; a state_dict needs names");
    if (kept.empty())
        return makeError("no tensor to write: " + std::to_string(result.droppedTensors.size())
            + " tensors were left out"
            + (result.droppedTensors.empty()
                    ? std::string()
                    : " (" + result.droppedTensors[0].path + ": " + result.droppedTensors[0].what + ")"));

    // What is not a tensor: values and objects, by their topmost path.
    for (std::uint32_t index = 1; index < checkpoint.tree.size(); ++index) {
        const TreeNode& node = checkpoint.tree[index];
        if (node.kind != TreeNodeKind::Value && node.kind != TreeNodeKind::Placeholder)
            continue;
        // A safetensors header's __metadata__ describes the file, not the model.
        if (checkpoint.format == CheckpointFormat::Safetensors
            && checkpoint.treePath(index).starts_with("__metadata__"))
            continue;
        std::string what = node.className.empty() ? node.summary
            : node.summary.empty() || node.summary.str() == node.className
            ? node.className.str()
            : node.className + " (" + node.summary + ")";
        if (options.plainValues && node.node != kNoNode
            && takeNumpyValues(
                checkpoint.graph, node.node, checkpoint.treePath(index), what, options, result, keptNames))
            continue;
        result.droppedObjects.push_back({checkpoint.treePath(index), what});
    }
    {
        std::set<std::string> globals;
        for (NodeId id = 0; id < checkpoint.graph.size(); ++id) {
            if (checkpoint.graph.kind(id) != NodeKind::Global)
                continue;
            const std::string module(checkpoint.graph.module(id));
            const std::string name(checkpoint.graph.name(id));
            if (!writtenByExtract(module, name))
                globals.insert(module + "." + name);
        }
        result.globalsNotCarried.assign(globals.begin(), globals.end());
    }

    return result;
}

Expected<ExtractResult> writeExtractedStateDict(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const ExtractOptions& options)
{
    const auto start = std::chrono::steady_clock::now();
    auto selection = selectStateDict(checkpoint, options);
    if (!selection)
        return selection.error();
    ExtractResult result;
    result.outputPath = outputPath;
    result.root = selection->root;
    result.rootReason = selection->rootReason;
    result.droppedTensors = std::move(selection->droppedTensors);
    result.droppedObjects = std::move(selection->droppedObjects);
    result.globalsNotCarried = std::move(selection->globalsNotCarried);
    struct Named {
        std::string fullName;
        std::uint32_t tensor;
    };
    std::vector<Named> kept;
    for (SelectedTensor& tensor : selection->tensors)
        kept.push_back({std::move(tensor.name), tensor.tensor});
    const std::vector<SelectedNumpyValue>& numpyValues = selection->numpyValues;
    if (!options.castFloatsTo.empty() && !isFloatCastTarget(options.castFloatsTo))
        return makeError("--dtype takes bfloat16, float16 or float32, not '" + options.castFloatsTo + "'");
    result.castTo = options.castFloatsTo;
    bool bigEndian = false;
    for (const Finding& finding : checkpoint.findings)
        bigEndian = bigEndian || finding.code == FindingCode::BigEndian;

    // 3. Storages in order of first use, each with the dtype its persistent id will name.
    std::vector<PlannedStorage> storages;
    std::unordered_map<std::uint32_t, std::uint32_t> outputStorageOf; // input storage -> index
    for (const Named& entry : kept) {
        const TensorEntry& tensor = checkpoint.tensors[entry.tensor];
        const auto input = static_cast<std::uint32_t>(tensor.storage);
        auto [it, inserted] = outputStorageOf.emplace(input, static_cast<std::uint32_t>(storages.size()));
        if (inserted) {
            PlannedStorage planned;
            planned.input = input;
            planned.outputKey = std::to_string(storages.size());
            planned.device = plan.plannedDeviceOfStorage(input).value_or(
                checkpoint.storages[input].device.value_or(options.defaultDevice));
            planned.writeDtype = tensor.dtype;
            storages.push_back(planned);
        } else if (storages[it->second].writeDtype != tensor.dtype) {
            // One storage viewed as two dtypes: only an untyped storage can say so.
            storages[it->second].untyped = true;
        }
    }
    for (PlannedStorage& planned : storages) {
        const StorageRecord& storage = checkpoint.storages[planned.input];
        const DTypeInfo info = *dtypeByName(planned.writeDtype);
        if (info.legacyStorage.empty() || info.valuesPerByte != 1)
            planned.untyped = true;
        if (!planned.untyped && storage.nbytes % info.elementSize != 0)
            planned.untyped = true;
        planned.numel = planned.untyped ? storage.nbytes : storage.nbytes / info.elementSize;
        planned.outputBytes = storage.nbytes;
        // --dtype: a storage of one float dtype is cast once, whatever views it; its element
        // count stays, so every view keeps its offset, shape and stride.
        if (options.castFloatsTo.empty() || planned.writeDtype == options.castFloatsTo
            || !isFloatCastSource(planned.writeDtype) || planned.untyped || bigEndian)
            continue;
        planned.castFrom = planned.writeDtype;
        planned.writeDtype = options.castFloatsTo;
        planned.outputBytes = planned.numel * floatCastElementSize(options.castFloatsTo);
        ++result.storagesCast;
    }
    // --plain-values: each NumPy array (and complex scalar) a storage of its own, from the pickle.
    std::vector<std::int32_t> numpyStorage(numpyValues.size(), -1);
    for (std::size_t v = 0; v < numpyValues.size(); ++v) {
        const NumpyValue& value = numpyValues[v].value;
        const bool number = value.torchDtype == "bool" || value.torchDtype.starts_with("int")
            || value.torchDtype.starts_with("uint") || value.torchDtype.empty();
        if ((!value.array && number) || value.torchDtype.empty())
            continue;
        PlannedStorage planned;
        planned.inlineData = true;
        planned.outputKey = std::to_string(storages.size());
        planned.device = "cpu";
        planned.writeDtype = value.torchDtype;
        const DTypeInfo info = *dtypeByName(value.torchDtype);
        planned.numel = value.bytes.size() / info.elementSize;
        planned.inlineBytes = value.bytes;
        if (!options.castFloatsTo.empty() && isFloatCastSource(value.torchDtype)
            && value.torchDtype != options.castFloatsTo) {
            planned.castFrom = value.torchDtype;
            planned.writeDtype = options.castFloatsTo;
            planned.inlineBytes.resize(planned.numel * floatCastElementSize(options.castFloatsTo));
            castFloats(planned.castFrom, planned.writeDtype, value.bytes.data(), planned.numel,
                planned.inlineBytes.data());
            ++result.storagesCast;
            result.tensorsCast.push_back(
                numpyValues[v].name + " (" + planned.castFrom + " -> " + planned.writeDtype + ")");
        }
        planned.outputBytes = planned.inlineBytes.size();
        numpyStorage[v] = static_cast<std::int32_t>(storages.size());
        storages.push_back(std::move(planned));
    }
    if (!options.castFloatsTo.empty()) {
        for (const Named& entry : kept) {
            const TensorEntry& tensor = checkpoint.tensors[entry.tensor];
            const PlannedStorage& planned
                = storages[outputStorageOf.at(static_cast<std::uint32_t>(tensor.storage))];
            if (!planned.castFrom.empty())
                result.tensorsCast.push_back(
                    entry.fullName + " (" + planned.castFrom + " -> " + planned.writeDtype + ")");
            else if (floatingButNotCast(tensor.dtype))
                result.notCast.push_back({entry.fullName,
                    tensor.dtype + ": quantized values whose scales are other tensors; left as they are"});
            else if (isFloatCastSource(tensor.dtype) && tensor.dtype != options.castFloatsTo)
                result.notCast.push_back({entry.fullName,
                    bigEndian
                        ? tensor.dtype + " in a big-endian file; left as it is"
                        : tensor.dtype + " in a storage other views read as another dtype; left as it is"});
        }
    }

    // 4. The pickle: OrderedDict of name -> _rebuild_tensor_v2/_v3(persistent id, offset, size,
    // stride, False, OrderedDict()[, dtype]), as torch.save writes a state_dict.
    PickleGraph graph;
    const NodeId orderedDict = graph.addGlobal("collections", "OrderedDict");
    const NodeId emptyTuple = graph.addTuple(nullptr, 0);
    const NodeId root = graph.addCall(NodeKind::Call, orderedDict, emptyTuple);
    const NodeId rebuildV2 = graph.addGlobal("torch._utils", "_rebuild_tensor_v2");
    const NodeId rebuildV3 = graph.addGlobal("torch._utils", "_rebuild_tensor_v3");
    const NodeId storageText = graph.addText(NodeKind::String, "storage");
    const NodeId falseNode = graph.addScalar(NodeKind::Bool, 0);
    struct NumpyTensor {
        std::string name, dtype;
        std::vector<std::int64_t> shape, stride;
        std::string key;
    };
    std::vector<NumpyTensor> numpyTensors;
    std::vector<NodeId> persistentIds;
    for (const PlannedStorage& planned : storages) {
        // torch.save names the class by its module: torch.storage.UntypedStorage, which is what
        // torch 2.x's weights_only allowlist holds (a GLOBAL 'torch UntypedStorage' is refused).
        const NodeId cls = planned.untyped
            ? graph.addGlobal("torch.storage", "UntypedStorage")
            : graph.addGlobal("torch", std::string(dtypeByName(planned.writeDtype)->legacyStorage));
        const NodeId items[] = {storageText, cls, graph.addText(NodeKind::String, planned.outputKey),
            graph.addText(NodeKind::String, planned.device),
            graph.addScalar(NodeKind::Int, static_cast<std::int64_t>(planned.numel))};
        persistentIds.push_back(graph.addPersistentId(graph.addTuple(items, 5)));
    }
    auto intTuple = [&](const std::vector<std::int64_t>& values) {
        std::vector<NodeId> items;
        items.reserve(values.size());
        for (std::int64_t value : values)
            items.push_back(graph.addScalar(NodeKind::Int, value));
        return graph.addTuple(items.data(), items.size());
    };
    for (const Named& entry : kept) {
        const TensorEntry& tensor = checkpoint.tensors[entry.tensor];
        const PlannedStorage& planned
            = storages[outputStorageOf.at(static_cast<std::uint32_t>(tensor.storage))];
        const NodeId hooks = graph.addCall(NodeKind::Call, orderedDict, emptyTuple);
        std::vector<NodeId> args {
            persistentIds[outputStorageOf.at(static_cast<std::uint32_t>(tensor.storage))],
            graph.addScalar(NodeKind::Int, *tensor.storageOffset), intTuple(tensor.shape),
            intTuple(*tensor.stride), falseNode, hooks};
        if (planned.untyped)
            args.push_back(graph.addGlobal("torch", tensor.dtype));
        const NodeId call = graph.addCall(NodeKind::Call, planned.untyped ? rebuildV3 : rebuildV2,
            graph.addTuple(args.data(), args.size()));
        ContainerBody& body = graph.ensureBody(root);
        body.dictItems.push_back(graph.addText(NodeKind::String, entry.fullName));
        body.dictItems.push_back(call);
        result.tensors.push_back({entry.fullName, entry.tensor, planned.outputKey, planned.device});
    }
    for (std::size_t v = 0; v < numpyValues.size(); ++v) {
        const NumpyValue& value = numpyValues[v].value;
        NodeId item = kNoNode;
        std::string what = "numpy." + value.numpyType + (value.array ? " array -> tensor" : " scalar -> ");
        if (numpyStorage[v] < 0 && value.array) {
            // uint16/32/64 arrays: nested lists of Python ints, in C order whatever the layout.
            item = plainList(graph, value);
            what = "numpy." + value.numpyType + " array -> list of int";
        } else if (numpyStorage[v] < 0) {
            item = plainNumber(graph, value);
            what += value.torchDtype == "bool" ? "bool" : "int";
        } else {
            const PlannedStorage& planned = storages[static_cast<std::size_t>(numpyStorage[v])];
            std::vector<std::int64_t> stride(value.shape.size(), 1);
            std::int64_t step = 1;
            for (std::size_t k = 0; k < value.shape.size(); ++k) { // C order: last fastest
                const std::size_t d = value.fortran ? k : value.shape.size() - 1 - k;
                stride[d] = step;
                step *= std::max<std::int64_t>(value.shape[d], 1);
            }
            const NodeId hooks = graph.addCall(NodeKind::Call, orderedDict, emptyTuple);
            const NodeId args[] = {persistentIds[static_cast<std::size_t>(numpyStorage[v])],
                graph.addScalar(NodeKind::Int, 0), intTuple(value.shape), intTuple(stride), falseNode, hooks};
            item = graph.addCall(NodeKind::Call, rebuildV2, graph.addTuple(args, 6));
            if (!value.array)
                what += "0-d tensor";
            what += " " + planned.writeDtype;
            numpyTensors.push_back(
                {numpyValues[v].name, planned.writeDtype, value.shape, stride, planned.outputKey});
        }
        ContainerBody& body = graph.ensureBody(root);
        body.dictItems.push_back(graph.addText(NodeKind::String, numpyValues[v].name));
        body.dictItems.push_back(item);
        result.plainValues.push_back({numpyValues[v].path, what});
    }
    auto pickle = PickleEmitter(graph).emit(root, 2);
    if (!pickle)
        return makeError("cannot write the state_dict's pickle: " + pickle.error().message);

    // 5. The archive, in torch.save's record order: data.pkl, byteorder, data/<key>..., version.
    std::uint64_t expectedSize = pickle->size() + 4096;
    for (const PlannedStorage& planned : storages)
        expectedSize += planned.outputBytes + 256;
    auto output = AtomicOutputFile::create(outputPath, checkpoint.path, expectedSize);
    if (!output)
        return output.error();
    InputDescriptor input(checkpoint.path);
    if (input.fd() < 0)
        return makeError("cannot open " + checkpoint.path + " for reading: " + std::strerror(errno));
    const std::string prefix = archiveNameFor(outputPath) + "/";
    const std::string byteorder = bigEndian ? "big" : "little";
    const std::string version = "3\n";
    TorchZipWriter writer(output->get()->fd(), 64, options.progress, expectedSize);
    std::vector<std::uint32_t> writtenCrcs;
    std::vector<std::uint32_t> sourceCrcs; // of the bytes read from the input
    Status status = writer.addRecord(prefix + "data.pkl", *pickle);
    if (!status)
        status = writer.addRecord(prefix + "byteorder",
            ByteView(reinterpret_cast<const std::uint8_t*>(byteorder.data()), byteorder.size()));
    for (const PlannedStorage& planned : storages) {
        if (status)
            break;
        const StorageRecord& storage = checkpoint.storages[planned.input];
        std::uint32_t sourceCrc = 0;
        if (planned.inlineData)
            status = writer.addRecord(prefix + "data/" + planned.outputKey,
                ByteView(planned.inlineBytes.data(), planned.inlineBytes.size()));
        else if (!planned.castFrom.empty())
            status = writer.addRecordFromPieces(prefix + "data/" + planned.outputKey, planned.outputBytes,
                [&](const TorchZipWriter::ByteSink& sink) -> Status {
                    FloatCastSink cast(planned.castFrom, planned.writeDtype, sink);
                    Status read = forEachStorageByteChunk(
                        checkpoint, storage, storage.nbytes, [&cast](ByteView piece) { return cast(piece); });
                    sourceCrc = cast.sourceCrc();
                    return read ? read : cast.finish();
                });
        else if (storage.bytesComplete())
            status = writer.addRecordFromFile(prefix + "data/" + planned.outputKey, input.fd(),
                *storage.dataOffset, storage.nbytes, std::nullopt);
        else // a deflated record (other zip writers): written stored, as torch.save writes it
            status = writer.addRecordFromPieces(prefix + "data/" + planned.outputKey, storage.nbytes,
                [&](const TorchZipWriter::ByteSink& sink) {
                    return forEachStorageByteChunk(checkpoint, storage, storage.nbytes, sink);
                });
        if (!status) {
            writtenCrcs.push_back(writer.records().back().crc32);
            sourceCrcs.push_back(planned.castFrom.empty() ? writtenCrcs.back() : sourceCrc);
        }
    }
    if (!status)
        status = writer.addRecord(prefix + "version",
            ByteView(reinterpret_cast<const std::uint8_t*>(version.data()), version.size()));
    if (!status)
        status = writer.finish();
    if (status)
        return *status;
    result.bytesWritten = writer.bytesWritten();
    result.storagesWritten = storages.size();

    // The bytes as the input's own CRC records them (zip inputs), so a copy that read the wrong
    // range cannot pass.
    if (checkpoint.format == CheckpointFormat::TorchZip
        || checkpoint.format == CheckpointFormat::TorchScript) {
        const auto archive = checkpoint.zipArchive();
        const ZipArchive& zip = *archive;
        for (std::size_t s = 0; s < storages.size(); ++s) {
            if (storages[s].inlineData)
                continue;
            const StorageRecord& storage = checkpoint.storages[storages[s].input];
            const ZipEntry* entry = zip.find(storage.record());
            if (entry && entry->crc32 != 0 && entry->uncompressedSize == storage.nbytes
                && entry->crc32 != sourceCrcs[s])
                return makeError("the bytes of storage " + storage.key
                    + " read differently from what the input's CRC records; nothing was written");
        }
    }

    // 6. Read the copy back before it takes the target's name: every tensor as selected (name,
    // dtype, shape, stride, offset, shared storage) on its planned device, every storage's bytes
    // as copied, and no global but the few a state_dict names.
    if (options.verifyAfterWriting) {
        IntendedOutput intended;
        intended.what = "the written state_dict";
        intended.format = CheckpointFormat::TorchZip;
        for (const ExtractedTensor& extracted : result.tensors) {
            const TensorEntry& tensor = checkpoint.tensors[extracted.tensor];
            IntendedTensor want;
            want.name = extracted.name;
            want.dtype = storages[outputStorageOf.at(static_cast<std::uint32_t>(tensor.storage))].writeDtype;
            if (storages[outputStorageOf.at(static_cast<std::uint32_t>(tensor.storage))].untyped)
                want.dtype = tensor.dtype;
            want.shape = tensor.shape;
            want.stride = tensor.stride;
            want.storageOffset = tensor.storageOffset;
            want.storageKey = extracted.outputKey;
            want.device = InternedString(extracted.device);
            intended.tensors.push_back(std::move(want));
        }
        for (const NumpyTensor& numpy : numpyTensors) {
            IntendedTensor want;
            want.name = numpy.name;
            want.dtype = numpy.dtype;
            want.shape = numpy.shape;
            want.stride = numpy.stride;
            want.storageOffset = 0;
            want.storageKey = numpy.key;
            want.device = InternedString("cpu");
            intended.tensors.push_back(std::move(want));
        }
        for (std::size_t s = 0; s < storages.size(); ++s) {
            IntendedStorage want;
            want.key = storages[s].outputKey;
            want.device = InternedString(storages[s].device);
            want.length = storages[s].outputBytes;
            want.crc = writtenCrcs[s];
            intended.storages.push_back(std::move(want));
        }
        std::set<std::pair<std::string, std::string>> allowed;
        for (NodeId id = 0; id < graph.size(); ++id)
            if (graph.kind(id) == NodeKind::Global)
                allowed.emplace(graph.module(id), graph.name(id));
        intended.allowedGlobals = std::move(allowed);
        if (Status problem = verifyWrittenFile(**output, std::move(intended)))
            return *problem;
        result.verified = true;
    }
    if (Status commitStatus = output->get()->commit())
        return *commitStatus;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace ckpt
