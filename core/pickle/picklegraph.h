// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ckpt {

using NodeId = std::uint32_t;
constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();

// Small scalars have no node: None, True, False and ints of 30 bits are encoded in the id itself
// (a state_dict's offsets, sizes, strides, numels and requires_grad flags are a third of its
// values). Such ids have the top bit set; real nodes stay below it, and kNoNode is none of them.
// Ints are immutable and pickle memoizes none, so two equal ints sharing an id changes nothing.
constexpr NodeId kInlineTag = NodeId(1) << 31;
constexpr std::int64_t kInlineIntMin = -(std::int64_t(1) << 29);
constexpr std::int64_t kInlineIntMax = (std::int64_t(1) << 29) - 1;
constexpr NodeId kInlineIntLast = kInlineTag + NodeId((std::int64_t(1) << 30) - 1);
constexpr NodeId kInlineTrue = kNoNode - 3;
constexpr NodeId kInlineFalse = kNoNode - 2;
constexpr NodeId kInlineNone = kNoNode - 1;
// The most nodes a graph holds (ids below kInlineTag).
constexpr std::size_t kMaxGraphNodes = kInlineTag;

// What a pickled value is, symbolically. Nothing is ever imported or called: a GLOBAL is only a
// name, and REDUCE/NEWOBJ/BUILD build inert Call/NewObject nodes that remember what would have
// been called with what.
enum class NodeKind : std::uint8_t {
    None,
    Bool,
    Int, // fits in int64
    BigInt, // wider than 64 bits: text() holds the little-endian two's-complement bytes
    Float,
    String, // text() holds UTF-8
    Bytes, // text() holds the raw bytes
    ByteArray, // protocol 5 BYTEARRAY8
    Tuple,
    List,
    Dict,
    Set,
    FrozenSet,
    Global, // module() and name()
    Call, // REDUCE: callee(args...)
    NewObject, // NEWOBJ/NEWOBJ_EX/INST/OBJ: cls.__new__(cls, *args)
    PersistentId, // BINPERSID/PERSID: the loader's persistent_load(pid)
    Extension, // EXT1/2/4: a copyreg extension code (value())
    PickleBuffer, // protocol 5 NEXT_BUFFER (out-of-band data, absent from the file)
};

// How a node was written, where that matters to re-emit it faithfully.
enum NodeFlag : std::uint8_t {
    FlagNone = 0,
    FlagStringFromBytes = 1, // String decoded from a Python 2 STRING/BINSTRING/SHORT_BINSTRING
    FlagReadOnlyBuffer = 2,
    FlagNewObjectEx = 4, // NEWOBJ_EX (has keyword arguments)
    FlagFromInst = 8, // INST/OBJ (protocol 0/1 object creation)
};

// One value. 16 bytes; variable-size parts live in the graph's arenas so that a checkpoint with a
// million tensors does not cost a million heap objects. A 100,000-tensor state_dict pickles to
// about 15 nodes per tensor, so every byte here is 1.5 MB there: the fields a kind does not use
// share their room (a Call's callee sits in `count`, its body and arguments in `parts`).
struct PickleNode {
    NodeKind kind = NodeKind::None;
    std::uint8_t flags = FlagNone;
    // Tuple: item count; String/Bytes/BigInt: length; Call/NewObject: callee; Global: index into
    // the graph's table of names.
    std::uint32_t count = 0;
    struct BodyAndExtra {
        // Tuple: its first item when it has one or two (the second in `extra`), else the position
        // of its items in the item chunks, or for a long tuple the index of its own block;
        // containers and calls: index into bodies (or kNoNode).
        std::uint32_t body;
        std::uint32_t extra; // Call/NewObject: args node; a two-item Tuple: its second item
    };
    union {
        std::int64_t value = 0; // Int/Bool/Extension value; Float bits; String/Bytes: text position
                                // (or index of its own block); PersistentId: pid node
        BodyAndExtra parts; // Tuple, List, Dict, Set, FrozenSet, Call, NewObject
    };
};

// The mutable parts of lists, dicts, sets and objects: what APPEND(S)/SETITEM(S)/ADDITEMS/BUILD
// added, in order. Objects get a body only when something is added to them. Values of other kinds
// get one too when CPython would mutate them (an APPEND to a bytearray, a SETITEM on a GLOBAL such
// as os.environ): those live beside the nodes, in a map, as they are rare.
struct ContainerBody {
    std::vector<NodeId> items; // List/Set/FrozenSet items; objects: appended items
    std::vector<NodeId> dictItems; // key, value, key, value, ... (Dict; objects: SETITEM'd)
    std::vector<NodeId> states; // BUILD states applied to an object, in order
    NodeId keywordArgs = kNoNode; // NEWOBJ_EX keyword arguments
};

// All values of one or more pickles, with object identity preserved: a memo reference (GET)
// yields the same NodeId again, which is what later lets the remap writer re-emit shared values
// (and un-share a location string from user data).
class PickleGraph {
public:
    NodeId add(PickleNode node);
    NodeId addScalar(NodeKind kind, std::int64_t value);
    NodeId addFloat(double value);
    NodeId addText(NodeKind kind, std::string_view text, std::uint8_t flags = FlagNone);
    NodeId addGlobal(std::string_view module, std::string_view name);
    NodeId addTuple(const NodeId* items, std::size_t count);
    NodeId addContainer(NodeKind kind);
    NodeId addCall(NodeKind kind, NodeId callee, NodeId args);
    NodeId addPersistentId(NodeId pid);

