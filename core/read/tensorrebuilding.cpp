// SPDX-License-Identifier: MIT
// The tensor half of CheckpointBuilder: how a torch._utils._rebuild_* call (or a Parameter, a
// quantized or sparse tensor, a legacy storage record) becomes a TensorEntry with its storage,
// and the view checks torch makes when it rebuilds (sizes, strides, storage bounds, with torch's
// exact messages). checkpointbuilder.cpp walks the object tree and calls in here for every call
// it recognises as a tensor; keeping the two apart lets each be read on its own (issue 12).
#include "core/read/checkpointbuilder.h"

#include "core/base/checkedarithmetic.h"
#include "core/model/dtype.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ckpt {

namespace {

TensorLayout layoutFromName(std::string_view name)
{
    if (name.starts_with("torch."))
        name.remove_prefix(6);
    if (name == "sparse_coo")
        return TensorLayout::SparseCoo;
    if (name == "sparse_csr")
        return TensorLayout::SparseCsr;
    if (name == "sparse_csc")
        return TensorLayout::SparseCsc;
    if (name == "sparse_bsr")
        return TensorLayout::SparseBsr;
    if (name == "sparse_bsc")
        return TensorLayout::SparseBsc;
    return TensorLayout::Strided;
}

} // namespace

std::int32_t CheckpointBuilder::storageFromPersistentTuple(NodeId tuple, std::int64_t* viewOffsetElements)
{
    if (viewOffsetElements)
        *viewOffsetElements = 0;
    const std::size_t n = m_graph.tupleSize(tuple);
    if (n < 5 || m_graph.text(m_graph.tupleItem(tuple, 0)) != "storage")
        return -1;
    const NodeId classNode = m_graph.tupleItem(tuple, 1);
    // Views into the pickle: registering a storage builds no heap string but its record name.
    const std::string_view storageClass
        = m_graph.kind(classNode) == NodeKind::Global ? m_graph.name(classNode) : m_graph.text(classNode);
    const NodeId keyNode = m_graph.tupleItem(tuple, 2);
    const std::string key = storageKeyPrefix + keyComponent(keyNode);
    const NodeId locationNode = m_graph.tupleItem(tuple, 3);
    std::optional<std::string_view> location;
    if (m_graph.kind(locationNode) == NodeKind::String || m_graph.kind(locationNode) == NodeKind::Bytes)
        location = m_graph.text(locationNode);
    const NodeId numelNode = m_graph.tupleItem(tuple, 4);
    const std::int64_t numel = m_graph.isInt(numelNode) ? m_graph.intValue(numelNode) : -1;

    if (n >= 6 && viewOffsetElements) {
        // Old legacy files: (view_key, offset, view_size) — the object is a slice of the root storage.
        const NodeId view = m_graph.tupleItem(tuple, 5);
        if (m_graph.tupleSize(view) == 3 && m_graph.isInt(m_graph.tupleItem(view, 1)))
            *viewOffsetElements = m_graph.intValue(m_graph.tupleItem(view, 1));
    }

    const std::optional<std::uint32_t> seen = m_checkpoint.storageIndex(key);
    if (seen) {
        const std::uint32_t index = *seen;
        StorageRecord& existing = m_checkpoint.storages[index];
        // torch caches the first storage of each key and ignores what later persistent ids say;
        // a file whose persistent ids disagree was edited or is hostile.
        if ((location && existing.device && *location != *existing.device)
            || (numel >= 0 && static_cast<std::uint64_t>(numel) != existing.numel
                && existing.firstPersistentId != kNoNode)) {
            m_checkpoint.addFinding(Severity::Warning, FindingCode::StorageDescribedDifferently,
                "storage " + key + " is described differently by two of its references ("
                    + existing.device.value_or("?") + ", " + formatThousands(existing.numel) + " elements vs "
                    + std::string(location.value_or("?")) + ", "
                    + (numel >= 0 ? formatThousands(static_cast<std::uint64_t>(numel)) : std::string("?"))
                    + " elements); torch uses the first",
                existing.record());
        }
        if (existing.firstPersistentId == kNoNode)
            existing.firstPersistentId = tuple;
        if (existing.persistentIdTuples.empty() || existing.persistentIdTuples.back() != tuple)
            existing.persistentIdTuples.push_back(tuple);
        return static_cast<std::int32_t>(index);
    }

    StorageRecord storage;
    storage.key = key;
    storage.storageClass = storageClass;
    storage.device = location;
    storage.firstPersistentId = tuple;
    storage.persistentIdTuples.push_back(tuple);
    storage.pickleSection = static_cast<std::uint32_t>(m_checkpoint.pickles.size());
    std::uint32_t elementSize = 1;
    if (auto info = dtypeByStorageClass(storageClass)) {
        storage.dtype = info->name;
        elementSize = info->elementSize;
    } else {
        storage.dtype = storageClass;
        m_checkpoint.addFinding(Severity::Warning, FindingCode::UnknownStorageClass,
            "storage " + key + " has the storage class '" + std::string(storageClass)
                + "', which this reader does not know; its size is counted as one byte per element");
    }
    if (numel < 0) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::BadStorageSize,
            "storage " + key + " does not record its size as an integer: the persistent id is malformed");
    }
    storage.numel = numel < 0 ? 0 : static_cast<std::uint64_t>(numel);
    if (auto nbytes = checkedMultiply<std::uint64_t>(storage.numel, elementSize)) {
        storage.nbytes = *nbytes;
    } else {
        // A size that wrapped would "need 0 bytes" and pass every check (issue 9); it reads as
        // the largest size instead, so nothing downstream thinks it fits.
        storage.nbytes = UINT64_MAX;
        m_checkpoint.addFinding(Severity::Error, FindingCode::StorageSizeOverflow,
            "storage " + key + " records " + formatThousands(storage.numel) + " elements of "
                + std::to_string(elementSize)
                + " bytes: its size in bytes overflows 64 bits, so the persistent id is damaged or hostile");
    }
    if (locateStorageBytes)
        locateStorageBytes(storage);
    const auto index = static_cast<std::uint32_t>(m_checkpoint.storages.size());
    m_checkpoint.storages.push_back(std::move(storage));
    m_checkpoint.indexStorage(index);
    return static_cast<std::int32_t>(index);
}

