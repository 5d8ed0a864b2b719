// SPDX-License-Identifier: MIT
#include "core/read/tensorlocator.h"

#include "core/format/streamtransforms.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/dtype.h"
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"

#include <algorithm>
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

using FileCache = std::map<std::string, std::shared_ptr<const MappedFile>>;

// The torch.save archive of one chunk, read (symbolically) from its range of its .distcp file.
std::shared_ptr<Checkpoint> chunkArchive(
    const ShardSet& set, const DcpChunk& chunk, FileCache& files, std::string& problem)
{
    if (!chunk.located || chunk.file.empty()) {
        problem = ".metadata records no bytes for it";
        return nullptr;
    }
    auto& file = files[chunk.file];
    if (!file) {
        // Only names beside .metadata are followed (as the shard reader does for indexes).
        if (chunk.file.find('/') != std::string::npos || chunk.file == "..") {
            problem = chunk.file + " lies outside the folder; it is not opened";
            return nullptr;
        }
        auto opened = MappedFile::open((std::filesystem::path(set.folder) / chunk.file).string());
        if (!opened) {
            problem = opened.error().message;
            return nullptr;
        }
        file = *opened;
    }
    auto slice = MappedFile::slice(file, chunk.fileOffset, chunk.length);
    if (!slice) {
        problem = chunk.file + " ends before its chunk (bytes " + std::to_string(chunk.fileOffset) + " to "
            + std::to_string(chunk.fileOffset + chunk.length) + ")";
        return nullptr;
    }
    if (!chunk.transforms.empty()) {
        // Written through writer extensions (zstd): undone in memory as DCP's reader does, at most
        // the chunk's elements plus 16 MiB of archive around them.
        std::uint64_t limit = std::uint64_t(16) << 20;
        std::uint64_t numel = 1;
        for (std::int64_t size : chunk.sizes)
            numel *= static_cast<std::uint64_t>(std::max<std::int64_t>(size, 0));
        limit += numel * 16;
        auto undone = undoStreamTransforms(slice->bytes(), chunk.transforms, limit);
        if (!undone) {
            problem = "its chunk in " + chunk.file + " at byte " + std::to_string(chunk.fileOffset)
                + " could not be undone: " + undone.error().message;
            return nullptr;
        }
        slice = MappedFile::fromBuffer(
            std::move(*undone), set.folder + "/" + chunk.file + "@" + std::to_string(chunk.fileOffset));
    }
    return std::make_shared<Checkpoint>(readCheckpoint(slice));
}

bool holdsOne(const Checkpoint& archive, const std::string& dtype, const std::vector<std::int64_t>& shape)
{
    return archive.tensors.size() == 1 && archive.tensors.front().dtype == dtype
        && std::vector<std::int64_t>(
               archive.tensors.front().shape.begin(), archive.tensors.front().shape.end())
        == shape;
}

