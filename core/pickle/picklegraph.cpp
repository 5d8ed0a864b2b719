// SPDX-License-Identifier: MIT
#include "core/pickle/picklegraph.h"

#include <cstring>

namespace ckpt {

static_assert(sizeof(PickleNode) == 16, "a pickle node is paid for some 15 times per tensor");

NodeId PickleGraph::add(PickleNode node)
{
    if ((m_nodeCount & (kChunkSize - 1)) == 0)
        m_chunks.push_back(std::make_unique_for_overwrite<PickleNode[]>(kChunkSize));
    const auto id = static_cast<NodeId>(m_nodeCount);
    at(id) = node;
    ++m_nodeCount;
    return id;
}

NodeId PickleGraph::addScalar(NodeKind kind, std::int64_t value)
{
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
    node.value = static_cast<std::int64_t>(m_text.size());
    node.count = static_cast<std::uint32_t>(text.size());
    m_text.append(text);
    return add(node);
}

NodeId PickleGraph::addGlobal(std::string_view module, std::string_view name)
{
    PickleNode node;
    node.kind = NodeKind::Global;
    node.count = static_cast<std::uint32_t>(m_globals.size());
    m_globals.push_back(
        {m_text.size(), static_cast<std::uint32_t>(module.size()), static_cast<std::uint32_t>(name.size())});
    m_text.append(module);
    m_text.append(name);
    return add(node);
}

NodeId PickleGraph::addTuple(const NodeId* items, std::size_t count)
{
    PickleNode node;
    node.kind = NodeKind::Tuple;
    node.parts = {static_cast<std::uint32_t>(m_tupleItems.size()), 0};
    node.count = static_cast<std::uint32_t>(count);
    m_tupleItems.insert(m_tupleItems.end(), items, items + count);
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

std::string_view PickleGraph::text(NodeId id) const
{
    const NodeKind k = kind(id);
    if (k != NodeKind::String && k != NodeKind::Bytes && k != NodeKind::BigInt && k != NodeKind::ByteArray)
        return {};
    const PickleNode& n = at(id);
    return std::string_view(m_text).substr(static_cast<std::size_t>(n.value), n.count);
}

std::string_view PickleGraph::module(NodeId id) const
{
    if (kind(id) != NodeKind::Global)
        return {};
    const GlobalText& global = m_globals[at(id).count];
    return std::string_view(m_text).substr(global.offset, global.moduleLength);
}

std::string_view PickleGraph::name(NodeId id) const
{
    if (kind(id) != NodeKind::Global)
        return {};
    const GlobalText& global = m_globals[at(id).count];
    return std::string_view(m_text).substr(global.offset + global.moduleLength, global.nameLength);
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
    const NodeKind k = kind(id);
    if (k == NodeKind::Int || k == NodeKind::Bool)
        return at(id).value;
    return 0;
}

double PickleGraph::floatValue(NodeId id) const
{
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
        return {m_tupleItems.begin() + n.parts.body, m_tupleItems.begin() + n.parts.body + n.count};
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
    return m_tupleItems[at(id).parts.body + index];
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
    if (id >= m_nodeCount)
        return nullptr;
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

std::size_t PickleGraph::approximateBytes() const
{
    std::size_t bytes = m_chunks.size() * kChunkSize * sizeof(PickleNode)
        + m_tupleItems.capacity() * sizeof(NodeId) + m_text.capacity()
        + m_bodies.capacity() * sizeof(ContainerBody) + m_globals.capacity() * sizeof(GlobalText);
    for (const ContainerBody& b : m_bodies)
        bytes += (b.items.capacity() + b.dictItems.capacity() + b.states.capacity()) * sizeof(NodeId);
    return bytes;
}

} // namespace ckpt
