// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"

#include <string>

namespace ckpt {

// A checkpoint at an http(s) URL (core/io/remotefile.h), read through range requests: a single
// file of any format readCheckpoint knows, or an index JSON (*.index.json) whose shards lie beside
// it under the same URL path. Every reader reads the mirror as it reads a file on disk; only the
// blocks it touches are fetched. A file that cannot be opened, or a fetch that fails while it is
// read, gives a checkpoint with the cause and nothing else (never a tree read from bytes that were
// not fetched). readCheckpoint(path) comes here for a URL.
Checkpoint readRemoteCheckpoint(const std::string& url, const ReadOptions& options = {});

} // namespace ckpt
