// SPDX-License-Identifier: MIT
#include "core/pickle/picklegraph.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ckpt {

namespace {

// The whole pages of a block about to be freed go back to the system first: the allocator keeps a
// freed block of the heap's middle, resident, for its own reuse, while the records that grow as the
// graph is given back (CheckpointBuilder) live in blocks of their own. The allocator may reuse the
// block later; its pages then come back as zeros, which it never relies on for a heap block.
void returnWholePages(const void* block, std::size_t bytes)
{
    static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<std::uintptr_t>(block) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(block) + bytes) & ~(page - 1);
    if (end > begin)
        ::madvise(
            reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED); // a hint: errors change nothing
}

// Gives back the chunks of an arena of items or text (chunks of 1 << bits positions) that lie in
// [from, to), the positions of node chunk `chunk`, where no node chunk still held (`nodeChunks`,
// whose positions end at `ends`) shares them. The newest chunk is kept: it is still being filled.
template<typename Item>
void releaseArenaChunks(std::vector<std::unique_ptr<Item[]>>& arena, unsigned bits, std::size_t from,
    std::size_t to, const std::vector<std::size_t>& ends,
    const std::vector<std::unique_ptr<PickleNode[]>>& nodeChunks)
{
    if (to <= from)
        return;
    const std::size_t size = std::size_t(1) << bits;
    for (std::size_t arenaChunk = from >> bits; arenaChunk <= (to - 1) >> bits; ++arenaChunk) {
        if (arenaChunk + 1 >= arena.size() || !arena[arenaChunk])
            continue;
        const std::size_t chunkStart = arenaChunk * size, chunkEnd = chunkStart + size;
        // The node chunks whose positions reach into this arena chunk: from the first that ends
        // past its start, while they start before its end.
        bool shared = false;
        for (auto c = static_cast<std::size_t>(
                 std::upper_bound(ends.begin(), ends.end(), chunkStart) - ends.begin());
             c < ends.size() && (c == 0 ? 0 : ends[c - 1]) < chunkEnd; ++c)
            shared |= nodeChunks[c] != nullptr;
        if (shared)
            continue;
        returnWholePages(arena[arenaChunk].get(), size * sizeof(Item));
        arena[arenaChunk].reset();
    }
}

} // namespace

static_assert(sizeof(PickleNode) == 16, "a pickle node is paid for some 15 times per tensor");

NodeId PickleGraph::add(PickleNode node)
{
    if ((m_nodeCount & (kChunkSize - 1)) == 0) {
        m_chunks.push_back(std::make_unique_for_overwrite<PickleNode[]>(kChunkSize));
        m_chunkItemEnd.push_back(0);
        m_chunkTextEnd.push_back(0);
    }
    const auto id = static_cast<NodeId>(m_nodeCount);
    at(id) = node;
    ++m_nodeCount;
    m_chunkItemEnd.back() = m_itemEnd;
    m_chunkTextEnd.back() = m_textEnd;
    return id;
}

void PickleGraph::releaseNodeChunk(std::size_t chunk)
{
    if (chunk + 1 >= m_chunks.size() || !m_chunks[chunk])
        return; // the newest chunk is kept: a pickle run later adds to it
    returnWholePages(m_chunks[chunk].get(), kChunkSize * sizeof(PickleNode));
    m_chunks[chunk].reset();
    m_released = true;
    releaseArenaChunks(m_itemChunks, kItemChunkBits, chunk == 0 ? 0 : m_chunkItemEnd[chunk - 1],
        m_chunkItemEnd[chunk], m_chunkItemEnd, m_chunks);
    releaseArenaChunks(m_textChunks, kTextChunkBits, chunk == 0 ? 0 : m_chunkTextEnd[chunk - 1],
        m_chunkTextEnd[chunk], m_chunkTextEnd, m_chunks);
}

NodeId PickleGraph::addScalar(NodeKind kind, std::int64_t value)
{
    if (kind == NodeKind::None)
        return kInlineNone;
    if (kind == NodeKind::Bool)
        return value ? kInlineTrue : kInlineFalse;
    if (kind == NodeKind::Int && value >= kInlineIntMin && value <= kInlineIntMax)
        return kInlineTag + static_cast<NodeId>(value - kInlineIntMin);
    PickleNode node;
    node.kind = kind;
    node.value = value;
    return add(node);
}

