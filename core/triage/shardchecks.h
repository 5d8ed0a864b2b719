// SPDX-License-Identifier: MIT
#pragma once
// Checks across the files of a checkpoint of several files (torch-format.md §7: §7.1 DCP, §7.2
// Hugging Face shards): the index against the shards, tensors in two shards, total_size, odd dtypes
// or devices per shard, each shard's own integrity, and for DCP that the chunks tile each tensor.
// Defined in shardchecks.cpp.

#include "core/base/finding.h"

#include <vector>

namespace ckpt {

struct Checkpoint;

// Checks across the files of a checkpoint of several files (Checkpoint::shardSet; §7): the index
// against the shards, tensors in two shards, total_size, odd dtypes or devices per shard, each
// shard's own integrity, and for DCP that every chunk's bytes exist and the chunks tile each tensor.
std::vector<Finding> checkShards(const Checkpoint& checkpoint);

} // namespace ckpt
