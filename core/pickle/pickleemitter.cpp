// SPDX-License-Identifier: MIT
// Writes a PickleGraph back as pickle bytes, with replacements (device tags, storage ids, globals).
//
// Why one file of about 600 lines: it is one job, the inverse of the machine, and its parts (the
// explicit work stack that keeps hostile nesting off the C++ stack, memo bookkeeping, and one
// emitter per node kind) share the writer's state; split, each part would need that state passed
// around or made public.
#include "core/pickle/pickleemitter.h"

#include "core/base/escaping.h"
#include "core/pickle/opcodes.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ckpt {

namespace {

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
        put8(pickleop::PROTO);
        put8(static_cast<std::uint8_t>(protocol < 2 ? 2 : protocol));
        emit(root);
        put8(pickleop::STOP);
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
            put8(pickleop::BINUNICODE8);
            putLE(text.size(), 8);
        } else {
            put8(pickleop::BINUNICODE);
            putLE(text.size(), 4);
        }
        putText(text);
    }
    void writeInt(std::int64_t value)
    {
        if (value >= 0 && value < 256) {
            put8(pickleop::BININT1);
            put8(static_cast<std::uint8_t>(value));
        } else if (value >= 0 && value < 65536) {
            put8(pickleop::BININT2);
            putLE(static_cast<std::uint64_t>(value), 2);
        } else if (value >= INT32_MIN && value <= INT32_MAX) {
            put8(pickleop::BININT);
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
            put8(pickleop::LONG1);
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
            put8(pickleop::BINPUT);
            put8(static_cast<std::uint8_t>(index));
        } else {
            put8(pickleop::LONG_BINPUT);
            putLE(index, 4);
        }
    }
    bool fetch(NodeId id)
    {
        auto it = m_memo.find(id);
        if (it == m_memo.end())
            return false;
        if (it->second < 256) {
            put8(pickleop::BINGET);
            put8(static_cast<std::uint8_t>(it->second));
        } else {
            put8(pickleop::LONG_BINGET);
            putLE(it->second, 4);
        }
        return true;
    }

    // ---- the work list ----
    // Values nest as deep as the input's pickle did (the machine accepts 100,000 MARKs and far
    // deeper tuple chains), so the writer keeps its own stack of pending steps instead of
    // recursing: the C++ stack stays flat whatever the nesting (issue 9: 20,000 nested tuples
    // overflowed a 2 MiB stack). Steps run last-in first-out; the bytes come out in the order the
    // recursive writer produced them.
    struct Step {
        enum class Kind : std::uint8_t {
            Value, // write node `id` (or fetch it from the memo)
            TupleItem, // write item `index` of tuple `tuple` (`id`), honouring item replacements
            Byte, // write `byte`
            Memoize, // memoize `id` when it is referenced again
            CloseTuple, // the tuple's closing opcode, then memoize it
            CloseObject, // a Call/NewObject is built: memoize it, then its body
            Body, // part of a container's body: stage `byte`, from position `index`
            StorageTail, // the rest of a ('storage', cls, key, location, numel) replacement
        };
        Kind kind = Kind::Value;
        std::uint8_t byte = 0;
        std::uint32_t index = 0;
        NodeId id = kNoNode;
        NodeId tuple = kNoNode;
        const PickleReplacement* replacement = nullptr;
    };

    void pushValue(NodeId id) { m_steps.push_back({Step::Kind::Value, 0, 0, id, kNoNode, nullptr}); }
    void pushByte(std::uint8_t byte)
    {
        m_steps.push_back({Step::Kind::Byte, byte, 0, kNoNode, kNoNode, nullptr});
    }
    void pushStep(Step::Kind kind, NodeId id, std::uint8_t byte = 0, std::uint32_t index = 0)
    {
        m_steps.push_back({kind, byte, index, id, kNoNode, nullptr});
    }
    void pushTupleItem(NodeId tuple, std::uint32_t index)
    {
        m_steps.push_back({Step::Kind::TupleItem, 0, index, m_graph.tupleItem(tuple, index), tuple, nullptr});
    }

    void emit(NodeId root)
    {
        pushValue(root);
        while (!m_steps.empty()) {
            const Step step = m_steps.back();
            m_steps.pop_back();
            switch (step.kind) {
            case Step::Kind::Value:
                emitValue(step.id);
                break;
            case Step::Kind::TupleItem:
                if (auto r = m_itemReplacements.find({step.tuple, step.index}); r != m_itemReplacements.end())
                    writeReplacement(r->second);
                else
                    pushValue(step.id);
                break;
            case Step::Kind::Byte:
                put8(step.byte);
                break;
            case Step::Kind::Memoize:
                memoize(step.id);
                break;
            case Step::Kind::CloseTuple: {
                const auto size = static_cast<std::uint32_t>(m_graph.tupleSize(step.id));
                put8(size <= 3 ? static_cast<std::uint8_t>(pickleop::TUPLE1 + size - 1)
                               : std::uint8_t {pickleop::TUPLE});
                m_inProgress.erase(step.id);
                // A tuple reached again through its own items was already memoized there.
                if (!m_memo.count(step.id))
                    memoize(step.id);
                break;
            }
            case Step::Kind::CloseObject:
                m_inProgress.erase(step.id);
                memoize(step.id);
                pushStep(Step::Kind::Body, step.id, 0, 0);
                break;
            case Step::Kind::Body:
                continueBody(step.id, step.byte, step.index);
                break;
            case Step::Kind::StorageTail:
                writeUnicode(step.replacement->key);
                writeUnicode(step.replacement->text);
                writeInt(step.replacement->number);
                put8(pickleop::TUPLE);
                if (step.replacement->kind == PickleReplacement::Kind::StoragePersistentId)
                    put8(pickleop::BINPERSID);
                break;
            }
        }
    }

    void writeReplacement(const PickleReplacement& replacement)
    {
        switch (replacement.kind) {
        case PickleReplacement::Kind::Text:
            writeUnicode(replacement.text);
            break;
        case PickleReplacement::Kind::TorchDevice:
            putText("ctorch\ndevice\n");
            writeUnicode(replacement.text);
            put8(pickleop::TUPLE1);
            put8(pickleop::REDUCE);
            break;
        case PickleReplacement::Kind::Node:
            pushValue(replacement.node);
            break;
        case PickleReplacement::Kind::StoragePid:
        case PickleReplacement::Kind::StoragePersistentId:
            put8(pickleop::MARK);
            writeUnicode("storage");
            m_steps.push_back({Step::Kind::StorageTail, 0, 0, kNoNode, kNoNode, &replacement});
            pushValue(replacement.node);
            break;
        case PickleReplacement::Kind::Global:
            put8(pickleop::GLOBAL);
            putText(replacement.text);
            put8('\n');
            putText(replacement.key);
            put8('\n');
            break;
        case PickleReplacement::Kind::Bytes:
            if (replacement.text.size() < 256) {
                put8(pickleop::SHORT_BINBYTES);
                put8(static_cast<std::uint8_t>(replacement.text.size()));
            } else if (replacement.text.size() <= 0xFFFFFFFFull) {
                put8(pickleop::BINBYTES);
                putLE(replacement.text.size(), 4);
            } else {
                put8(pickleop::BINBYTES8);
                putLE(replacement.text.size(), 8);
            }
            putText(replacement.text);
            break;
        }
    }

    // Writes the next part of a container's body (stage 0: appended items, 1: dict items,
    // 2: BUILD states), from `position` on, and schedules the part after it.
    void continueBody(NodeId id, std::uint8_t stage, std::uint32_t position)
    {
        const ContainerBody* body = m_graph.bodyOf(id);
        if (!body)
            return;
        if (stage == 0) {
            if (position >= body->items.size())
                return pushStep(Step::Kind::Body, id, 1, 0);
            const bool isSet = m_graph.kind(id) == NodeKind::Set;
            const std::size_t end = std::min(body->items.size(), position + kBatch);
            pushStep(Step::Kind::Body, id, 0, static_cast<std::uint32_t>(end));
            if (!isSet && end - position == 1 && !m_appendsOnly) {
                pushByte(pickleop::APPEND);
                pushValue(body->items[position]);
                return;
            }
            put8(pickleop::MARK);
            pushByte(isSet ? pickleop::ADDITEMS : pickleop::APPENDS);
            for (std::size_t i = end; i-- > position;)
                pushValue(body->items[i]);
            return;
        }
        if (stage == 1) {
            if (position >= body->dictItems.size())
                return pushStep(Step::Kind::Body, id, 2, 0);
            const std::size_t end = std::min(body->dictItems.size(), position + 2 * kBatch);
            pushStep(Step::Kind::Body, id, 1, static_cast<std::uint32_t>(end));
            if (end - position == 2) {
                pushByte(pickleop::SETITEM);
            } else {
                put8(pickleop::MARK);
                pushByte(pickleop::SETITEMS);
            }
            for (std::size_t i = end; i-- > position;)
                pushValue(body->dictItems[i]);
            return;
        }
        if (position < body->states.size()) {
            pushStep(Step::Kind::Body, id, 2, position + 1);
            pushByte(pickleop::BUILD);
            pushValue(body->states[position]);
        }
    }

    // A GLOBAL names its module and attribute on two text lines. A name that holds a line break,
    // any other control character or bytes that are not UTF-8 cannot be written that way without
    // changing what the line means: "os\nsystem" as a module would read back as a different global
    // (issue 9: a STACK_GLOBAL torch refuses became a posix.system call after a remap). Such names
    // keep the STACK_GLOBAL form, whose strings carry any text; what no str can carry is refused.
    void writeGlobal(std::string_view module, std::string_view name)
    {
        const auto fitsOnALine = [](std::string_view text) {
            for (std::size_t i = 0; i < text.size();) {
                const Utf8Step step = decodeUtf8At(text, i);
                if (!step.valid || isControlCodePoint(step.codePoint))
                    return false;
                i += step.length;
            }
            return true;
        };
        if (fitsOnALine(module) && fitsOnALine(name)) {
            put8(pickleop::GLOBAL);
            putText(module);
            put8('\n');
            putText(name);
            put8('\n');
            return;
        }
        if (!isValidUtf8(module) || !isValidUtf8(name))
            throw Failure {"the global " + printableText(module) + "." + printableText(name)
                + " is not UTF-8 text, which no pickle opcode can write back unchanged"};
        writeUnicode(module);
        writeUnicode(name);
        put8(pickleop::STACK_GLOBAL);
    }

    void emitValue(NodeId id)
    {
        if (fetch(id))
            return;
        // A value with parts (a container, a call, a persistent id, a replacement) is written out
        // at most once: later references fetch it from the memo, and one referenced once is
        // reached once. A graph that makes the writer expand more has a cycle the memo cannot
        // break (a frozenset inside its own list), which would grow the work list for ever.
        // Scalars may be written any number of times (the pickler memoizes no ints).
        const NodeKind kind = m_graph.kind(id);
        const bool hasParts = kind == NodeKind::Tuple || kind == NodeKind::List || kind == NodeKind::Dict
            || kind == NodeKind::Set || kind == NodeKind::FrozenSet || kind == NodeKind::PersistentId
            || kind == NodeKind::Call || kind == NodeKind::NewObject || m_nodeReplacements.count(id);
        if (hasParts && ++m_expansions > 2 * static_cast<std::uint64_t>(m_graph.size()) + 64)
            throw Failure {"the pickle's values refer to themselves in a way that cannot be rewritten"};
        if (auto r = m_nodeReplacements.find(id); r != m_nodeReplacements.end()) {
            pushStep(Step::Kind::Memoize, id);
            writeReplacement(r->second);
            return;
        }
        const std::uint8_t flags = m_graph.flags(id); // (nodes and inline scalars alike)
        const bool writesBody = kind == NodeKind::List || kind == NodeKind::Dict || kind == NodeKind::Set
            || kind == NodeKind::FrozenSet || kind == NodeKind::Call || kind == NodeKind::NewObject;
        if (!writesBody && m_graph.bodyOf(id))
            // An APPEND to a bytearray, a SETITEM on a GLOBAL (os.environ): written from the graph,
            // the change would be lost, so the copy would not be the input with only devices changed.
            throw Failure {"the pickle changes a value it did not build as a container (APPEND, SETITEM or "
                           "BUILD on a global, a bytearray or a persistent id); such a pickle cannot be "
                           "rewritten"};
        switch (kind) {
        case NodeKind::None:
            put8(pickleop::NONE);
            return;
        case NodeKind::Bool:
            put8(m_graph.intValue(id) ? pickleop::NEWTRUE : pickleop::NEWFALSE);
            return;
        case NodeKind::Int:
            writeInt(m_graph.intValue(id));
            return;
        case NodeKind::BigInt: {
            const std::string_view bytes = m_graph.text(id);
            if (bytes.size() < 256) {
                put8(pickleop::LONG1);
                put8(static_cast<std::uint8_t>(bytes.size()));
            } else {
                put8(pickleop::LONG4);
                putLE(bytes.size(), 4);
            }
            putText(bytes);
            return;
        }
        case NodeKind::Float: {
            const double value = m_graph.floatValue(id);
            std::uint64_t bits;
            std::memcpy(&bits, &value, sizeof bits);
            put8(pickleop::BINFLOAT);
            for (int i = 7; i >= 0; --i)
                put8(static_cast<std::uint8_t>(bits >> (8 * i)));
            return;
        }
        case NodeKind::String: {
            const std::string_view text = m_graph.text(id);
            if (flags & FlagStringFromBytes) {
                // A Python 2 str: torch.load decodes it as UTF-8 like the original.
                if (text.size() < 256) {
                    put8(pickleop::SHORT_BINSTRING);
                    put8(static_cast<std::uint8_t>(text.size()));
                } else {
                    put8(pickleop::BINSTRING);
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
                put8(pickleop::SHORT_BINBYTES);
                put8(static_cast<std::uint8_t>(bytes.size()));
            } else if (bytes.size() <= 0xFFFFFFFFull) {
                put8(pickleop::BINBYTES);
                putLE(bytes.size(), 4);
            } else {
                put8(pickleop::BINBYTES8);
                putLE(bytes.size(), 8);
            }
            putText(bytes);
            memoize(id);
            return;
        }
        case NodeKind::ByteArray:
            put8(pickleop::BYTEARRAY8);
            putLE(m_graph.text(id).size(), 8);
            putText(m_graph.text(id));
            memoize(id);
            return;
        case NodeKind::Global:
            writeGlobal(m_graph.module(id), m_graph.name(id));
            memoize(id);
            return;
        case NodeKind::Extension: {
            const std::int64_t code = m_graph.extensionCode(id);
            if (code >= 0 && code < 256) {
                put8(pickleop::EXT1);
                put8(static_cast<std::uint8_t>(code));
            } else if (code >= 0 && code < 65536) {
                put8(pickleop::EXT2);
                putLE(static_cast<std::uint64_t>(code), 2);
            } else {
                put8(pickleop::EXT4);
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
            const auto size = static_cast<std::uint32_t>(m_graph.tupleSize(id));
            if (size == 0) {
                put8(pickleop::EMPTY_TUPLE);
                if (!m_memo.count(id))
                    memoize(id);
                return;
            }
            m_inProgress.insert(id);
            if (size > 3)
                put8(pickleop::MARK);
            pushStep(Step::Kind::CloseTuple, id);
            for (std::uint32_t i = size; i-- > 0;)
                pushTupleItem(id, i);
            return;
        }
        case NodeKind::List:
            put8(pickleop::EMPTY_LIST);
            memoize(id);
            pushStep(Step::Kind::Body, id, 0, 0);
            return;
        case NodeKind::Dict:
            put8(pickleop::EMPTY_DICT);
            memoize(id);
            pushStep(Step::Kind::Body, id, 0, 0);
            return;
        case NodeKind::Set:
            put8(pickleop::EMPTY_SET);
            memoize(id);
            pushStep(Step::Kind::Body, id, 0, 0);
            return;
        case NodeKind::FrozenSet: {
            put8(pickleop::MARK);
            pushStep(Step::Kind::Memoize, id);
            pushByte(pickleop::FROZENSET);
            if (const ContainerBody* body = m_graph.bodyOf(id))
                for (std::size_t i = body->items.size(); i-- > 0;)
                    pushValue(body->items[i]);
            return;
        }
        case NodeKind::PersistentId:
            pushStep(Step::Kind::Memoize, id);
            pushByte(pickleop::BINPERSID);
            pushValue(m_graph.persistentIdPayload(id));
            return;
        case NodeKind::Call:
        case NodeKind::NewObject: {
            if (m_inProgress.count(id))
                throw Failure {
                    "an object is its own constructor argument; such a pickle cannot be rewritten"};
            m_inProgress.insert(id);
            const NodeId callee = m_graph.callee(id);
            const NodeId args = m_graph.arguments(id);
            pushStep(Step::Kind::CloseObject, id);
            if (kind == NodeKind::NewObject && (flags & FlagFromInst)) {
                put8(pickleop::MARK);
                pushByte(pickleop::OBJ);
                for (auto i = static_cast<std::uint32_t>(m_graph.tupleSize(args)); i-- > 0;)
                    pushTupleItem(args, i);
                pushValue(callee);
                return;
            }
            if (kind == NodeKind::Call) {
                pushByte(pickleop::REDUCE);
            } else if (flags & FlagNewObjectEx) {
                pushByte(pickleop::NEWOBJ_EX);
                const ContainerBody* body = m_graph.bodyOf(id);
                if (body && body->keywordArgs != kNoNode)
                    pushValue(body->keywordArgs);
                else
                    pushByte(pickleop::EMPTY_DICT);
            } else {
                pushByte(pickleop::NEWOBJ);
            }
            pushValue(args);
            pushValue(callee);
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
    std::vector<Step> m_steps;
    std::uint64_t m_expansions = 0;
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
