// SPDX-License-Identifier: MIT
#pragma once
// The torch.distributed.checkpoint reader (torch-format.md §7.1): a folder of `.metadata`, a plain
// pickle of DCP's Metadata dataclasses run through the symbolic pickle machine (never executed),
// and `__R_S.distcp` files whose chunks it locates. Called by readShardedCheckpoint for a DCP folder.

#include "core/read/checkpointreader.h"
#include "core/read/shardedreader.h"

namespace ckpt {

struct Checkpoint;

// A DCP folder: reads .metadata with the symbolic pickle machine (never executed).
Checkpoint readDistributedCheckpoint(const ShardedInput& input, const ReadOptions& options = {});

} // namespace ckpt
