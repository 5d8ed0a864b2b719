// SPDX-License-Identifier: MIT
#pragma once
// The torch.distributed.checkpoint reader (torch-format.md §7.1): a folder of `.metadata`, a plain
// pickle of DCP's Metadata dataclasses run through the symbolic pickle machine (never executed),
// and `__R_S.distcp` files whose chunks it locates. Called by readShardedCheckpoint for a DCP folder.

#include "core/read/checkpointreader.h"
#include "core/read/shardedreader.h"

namespace ckpt {

struct Checkpoint;

// A DCP folder: reads .metadata with the symbolic pickle machine (never executed). A folder saved
// without rank coordination (dcp.save(..., use_collectives=False)) has no .metadata but one
// __R.metadata per rank: each is read, every rank's state under a node of its own.
Checkpoint readDistributedCheckpoint(const ShardedInput& input, const ReadOptions& options = {});

// The per-rank metadata files of `folder` ("__0.metadata", "__1.metadata", ...) by rank, with their
// ranks; empty when there are none.
std::vector<std::pair<std::int32_t, std::string>> perRankMetadataFiles(const std::string& folder);

} // namespace ckpt
