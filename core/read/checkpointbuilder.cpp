// SPDX-License-Identifier: MIT
// CheckpointBuilder turns the pickle machine's object graph into the checkpoint's tree of modules:
// dicts, modules' __setstate__ state, tuples and lists become tree nodes with dotted names, and
// anything else a one-line summary. The tensors themselves are rebuilt in tensorrebuilding.cpp.
//
// Why one file of about 700 lines: the walk is one recursive job over every object kind torch's
// pickles hold (OrderedDict, defaultdict, module state tuples, namedtuples, sets), and each case is
// short; splitting it by kind would scatter one recursion over several files.
#include "core/read/checkpointbuilder.h"

#include "core/base/checkedarithmetic.h"
#include "core/model/dtype.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>

namespace ckpt {

namespace {

constexpr int kMaxDepth = 1000;

std::string joinName(const std::string& base, const std::string& component)
{
    if (base.empty())
        return component;
    std::string name;
    name.reserve(base.size() + component.size() + 1);
    name += base;
    name += '.';
    name += component;
    return name;
}

bool isDictClass(std::string_view name)
{
    return name == "collections.OrderedDict" || name == "builtins.dict" || name == "__builtin__.dict"
        || name == "collections.defaultdict" || name == "collections.Counter"
        || name == "torch.nn.modules.container.ParameterDict";
}

bool isSetClass(std::string_view name)
{
    return name == "builtins.set" || name == "__builtin__.set" || name == "builtins.frozenset"
        || name == "__builtin__.frozenset";
}

// Classes whose instances are plain values for a person (shown in one line, never walked).
bool isValueClass(std::string_view name)
{
    return name == "torch.Size" || name == "torch.device" || name == "_codecs.encode"
        || name == "builtins.complex" || name == "__builtin__.complex" || name == "builtins.slice"
        || name == "numpy.dtype" || name == "numpy.core.multiarray.scalar"
        || name == "numpy._core.multiarray.scalar" || name == "builtins.bytearray"
        || name == "torch.serialization._get_layout" || name == "datetime.datetime"
        || name == "datetime.timedelta" || name == "pathlib.PosixPath";
}

std::string quoted(std::string_view text)
{
    std::string out = "'";
    const std::size_t limit = 80;
    for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
        const char c = text[i];
        if (c == '\n')
            out += "\\n";
        else if (c == '\'')
            out += "\\'";
        else if (static_cast<unsigned char>(c) < 0x20)
            out += '?';
        else
            out += c;
    }
    if (text.size() > limit)
        out += "…";
    out += '\'';
    return out;
}

std::string formatDouble(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
}

} // namespace

// Which node chunks go back after which entry of the root: each chunk after the last entry whose
// walk reads one of its nodes. A chunk holding a node that no entry reads (the root itself, what
// it was called with, another pickle's nodes) is kept.
struct CheckpointBuilder::GraphConsumption {
    std::vector<std::pair<std::size_t, std::size_t>> lastEntryAndChunk; // by entry, then chunk
    std::size_t next = 0;

    GraphConsumption(const PickleGraph& graph, NodeId root, const std::vector<NodeId>& keyValues)
    {
        // The last reader of each node: an entry's index, or one of these two.
        constexpr std::uint32_t kKept = UINT32_MAX; // read outside the entries
        constexpr std::uint32_t kUnread = UINT32_MAX - 1;
        std::vector<std::uint32_t> lastReader(graph.size(), kUnread);
        std::vector<NodeId> stack;
        auto walk = [&](NodeId from, std::uint32_t reader) {
            stack.push_back(from);
            while (!stack.empty()) {
                const NodeId id = stack.back();
                stack.pop_back();
                // Values without a node (inline scalars) hold nothing to give back.
                if (id >= graph.size() || lastReader[id] == kKept || lastReader[id] == reader)
                    continue;
                lastReader[id] = reader;
                graph.forEachChild(id, [&](NodeId child) { stack.push_back(child); });
            }
        };
        // The root's own node and what it was called with; not its items, the entries.
        lastReader[root] = kKept;
        if (graph.kind(root) == NodeKind::Call || graph.kind(root) == NodeKind::NewObject) {
            walk(graph.callee(root), kKept);
            walk(graph.arguments(root), kKept);
        }
        for (std::size_t i = 0; i + 1 < keyValues.size(); i += 2) {
            walk(keyValues[i], static_cast<std::uint32_t>(i / 2));
            walk(keyValues[i + 1], static_cast<std::uint32_t>(i / 2));
        }
        std::vector<std::uint32_t> chunkLast(graph.nodeChunkCount(), 0);
        for (std::size_t id = 0; id < lastReader.size(); ++id) {
            std::uint32_t& last = chunkLast[PickleGraph::nodeChunkOf(static_cast<NodeId>(id))];
            if (lastReader[id] >= kUnread)
                last = kKept;
            else if (last != kKept)
                last = std::max(last, lastReader[id]);
        }
        for (std::size_t chunk = 0; chunk < chunkLast.size(); ++chunk)
            if (chunkLast[chunk] != kKept)
                lastEntryAndChunk.emplace_back(chunkLast[chunk], chunk);
        std::sort(lastEntryAndChunk.begin(), lastEntryAndChunk.end());
    }
};

