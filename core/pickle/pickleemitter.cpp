#include "core/pickle/pickleemitter.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ckpt {

namespace {

constexpr int kMaxDepth = 20'000;
constexpr std::size_t kBatch = 1000; // items per APPENDS/SETITEMS, as CPython's pickler batches

struct Failure {
    std::string message;
};

class Writer {
public:
    Writer(const PickleGraph& graph,
        const std::map<std::pair<NodeId, std::uint32_t>, PickleReplacement>& items,
        const std::map<NodeId, PickleReplacement>& nodes, bool appendsOnly)
        : m_graph(graph)
        , m_itemReplacements(items)
        , m_nodeReplacements(nodes)
        , m_appendsOnly(appendsOnly)
    { }

    ByteBuffer run(NodeId root, int protocol)
    {
        countReferences(root);
        put8(0x80);
        put8(static_cast<std::uint8_t>(protocol < 2 ? 2 : protocol));
        emit(root, 0);
        put8('.');
        return std::move(m_out);
    }

private:
    // ---- references: a value written more than once is memoized ----
    void countReferences(NodeId root)
    {
        std::vector<NodeId> stack {root};
        std::unordered_set<NodeId> seen;
        auto visit = [&](NodeId child) {
            if (child == kNoNode)
                return;
            if (++m_references[child] == 1)
                stack.push_back(child);
        };
        m_references[root] = 1;
        while (!stack.empty()) {
            const NodeId id = stack.back();
            stack.pop_back();
            if (auto r = m_nodeReplacements.find(id); r != m_nodeReplacements.end()) {
                visit(r->second.node);
                continue;
            }
            forEachChild(id, [&](NodeId child, NodeId parentTuple, std::uint32_t index) {
                if (parentTuple != kNoNode) {
                    if (auto r = m_itemReplacements.find({parentTuple, index});
                        r != m_itemReplacements.end()) {
                        visit(r->second.node);
                        return;
                    }
                }
                visit(child);
            });
        }
    }

    template<class F> void forEachChild(NodeId id, F&& f) const
    {
        switch (m_graph.kind(id)) {
        case NodeKind::Tuple:
            for (std::uint32_t i = 0; i < m_graph.tupleSize(id); ++i)
                f(m_graph.tupleItem(id, i), id, i);
            break;
        case NodeKind::Call:
        case NodeKind::NewObject:
            f(m_graph.callee(id), kNoNode, 0);
            f(m_graph.arguments(id), kNoNode, 0);
            [[fallthrough]];
        case NodeKind::List:
        case NodeKind::Dict:
        case NodeKind::Set:
        case NodeKind::FrozenSet:
            if (const ContainerBody* body = m_graph.bodyOf(id)) {
                for (NodeId item : body->items)
                    f(item, kNoNode, 0);
                for (NodeId item : body->dictItems)
                    f(item, kNoNode, 0);
                for (NodeId state : body->states)
                    f(state, kNoNode, 0);
                if (body->keywordArgs != kNoNode)
                    f(body->keywordArgs, kNoNode, 0);
            }
            break;
        case NodeKind::PersistentId:
            f(m_graph.persistentIdPayload(id), kNoNode, 0);
            break;
        default:
            break;
        }
    }

    // ---- output ----
    void put8(std::uint8_t value) { m_out.push_back(value); }
    void putLE(std::uint64_t value, int bytes)
    {
        for (int i = 0; i < bytes; ++i)
            m_out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
    }
    void putText(std::string_view text) { m_out.insert(m_out.end(), text.begin(), text.end()); }

