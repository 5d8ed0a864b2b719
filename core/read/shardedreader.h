// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace ckpt {

class JsonValue;

// What a path names when it is part of a checkpoint of several files (torch-format.md §7).
struct ShardedInput {
    ShardLayout layout = ShardLayout::HuggingFaceBin;
    std::string folder;
    std::string indexPath; // index JSON or .metadata; empty for shards found without an index
    std::vector<std::string> shardNames; // without an index: the files found, sorted
    // The index already parsed while the path was resolved (the run-folder test parses it), or null:
    // then readShardedCheckpoint reads indexPath itself.
    std::shared_ptr<const JsonValue> index;
};

// How the index and each shard are opened: null for files on disk (MappedFile::open); a remote
// index passes one (remotereader.h), and then the input's folder is the URL the shards lie under.
using ShardFileOpener = std::function<Expected<std::shared_ptr<const MappedFile>>(const std::string& path)>;

// A folder, an index JSON, a DCP .metadata or .distcp file, or a file that an index beside it
// lists as one of its shards. Nothing for a lone checkpoint file (read it on its own).
std::optional<ShardedInput> resolveShardedInput(const std::string& path);

// Reads every shard (in parallel, each memory-mapped; no tensor bytes are read) and returns one
// checkpoint: the union of their storages and tensors, the module tree across shards, each
// storage remembering its shard (Checkpoint::shardSet). Shards that are missing or unreadable
// become findings; the rest is still shown. A folder that holds no checkpoint comes back as
// NotACheckpoint with the reason.
Checkpoint readShardedCheckpoint(
    const ShardedInput& input, const ReadOptions& options = {}, const ShardFileOpener& openFile = {});

} // namespace ckpt