void CheckpointBuilder::entryConsumed(std::size_t entry)
{
    std::vector<std::pair<std::size_t, std::size_t>>& order = m_consumption->lastEntryAndChunk;
    for (; m_consumption->next < order.size() && order[m_consumption->next].first <= entry;
         ++m_consumption->next)
        m_graph.releaseNodeChunk(order[m_consumption->next].second);
}

bool CheckpointBuilder::consumableRoot(const PickleGraph& graph, NodeId root)
{
    if (graph.kind(root) == NodeKind::Dict)
        return true;
    // OrderedDict() and then SETITEMS, as a state_dict pickles.
    return graph.kind(root) == NodeKind::Call && graph.calleeName(root) == "collections.OrderedDict"
        && graph.kind(graph.arguments(root)) == NodeKind::Tuple
        && graph.tupleSize(graph.arguments(root)) == 0;
}

bool isTensorRebuildFunction(std::string_view name)
{
    static constexpr std::array<std::string_view, 19> kNames {
        "torch._utils._rebuild_tensor",
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_tensor_v3",
        "torch._utils._rebuild_parameter",
        "torch._utils._rebuild_parameter_with_state",
        "torch._utils._rebuild_qtensor",
        "torch._utils._rebuild_sparse_tensor",
        "torch._utils._rebuild_sparse_csr_tensor",
        "torch._utils._rebuild_nested_tensor",
        "torch._utils._rebuild_meta_tensor_no_storage",
        "torch._utils._rebuild_wrapper_subclass",
        "torch._utils._rebuild_device_tensor_from_numpy",
        "torch._utils._rebuild_xla_tensor",
        "torch._utils._rebuild_mlc_tensor",
        "torch._utils._rebuild_device_tensor_from_cpu_tensor",
        "torch._tensor._rebuild_from_type_v2",
        "torch._tensor._rebuild_from_type",
        "torch._utils._rebuild_from_type_v2",
        "torch.nn.parameter.Parameter",
    };
    return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

CheckpointBuilder::CheckpointBuilder(Checkpoint& checkpoint)
    : m_checkpoint(checkpoint)
    , m_graph(checkpoint.graph)
{
    m_checkpoint.ensureRoot();
}

void CheckpointBuilder::reserveForPersistentIds(std::size_t persistentIds)
{
    // Only from empty: a file of many small pickles (TorchScript) must not reserve exactly at each
    // one, which would defeat the vector's geometric growth. Capped: a hostile pickle of bare
    // persistent ids (three bytes each) must not reserve gigabytes for tensors it never holds.
    persistentIds = std::min<std::size_t>(persistentIds, std::size_t(1) << 20);
    if (m_checkpoint.tensors.empty())
        m_checkpoint.tensors.reserve(persistentIds);
    if (m_checkpoint.storages.empty()) {
        m_checkpoint.storages.reserve(persistentIds);
        // Grown one insert at a time, the index rehashed about 17 times on the way to 100,000 keys
        // (2% of info --json in perf).
        m_checkpoint.storageKeyIndex.reserve(persistentIds);
        // The module index grows with the modules of dotted names, about one per two tensors;
        // rehashed on the way there it was most of modulePathFor's time.
        m_checkpoint.moduleNodeIndex.reserve(persistentIds / 2);
    }
    // A dotted state_dict adds about one module per two tensors, more where names are deep (the
    // scale benchmark's has 1.52 nodes per tensor, the GUI benchmark's 2.01: a module of its own
    // for every tensor). Reserved at three times: a vector that outgrows its reserve holds old and
    // new block at once (at twice, the GUI benchmark's million tensors grew the tree from 2.0 to 4.0
    // million nodes, 128 MB copied at the peak), while capacity never written is address space,
    // not resident memory.
    if (m_checkpoint.tree.size() <= 1)
        m_checkpoint.tree.reserve(3 * persistentIds + 1);
}

std::string CheckpointBuilder::className(NodeId id) const
{
    NodeId callee = m_graph.callee(id);
    if (m_graph.kind(callee) == NodeKind::Global)
        return m_graph.qualifiedName(callee);
    // Legacy whole-module pickles replace the class GLOBAL by a ('module', cls, file, source) pid.
    if (m_graph.kind(callee) == NodeKind::PersistentId) {
        NodeId payload = m_graph.persistentIdPayload(callee);
        if (m_graph.text(m_graph.tupleItem(payload, 0)) == "module")
            return m_graph.qualifiedName(m_graph.tupleItem(payload, 1));
    }
    if (m_graph.kind(callee) == NodeKind::Call)
        return "(result of " + className(callee) + ")";
    return "(unknown class)";
}

std::optional<Dimensions> CheckpointBuilder::intList(NodeId id) const
{
    // torch.Size(...) pickles as a REDUCE of torch.Size over a one-tuple holding the tuple.
    if (m_graph.kind(id) == NodeKind::Call && className(id) == "torch.Size")
        id = m_graph.tupleItem(m_graph.arguments(id), 0);
    const NodeKind kind = m_graph.kind(id);
    if (kind != NodeKind::Tuple && kind != NodeKind::List)
        return std::nullopt;
    Dimensions values; // no heap block for up to four dimensions
    for (NodeId item : m_graph.sequence(id)) {
        if (!m_graph.isInt(item))
            return std::nullopt;
        values.push_back(m_graph.intValue(item));
    }
    return values;
}

std::optional<std::string> CheckpointBuilder::deviceFromValue(NodeId id) const
{
    if (m_graph.kind(id) == NodeKind::String)
        return std::string(m_graph.text(id));
    // torch.device('cuda', 0) pickles as REDUCE(torch.device, ('cuda', 0)) or ('cuda:0',).
    if (m_graph.kind(id) == NodeKind::Call && className(id) == "torch.device") {
        const NodeId args = m_graph.arguments(id);
        std::string device(m_graph.text(m_graph.tupleItem(args, 0)));
        const NodeId index = m_graph.tupleItem(args, 1);
        if (m_graph.isInt(index))
            device += ":" + std::to_string(m_graph.intValue(index));
        return device;
    }
    return std::nullopt;
}

std::string CheckpointBuilder::keyComponent(NodeId key) const
{
    switch (m_graph.kind(key)) {
    case NodeKind::String:
    case NodeKind::Bytes:
        return std::string(m_graph.text(key));
    case NodeKind::Int:
        return std::to_string(m_graph.intValue(key));
    case NodeKind::Bool:
        return m_graph.intValue(key) ? "True" : "False";
    case NodeKind::None:
        return "None";
    default:
        return summarize(key, 0);
    }
}

std::string CheckpointBuilder::summarize(NodeId id, int depth) const
{
    switch (m_graph.kind(id)) {
    case NodeKind::None:
        return "None";
    case NodeKind::Bool:
        return m_graph.intValue(id) ? "True" : "False";
    case NodeKind::Int:
        return std::to_string(m_graph.intValue(id));
    case NodeKind::BigInt:
        return "int (" + std::to_string(m_graph.text(id).size() * 8) + " bits)";
    case NodeKind::Float:
        return formatDouble(m_graph.floatValue(id));
    case NodeKind::String:
        return quoted(m_graph.text(id));
    case NodeKind::Bytes:
    case NodeKind::ByteArray:
        return "bytes (" + formatThousands(m_graph.text(id).size()) + ")";
    case NodeKind::Global:
        return m_graph.qualifiedName(id);
    case NodeKind::PersistentId:
        return "persistent id";
    case NodeKind::Extension:
        return "copyreg extension " + std::to_string(m_graph.intValue(id));
    case NodeKind::PickleBuffer:
        return "out-of-band buffer";
    case NodeKind::Tuple:
    case NodeKind::List:
    case NodeKind::Set:
    case NodeKind::FrozenSet: {
        const std::vector<NodeId> items = m_graph.sequence(id);
        const char* what = m_graph.kind(id) == NodeKind::Tuple ? "tuple"
            : m_graph.kind(id) == NodeKind::List               ? "list"
                                                               : "set";
        if (items.size() <= 6 && depth < 2) {
            std::string out = m_graph.kind(id) == NodeKind::List ? "[" : "(";
            for (std::size_t i = 0; i < items.size(); ++i) {
                if (i)
                    out += ", ";
                out += summarize(items[i], depth + 1);
            }
            out += m_graph.kind(id) == NodeKind::List ? "]" : ")";
            return out;
        }
        return std::string(what) + " of " + formatThousands(items.size());
    }
    case NodeKind::Dict: {
        const ContainerBody* body = m_graph.bodyOf(id);
        const std::size_t n = body ? body->dictItems.size() / 2 : 0;
        return "dict (" + formatThousands(n) + (n == 1 ? " entry)" : " entries)");
    }
    case NodeKind::Call:
    case NodeKind::NewObject: {
        std::string cls = className(id); // not const: returned by move
        const NodeId args = m_graph.arguments(id);
        if (cls == "torch.Size") {
            auto dims = intList(id);
            std::string out = "Size([";
            if (dims)
                for (std::size_t i = 0; i < dims->size(); ++i)
                    out += (i ? ", " : "") + std::to_string((*dims)[i]);
            return out + "])";
        }
        if (cls == "torch.device") {
            auto device = deviceFromValue(id);
            return "device('" + device.value_or("?") + "')";
        }
        if (cls == "_codecs.encode")
            return "bytes (" + formatThousands(m_graph.text(m_graph.tupleItem(args, 0)).size()) + ")";
        return cls;
    }
    }
    return "?";
}

void CheckpointBuilder::pruneTo(std::uint32_t treeNode, TreeNodeKind kind, std::string summary)
{
    m_checkpoint.tree.resize(treeNode + 1);
    TreeNode& node = m_checkpoint.tree[treeNode];
    node.children.clear();
    node.kind = kind;
    node.summary = std::move(summary);
}

void CheckpointBuilder::addRoot(
    NodeId root, std::uint32_t treeParent, const std::string& component, const std::string& baseName)
{
    std::optional<GraphConsumption> consumption;
    if (releaseGraphAsConsumed && component.empty() && consumableRoot(m_graph, root)) {
        const ContainerBody* body = m_graph.bodyOf(root);
        consumption.emplace(m_graph, root, body ? body->dictItems : std::vector<NodeId>());
        m_consumption = &*consumption;
    }
    struct ConsumptionEnds {
        GraphConsumption*& consumption;
        ~ConsumptionEnds() { consumption = nullptr; }
    } consumptionEnds {m_consumption};
    const NodeKind kind = m_graph.kind(root);
    const bool container = (kind == NodeKind::Dict || kind == NodeKind::List || kind == NodeKind::Tuple
        || ((kind == NodeKind::Call || kind == NodeKind::NewObject) && !isTensorCall(root)
            && !isValueClass(className(root))));
    if (component.empty() && container) {
        const bool object = kind == NodeKind::Call || kind == NodeKind::NewObject;
        if (object)
            m_checkpoint.tree[treeParent].className = className(root);
        const std::size_t treeBefore = m_checkpoint.tree.size();
        const std::size_t tensorsBefore = m_checkpoint.tensors.size();
        expandInto(root, treeParent, baseName, 0);
        if (object && m_checkpoint.tensors.size() == tensorsBefore) {
            // An object without tensors (a hostile REDUCE, a plain pickled class): show it as
            // one placeholder named by its class rather than as its attributes.
            m_checkpoint.tree.resize(treeBefore);
            auto& children = m_checkpoint.tree[treeParent].children;
            while (!children.empty() && children.back() >= treeBefore)
                children.pop_back();
            const std::uint32_t node
                = m_checkpoint.addTreeNode(treeParent, TreeNodeKind::Placeholder, "(root)");
            m_checkpoint.tree[node].className = className(root);
            m_checkpoint.tree[node].summary = summarize(root, 0);
            m_checkpoint.tree[node].node = root;
        }
        return;
    }
    walkChild(root, treeParent, component, baseName, 0);
}

bool CheckpointBuilder::walkChild(
    NodeId id, std::uint32_t parent, const std::string& component, const std::string& fullName, int depth)
{
    const std::size_t tensorsBefore = m_checkpoint.tensors.size();
    if (depth > kMaxDepth) {
        const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Placeholder, component);
        m_checkpoint.tree[node].summary = "(nested too deeply to show)";
        if (!m_depthFindingReported) {
            m_depthFindingReported = true;
            m_checkpoint.addFinding(Severity::Warning, FindingCode::NestingTooDeep,
                "values nest deeper than " + std::to_string(kMaxDepth) + " levels at " + fullName
                    + "; deeper values are not shown");
        }
        return false;
    }

    const NodeKind kind = m_graph.kind(id);
    switch (kind) {
    case NodeKind::Call:
    case NodeKind::NewObject: {
        if (isTensorCall(id)) {
            if (auto parts = buildTensor(id, 0)) {
                emitTensor(std::move(*parts), parent, component, fullName, id);
                return true;
            }
            const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Placeholder, component);
            m_checkpoint.tree[node].className = m_graph.calleeName(id);
            m_checkpoint.tree[node].summary = "tensor that could not be understood";
            m_checkpoint.addFinding(Severity::Warning, FindingCode::UnreadableTensor,
                "the tensor at '" + fullName + "' is rebuilt by " + m_graph.calleeName(id)
                    + " with arguments this reader does not understand; it is shown as a placeholder");
            return false;
        }
        const std::string cls = className(id);
        if (isValueClass(cls)) {
            const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Value, component);
            m_checkpoint.tree[node].summary = summarize(id, 0);
            m_checkpoint.tree[node].className = cls;
            m_checkpoint.tree[node].node = id;
            return false;
        }
        break;
    }
    case NodeKind::Dict:
    case NodeKind::List:
    case NodeKind::Tuple:
    case NodeKind::Set:
    case NodeKind::FrozenSet:
        break;
    case NodeKind::PersistentId: {
        // A tensor of the tar format, a storage pickled on its own, or a tar-format storage key.
        const NodeId payload = m_graph.persistentIdPayload(id);
        if (tensorForKey
            && (m_graph.kind(payload) == NodeKind::String || m_graph.kind(payload) == NodeKind::Int)) {
            if (auto tensor = tensorForKey(keyComponent(payload))) {
                TensorParts parts;
                parts.tensor = std::move(*tensor);
                emitTensor(std::move(parts), parent, component, fullName, id);
                return true;
            }
        }
        std::int32_t storage = storageFromArgument(id, nullptr);
        const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Value, component);
        m_checkpoint.tree[node].node = id;
        if (storage >= 0) {
            const StorageRecord& s = m_checkpoint.storages[static_cast<std::size_t>(storage)];
            m_checkpoint.tree[node].summary = "storage " + s.key + " (" + s.dtype + ", "
                + formatBytes(s.nbytes) + ", " + s.device.value_or("no device") + ")";
        } else {
            m_checkpoint.tree[node].summary = "persistent id the reader does not know";
        }
        return false;
    }
    default: {
        const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Value, component);
        m_checkpoint.tree[node].summary = summarize(id, 0);
        m_checkpoint.tree[node].node = id;
        return false;
    }
    }

    // A container: shown once; later references point at the first.
    if (auto it = m_expanded.find(id); it != m_expanded.end()) {
        const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Alias, component);
        m_checkpoint.tree[node].summary
            = "same object as " + (it->second.empty() ? std::string("(root)") : it->second);
        m_checkpoint.tree[node].node = id;
        return false;
    }
    TreeNodeKind treeKind = TreeNodeKind::Sequence;
    std::string cls;
    if (kind == NodeKind::Dict) {
        treeKind = TreeNodeKind::Dict;
    } else if (kind == NodeKind::Call || kind == NodeKind::NewObject) {
        cls = className(id);
        treeKind = isDictClass(cls) ? TreeNodeKind::Dict
            : isSetClass(cls)       ? TreeNodeKind::Sequence
                                    : TreeNodeKind::Object;
    }
    const std::uint32_t node = m_checkpoint.addTreeNode(parent, treeKind, component);
    m_checkpoint.tree[node].className = cls;
    m_checkpoint.tree[node].node = id;
    expandInto(id, node, fullName, depth + 1);
    if (m_checkpoint.tensors.size() == tensorsBefore) {
        const TreeNodeKind prunedKind = treeKind == TreeNodeKind::Object || treeKind == TreeNodeKind::Module
            ? TreeNodeKind::Placeholder
            : TreeNodeKind::Value;
        pruneTo(node, prunedKind, summarize(id, 0));
        return false;
    }
    return true;
}