std::int32_t CheckpointBuilder::storageFromArgument(NodeId storageArg, std::int64_t* viewOffsetElements)
{
    const std::int32_t index = resolveStorageArgument(storageArg, viewOffsetElements);
    if (index >= 0) {
        const auto used = static_cast<std::size_t>(index);
        if (used >= m_storageUsed.size())
            m_storageUsed.resize(std::max(used + 1, m_checkpoint.storages.size()));
        m_storageUsed[used] = true;
    }
    return index;
}

std::vector<std::uint32_t> CheckpointBuilder::storagesUsed() const
{
    std::vector<std::uint32_t> used;
    for (std::size_t i = 0; i < m_storageUsed.size(); ++i)
        if (m_storageUsed[i])
            used.push_back(static_cast<std::uint32_t>(i));
    return used;
}

bool CheckpointBuilder::isTensorCall(NodeId id) const
{
    if (m_graph.kind(id) != NodeKind::Call && m_graph.kind(id) != NodeKind::NewObject)
        return false;
    // Asked several times for every tensor: the qualified name is composed on the stack, not in a
    // heap string (rebuild functions' names are longer than a short string holds).
    const NodeId callee = m_graph.callee(id);
    const std::string_view module = m_graph.module(callee);
    const std::string_view name = m_graph.name(callee);
    char buffer[96];
    if (module.empty() || module.size() + 1 + name.size() > sizeof buffer)
        return false; // not a GLOBAL, or longer than any rebuild function's name
    std::memcpy(buffer, module.data(), module.size());
    buffer[module.size()] = '.';
    std::memcpy(buffer + module.size() + 1, name.data(), name.size());
    const std::string_view qualified(buffer, module.size() + 1 + name.size());
    if (qualified == "torch.nn.parameter.Parameter")
        return isTensorCall(m_graph.tupleItem(m_graph.arguments(id), 0));
    return isTensorRebuildFunction(qualified);
}

std::int32_t CheckpointBuilder::resolveStorageArgument(NodeId storageArg, std::int64_t* viewOffsetElements)
{
    if (viewOffsetElements)
        *viewOffsetElements = 0;
    NodeId payload = storageArg;
    if (m_graph.kind(storageArg) == NodeKind::PersistentId)
        payload = m_graph.persistentIdPayload(storageArg);
    if (m_graph.kind(payload) == NodeKind::Tuple)
        return storageFromPersistentTuple(payload, viewOffsetElements);
    // pickle.dump's form: the storage inside bytes, torch.storage._load_from_bytes(b'...').
    if (m_graph.kind(storageArg) == NodeKind::Call)
        return storageFromNestedBlob(storageArg);
    // The tar format's persistent ids are plain keys of storages read from its `storages` member.
    if (m_graph.kind(payload) == NodeKind::String || m_graph.kind(payload) == NodeKind::Int) {
        if (const auto index = m_checkpoint.storageIndex(storageKeyPrefix + keyComponent(payload))) {
            if (m_graph.kind(storageArg) == NodeKind::PersistentId) {
                auto& references = m_checkpoint.tarReferences[*index].plainKeyReferences;
                if (references.empty() || references.back() != storageArg)
                    references.push_back(storageArg);
            }
            return static_cast<std::int32_t>(*index);
        }
    }
    return -1;
}

