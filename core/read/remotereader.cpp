// SPDX-License-Identifier: MIT
// Checkpoints at http(s) URLs: the remote file's mirror read by the ordinary readers (docs/remote.md).
#include "core/read/remotereader.h"

#include "core/io/mappedfile.h"
#include "core/io/remotefile.h"
#include "core/read/shardedreader.h"

namespace ckpt {

namespace {

Checkpoint unreadable(const std::string& url, const std::string& message)
{
    Checkpoint checkpoint;
    checkpoint.path = url;
    checkpoint.ensureRoot();
    checkpoint.format = CheckpointFormat::NotACheckpoint;
    checkpoint.container = {ContainerKind::Unknown, message};
    checkpoint.addFinding(Severity::Error, FindingCode::CannotOpen, message);
    return checkpoint;
}

} // namespace

Checkpoint readRemoteCheckpoint(const std::string& url, const ReadOptions& options)
{
    RemoteSession session; // this read's files, to see whether any fetch failed
    auto open = [&](const std::string& fileUrl) -> Expected<std::shared_ptr<const MappedFile>> {
        auto file = RemoteFile::open(fileUrl, options.remote);
        if (!file)
            return file.error();
        session.add(*file);
        if (options.remoteSession)
            options.remoteSession->add(*file);
        return (*file)->mapped();
    };

    const std::string path = url.substr(0, url.find_first_of("?#"));
    const auto slash = path.rfind('/');
    if (path.ends_with(".index.json") && slash != std::string::npos) {
        // A sharded set: the index, then each shard beside it (a pre-signed query string signs
        // only the index, so shard URLs carry none).
        ShardedInput input;
        input.layout = path.find(".safetensors") != std::string::npos ? ShardLayout::HuggingFaceSafetensors
                                                                      : ShardLayout::HuggingFaceBin;
        input.folder = path.substr(0, slash);
        input.indexPath = url;
        bool indexOpened = false;
        auto openIndexThenShards
            = [&](const std::string& fileUrl) -> Expected<std::shared_ptr<const MappedFile>> {
            auto file = open(fileUrl);
            if (!indexOpened && !file) {
                // No index, no set: the cause is the answer (a shard that cannot be opened is a finding).
                session.addError(file.error().message);
                if (options.remoteSession)
                    options.remoteSession->addError(file.error().message);
            }
            indexOpened = true; // the index is read first, alone
            return file;
        };
        Checkpoint checkpoint = readShardedCheckpoint(input, options, openIndexThenShards);
        if (auto failure = session.failure(); !failure.empty())
            return unreadable(url, failure);
        return checkpoint;
    }

    auto mapped = open(url);
    if (!mapped) {
        if (options.remoteSession)
            options.remoteSession->addError(mapped.error().message);
        return unreadable(url, mapped.error().message);
    }
    Checkpoint checkpoint = readCheckpoint(*mapped, options);
    if (auto failure = session.failure(); !failure.empty())
        return unreadable(url, failure);
    return checkpoint;
}

} // namespace ckpt