bool CheckpointBuilder::expandEntries(const std::vector<NodeId>& keyValues, std::uint32_t treeNode,
    const std::string& fullName, int depth, bool splitDottedNames)
{
    const std::size_t tensorsBefore = m_checkpoint.tensors.size();
    for (std::size_t i = 0; i + 1 < keyValues.size(); i += 2) {
        const NodeId key = keyValues[i];
        const NodeId value = keyValues[i + 1];
        const std::string component = keyComponent(key);
        const std::string name = joinName(fullName, component);
        if (splitDottedNames && m_graph.kind(key) == NodeKind::String
            && component.find('.') != std::string::npos && isTensorCall(value)) {
            std::string leaf;
            const std::uint32_t parent = modulePathFor(treeNode, component, leaf);
            walkChild(value, parent, leaf, name, depth);
        } else {
            walkChild(value, treeNode, component, name, depth);
        }
        if (depth == 0 && m_consumption) // an entry of the root: see releaseGraphAsConsumed
            entryConsumed(i / 2);
    }
    return m_checkpoint.tensors.size() > tensorsBefore;
}

std::uint32_t CheckpointBuilder::modulePathFor(
    std::uint32_t parent, std::string_view dottedName, std::string& leafName)
{
    if (parent != m_lastModulePathParent) {
        m_lastModulePath.clear();
        m_lastModulePathParent = parent;
    }
    std::size_t start = 0;
    for (std::size_t depth = 0;; ++depth) {
        // The split as Checkpoint::modulePathFor makes it: an empty component or a last dot ends it.
        const std::size_t dot = dottedName.find('.', start);
        if (dot == std::string_view::npos || dot == start || dot + 1 == dottedName.size()) {
            leafName.assign(dottedName.substr(start));
            return parent;
        }
        const std::string_view component = dottedName.substr(start, dot - start);
        // A remembered node still is this component's module when it passes the test
        // modulePathFor's own index applies (the builder may have pruned and reused its slot).
        std::uint32_t found = 0;
        if (depth < m_lastModulePath.size()) {
            const std::uint32_t candidate = m_lastModulePath[depth];
            if (m_checkpoint.isModulePathNode(candidate, parent, component))
                found = candidate;
            else
                m_lastModulePath.resize(depth);
        }
        if (found == 0) {
            // One component through the checkpoint's index: "component." and the character after
            // the dot split into exactly that module and a leaf this ignores.
            std::string ignoredLeaf;
            found
                = m_checkpoint.modulePathFor(parent, dottedName.substr(start, dot - start + 2), ignoredLeaf);
            m_lastModulePath.push_back(found);
        }
        parent = found;
        start = dot + 1;
    }
}