    // Nodes of the graph (ids 0..size()-1); values without a node (isInline) are not counted.
    std::size_t size() const { return m_nodeCount; }
    // Only for ids below size(): flags() and extensionCode() work on any id.
    const PickleNode& node(NodeId id) const { return at(id); }
    NodeKind kind(NodeId id) const { return id < m_nodeCount ? at(id).kind : inlineKind(id); }
    static bool isInline(NodeId id)
    {
        return id >= kInlineTag && id != kNoNode && (id <= kInlineIntLast || id >= kInlineTrue);
    }
    // A value of this graph: a node or an inline scalar.
    bool holds(NodeId id) const { return id < m_nodeCount || isInline(id); }
    std::uint8_t flags(NodeId id) const { return id < m_nodeCount ? at(id).flags : std::uint8_t(FlagNone); }
    std::int64_t extensionCode(NodeId id) const;

    // Accessors that are safe on any node id: they return empty values for the wrong kind.
    std::string_view text(NodeId id) const; // String, Bytes, BigInt
    std::string_view module(NodeId id) const; // Global
    std::string_view name(NodeId id) const; // Global
    std::string qualifiedName(NodeId id) const; // Global: "module.name"
    std::int64_t intValue(NodeId id) const;
    double floatValue(NodeId id) const;
    bool isString(NodeId id) const { return kind(id) == NodeKind::String; }
    bool isInt(NodeId id) const { return kind(id) == NodeKind::Int; }

    // Tuple items, or the items of a List/Set.
    std::vector<NodeId> sequence(NodeId id) const;
    std::size_t tupleSize(NodeId id) const;
    NodeId tupleItem(NodeId id, std::size_t index) const;

    // Call/NewObject parts.
    NodeId callee(NodeId id) const;
    NodeId arguments(NodeId id) const;
    // The name of the callable of a Call/NewObject when it is a GLOBAL ("torch._utils._rebuild_tensor_v2").
    std::string calleeName(NodeId id) const;
    NodeId persistentIdPayload(NodeId id) const;

    const ContainerBody* bodyOf(NodeId id) const;
    ContainerBody& ensureBody(NodeId id);
    // Calls visit(child) for each value `id` refers to, as the accessors above give them and in
    // their order: a tuple's items, a call's callee then its arguments, a persistent id's payload,
    // then its body's items, dict items, states and keyword arguments (kNoNode where they give it).
    // One read of the node where an accessor per child checks the kind again: the builder walks
    // every node of a state_dict this way (~15 per tensor, 190 M instructions of `info --json` of
    // 100,000 tensors through the accessors) to know when each node chunk may go back.
    template<typename Visit> void forEachChild(NodeId id, Visit&& visit) const
    {
        const ContainerBody* body = nullptr;
        if (id < m_nodeCount) {
            const PickleNode& n = at(id);
            if (hasBodySlot(n.kind)) // bodyOf's answer, from the node already read
                body = n.parts.body == kNoNode ? nullptr : &m_bodies[n.parts.body];
            else if (!m_otherBodies.empty())
                body = bodyOf(id);
            switch (n.kind) {
            case NodeKind::Tuple:
                if (n.count <= 2) {
                    if (n.count >= 1)
                        visit(static_cast<NodeId>(n.parts.body));
                    if (n.count == 2)
                        visit(static_cast<NodeId>(n.parts.extra));
                } else if (n.count > kOwnItemsAbove) {
                    for (const NodeId item : m_ownItems[n.parts.body])
                        visit(item);
                } else {
                    for (std::size_t position = n.parts.body, end = position + n.count; position < end;
                         ++position)
                        visit(m_itemChunks[position >> kItemChunkBits][position & (kItemChunkSize - 1)]);
                }
                break;
            case NodeKind::Call:
            case NodeKind::NewObject:
                visit(static_cast<NodeId>(n.count));
                visit(static_cast<NodeId>(n.parts.extra));
                break;
            case NodeKind::PersistentId:
                visit(static_cast<NodeId>(n.value));
                break;
            default:
                break;
            }
        } else if (!m_otherBodies.empty()) {
            body = bodyOf(id);
        }
        if (body) {
            for (const NodeId item : body->items)
                visit(item);
            for (const NodeId item : body->dictItems)
                visit(item);
            for (const NodeId item : body->states)
                visit(item);
            visit(body->keywordArgs);
        }
    }
    // (No-op on an inline scalar: flags matter only to strings, buffers and objects.)
    void setFlags(NodeId id, std::uint8_t flags)
    {
        if (id < m_nodeCount)
            at(id).flags |= flags;
    }

    std::size_t approximateBytes() const;

