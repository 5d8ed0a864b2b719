// SPDX-License-Identifier: MIT
#pragma once

// A checkpoint's module tree as indented text (kind and name per line), for suites that compare
// the tree a reader built with the one they expect. Header-only, like the other helpers here.

#include "core/model/checkpoint.h"

#include <QString>

namespace ckpt::testing {

inline void dumpTree(const Checkpoint& checkpoint, std::uint32_t node, int depth, QString& out)
{
    const TreeNode& entry = checkpoint.tree[node];
    out += QString(qsizetype {depth} * 2, QLatin1Char(' '))
        + QString::fromLatin1(treeNodeKindName(entry.kind)) + QLatin1Char(' ')
        + QString::fromStdString(entry.name.str()) + QLatin1Char('\n');
    for (const std::uint32_t child : entry.children)
        dumpTree(checkpoint, child, depth + 1, out);
}

} // namespace ckpt::testing