bool CheckpointBuilder::expandObjectState(
    NodeId object, std::uint32_t treeNode, const std::string& fullName, int depth)
{
    const ContainerBody* body = m_graph.bodyOf(object);
    if (!body)
        return false;
    const std::size_t tensorsBefore = m_checkpoint.tensors.size();
    // An eager quantized module keeps its output scale and zero_point as Python numbers, which its
    // _save_to_state_dict turns into tensors (torch.tensor(self.scale)): shown where state_dict()
    // shows them, as tensors that no storage of the file holds.
    const std::string objectClass = className(object);
    const bool isQuantizedModule
        = !objectClass.starts_with("__torch__.") && objectClass.find(".quantized.") != std::string::npos;
    for (const NodeId state : std::vector<NodeId>(body->states)) {
        // __setstate__ input: a dict of attributes, or (dict, slots dict).
        std::vector<NodeId> attributeDicts;
        if (m_graph.kind(state) == NodeKind::Dict
            || (m_graph.kind(state) == NodeKind::Call && isDictClass(className(state)))) {
            attributeDicts.push_back(state);
        } else if (m_graph.kind(state) == NodeKind::Tuple) {
            const std::vector<std::pair<std::string, NodeId>> parts = tupleStateParts(object, state);
            if (!parts.empty()) {
                // A TorchScript object whose __getstate__ is a tuple (quantized packed params,
                // quantized convolutions, recurrent cell params): its tensors live in that tuple.
                m_checkpoint.tree[treeNode].kind = TreeNodeKind::Module;
                for (const auto& [dottedName, value] : parts) {
                    std::string leaf;
                    const std::uint32_t parent = m_checkpoint.modulePathFor(treeNode, dottedName, leaf);
                    if (isQuantizedModule
                        && emitStateDictScalar(value, parent, leaf, joinName(fullName, dottedName)))
                        continue;
                    const std::size_t treeBefore = m_checkpoint.tree.size();
                    if (!walkChild(value, parent, leaf, joinName(fullName, dottedName), depth)
                        && m_checkpoint.tree.size() > treeBefore) {
                        m_checkpoint.tree.resize(treeBefore);
                        auto& children = m_checkpoint.tree[parent].children;
                        if (!children.empty() && children.back() == treeBefore)
                            children.pop_back();
                    }
                }
                continue;
            }
            for (NodeId part : m_graph.sequence(state))
                if (m_graph.kind(part) == NodeKind::Dict)
                    attributeDicts.push_back(part);
        } else {
            walkChild(state, treeNode, "(state)", joinName(fullName, "(state)"), depth);
            continue;
        }
        for (NodeId dict : attributeDicts) {
            const ContainerBody* attributes = m_graph.bodyOf(dict);
            if (!attributes)
                continue;
            const std::vector<NodeId> items = attributes->dictItems;
            bool isModule = false;
            for (std::size_t i = 0; i + 1 < items.size(); i += 2)
                if (m_graph.text(items[i]) == "_modules" || m_graph.text(items[i]) == "_parameters")
                    isModule = true;
            const bool isScriptModule = className(object).starts_with("__torch__.");
            if (isModule || isScriptModule)
                m_checkpoint.tree[treeNode].kind = TreeNodeKind::Module;
            for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
                const std::string attribute = keyComponent(items[i]);
                const NodeId value = items[i + 1];
                if (isModule
                    && (attribute == "_parameters" || attribute == "_buffers" || attribute == "_modules")) {
                    // state_dict naming: these three dicts are transparent; None entries are skipped.
                    const ContainerBody* entries = m_graph.bodyOf(value);
                    if (!entries)
                        continue;
                    const std::vector<NodeId> pairs = entries->dictItems;
                    for (std::size_t k = 0; k + 1 < pairs.size(); k += 2) {
                        if (m_graph.kind(pairs[k + 1]) == NodeKind::None)
                            continue;
                        const std::string component = keyComponent(pairs[k]);
                        walkChild(pairs[k + 1], treeNode, component, joinName(fullName, component), depth);
                    }
                    continue;
                }
                if (isModule && isQuantizedModule && (attribute == "scale" || attribute == "zero_point")
                    && emitStateDictScalar(value, treeNode, attribute, joinName(fullName, attribute)))
                    continue;
                const std::size_t treeBefore = m_checkpoint.tree.size();
                const bool hadTensors
                    = walkChild(value, treeNode, attribute, joinName(fullName, attribute), depth);
                if ((isModule || isScriptModule) && !hadTensors && m_checkpoint.tree.size() > treeBefore) {
                    // A module's plain attributes (training, in_features, hooks) are noise in a
                    // tensor tree: keep only those that hold tensors.
                    m_checkpoint.tree.resize(treeBefore);
                    auto& children = m_checkpoint.tree[treeNode].children;
                    if (!children.empty() && children.back() == treeBefore)
                        children.pop_back();
                }
            }
        }
    }
    return m_checkpoint.tensors.size() > tensorsBefore;
}

