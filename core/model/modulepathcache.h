// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/checkpoint.h"
#include "core/model/dottedname.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

// Checkpoint::modulePathFor below the root, with the previous name's module path remembered
// component by component: the names of a state_dict come module by module, so a name shares all
// of the previous one's prefix (the next tensor of the same module) or most of it (the next
// module of the same layer), and only the components after the shared ones are looked up. The
// tree it builds is modulePathFor's, node for node (issue 28: walking all seven components of
// "model.layers.3.mlp.experts.17.down_proj" again for every other tensor of a 160-shard folder).
// Only for a reader adding names: a builder that prunes nodes may leave a remembered node stale.
class ModulePathCache {
public:
    std::uint32_t parentFor(Checkpoint& checkpoint, std::string_view dottedName, std::string& leafName)
    {
        const std::size_t leafStart = dottedLeafStart(dottedName);
        if (leafStart == 0) {
            leafName.assign(dottedName);
            return 0;
        }
        // Every component of the prefix is non-empty and ends at a dot (dottedLeafStart's rule).
        const std::string_view prefix = dottedName.substr(0, leafStart - 1);
        std::size_t shared = 0;
        std::size_t begin = 0;
        while (shared < m_ends.size()) {
            const std::size_t end = m_ends[shared];
            if (end > prefix.size() || (end < prefix.size() && prefix[end] != '.')
                || prefix.substr(begin, end - begin) != std::string_view(m_prefix).substr(begin, end - begin))
                break;
            ++shared;
            begin = end + 1;
        }
        if (shared == m_ends.size() && shared > 0 && m_ends.back() == prefix.size()) {
            leafName.assign(dottedName.substr(leafStart));
            return m_nodes.back();
        }
        const std::uint32_t from = shared > 0 ? m_nodes[shared - 1] : 0;
        const std::uint32_t parent = checkpoint.modulePathFor(from, dottedName.substr(begin), leafName);

        m_prefix.assign(prefix);
        m_ends.resize(shared);
        for (std::size_t at = begin; at <= prefix.size();) {
            const std::size_t dot = prefix.find('.', at);
            const std::size_t end = dot == std::string_view::npos ? prefix.size() : dot;
            m_ends.push_back(end);
            at = end + 1;
        }
        // The new components' nodes: the parent and its ancestors up to the shared part.
        m_nodes.resize(m_ends.size());
        std::uint32_t node = parent;
        for (std::size_t i = m_ends.size(); i-- > shared;) {
            m_nodes[i] = node;
            node = checkpoint.tree[node].parent;
        }
        return parent;
    }

private:
    std::string m_prefix; // the previous name's module path ("model.layers.3.mlp")
    std::vector<std::size_t> m_ends; // where each of its components ends in m_prefix
    std::vector<std::uint32_t> m_nodes; // each component's Module node
};

} // namespace ckpt