    void writeUnicode(std::string_view text)
    {
        if (text.size() > 0xFFFFFFFFull) {
            put8(0x8d); // BINUNICODE8
            putLE(text.size(), 8);
        } else {
            put8('X'); // BINUNICODE
            putLE(text.size(), 4);
        }
        putText(text);
    }
    void writeInt(std::int64_t value)
    {
        if (value >= 0 && value < 256) {
            put8('K');
            put8(static_cast<std::uint8_t>(value));
        } else if (value >= 0 && value < 65536) {
            put8('M');
            putLE(static_cast<std::uint64_t>(value), 2);
        } else if (value >= INT32_MIN && value <= INT32_MAX) {
            put8('J');
            putLE(static_cast<std::uint32_t>(static_cast<std::int32_t>(value)), 4);
        } else {
            // LONG1 with the shortest two's complement, as CPython writes it.
            std::uint8_t bytes[8];
            std::uint64_t bits = static_cast<std::uint64_t>(value);
            int n = 8;
            for (int i = 0; i < 8; ++i)
                bytes[i] = static_cast<std::uint8_t>(bits >> (8 * i));
            while (n > 1
                && ((bytes[n - 1] == 0x00 && !(bytes[n - 2] & 0x80))
                    || (bytes[n - 1] == 0xFF && (bytes[n - 2] & 0x80))))
                --n;
            put8(0x8a);
            put8(static_cast<std::uint8_t>(n));
            m_out.insert(m_out.end(), bytes, bytes + n);
        }
    }
    void memoize(NodeId id)
    {
        if (m_references[id] <= 1)
            return;
        const std::uint32_t index = static_cast<std::uint32_t>(m_memo.size());
        m_memo.emplace(id, index);
        if (index < 256) {
            put8('q');
            put8(static_cast<std::uint8_t>(index));
        } else {
            put8('r');
            putLE(index, 4);
        }
    }
    bool fetch(NodeId id)
    {
        auto it = m_memo.find(id);
        if (it == m_memo.end())
            return false;
        if (it->second < 256) {
            put8('h');
            put8(static_cast<std::uint8_t>(it->second));
        } else {
            put8('j');
            putLE(it->second, 4);
        }
        return true;
    }

    void writeReplacement(const PickleReplacement& replacement, int depth)
    {
        switch (replacement.kind) {
        case PickleReplacement::Kind::Text:
            writeUnicode(replacement.text);
            break;
        case PickleReplacement::Kind::TorchDevice:
            putText("ctorch\ndevice\n");
            writeUnicode(replacement.text);
            put8(0x85); // TUPLE1
            put8('R');
            break;
        case PickleReplacement::Kind::Node:
            emit(replacement.node, depth + 1);
            break;
        case PickleReplacement::Kind::StoragePid:
        case PickleReplacement::Kind::StoragePersistentId:
            put8('(');
            writeUnicode("storage");
            emit(replacement.node, depth + 1);
            writeUnicode(replacement.key);
            writeUnicode(replacement.text);
            writeInt(replacement.number);
            put8('t');
            if (replacement.kind == PickleReplacement::Kind::StoragePersistentId)
                put8('Q');
            break;
        }
    }

    void emitChild(NodeId child, NodeId parentTuple, std::uint32_t index, int depth)
    {
        if (auto r = m_itemReplacements.find({parentTuple, index}); r != m_itemReplacements.end())
            writeReplacement(r->second, depth);
        else
            emit(child, depth + 1);
    }

    void emitBody(NodeId id, int depth)
    {
        const ContainerBody* body = m_graph.bodyOf(id);
        if (!body)
            return;
        const NodeKind kind = m_graph.kind(id);
        if (!body->items.empty()) {
            const bool isSet = kind == NodeKind::Set;
            for (std::size_t start = 0; start < body->items.size(); start += kBatch) {
                const std::size_t end = std::min(body->items.size(), start + kBatch);
                if (!isSet && end - start == 1 && !m_appendsOnly) {
                    emit(body->items[start], depth + 1);
                    put8('a'); // APPEND
                    continue;
                }
                put8('(');
                for (std::size_t i = start; i < end; ++i)
                    emit(body->items[i], depth + 1);
                put8(isSet ? 0x90 : 'e'); // ADDITEMS / APPENDS
            }
        }
        if (!body->dictItems.empty()) {
            for (std::size_t start = 0; start < body->dictItems.size(); start += 2 * kBatch) {
                const std::size_t end = std::min(body->dictItems.size(), start + 2 * kBatch);
                if (end - start == 2) {
                    emit(body->dictItems[start], depth + 1);
                    emit(body->dictItems[start + 1], depth + 1);
                    put8('s'); // SETITEM
                    continue;
                }
                put8('(');
                for (std::size_t i = start; i < end; ++i)
                    emit(body->dictItems[i], depth + 1);
                put8('u'); // SETITEMS
            }
        }
        for (NodeId state : body->states) {
            emit(state, depth + 1);
            put8('b'); // BUILD
        }
    }

