// SPDX-License-Identifier: MIT
#pragma once

#include "core/io/remotefile.h"
#include "core/model/checkpoint.h"
#include "core/pickle/picklemachine.h"

#include <functional>
#include <memory>
#include <string>

namespace ckpt {

struct ReadOptions {
    PickleLimits pickleLimits;
    std::uint64_t maxPickleRecordBytes = 4ull << 30; // data.pkl larger than this is refused
    // A compressed checkpoint member of a bundle (bundlereader.h) larger than this is decompressed
    // into an anonymous temporary file instead of memory.
    std::uint64_t maxBundleMemberInMemory = 1ull << 30;
    // An http(s) URL (remotereader.h): how its requests behave, and the session that counts
    // what every file of the read cost (null: not counted).
    RemoteOptions remote;
    RemoteSession* remoteSession = nullptr;
    // false: the quant-scale findings are left to the caller. A set's shards are read so: their
    // weights and scales are judged across the set, and each shard's own pass was thrown away.
    bool quantScaleFindings = true;
    // The pickle graph's last reader besides the records' builder (the verdicts of `check` and
    // `info`, which release the graph after them): called once, with the checkpoint, while the graph
    // is whole. Where the pickle is a plain state_dict (judgeGraphBeforeRecords, picklesection.h),
    // the torch zip and legacy readers call it before the records are built, and the builder then
    // gives the graph back chunk by chunk as it consumes it: graph and records are never both whole,
    // which was the peak of reading one big file (issue 28). Otherwise it is called once the file
    // is read. Never called for the files of a set, a bundle or an archive one by one: for what
    // they make (a nested file's verdict alone would rate the whole).
    std::function<void(const Checkpoint&)> judgeGraph;

    // These options for a file read to make part of this one (a set's shard, a bundle's member, a
    // torch.export archive's nested model): the same, without judgeGraph.
    ReadOptions forFileInside() const
    {
        ReadOptions inner = *this;
        inner.judgeGraph = nullptr;
        return inner;
    }
};

// Opens any file: sniffs the container from its bytes, reads what can be read, and explains the
// rest as findings. Never throws; never executes anything from the file; never writes to it.
Checkpoint readCheckpoint(const std::string& path, const ReadOptions& options = {});
Checkpoint readCheckpoint(std::shared_ptr<const MappedFile> file, const ReadOptions& options = {});

// Each format has a reader of its own, which readCheckpoint calls once the container is known
// (torchzipreader.h, legacyreader.h, tarreader.h, safetensorsreader.h; folders: shardedreader.h,
// dcpreader.h); what each format can be read, remapped, converted and extracted to is one row of
// core/model/formatcapabilities.h.

} // namespace ckpt