std::optional<CheckpointBuilder::TensorParts> CheckpointBuilder::buildTensor(NodeId id, int depth)
{
    if (depth > 16 || !isTensorCall(id))
        return std::nullopt;
    std::string function = m_graph.calleeName(id);
    NodeId args = m_graph.arguments(id);
    std::string subclass;
    bool subclassIsParameter = false;
    NodeId subclassState = kNoNode;

    // _rebuild_from_type_v2(func, new_type, args, state): a subclass (or a tensor with Python
    // attributes) around one of the other forms.
    if (function == "torch._tensor._rebuild_from_type_v2" || function == "torch._tensor._rebuild_from_type"
        || function == "torch._utils._rebuild_from_type_v2") {
        const NodeId func = m_graph.tupleItem(args, 0);
        const NodeId newType = m_graph.tupleItem(args, 1);
        const std::string typeName = m_graph.qualifiedName(newType);
        if (typeName == "torch.nn.parameter.Parameter")
            subclassIsParameter = true;
        else if (typeName != "torch.Tensor" && !typeName.empty())
            subclass = typeName;
        function = m_graph.qualifiedName(func);
        subclassState = m_graph.tupleItem(args, 3);
        args = m_graph.tupleItem(args, 2);
    }

    auto arg = [&](std::size_t i) { return m_graph.tupleItem(args, i); };
    auto boolArg = [&](std::size_t i) { return m_graph.intValue(arg(i)) != 0; };
    auto dtypeFromGlobal = [&](NodeId node) { return std::string(m_graph.name(node)); };
    auto inner = [&](NodeId node) -> std::optional<TensorParts> { return buildTensor(node, depth + 1); };

    TensorParts result;
    TensorEntry& t = result.tensor;
    t.rebuildFunction = function;
    t.node = id;

    // Both offsets come from the file: their sum saturates instead of overflowing (a signed
    // overflow is undefined), and checkViews then reports the view.
    auto offsetPlusView = [&](NodeId offsetNode, std::int64_t viewOffset) {
        const std::int64_t offset = m_graph.isInt(offsetNode) ? m_graph.intValue(offsetNode) : 0;
        return checkedAdd(offset, viewOffset).value_or(offset < 0 ? INT64_MIN : INT64_MAX);
    };
    auto fillStrided = [&](bool hasRequiresGrad) {
        std::int64_t viewOffset = 0;
        t.storage = storageFromArgument(arg(0), &viewOffset);
        t.storageOffset = offsetPlusView(arg(1), viewOffset);
        t.shape = intList(arg(2)).value_or(Dimensions {});
        t.stride = intList(arg(3));
        if (hasRequiresGrad)
            t.requiresGrad = boolArg(4);
        if (t.storage >= 0) {
            const StorageRecord& storage = m_checkpoint.storages[static_cast<std::size_t>(t.storage)];
            t.dtype = storage.dtype;
            t.device = storage.device;
        }
    };

    if (function == "torch._utils._rebuild_tensor" || function == "torch._utils._rebuild_tensor_v2") {
        fillStrided(function.ends_with("_v2"));
    } else if (function == "torch._utils._rebuild_tensor_v3") {
        fillStrided(true);
        t.dtype = dtypeFromGlobal(arg(6));
    } else if (function == "torch._utils._rebuild_qtensor") {
        std::int64_t viewOffset = 0;
        t.storage = storageFromArgument(arg(0), &viewOffset);
        t.storageOffset = offsetPlusView(arg(1), viewOffset);
        t.shape = intList(arg(2)).value_or(Dimensions {});
        t.stride = intList(arg(3));
        t.requiresGrad = boolArg(5);
        t.layout = TensorLayout::Quantized;
        if (t.storage >= 0) {
            const StorageRecord& storage = m_checkpoint.storages[static_cast<std::size_t>(t.storage)];
            t.dtype = storage.dtype;
            t.device = storage.device;
        }
        const NodeId qparams = arg(4);
        const std::string scheme(m_graph.name(m_graph.tupleItem(qparams, 0)));
        if (scheme.starts_with("per_channel")) {
            if (auto scales = inner(m_graph.tupleItem(qparams, 1)))
                result.parts.emplace_back("q_scales", std::move(scales->tensor));
            if (auto zeros = inner(m_graph.tupleItem(qparams, 2)))
                result.parts.emplace_back("q_zero_points", std::move(zeros->tensor));
        }
    } else if (function == "torch._utils._rebuild_parameter"
        || function == "torch._utils._rebuild_parameter_with_state"
        || function == "torch.nn.parameter.Parameter") {
        auto data = inner(arg(0));
        if (!data)
            return std::nullopt;
        result = std::move(*data);
        result.tensor.isParameter = true;
        result.tensor.requiresGrad = m_graph.kind(arg(1)) == NodeKind::None ? true : boolArg(1);
        result.tensor.node = id;
        result.tensor.rebuildFunction = function + " / " + result.tensor.rebuildFunction;
    } else if (function == "torch._utils._rebuild_sparse_tensor"
        || function == "torch._utils._rebuild_sparse_csr_tensor") {
        NodeId layoutNode = arg(0);
        std::string layoutName;
        if (m_graph.kind(layoutNode) == NodeKind::Call)
            layoutName = std::string(m_graph.text(m_graph.tupleItem(m_graph.arguments(layoutNode), 0)));
        else if (m_graph.kind(layoutNode) == NodeKind::Global)
            layoutName = std::string(m_graph.name(layoutNode));
        t.layout = function.ends_with("csr_tensor") ? TensorLayout::SparseCsr : layoutFromName(layoutName);
        const NodeId data = arg(1);
        std::vector<std::string> roles;
        NodeId sizeNode = kNoNode;
        switch (t.layout) {
        case TensorLayout::SparseCoo:
            roles = {"indices", "values"};
            sizeNode = m_graph.tupleItem(data, 2);
            break;
        case TensorLayout::SparseCsr:
        case TensorLayout::SparseBsr:
            roles = {"crow_indices", "col_indices", "values"};
            sizeNode = m_graph.tupleItem(data, 3);
            break;
        case TensorLayout::SparseCsc:
        case TensorLayout::SparseBsc:
            roles = {"ccol_indices", "row_indices", "values"};
            sizeNode = m_graph.tupleItem(data, 3);
            break;
        default:
            m_checkpoint.addFinding(Severity::Warning, FindingCode::UnknownSparseLayout,
                "a sparse tensor has the layout '" + layoutName + "', which this reader does not know");
            roles = {"indices", "values"};
            sizeNode = m_graph.tupleItem(data, 2);
            t.layout = TensorLayout::SparseCoo;
        }
        for (std::size_t i = 0; i < roles.size(); ++i) {
            if (auto part = inner(m_graph.tupleItem(data, i))) {
                if (roles[i] == "values") {
                    t.dtype = part->tensor.dtype;
                    t.device = part->tensor.device;
                }
                result.parts.emplace_back(roles[i], std::move(part->tensor));
            }
        }
        t.shape = intList(sizeNode).value_or(Dimensions {});
        t.stride.reset();
        t.storageOffset.reset();
    } else if (function == "torch._utils._rebuild_nested_tensor") {
        t.layout = TensorLayout::Nested;
        if (auto buffer = inner(arg(0))) {
            t.dtype = buffer->tensor.dtype;
            t.device = buffer->tensor.device;
            result.parts.emplace_back("buffer", std::move(buffer->tensor));
        }
        // The nested geometry is itself stored as three int64 tensors with storages of their own.
        const char* geometry[] = {"sizes", "strides", "storage_offsets"};
        for (std::size_t i = 0; i < 3; ++i)
            if (auto part = inner(arg(i + 1)))
                result.parts.emplace_back(geometry[i], std::move(part->tensor));
        t.stride.reset();
        t.storageOffset.reset();
    } else if (function == "torch._utils._rebuild_meta_tensor_no_storage") {
        t.dtype = dtypeFromGlobal(arg(0));
        t.shape = intList(arg(1)).value_or(Dimensions {});
        t.stride = intList(arg(2));
        t.requiresGrad = boolArg(3);
        t.storageOffset = 0;
        t.device = "meta";
        t.deviceRecordedOutsideStorage = true;
        t.layout = TensorLayout::Meta;
    } else if (function == "torch._utils._rebuild_wrapper_subclass") {
        subclass = m_graph.qualifiedName(arg(0));
        t.dtype = dtypeFromGlobal(arg(1));
        t.shape = intList(arg(2)).value_or(Dimensions {});
        t.stride = intList(arg(3));
        t.storageOffset = m_graph.isInt(arg(4)) ? m_graph.intValue(arg(4)) : 0;
        t.device = deviceFromValue(arg(6));
        t.deviceRecordedOutsideStorage = true;
        t.deviceArgumentTuple = args;
        t.deviceArgumentIndex = 6;
        t.deviceArgumentIsTorchDevice = m_graph.kind(arg(6)) == NodeKind::Call;
        t.requiresGrad = boolArg(7);
    } else if (function == "torch._utils._rebuild_device_tensor_from_numpy"
        || function == "torch._utils._rebuild_xla_tensor" || function == "torch._utils._rebuild_mlc_tensor") {
        t.dtype = dtypeFromGlobal(arg(1));
        t.device = deviceFromValue(arg(2));
        t.deviceRecordedOutsideStorage = true;
        t.deviceArgumentTuple = args;
        t.deviceArgumentIndex = 2;
        t.requiresGrad = boolArg(3);
        t.storageOffset.reset();
    } else if (function == "torch._utils._rebuild_device_tensor_from_cpu_tensor") {
        auto data = inner(arg(0));
        if (!data)
            return std::nullopt;
        result = std::move(*data);
        result.tensor.dtype = dtypeFromGlobal(arg(1));
        result.tensor.device = deviceFromValue(arg(2));
        result.tensor.deviceRecordedOutsideStorage = true;
        result.tensor.deviceArgumentTuple = args;
        result.tensor.deviceArgumentIndex = 2;
        result.tensor.requiresGrad = boolArg(3);
        result.tensor.node = id;
        result.tensor.rebuildFunction = function;
    } else {
        return std::nullopt;
    }

    // A wrapper subclass owns no storage: its data are the tensors of its state (TwoTensor's a and
    // b, what __tensor_flatten__ names), each a part with its own storage and device. Only at the
    // top: a part's own parts are not looked for (a hostile pickle nesting wrappers that share
    // their state through the memo would otherwise be walked exponentially often).
    if (depth == 0 && function == "torch._utils._rebuild_wrapper_subclass" && subclassState != kNoNode
        && m_graph.kind(subclassState) == NodeKind::Dict)
        if (const ContainerBody* state = m_graph.bodyOf(subclassState))
            for (std::size_t k = 0; k + 1 < state->dictItems.size(); k += 2)
                if (m_graph.isString(state->dictItems[k]) && isTensorCall(state->dictItems[k + 1]))
                    if (auto part = inner(state->dictItems[k + 1]))
                        result.parts.emplace_back(
                            std::string(m_graph.text(state->dictItems[k])), std::move(part->tensor));

    if (subclassIsParameter)
        result.tensor.isParameter = true;
    if (!subclass.empty())
        result.tensor.subclass = subclass;
    if (result.tensor.dtype.empty())
        result.tensor.dtype = "unknown";
    return result;
}