NodeId PickleGraph::addFloat(double value)
{
    PickleNode node;
    node.kind = NodeKind::Float;
    std::memcpy(&node.value, &value, sizeof value);
    return add(node);
}

NodeId PickleGraph::addText(NodeKind kind, std::string_view text, std::uint8_t flags)
{
    PickleNode node;
    node.kind = kind;
    node.flags = flags;
    node.count = static_cast<std::uint32_t>(text.size());
    node.value = static_cast<std::int64_t>(storeText(text, {}));
    return add(node);
}

NodeId PickleGraph::addGlobal(std::string_view module, std::string_view name)
{
    PickleNode node;
    node.kind = NodeKind::Global;
    node.count = static_cast<std::uint32_t>(m_globals.size());
    m_globals.push_back({static_cast<std::size_t>(storeText(module, name)),
        static_cast<std::uint32_t>(module.size()), static_cast<std::uint32_t>(name.size())});
    return add(node);
}

NodeId PickleGraph::addTuple(const NodeId* items, std::size_t count)
{
    PickleNode node;
    node.kind = NodeKind::Tuple;
    node.count = static_cast<std::uint32_t>(count);
    node.parts = {0, 0};
    if (count <= 2) {
        // (A tensor's size and stride are mostly one or two long: such items sit in the node.)
        node.parts = {count > 0 ? items[0] : 0, count > 1 ? items[1] : 0};
    } else if (count > kOwnItemsAbove) {
        node.parts.body = static_cast<std::uint32_t>(m_ownItems.size());
        m_ownItems.emplace_back(items, items + count);
    } else {
        // A tuple never straddles two chunks: one that does not fit starts the next.
        if (m_itemEnd == m_itemChunks.size() * kItemChunkSize
            || (m_itemEnd & (kItemChunkSize - 1)) + count > kItemChunkSize) {
            m_itemChunks.push_back(std::make_unique_for_overwrite<NodeId[]>(kItemChunkSize));
            m_itemEnd = (m_itemChunks.size() - 1) * kItemChunkSize;
        }
        std::memcpy(&m_itemChunks[m_itemEnd >> kItemChunkBits][m_itemEnd & (kItemChunkSize - 1)], items,
            count * sizeof(NodeId));
        node.parts.body = static_cast<std::uint32_t>(m_itemEnd);
        m_itemEnd += count;
    }
    return add(node);
}

NodeId PickleGraph::addContainer(NodeKind kind)
{
    PickleNode node;
    node.kind = kind;
    node.parts = {static_cast<std::uint32_t>(m_bodies.size()), 0};
    m_bodies.emplace_back();
    return add(node);
}

NodeId PickleGraph::addCall(NodeKind kind, NodeId callee, NodeId args)
{
    PickleNode node;
    node.kind = kind;
    node.count = callee;
    node.parts = {kNoNode, args};
    return add(node);
}

NodeId PickleGraph::addPersistentId(NodeId pid)
{
    PickleNode node;
    node.kind = NodeKind::PersistentId;
    node.value = pid;
    return add(node);
}

std::uint64_t PickleGraph::storeText(std::string_view first, std::string_view second)
{
    const std::size_t length = first.size() + second.size();
    if (length > kOwnTextAbove) {
        std::string& own = m_ownText.emplace_back();
        own.reserve(length);
        own.append(first);
        own.append(second);
        return m_ownText.size() - 1;
    }
    if (length == 0)
        return 0;
    if (m_textEnd == m_textChunks.size() * kTextChunkSize
        || (m_textEnd & (kTextChunkSize - 1)) + length > kTextChunkSize) {
        m_textChunks.push_back(std::make_unique_for_overwrite<char[]>(kTextChunkSize));
        m_textEnd = (m_textChunks.size() - 1) * kTextChunkSize;
    }
    char* to = &m_textChunks[m_textEnd >> kTextChunkBits][m_textEnd & (kTextChunkSize - 1)];
    if (!first.empty())
        std::memcpy(to, first.data(), first.size());
    if (!second.empty())
        std::memcpy(to + first.size(), second.data(), second.size());
    const std::uint64_t handle = m_textEnd;
    m_textEnd += length;
    return handle;
}