// A tensor saved in several chunks (several ranks' shards, as Megatron-core and FSDP save them):
// each chunk's archive read and its elements copied into place in a buffer of the whole tensor,
// which is then read as a one-tensor safetensors file in memory. The chunks must tile the tensor
// (the shard checks name gaps and overlaps); nothing is unpickled or executed.
LocatedTensor assembleDcpTensor(
    const ShardSet& set, const DcpEntry& entry, const TensorEntry& tensor, FileCache& files)
{
    LocatedTensor located;
    const auto info = dtypeByName(entry.dtype);
    if (!info || info->safetensorsName.empty() || info->valuesPerByte != 1 || info->elementSize == 0) {
        located.problem = "saved in " + std::to_string(entry.chunks.size()) + " chunks of " + entry.dtype
            + ", which are not put back together here";
        return located;
    }
    const std::size_t rank = entry.size.size();
    const std::uint64_t es = info->elementSize;
    std::uint64_t numel = 1;
    for (std::int64_t dim : entry.size)
        numel *= static_cast<std::uint64_t>(std::max<std::int64_t>(dim, 0));
    std::uint64_t covered = 0;
    for (const DcpChunk& chunk : entry.chunks) {
        bool inside = chunk.offsets.size() == rank && chunk.sizes.size() == rank;
        std::uint64_t volume = 1;
        for (std::size_t d = 0; inside && d < rank; ++d) {
            inside = chunk.offsets[d] >= 0 && chunk.sizes[d] >= 0
                && chunk.offsets[d] + chunk.sizes[d] <= entry.size[d];
            volume *= static_cast<std::uint64_t>(std::max<std::int64_t>(chunk.sizes[d], 0));
        }
        if (!inside) {
            located.problem = "a chunk lies outside the tensor's size";
            return located;
        }
        covered += volume;
    }
    if (covered != numel) {
        located.problem = "its " + std::to_string(entry.chunks.size()) + " chunks cover "
            + std::to_string(covered) + " of " + std::to_string(numel) + " elements";
        return located;
    }
    std::vector<std::int64_t> globalStride(rank, 1);
    for (std::size_t d = rank; d-- > 1;)
        globalStride[d - 1] = globalStride[d] * std::max<std::int64_t>(entry.size[d], 1);
    ByteBuffer data(numel * es);
    for (const DcpChunk& chunk : entry.chunks) {
        std::string problem;
        const auto archive = chunkArchive(set, chunk, files, problem);
        if (!archive) {
            located.problem = problem;
            return located;
        }
        if (!holdsOne(*archive, entry.dtype, chunk.sizes)) {
            located.problem = "the chunk in " + chunk.file + " at byte " + std::to_string(chunk.fileOffset)
                + " is not one " + entry.dtype + " tensor of shape " + shapeText(chunk.sizes);
            return located;
        }
        const TensorEntry& part = archive->tensors.front();
        if (part.storage < 0 || !part.stride || !part.storageOffset || !archive->file) {
            located.problem = "the chunk in " + chunk.file + " has no strided storage";
            return located;
        }
        const StorageRecord& storage = archive->storages[static_cast<std::size_t>(part.storage)];
        if (!storage.bytesComplete()) {
            located.problem = "the bytes of a chunk in " + chunk.file + " are not complete";
            return located;
        }
        const ByteView source = archive->file->bytes();
        const std::vector<std::int64_t> stride((*part.stride).begin(), (*part.stride).end());
        std::uint64_t volume = 1;
        for (std::int64_t size : chunk.sizes)
            volume *= static_cast<std::uint64_t>(size);
        // Element by element in C order (chunks are small next to what reading them costs).
        std::vector<std::int64_t> index(rank, 0);
        for (std::uint64_t k = 0; k < volume; ++k) {
            std::int64_t from = *part.storageOffset;
            std::int64_t to = 0;
            for (std::size_t d = 0; d < rank; ++d) {
                from += index[d] * stride[d];
                to += (chunk.offsets[d] + index[d]) * globalStride[d];
            }
            const std::uint64_t at = *storage.dataOffset + static_cast<std::uint64_t>(from) * es;
            if (from < 0 || at + es > source.size()
                || static_cast<std::uint64_t>(from + 1) * es > storage.nbytes) {
                located.problem = "a chunk in " + chunk.file + " views bytes past its storage";
                return located;
            }
            std::copy_n(source.data() + at, es, data.data() + static_cast<std::uint64_t>(to) * es);
            for (std::size_t d = rank; d-- > 0;) {
                if (++index[d] < chunk.sizes[d])
                    break;
                index[d] = 0;
            }
        }
    }
    // A one-tensor safetensors file of the whole tensor, read by the safetensors reader.
    std::string header = std::string("{\"t\":{\"dtype\":\"") + std::string(info->safetensorsName)
        + "\",\"shape\":" + shapeText(entry.size) + ",\"data_offsets\":[0," + std::to_string(data.size())
        + "]}}";
    header.append((8 - header.size() % 8) % 8, ' ');
    ByteBuffer file(8 + header.size() + data.size());
    for (int b = 0; b < 8; ++b)
        file[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>((header.size() >> (8 * b)) & 0xff);
    std::copy(header.begin(), header.end(), file.begin() + 8);
    std::copy(data.begin(), data.end(), file.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
    auto whole = std::make_shared<Checkpoint>(
        readCheckpoint(MappedFile::fromBuffer(std::move(file), set.folder + "/" + entry.fqn)));
    if (!holdsOne(*whole, tensor.dtype, entry.size)) {
        located.problem = "its chunks could not be put back together";
        return located;
    }
    whole->tensors.front().name = entry.fqn;
    whole->path = set.folder;
    located.checkpoint = std::move(whole);
    return located;
}

// The chunk archive of a DCP tensor saved whole (one chunk at offset 0 of the tensor's full size);
// a tensor of several chunks is put back together.
LocatedTensor locateDcpTensor(
    const ShardSet& set, const DcpEntry& entry, const TensorEntry& tensor, FileCache& files)
{
    LocatedTensor located;
    if (entry.chunks.size() != 1)
        return assembleDcpTensor(set, entry, tensor, files);
    const DcpChunk& chunk = entry.chunks.front();
    bool whole = chunk.sizes == entry.size;
    for (std::int64_t offset : chunk.offsets)
        whole = whole && offset == 0;
    if (!whole) {
        located.problem = "its only chunk does not cover the whole tensor";
        return located;
    }
    auto archive = chunkArchive(set, chunk, files, located.problem);
    if (!archive)
        return located;
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
        std::unordered_map<std::string_view, const DcpEntry*> entries; // views of set->dcp
        for (const DcpEntry& entry : set->dcp->entries)
            entries.emplace(entry.fqn, &entry);
        FileCache files;
        for (std::uint32_t t = 0; t < located.size(); ++t) {
            const TensorEntry& tensor = checkpoint->tensors[t];
            const auto entry = entries.find(tensor.name);
            // A tensor of a framework's torch.save file beside the data (common.pt): in that file.
            if (const ShardFile* shard = set->shardOfStorage(tensor.storage); shard && shard->companion
                && shard->model() && t >= shard->firstTensor
                && t - shard->firstTensor < shard->model()->tensors.size()) {
                located[t].checkpoint = shard->model();
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
        if (!shard.problem.empty())
            continue;
        // A shard read in place is read again here: its values are read from its file anyway.
        const std::shared_ptr<const Checkpoint> model = shard.model();
        if (!model || !model->file)
            continue;
        for (std::uint32_t k = 0; k < model->tensors.size(); ++k)
            if (shard.firstTensor + k < located.size()) {
                located[shard.firstTensor + k].checkpoint = model;
                located[shard.firstTensor + k].tensor = k;
            }
    }
    for (LocatedTensor& tensor : located)
        if (!tensor.checkpoint)
            tensor.problem = "its shard could not be read";
    return located;
}

} // namespace ckpt
