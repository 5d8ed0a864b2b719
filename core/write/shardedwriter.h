// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/write/remapwriter.h"

#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

struct ShardedRemapResult {
    std::string outputFolder;
    std::vector<RemapResult> shards; // one per .bin shard, in the index's order
    std::vector<std::string> filesCopied; // the index, config.json, ... byte for byte
    std::vector<std::string> filesLeftOut; // and why ("model.safetensors: ...")
    std::uint64_t bytesWritten = 0;
    double seconds = 0;
    std::string bundleKind; // a bundle (bundlewriter.h): its kind ("compressed-tar"); empty for a folder
    std::string summary() const;
};

// Writes a new folder from a checkpoint of .bin shards (Checkpoint::shardSet, HF layout): every
// shard is a remapped copy (writeRemappedCopy: only device tags change, storages byte-identical,
// each read back and verified) with the plan's devices for its storages; the index and the other
// small files of the folder are copied byte for byte. All of it goes to a temporary folder beside
// the target, which is renamed to the target only when every shard is written and verified: a
// failure leaves nothing under the target name. Refuses an existing non-empty target, the input
// folder itself, safetensors and DCP sets (they record no device: export a device_map instead)
// and sets with a missing or unreadable shard.
Expected<ShardedRemapResult> writeRemappedFolder(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputFolder, const RemapOptions& options = {});

// Why a set cannot be rewritten, or nothing when it can (for the interface to say before saving).
std::optional<std::string> whyFolderCannotBeRemapped(const Checkpoint& checkpoint);

} // namespace ckpt