std::string_view PickleGraph::storedText(std::uint64_t handle, std::size_t length) const
{
    if (length > kOwnTextAbove)
        return m_ownText[handle];
    if (length == 0)
        return {};
    return {&m_textChunks[handle >> kTextChunkBits][handle & (kTextChunkSize - 1)], length};
}

std::string_view PickleGraph::text(NodeId id) const
{
    const NodeKind k = kind(id);
    if (k != NodeKind::String && k != NodeKind::Bytes && k != NodeKind::BigInt && k != NodeKind::ByteArray)
        return {};
    const PickleNode& n = at(id);
    return storedText(static_cast<std::uint64_t>(n.value), n.count);
}

std::string_view PickleGraph::module(NodeId id) const
{
    if (kind(id) != NodeKind::Global)
        return {};
    const GlobalText& global = m_globals[at(id).count];
    return storedText(global.offset, std::size_t(global.moduleLength) + global.nameLength)
        .substr(0, global.moduleLength);
}

std::string_view PickleGraph::name(NodeId id) const
{
    if (kind(id) != NodeKind::Global)
        return {};
    const GlobalText& global = m_globals[at(id).count];
    return storedText(global.offset, std::size_t(global.moduleLength) + global.nameLength)
        .substr(global.moduleLength);
}

std::string PickleGraph::qualifiedName(NodeId id) const
{
    if (kind(id) != NodeKind::Global)
        return {};
    std::string result(module(id));
    result += '.';
    result += name(id);
    return result;
}

std::int64_t PickleGraph::intValue(NodeId id) const
{
    if (id >= m_nodeCount) {
        if (id >= kInlineTag && id <= kInlineIntLast)
            return static_cast<std::int64_t>(id - kInlineTag) + kInlineIntMin;
        return id == kInlineTrue ? 1 : 0;
    }
    const NodeKind k = kind(id);
    if (k == NodeKind::Int || k == NodeKind::Bool)
        return at(id).value;
    return 0;
}

std::int64_t PickleGraph::extensionCode(NodeId id) const
{
    return kind(id) == NodeKind::Extension ? at(id).value : 0;
}

double PickleGraph::floatValue(NodeId id) const
{
    if (id >= m_nodeCount)
        return kind(id) == NodeKind::Int ? static_cast<double>(intValue(id)) : 0.0;
    if (kind(id) == NodeKind::Float) {
        double value;
        std::memcpy(&value, &at(id).value, sizeof value);
        return value;
    }
    if (kind(id) == NodeKind::Int)
        return static_cast<double>(at(id).value);
    return 0.0;
}

std::vector<NodeId> PickleGraph::sequence(NodeId id) const
{
    const NodeKind k = kind(id);
    if (k == NodeKind::Tuple) {
        const PickleNode& n = at(id);
        if (n.count <= 2) {
            std::vector<NodeId> items;
            if (n.count > 0)
                items.push_back(n.parts.body);
            if (n.count > 1)
                items.push_back(n.parts.extra);
            return items;
        }
        if (n.count > kOwnItemsAbove)
            return m_ownItems[n.parts.body];
        const NodeId* first
            = &m_itemChunks[n.parts.body >> kItemChunkBits][n.parts.body & (kItemChunkSize - 1)];
        return {first, first + n.count};
    }
    if (k == NodeKind::List || k == NodeKind::Set || k == NodeKind::FrozenSet) {
        if (const ContainerBody* b = bodyOf(id))
            return b->items;
    }
    return {};
}

std::size_t PickleGraph::tupleSize(NodeId id) const
{
    return kind(id) == NodeKind::Tuple ? at(id).count : 0;
}

NodeId PickleGraph::tupleItem(NodeId id, std::size_t index) const
{
    if (kind(id) != NodeKind::Tuple || index >= at(id).count)
        return kNoNode;
    const PickleNode& n = at(id);
    if (n.count <= 2)
        return index == 0 ? n.parts.body : n.parts.extra;
    if (n.count > kOwnItemsAbove)
        return m_ownItems[n.parts.body][index];
    const std::size_t position = n.parts.body + index;
    return m_itemChunks[position >> kItemChunkBits][position & (kItemChunkSize - 1)];
}

