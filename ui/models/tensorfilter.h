// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/checkpoint.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <vector>

namespace ckpt {

// What the tensor tree's filter field asks, and the snapshot of the plan it needs (the planned
// device of every tensor, as indices into `tags`), taken on the GUI thread so that the match can
// run in a job while the person keeps dragging.
struct TensorFilterQuery {
    enum class Field { Any, Name, DType, Device };
    Field field = Field::Any;
    QString needle; // case-folded, not empty
    QStringList tags; // device texts as the tree shows them ("cuda:1", "(none)")
    std::vector<std::uint16_t> recordedTag, plannedTag; // per tensor, into tags (Any and Device only)
};

// Which tree nodes the filtered tree shows, one flag per node of checkpoint.tree: a node whose
// dotted path contains the needle (or, for a tensor, whose dtype or recorded or planned device
// does), every node below such a node, and every node on the way up to one. One pass over the
// core's arrays, the names read where they are (each node's segment once, the path built as the
// walk goes down): no index of its own to build or keep. `keepGoing` is asked now and then; an
// empty result means it said stop.
std::vector<char> matchTensorFilter(const Checkpoint& checkpoint, const TensorFilterQuery& query,
    const std::function<bool()>& keepGoing = {});

} // namespace ckpt