bool CheckpointBuilder::emitStateDictScalar(
    NodeId value, std::uint32_t parent, const std::string& component, const std::string& fullName)
{
    const NodeKind kind = m_graph.kind(value);
    if (kind != NodeKind::Float && kind != NodeKind::Int)
        return false;
    TensorParts parts;
    TensorEntry& t = parts.tensor;
    t.dtype = InternedString(kind == NodeKind::Float ? "float32" : "int64");
    t.stride = Dimensions {};
    t.storageOffset = 0;
    t.rebuildFunction = InternedString("torch.tensor");
    t.node = value;
    emitTensor(std::move(parts), parent, component, fullName, value);
    return true;
}

std::vector<std::pair<std::string, NodeId>> CheckpointBuilder::tupleStateParts(
    NodeId object, NodeId state) const
{
    const std::string cls = className(object);
    const bool eagerQuantized
        = !cls.starts_with("__torch__.") && cls.find(".quantized.") != std::string::npos;
    if (!cls.starts_with("__torch__.") && !eagerQuantized && cls != "torch.ScriptObject")
        return {};
    const std::vector<NodeId> items = m_graph.sequence(state);
    auto item = [&](std::size_t i) { return i < items.size() ? items[i] : kNoNode; };
    std::vector<std::pair<std::string, NodeId>> parts;
    auto add = [&](std::string name, NodeId value) {
        if (value != kNoNode && m_graph.kind(value) != NodeKind::None)
            parts.emplace_back(std::move(name), value);
    };
    auto addList = [&](NodeId list, const std::vector<std::string>& names, const std::string& fallback) {
        // TorchScript pickles typed lists as torch.jit._pickle.build_tensorlist([...]) (and
        // restore_type_tag([...], type)): the items are the call's first argument.
        const std::string builder = m_graph.calleeName(list);
        if (m_graph.kind(list) == NodeKind::Call
            && (builder.starts_with("torch.jit._pickle.build_")
                || builder == "torch.jit._pickle.restore_type_tag"))
            list = m_graph.tupleItem(m_graph.arguments(list), 0);
        const std::vector<NodeId> values = m_graph.sequence(list);
        for (std::size_t i = 0; i < values.size(); ++i)
            add(i < names.size() ? names[i] : fallback + "." + std::to_string(i), values[i]);
    };
    const std::string_view last = std::string_view(cls).substr(cls.rfind('.') + 1);

    // A whole model pickled eagerly (torch.save(model)), named as its state_dict() names them.
    if (eagerQuantized) {
        // Quantized convolutions: _ConvNd.__getstate__ (torch/ao/nn/quantized/modules/conv.py)
        // is (in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
        // output_padding, groups, padding_mode, weight, bias, scale, zero_point, training), and
        // _save_to_state_dict writes weight, bias, scale and zero_point.
        if (items.size() >= 14 && m_graph.kind(item(9)) == NodeKind::String) {
            add("weight", item(10));
            add("bias", item(11));
            add("scale", item(12));
            add("zero_point", item(13));
        }
        return parts;
    }
    if (cls == "torch.ScriptObject") {
        // A C++ custom-class object inside an eager pickle (a quantized Linear's packed
        // parameters): its state is (the class's __getstate__ value, its TorchScript type name).
        // LinearPackedParams._save_to_state_dict names the (weight, bias) pair `_packed_params`,
        // a tuple, so its items are "0" and "1".
        const std::string_view type = m_graph.text(item(1));
        if (!type.starts_with("__torch__.torch.classes."))
            return {};
        const std::vector<NodeId> payload = m_graph.sequence(item(0));
        for (std::size_t i = 0; i < payload.size(); ++i)
            add(std::to_string(i), payload[i]);
        return parts;
    }

    if (cls.starts_with("__torch__.torch.classes.")) {
        // torch's C++ custom classes, named after what their __setstate__ rebuilds
        // (aten/src/ATen/native/quantized/cpu/conv_serialization.h, fbgemm_utils.cpp,
        // RNN.cpp CellParamsSerializationType).
        if (last == "LinearPackedParamsBase") {
            add("weight", item(0)); // (weight, bias)
            add("bias", item(1));
        } else if (last.starts_with("Conv") && last.ends_with("PackedParamsBase")) {
            if (m_graph.kind(item(0)) == NodeKind::String) { // v2: ("2", [config, weight], [bias])
                addList(item(1), {"config", "weight"}, "tensors");
                addList(item(2), {"bias"}, "optional");
            } else if (m_graph.kind(item(0)) == NodeKind::Int) { // v3: (3, [config ints], [weight, bias])
                addList(item(2), {"weight", "bias"}, "tensors");
            } else { // v1: (weight, bias, stride, padding, dilation, groups)
                add("weight", item(0));
                add("bias", item(1));
            }
        } else if (last == "CellParamsBase") {
            // (type, tensors, doubles, longs, packed LinearPackedParamsBase objects)
            const std::string_view type = m_graph.text(item(0));
            std::vector<std::string> tensorNames;
            if (type == "quantized_dynamic")
                tensorNames = {"bias_ih", "bias_hh"};
            else if (type == "quantized")
                tensorNames = {"w_ih", "w_hh", "b_ih", "b_hh"};
            addList(item(1), tensorNames, "tensors");
            addList(item(4), {"w_ih", "w_hh"}, "packed");
        } else {
            for (std::size_t i = 0; i < items.size(); ++i)
                add("(state)." + std::to_string(i), items[i]);
        }
        return parts;
    }
    // Quantized convolution modules pickle (in_channels, out_channels, kernel_size, stride,
    // padding, dilation, transposed, output_padding, groups, padding_mode, weight, bias, scale,
    // zero_point, training) (torch/ao/nn/quantized/modules/conv.py _ConvNd.__getstate__); on load
    // __setstate__ packs weight and bias into the `_packed_params` attribute.
    if (cls.find(".quantized.") != std::string::npos && items.size() >= 12
        && m_graph.kind(item(9)) == NodeKind::String) {
        add("_packed_params.weight", item(10));
        add("_packed_params.bias", item(11));
        return parts;
    }
    // Any other TorchScript tuple state: by position, unless it is the (dict, slots) form.
    for (NodeId value : items)
        if (m_graph.kind(value) == NodeKind::Dict)
            return {};
    for (std::size_t i = 0; i < items.size(); ++i)
        add("(state)." + std::to_string(i), items[i]);
    return parts;
}

