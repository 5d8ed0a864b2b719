// SPDX-License-Identifier: MIT
#include "core/read/tensorlocator.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"

#include <filesystem>
#include <map>
#include <unordered_map>

namespace ckpt {

namespace {

std::string shapeText(const std::vector<std::int64_t>& shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

// The chunk archive of a DCP tensor saved whole (one chunk at offset 0 of the tensor's full size).
LocatedTensor locateDcpTensor(const ShardSet& set, const DcpEntry& entry, const TensorEntry& tensor,
    std::map<std::string, std::shared_ptr<const MappedFile>>& files)
{
    LocatedTensor located;
    if (entry.chunks.size() != 1) {
        located.problem = "saved in " + std::to_string(entry.chunks.size())
            + " chunks (shards of several ranks), which are not put back together here";
        return located;
    }
    const DcpChunk& chunk = entry.chunks.front();
    bool whole = chunk.sizes == entry.size;
    for (std::int64_t offset : chunk.offsets)
        whole = whole && offset == 0;
    if (!whole) {
        located.problem = "its only chunk does not cover the whole tensor";
        return located;
    }
    if (!chunk.located || chunk.file.empty()) {
        located.problem = ".metadata records no bytes for it";
        return located;
    }
    auto& file = files[chunk.file];
    if (!file) {
        // Only names beside .metadata are followed (as the shard reader does for indexes).
        if (chunk.file.find('/') != std::string::npos || chunk.file == "..") {
            located.problem = chunk.file + " lies outside the folder; it is not opened";
            return located;
        }
        auto opened = MappedFile::open((std::filesystem::path(set.folder) / chunk.file).string());
        if (!opened) {
            located.problem = opened.error().message;
            return located;
        }
        file = *opened;
    }
    auto slice = MappedFile::slice(file, chunk.fileOffset, chunk.length);
    if (!slice) {
        located.problem = chunk.file + " ends before its chunk (bytes " + std::to_string(chunk.fileOffset)
            + " to " + std::to_string(chunk.fileOffset + chunk.length) + ")";
        return located;
    }
    auto archive = std::make_shared<Checkpoint>(readCheckpoint(slice));
    if (archive->tensors.size() != 1 || archive->tensors.front().dtype != tensor.dtype
        || archive->tensors.front().shape != tensor.shape) {
        located.problem = "the chunk in " + chunk.file + " at byte " + std::to_string(chunk.fileOffset)
            + " is not one " + tensor.dtype + " tensor of shape " + shapeText(tensor.shape)
            + (archive->tensors.empty() ? std::string(" (" + archive->container.description + ")")
                                        : std::string());
        return located;
    }
    archive->tensors.front().name = entry.fqn;
    archive->path = set.folder;
    located.checkpoint = std::move(archive);
    return located;
}

} // namespace

std::vector<LocatedTensor> locateTensors(const std::shared_ptr<const Checkpoint>& checkpoint)
{
    std::vector<LocatedTensor> located(checkpoint->tensors.size());
    const std::shared_ptr<const ShardSet> set = checkpoint->shardSet;
    if (!set) {
        for (std::uint32_t t = 0; t < located.size(); ++t) {
            located[t].checkpoint = checkpoint;
            located[t].tensor = t;
        }
        return located;
    }
    if (set->dcp) {
        std::unordered_map<std::string, const DcpEntry*> entries;
        for (const DcpEntry& entry : set->dcp->entries)
            entries.emplace(entry.fqn, &entry);
        std::map<std::string, std::shared_ptr<const MappedFile>> files;
        for (std::uint32_t t = 0; t < located.size(); ++t) {
            const TensorEntry& tensor = checkpoint->tensors[t];
            const auto entry = entries.find(tensor.name);
            // A tensor of a framework's torch.save file beside the data (common.pt): in that file.
            if (const ShardFile* shard = set->shardOfStorage(tensor.storage); shard && shard->companion
                && shard->checkpoint && t >= shard->firstTensor
                && t - shard->firstTensor < shard->checkpoint->tensors.size()) {
                located[t].checkpoint = shard->checkpoint;
                located[t].tensor = t - shard->firstTensor;
                continue;
            }
            if (entry == entries.end() || entry->second->isBytes)
                located[t].problem = "not a tensor entry of .metadata";
            else
                located[t] = locateDcpTensor(*set, *entry->second, tensor, files);
        }
        return located;
    }
    // mergeShards appends each usable shard's tensors, in order, from its firstTensor.
    for (const ShardFile& shard : set->shards) {
        if (!shard.problem.empty() || !shard.checkpoint || !shard.checkpoint->file)
            continue;
        for (std::uint32_t k = 0; k < shard.checkpoint->tensors.size(); ++k)
            if (shard.firstTensor + k < located.size()) {
                located[shard.firstTensor + k].checkpoint = shard.checkpoint;
                located[shard.firstTensor + k].tensor = k;
            }
    }
    for (LocatedTensor& tensor : located)
        if (!tensor.checkpoint)
            tensor.problem = "its shard could not be read";
    return located;
}

} // namespace ckpt
