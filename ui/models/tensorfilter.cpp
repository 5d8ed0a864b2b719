// SPDX-License-Identifier: MIT
#include "ui/models/tensorfilter.h"

#include <algorithm>

namespace ckpt {

namespace {

// Case folding as QString::contains(Qt::CaseInsensitive) does it: ASCII in place (almost every
// name), anything else through QString.
void appendFolded(std::string& out, std::string_view text)
{
    if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
        for (char c : text)
            out += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
        return;
    }
    out += QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())).toCaseFolded().toStdString();
}

} // namespace

std::vector<char> matchTensorFilter(
    const Checkpoint& checkpoint, const TensorFilterQuery& query, const std::function<bool()>& keepGoing)
{
    const std::vector<TreeNode>& tree = checkpoint.tree;
    const std::size_t count = tree.size();
    std::vector<char> self(count, 0);
    if (count == 0)
        return self;
    const std::string needle = query.needle.toCaseFolded().toStdString();
    const bool byName
        = query.field == TensorFilterQuery::Field::Any || query.field == TensorFilterQuery::Field::Name;
    const bool byDType
        = query.field == TensorFilterQuery::Field::Any || query.field == TensorFilterQuery::Field::DType;
    const bool byDevice
        = query.field == TensorFilterQuery::Field::Any || query.field == TensorFilterQuery::Field::Device;
    std::vector<char> tagMatches;
    for (const QString& tag : query.tags)
        tagMatches.push_back(tag.contains(query.needle, Qt::CaseInsensitive) ? 1 : 0);
    std::vector<std::string> dtypeFolded; // dtypes are few: fold and match each once
    std::vector<std::pair<std::string, char>> dtypeMatches;
    const auto dtypeMatch = [&](const std::string& dtype) {
        for (const auto& [name, match] : dtypeMatches)
            if (name == dtype)
                return match;
        std::string folded;
        appendFolded(folded, dtype);
        dtypeMatches.emplace_back(dtype, folded.find(needle) != std::string::npos ? 1 : 0);
        return dtypeMatches.back().second;
    };

    // Depth first, the path of the current node in one buffer; the path of a tensor node is its
    // tensor's name (as CheckpointDocument::nodePath says), of any other node its dotted tree path.
    struct Frame {
        std::uint32_t node;
        std::size_t pathLength; // of the parent's path, to cut back to
    };
    std::vector<Frame> stack;
    std::vector<std::uint32_t> order; // preorder: parents before children
    order.reserve(count);
    std::string path, tensorPath;
    for (auto it = tree[0].children.rbegin(); it != tree[0].children.rend(); ++it)
        stack.push_back({*it, 0});
    std::size_t visited = 0;
    while (!stack.empty()) {
        if (keepGoing && (++visited & 0xffff) == 0 && !keepGoing())
            return {};
        const Frame frame = stack.back();
        stack.pop_back();
        const TreeNode& node = tree[frame.node];
        order.push_back(frame.node);
        path.resize(frame.pathLength);
        if (!path.empty())
            path += '.';
        appendFolded(path, node.name);
        bool match = false;
        const bool isTensor = node.kind == TreeNodeKind::Tensor && node.tensor >= 0
            && static_cast<std::size_t>(node.tensor) < checkpoint.tensors.size();
        if (byName) {
            if (isTensor) {
                tensorPath.clear();
                appendFolded(tensorPath, checkpoint.tensors[static_cast<std::size_t>(node.tensor)].name);
                match = tensorPath.find(needle) != std::string::npos;
            } else {
                match = path.find(needle) != std::string::npos;
            }
        }
        if (!match && isTensor) {
            const auto t = static_cast<std::size_t>(node.tensor);
            if (byDType)
                match = dtypeMatch(checkpoint.tensors[t].dtype);
            if (!match && byDevice && t < query.plannedTag.size())
                match = tagMatches[query.recordedTag[t]] || tagMatches[query.plannedTag[t]];
        }
        self[frame.node] = match ? 1 : 0;
        for (auto it = node.children.rbegin(); it != node.children.rend(); ++it)
            if (*it < count && *it != 0)
                stack.push_back({*it, path.size()});
    }

    // Shown: matches, what is below a match (ancestors first) and what leads to one (children first).
    std::vector<char> shown(count, 0);
    std::vector<char> below(count, 0); // an ancestor matches itself
    for (const std::uint32_t node : order) {
        const std::uint32_t parent = tree[node].parent;
        below[node] = parent != 0 && (below[parent] || self[parent]);
    }
    std::vector<char> leads(count, 0); // something at or below matches
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const std::uint32_t node = *it;
        leads[node] = leads[node] || self[node];
        if (leads[node] && tree[node].parent != 0)
            leads[tree[node].parent] = 1;
    }
    for (const std::uint32_t node : order)
        shown[node] = self[node] || below[node] || leads[node];
    return shown;
}

} // namespace ckpt