bool CheckpointBuilder::expandInto(NodeId id, std::uint32_t treeNode, const std::string& fullName, int depth)
{
    m_expanded.emplace(id, fullName);
    const std::size_t tensorsBefore = m_checkpoint.tensors.size();
    const NodeKind kind = m_graph.kind(id);
    switch (kind) {
    case NodeKind::Dict:
        if (const ContainerBody* body = m_graph.bodyOf(id))
            expandEntries(std::vector<NodeId>(body->dictItems), treeNode, fullName, depth, true);
        break;
    case NodeKind::List:
    case NodeKind::Tuple:
    case NodeKind::Set:
    case NodeKind::FrozenSet: {
        const std::vector<NodeId> items = m_graph.sequence(id);
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string component = std::to_string(i);
            walkChild(items[i], treeNode, component, joinName(fullName, component), depth);
        }
        break;
    }
    case NodeKind::Call:
    case NodeKind::NewObject: {
        const std::string cls = className(id);
        const NodeId args = m_graph.arguments(id);
        if (isDictClass(cls)) {
            // OrderedDict([(k, v), ...]) as a REDUCE argument, then SETITEMS. Python 2's
            // OrderedDict.__reduce__ gives the pairs as [k, v] lists instead of tuples, and
            // Python 2-era torch.save files hold exactly that.
            const NodeId initial = m_graph.tupleItem(args, 0);
            if (m_graph.kind(initial) == NodeKind::List || m_graph.kind(initial) == NodeKind::Tuple) {
                std::vector<NodeId> pairs;
                for (NodeId pair : m_graph.sequence(initial)) {
                    const std::vector<NodeId> keyValue = m_graph.sequence(pair);
                    if (keyValue.size() == 2
                        && (m_graph.kind(pair) == NodeKind::Tuple || m_graph.kind(pair) == NodeKind::List)) {
                        pairs.push_back(keyValue[0]);
                        pairs.push_back(keyValue[1]);
                    }
                }
                expandEntries(pairs, treeNode, fullName, depth, true);
            } else if (m_graph.kind(initial) == NodeKind::Dict) {
                if (const ContainerBody* body = m_graph.bodyOf(initial))
                    expandEntries(std::vector<NodeId>(body->dictItems), treeNode, fullName, depth, true);
            }
            if (const ContainerBody* body = m_graph.bodyOf(id))
                expandEntries(std::vector<NodeId>(body->dictItems), treeNode, fullName, depth, true);
            break;
        }
        if (isSetClass(cls)) {
            const std::vector<NodeId> items = m_graph.sequence(m_graph.tupleItem(args, 0));
            for (std::size_t i = 0; i < items.size(); ++i)
                walkChild(
                    items[i], treeNode, std::to_string(i), joinName(fullName, std::to_string(i)), depth);
            break;
        }
        expandObjectState(id, treeNode, fullName, depth);
        if (const ContainerBody* body = m_graph.bodyOf(id)) {
            const std::vector<NodeId> items = body->items;
            for (std::size_t i = 0; i < items.size(); ++i)
                walkChild(
                    items[i], treeNode, std::to_string(i), joinName(fullName, std::to_string(i)), depth);
            expandEntries(std::vector<NodeId>(body->dictItems), treeNode, fullName, depth, false);
        }
        // Arguments of an arbitrary call may hide tensors; show them only when they do.
        const std::size_t treeBefore = m_checkpoint.tree.size();
        const std::size_t tensorsBeforeArgs = m_checkpoint.tensors.size();
        if (m_graph.kind(args) == NodeKind::Tuple && m_graph.tupleSize(args) > 0) {
            const std::uint32_t argsNode
                = m_checkpoint.addTreeNode(treeNode, TreeNodeKind::Sequence, "(arguments)");
            expandInto(args, argsNode, joinName(fullName, "(arguments)"), depth + 1);
            if (m_checkpoint.tensors.size() == tensorsBeforeArgs) {
                m_checkpoint.tree.resize(treeBefore);
                auto& children = m_checkpoint.tree[treeNode].children;
                if (!children.empty() && children.back() == treeBefore)
                    children.pop_back();
            }
        }
        break;
    }
    default:
        break;
    }
    return m_checkpoint.tensors.size() > tensorsBefore;
}

} // namespace ckpt