void CheckpointBuilder::emitTensor(TensorParts parts, std::uint32_t parent, const std::string& component,
    const std::string& fullName, NodeId node)
{
    const std::uint32_t treeNode = m_checkpoint.addTreeNode(parent, TreeNodeKind::Tensor, component);
    m_checkpoint.tree[treeNode].node = node;
    // The name is copied once, into the entry's own block (SlimText has no move from std::string).
    auto add = [&](TensorEntry tensor, std::uint32_t tree, std::string_view name) {
        tensor.name = name;
        tensor.treeNode = tree;
        const auto index = static_cast<std::uint32_t>(m_checkpoint.tensors.size());
        if (tensor.storage >= 0)
            m_checkpoint.storages[static_cast<std::size_t>(tensor.storage)].tensors.push_back(index);
        m_checkpoint.tree[tree].tensor = static_cast<std::int32_t>(index);
        m_checkpoint.tensors.push_back(std::move(tensor));
    };
    // Composite tensors (sparse, nested, per-channel quantized) own no storage themselves.
    const bool composite = parts.tensor.layout == TensorLayout::SparseCoo
        || parts.tensor.layout == TensorLayout::SparseCsr || parts.tensor.layout == TensorLayout::SparseCsc
        || parts.tensor.layout == TensorLayout::SparseBsr || parts.tensor.layout == TensorLayout::SparseBsc
        || parts.tensor.layout == TensorLayout::Nested;
    if (composite)
        parts.tensor.storage = -1;
    add(std::move(parts.tensor), treeNode, fullName);
    for (auto& [role, part] : parts.parts) {
        const std::string partComponent = "[" + role + "]";
        const std::uint32_t partNode
            = m_checkpoint.addTreeNode(treeNode, TreeNodeKind::Tensor, partComponent);
        m_checkpoint.tree[partNode].node = part.node;
        add(std::move(part), partNode, fullName + partComponent);
    }
}