    void emit(NodeId id, int depth)
    {
        if (depth > kMaxDepth)
            throw Failure {"values nest more than " + std::to_string(kMaxDepth)
                + " levels deep; the pickle cannot be rewritten"};
        if (fetch(id))
            return;
        if (auto r = m_nodeReplacements.find(id); r != m_nodeReplacements.end()) {
            writeReplacement(r->second, depth);
            memoize(id);
            return;
        }
        const PickleNode& node = m_graph.node(id);
        switch (node.kind) {
        case NodeKind::None:
            put8('N');
            return;
        case NodeKind::Bool:
            put8(node.value ? 0x88 : 0x89);
            return;
        case NodeKind::Int:
            writeInt(node.value);
            return;
        case NodeKind::BigInt: {
            const std::string_view bytes = m_graph.text(id);
            if (bytes.size() < 256) {
                put8(0x8a);
                put8(static_cast<std::uint8_t>(bytes.size()));
            } else {
                put8(0x8b);
                putLE(bytes.size(), 4);
            }
            putText(bytes);
            return;
        }
        case NodeKind::Float: {
            const double value = m_graph.floatValue(id);
            std::uint64_t bits;
            std::memcpy(&bits, &value, sizeof bits);
            put8('G');
            for (int i = 7; i >= 0; --i)
                put8(static_cast<std::uint8_t>(bits >> (8 * i)));
            return;
        }
        case NodeKind::String: {
            const std::string_view text = m_graph.text(id);
            if (node.flags & FlagStringFromBytes) {
                // A Python 2 str: torch.load decodes it as UTF-8 like the original.
                if (text.size() < 256) {
                    put8('U');
                    put8(static_cast<std::uint8_t>(text.size()));
                } else {
                    put8('T');
                    putLE(text.size(), 4);
                }
                putText(text);
            } else {
                writeUnicode(text);
            }
            memoize(id);
            return;
        }
        case NodeKind::Bytes: {
            const std::string_view bytes = m_graph.text(id);
            if (bytes.size() < 256) {
                put8('C');
                put8(static_cast<std::uint8_t>(bytes.size()));
            } else if (bytes.size() <= 0xFFFFFFFFull) {
                put8('B');
                putLE(bytes.size(), 4);
            } else {
                put8(0x8e);
                putLE(bytes.size(), 8);
            }
            putText(bytes);
            memoize(id);
            return;
        }
        case NodeKind::ByteArray:
            put8(0x96);
            putLE(m_graph.text(id).size(), 8);
            putText(m_graph.text(id));
            memoize(id);
            return;
        case NodeKind::Global:
            put8('c');
            putText(m_graph.module(id));
            put8('\n');
            putText(m_graph.name(id));
            put8('\n');
            memoize(id);
            return;
        case NodeKind::Extension: {
            const std::int64_t code = node.value;
            if (code >= 0 && code < 256) {
                put8(0x82);
                put8(static_cast<std::uint8_t>(code));
            } else if (code >= 0 && code < 65536) {
                put8(0x83);
                putLE(static_cast<std::uint64_t>(code), 2);
            } else {
                put8(0x84);
                putLE(static_cast<std::uint32_t>(code), 4);
            }
            return;
        }
        case NodeKind::PickleBuffer:
            throw Failure {
                "the pickle uses an out-of-band buffer (protocol 5), whose data is not in the file"};
        case NodeKind::Tuple: {
            if (m_inProgress.count(id))
                throw Failure {"a tuple contains itself; such a pickle cannot be rewritten"};
            m_inProgress.insert(id);
            const std::uint32_t size = static_cast<std::uint32_t>(m_graph.tupleSize(id));
            if (size == 0) {
                put8(')');
            } else if (size <= 3) {
                for (std::uint32_t i = 0; i < size; ++i)
                    emitChild(m_graph.tupleItem(id, i), id, i, depth);
                put8(static_cast<std::uint8_t>(0x85 + size - 1));
            } else {
                put8('(');
                for (std::uint32_t i = 0; i < size; ++i)
                    emitChild(m_graph.tupleItem(id, i), id, i, depth);
                put8('t');
            }
            m_inProgress.erase(id);
            // A tuple reached again through its own items was already memoized there.
            if (!m_memo.count(id))
                memoize(id);
            return;
        }
        case NodeKind::List:
            put8(']');
            memoize(id);
            emitBody(id, depth);
            return;
        case NodeKind::Dict:
            put8('}');
            memoize(id);
            emitBody(id, depth);
            return;
        case NodeKind::Set:
            put8(0x8f);
            memoize(id);
            emitBody(id, depth);
            return;
        case NodeKind::FrozenSet: {
            put8('(');
            if (const ContainerBody* body = m_graph.bodyOf(id))
                for (NodeId item : body->items)
                    emit(item, depth + 1);
            put8(0x91);
            memoize(id);
            return;
        }
        case NodeKind::PersistentId:
            emit(m_graph.persistentIdPayload(id), depth + 1);
            put8('Q');
            memoize(id);
            return;
        case NodeKind::Call:
        case NodeKind::NewObject: {
            if (m_inProgress.count(id))
                throw Failure {
                    "an object is its own constructor argument; such a pickle cannot be rewritten"};
            m_inProgress.insert(id);
            const NodeId callee = m_graph.callee(id);
            const NodeId args = m_graph.arguments(id);
            if (node.kind == NodeKind::NewObject && (node.flags & FlagFromInst)) {
                put8('(');
                emit(callee, depth + 1);
                for (std::uint32_t i = 0; i < m_graph.tupleSize(args); ++i)
                    emitChild(m_graph.tupleItem(args, i), args, i, depth);
                put8('o'); // OBJ
            } else {
                emit(callee, depth + 1);
                emit(args, depth + 1);
                if (node.kind == NodeKind::Call) {
                    put8('R');
                } else if (node.flags & FlagNewObjectEx) {
                    const ContainerBody* body = m_graph.bodyOf(id);
                    if (body && body->keywordArgs != kNoNode)
                        emit(body->keywordArgs, depth + 1);
                    else
                        put8('}');
                    put8(0x92);
                } else {
                    put8(0x81);
                }
            }
            m_inProgress.erase(id);
            memoize(id);
            emitBody(id, depth);
            return;
        }
        }
    }