NodeId PickleGraph::callee(NodeId id) const
{
    const NodeKind k = kind(id);
    if (k != NodeKind::Call && k != NodeKind::NewObject)
        return kNoNode;
    return at(id).count;
}

NodeId PickleGraph::arguments(NodeId id) const
{
    const NodeKind k = kind(id);
    if (k != NodeKind::Call && k != NodeKind::NewObject)
        return kNoNode;
    return at(id).parts.extra;
}

std::string PickleGraph::calleeName(NodeId id) const
{
    return qualifiedName(callee(id));
}

NodeId PickleGraph::persistentIdPayload(NodeId id) const
{
    if (kind(id) != NodeKind::PersistentId)
        return kNoNode;
    return static_cast<NodeId>(at(id).value);
}

const ContainerBody* PickleGraph::bodyOf(NodeId id) const
{
    if (id >= m_nodeCount) {
        if (m_otherBodies.empty())
            return nullptr;
        const auto it = m_otherBodies.find(id);
        return it == m_otherBodies.end() ? nullptr : &m_bodies[it->second];
    }
    const PickleNode& n = at(id);
    if (!hasBodySlot(n.kind)) {
        if (m_otherBodies.empty())
            return nullptr;
        const auto it = m_otherBodies.find(id);
        return it == m_otherBodies.end() ? nullptr : &m_bodies[it->second];
    }
    return n.parts.body == kNoNode ? nullptr : &m_bodies[n.parts.body];
}

ContainerBody& PickleGraph::ensureBody(NodeId id)
{
    if (id >= m_nodeCount) {
        // An inline scalar: the machine gives such values no body (CPython refuses to change them).
        auto [it, added] = m_otherBodies.try_emplace(id, static_cast<std::uint32_t>(m_bodies.size()));
        if (added)
            m_bodies.emplace_back();
        return m_bodies[it->second];
    }
    PickleNode& n = at(id);
    if (!hasBodySlot(n.kind)) {
        auto [it, added] = m_otherBodies.try_emplace(id, static_cast<std::uint32_t>(m_bodies.size()));
        if (added)
            m_bodies.emplace_back();
        return m_bodies[it->second];
    }
    if (n.parts.body == kNoNode) {
        n.parts.body = static_cast<std::uint32_t>(m_bodies.size());
        m_bodies.emplace_back();
    }
    return m_bodies[n.parts.body];
}

void PickleGraph::release()
{
    // Swapped with empty ones, not cleared: clear() keeps a vector's block.
    std::vector<std::unique_ptr<PickleNode[]>>().swap(m_chunks);
    m_nodeCount = 0;
    std::vector<std::size_t>().swap(m_chunkItemEnd);
    std::vector<std::size_t>().swap(m_chunkTextEnd);
    std::vector<std::unique_ptr<NodeId[]>>().swap(m_itemChunks);
    m_itemEnd = 0;
    std::vector<std::vector<NodeId>>().swap(m_ownItems);
    std::vector<ContainerBody>().swap(m_bodies);
    std::unordered_map<NodeId, std::uint32_t>().swap(m_otherBodies);
    std::vector<GlobalText>().swap(m_globals);
    std::vector<std::unique_ptr<char[]>>().swap(m_textChunks);
    m_textEnd = 0;
    std::vector<std::string>().swap(m_ownText);
    m_released = true;
}

std::size_t PickleGraph::approximateBytes() const
{
    std::size_t bytes = m_chunks.size() * kChunkSize * sizeof(PickleNode)
        + m_itemChunks.size() * kItemChunkSize * sizeof(NodeId) + m_textChunks.size() * kTextChunkSize
        + m_bodies.capacity() * sizeof(ContainerBody) + m_globals.capacity() * sizeof(GlobalText);
    for (const std::vector<NodeId>& items : m_ownItems)
        bytes += items.capacity() * sizeof(NodeId);
    for (const std::string& text : m_ownText)
        bytes += text.capacity();
    for (const ContainerBody& b : m_bodies)
        bytes += (b.items.capacity() + b.dictItems.capacity() + b.states.capacity()) * sizeof(NodeId);
    return bytes;
}

} // namespace ckpt