    // Gives back every node, tuple item, text and body: for a caller that has judged what it needs
    // of the values (the safety, weights-only and global-move verdicts of `check`) and goes on with
    // the records alone, so that the graph is not resident beside what allocates after it. The
    // graph holds nothing afterwards and says so: a consumer that reads values (a verdict, a writer)
    // must not be handed a released graph, and checks released() to refuse one.
    void release();
    // True from the first node chunk given back on (releaseNodeChunk): the graph is then no longer
    // whole, and a consumer that reads any value refuses it as it refuses a released one.
    bool released() const { return m_released; }

    // Nodes are stored by id in chunks of kNodesPerChunk. A reader that walks a big pickle in the
    // order it was written gives back each chunk once it has read the last node of it it needs
    // (CheckpointBuilder, after the verdicts judged the whole graph), so that the graph and the
    // records built from it are never both whole (issue 28). The tuple items and text of a chunk's
    // nodes go back with the last chunk that shares their chunks. Ids do not change; a node given
    // back must not be read again. The newest chunk of each kind is kept: a pickle run later still
    // adds to the graph.
    static constexpr std::size_t kNodesPerChunk = std::size_t(1) << 16;
    static std::size_t nodeChunkOf(NodeId id) { return id / kNodesPerChunk; }
    std::size_t nodeChunkCount() const { return m_chunks.size(); }
    void releaseNodeChunk(std::size_t chunk);

private:
    static NodeKind inlineKind(NodeId id)
    {
        if (id < kInlineTag)
            return NodeKind::None; // beyond the graph
        if (id <= kInlineIntLast)
            return NodeKind::Int;
        if (id == kInlineTrue || id == kInlineFalse)
            return NodeKind::Bool;
        return NodeKind::None; // kInlineNone, and kNoNode and unused ids
    }
    // Tuple items and text live in fixed chunks too (a growing vector holds up to twice what it
    // uses, and both blocks at each doubling); a tuple or text longer than a sixteenth of a chunk
    // gets a block of its own, so no chunk wastes more than that at its end.
    static constexpr unsigned kItemChunkBits = 14; // 16,384 items, 64 KiB
    static constexpr std::size_t kItemChunkSize = std::size_t(1) << kItemChunkBits;
    static constexpr std::size_t kOwnItemsAbove = kItemChunkSize / 16;
    static constexpr unsigned kTextChunkBits = 16; // 64 KiB
    static constexpr std::size_t kTextChunkSize = std::size_t(1) << kTextChunkBits;
    static constexpr std::size_t kOwnTextAbove = kTextChunkSize / 16;
    std::uint64_t storeText(std::string_view first, std::string_view second);
    std::string_view storedText(std::uint64_t handle, std::size_t length) const;

    // Nodes live in fixed chunks rather than one vector: a pickle of a million tensors has tens of
    // millions of nodes, and a growing vector would copy them all at each doubling and hold the old
    // and the new block at once (half again the graph's size at the peak, the largest single cost
    // of reading such a file). A chunk never moves, so growth is one allocation per 65,536 nodes.
    static constexpr unsigned kChunkBits = 16;
    static constexpr std::size_t kChunkSize = std::size_t(1) << kChunkBits;
    static_assert(kChunkSize == kNodesPerChunk);
    static bool hasBodySlot(NodeKind kind)
    {
        return kind == NodeKind::List || kind == NodeKind::Dict || kind == NodeKind::Set
            || kind == NodeKind::FrozenSet || kind == NodeKind::Call || kind == NodeKind::NewObject;
    }
    const PickleNode& at(NodeId id) const { return m_chunks[id >> kChunkBits][id & (kChunkSize - 1)]; }
    PickleNode& at(NodeId id) { return m_chunks[id >> kChunkBits][id & (kChunkSize - 1)]; }

    // A GLOBAL's text: its module and name, one after the other in m_text. Globals are memoised
    // and few, so their lengths live here rather than in every node.
    struct GlobalText {
        std::size_t offset = 0;
        std::uint32_t moduleLength = 0;
        std::uint32_t nameLength = 0;
    };

    std::vector<std::unique_ptr<PickleNode[]>> m_chunks; // null: given back (releaseNodeChunk)
    std::size_t m_nodeCount = 0;
    // Per node chunk, the tuple-item and text positions after its last node: a node's items and
    // text are stored just before it, so those of chunk c lie from chunk c-1's ends to its own.
    std::vector<std::size_t> m_chunkItemEnd;
    std::vector<std::size_t> m_chunkTextEnd;
    std::vector<std::unique_ptr<NodeId[]>> m_itemChunks;
    std::size_t m_itemEnd = 0; // next free item position (chunk << kItemChunkBits | index)
    std::vector<std::vector<NodeId>> m_ownItems; // tuples of more than kOwnItemsAbove items
    std::vector<ContainerBody> m_bodies;
    std::unordered_map<NodeId, std::uint32_t> m_otherBodies; // bodies of kinds without a body slot
    std::vector<GlobalText> m_globals;
    std::vector<std::unique_ptr<char[]>> m_textChunks;
    std::size_t m_textEnd = 0; // next free text position
    std::vector<std::string> m_ownText; // texts of more than kOwnTextAbove bytes
    bool m_released = false;
};

} // namespace ckpt