namespace {

// torch prints an IntArrayRef as "[5, 3]".
std::string intArrayText(const std::vector<std::int64_t>& values)
{
    std::string text = "[";
    for (std::size_t i = 0; i < values.size(); ++i)
        text += (i ? ", " : "") + std::to_string(values[i]);
    return text + "]";
}

} // namespace

std::string storageSizeOverflowMessage(
    const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides)
{
    return "Storage size calculation overflowed with sizes=" + intArrayText(sizes)
        + " and strides=" + intArrayText(strides);
}

void CheckpointBuilder::checkViews()
{
    for (const TensorEntry& tensor : m_checkpoint.tensors) {
        if (tensor.storage < 0 || !tensor.stride || !tensor.storageOffset)
            continue;
        const StorageRecord& storage = m_checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
        const auto info = dtypeByName(tensor.dtype);
        const std::uint64_t elementSize = info ? info->elementSize : 1;
        if (tensor.shape.size() != tensor.stride->size()) {
            m_checkpoint.addFinding(Severity::Error, FindingCode::ShapeStrideMismatch,
                "tensor '" + tensor.name + "' has " + std::to_string(tensor.shape.size()) + " dimensions but "
                    + std::to_string(tensor.stride->size()) + " strides",
                storage.record());
            continue;
        }
        bool negative = *tensor.storageOffset < 0;
        for (std::size_t d = 0; d < tensor.shape.size(); ++d)
            negative = negative || tensor.shape[d] < 0 || (*tensor.stride)[d] < 0;
        if (negative) {
            m_checkpoint.addFinding(Severity::Error, FindingCode::NegativeGeometry,
                "tensor '" + tensor.name + "' records a negative size, stride or offset", storage.record());
            continue;
        }
        // torch's computeStorageNbytes (ATen EmptyTensor.cpp), step by step: one past the offset
        // of the last element, every product and sum checked, an empty dimension ending the walk
        // (torch returns 0 there, before looking at later dimensions), and a result above
        // INT64_MAX counted as an overflow too. Unchecked, stride 2^62 over five elements wrapped
        // to "needs 4 bytes" and the view was called fine.
        std::optional<std::uint64_t> elements
            = checkedAdd<std::uint64_t>(static_cast<std::uint64_t>(*tensor.storageOffset), 1);
        bool empty = false;
        for (std::size_t d = 0; d < tensor.shape.size() && !empty; ++d) {
            if (tensor.shape[d] == 0) {
                empty = true;
                break;
            }
            const auto strided
                = checkedMultiply<std::uint64_t>(static_cast<std::uint64_t>((*tensor.stride)[d]),
                    static_cast<std::uint64_t>(tensor.shape[d] - 1));
            elements = elements && strided ? checkedAdd(*elements, *strided) : std::nullopt;
        }
        if (empty)
            continue;
        std::optional<std::uint64_t> neededBytes;
        if (elements && info && info->valuesPerByte > 1)
            neededBytes = *elements / info->valuesPerByte + (*elements % info->valuesPerByte != 0);
        else if (elements)
            neededBytes = checkedMultiply<std::uint64_t>(*elements, elementSize);
        if (!neededBytes || *neededBytes > static_cast<std::uint64_t>(INT64_MAX)) {
            m_checkpoint.addFinding(Severity::Error, FindingCode::ViewSizeOverflow,
                "tensor '" + tensor.name + "' cannot be rebuilt: torch.load fails with \""
                    + storageSizeOverflowMessage(tensor.shape, *tensor.stride) + "\"",
                storage.record());
            continue;
        }
        if (*neededBytes > storage.nbytes) {
            m_checkpoint.addFinding(Severity::Error, FindingCode::ViewOutOfBounds,
                "tensor '" + tensor.name + "' views bytes up to " + formatThousands(*neededBytes)
                    + " of storage " + storage.key + ", which holds only " + formatThousands(storage.nbytes)
                    + " bytes: torch would read past the end of the storage",
                storage.record());
        }
    }
}

} // namespace ckpt