    const PickleGraph& m_graph;
    const std::map<std::pair<NodeId, std::uint32_t>, PickleReplacement>& m_itemReplacements;
    const std::map<NodeId, PickleReplacement>& m_nodeReplacements;
    bool m_appendsOnly = false;
    std::unordered_map<NodeId, std::uint32_t> m_references;
    std::unordered_map<NodeId, std::uint32_t> m_memo;
    std::unordered_set<NodeId> m_inProgress;
    ByteBuffer m_out;
};

} // namespace

PickleEmitter::PickleEmitter(const PickleGraph& graph)
    : m_graph(graph)
{ }

void PickleEmitter::replaceItem(NodeId tuple, std::uint32_t index, PickleReplacement replacement)
{
    m_itemReplacements[{tuple, index}] = std::move(replacement);
}

void PickleEmitter::replaceNode(NodeId node, PickleReplacement replacement)
{
    m_nodeReplacements[node] = std::move(replacement);
}

Expected<ByteBuffer> PickleEmitter::emit(NodeId root, int protocol) const
{
    try {
        return Writer(m_graph, m_itemReplacements, m_nodeReplacements, m_appendsOnly).run(root, protocol);
    } catch (const Failure& failure) {
        return makeError(failure.message);
    } catch (const std::bad_alloc&) {
        return makeError("ran out of memory while writing the pickle");
    }
}

} // namespace ckpt
