// SPDX-License-Identifier: MIT
#include "core/write/safetensorswriter.h"

#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/dtype.h"
#include "core/read/checkpointreader.h"
#include "core/read/tensorbytes.h"
#include "core/write/floatcast.h"
#include "core/write/readbackverifier.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt {

namespace {

struct Planned {
    const SafetensorsSource* source = nullptr;
    const TensorEntry* tensor = nullptr;
    const StorageRecord* storage = nullptr;
    DTypeInfo dtype; // as written
    std::string castFrom; // --dtype: the input's dtype when its values are cast to `dtype`
    std::uint64_t numel = 0;
    std::uint64_t nbytes = 0;
    bool contiguousRange = false; // the view is one run of the storage's bytes
    std::uint64_t shardOffset = 0; // within its shard's data section
    std::size_t shard = 0;
};

Status forEachChunk(const Planned& planned, const std::function<Status(ByteView)>& sink)
{
    if (planned.castFrom.empty())
        return forEachTensorByteChunk(*planned.source->checkpoint, *planned.tensor, sink);
    FloatCastSink cast(planned.castFrom, std::string(planned.dtype.name), sink);
    if (Status status = forEachTensorByteChunk(
            *planned.source->checkpoint, *planned.tensor, [&cast](ByteView piece) { return cast(piece); }))
        return status;
    return cast.finish();
}

std::string shardName(std::size_t index, std::size_t count)
{
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
    return name;
}

} // namespace

std::string SafetensorsResult::summary() const
{
    std::string text = "wrote " + formatThousands(tensorsWritten) + " tensors in "
        + formatThousands(shards.size()) + (shards.size() == 1 ? " file" : " shards") + " ("
        + formatBytes(bytesWritten) + ")";
    if (!sharedWrittenAsCopies.empty())
        text += "; " + formatThousands(sharedWrittenAsCopies.size())
            + " tensors that shared a storage written as their own copies";
    if (!viewsMadeContiguous.empty())
        text += "; " + formatThousands(viewsMadeContiguous.size()) + " views written as contiguous copies";
    if (!castTo.empty())
        text += "; " + formatThousands(tensorsCast.size()) + " tensors cast to " + castTo;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", this->seconds);
    text += std::string("; ") + seconds + " s";
    text += verified ? "; verified" : "; not verified";
    return text;
}

Expected<SafetensorsResult> writeSafetensors(const std::vector<SafetensorsSource>& tensors,
    const std::string& outputPath, const SafetensorsOptions& options)
{
    const auto start = std::chrono::steady_clock::now();
    if (tensors.empty())
        return makeError("no tensor to write");
    SafetensorsResult result;
    if (!options.castFloatsTo.empty() && !isFloatCastTarget(options.castFloatsTo))
        return makeError("--dtype takes bfloat16, float16 or float32, not '" + options.castFloatsTo + "'");
    result.castTo = options.castFloatsTo;

    // 1. Everything refusable is refused before a byte is written.
    std::vector<Planned> planned;
    std::vector<std::string> unnamedDtypes;
    std::map<std::string, std::size_t> byName;
    std::map<std::pair<const Checkpoint*, std::int32_t>, std::string> firstOfStorage;
    for (const SafetensorsSource& source : tensors) {
        const TensorEntry& tensor = source.checkpoint->tensors.at(source.tensor);
        if (!byName.emplace(source.name, planned.size()).second)
            return makeError("two tensors are named '" + source.name + "'; safetensors names must be unique");
        if (tensor.layout != TensorLayout::Strided || tensor.storage < 0 || !tensor.stride
            || !tensor.storageOffset)
            return makeError("tensor '" + source.name + "' is " + tensorLayoutName(tensor.layout)
                + " or has no storage of its own; safetensors holds only dense strided tensors");
        const auto dtype = dtypeByName(tensor.dtype);
        if (!dtype || dtype->safetensorsName.empty() || dtype->valuesPerByte != 1) {
            unnamedDtypes.push_back(source.name + " (" + tensor.dtype + ")");
            continue;
        }
        if (dtype->safetensorsPerElement > 1 && tensor.shape.empty())
            return makeError("tensor '" + source.name + "' is a " + tensor.dtype + " scalar; safetensors' "
                + std::string(dtype->safetensorsName)
                + " counts its values along the last dimension and cannot hold one without a dimension");
        const StorageRecord& storage = source.checkpoint->storages[static_cast<std::size_t>(tensor.storage)];
        if (!storage.bytesReadable())
            return makeError("the bytes of tensor '" + source.name + "' are not complete in "
                + source.checkpoint->path + "; nothing was written");
        Planned p;
        p.source = &source;
        p.tensor = &tensor;
        p.storage = &storage;
        p.dtype = *dtype;
        // The view must lie inside its storage: its largest element index, from shape and stride.
        std::uint64_t numel = 1;
        std::int64_t last = *tensor.storageOffset;
        bool empty = false;
        for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
            if (tensor.shape[d] == 0)
                empty = true;
            numel *= static_cast<std::uint64_t>(std::max<std::int64_t>(tensor.shape[d], 0));
            if ((*tensor.stride)[d] < 0)
                return makeError("tensor '" + source.name + "' has a negative stride");
            last += (std::max<std::int64_t>(tensor.shape[d], 1) - 1) * (*tensor.stride)[d];
        }
        p.numel = empty ? 0 : numel;
        p.nbytes = p.numel * dtype->elementSize;
        if (!empty && static_cast<std::uint64_t>(last + 1) * dtype->elementSize > storage.nbytes)
            return makeError("tensor '" + source.name + "' reaches past the end of its storage");
        // C-order strides (a dimension of size 1 may have any stride) make it one run of bytes.
        bool contiguous = true;
        std::int64_t expected = 1;
        for (std::size_t d = tensor.shape.size(); d-- > 0;) {
            if (tensor.shape[d] != 1 && (*tensor.stride)[d] != expected)
                contiguous = false;
            expected *= tensor.shape[d];
        }
        p.contiguousRange = contiguous || p.numel == 0;
        const bool wholeStorage
            = p.contiguousRange && *tensor.storageOffset == 0 && p.nbytes == storage.nbytes;
        if (!wholeStorage)
            result.viewsMadeContiguous.push_back(source.name);
        auto [it, first]
            = firstOfStorage.emplace(std::make_pair(source.checkpoint, tensor.storage), source.name);
        if (!first)
            result.sharedWrittenAsCopies.push_back(
                source.name + " (shares a storage with " + it->second + ")");
        if (!options.castFloatsTo.empty() && isFloatCastSource(tensor.dtype)
            && tensor.dtype != options.castFloatsTo) {
            p.castFrom = tensor.dtype;
            p.dtype = *dtypeByName(options.castFloatsTo);
            p.nbytes = p.numel * p.dtype.elementSize;
            result.tensorsCast.push_back(
                source.name + " (" + tensor.dtype + " -> " + options.castFloatsTo + ")");
        }
        planned.push_back(p);
    }
    if (!unnamedDtypes.empty()) {
        std::string list;
        for (std::size_t i = 0; i < unnamedDtypes.size() && i < 8; ++i)
            list += (i ? ", " : "") + unnamedDtypes[i];
        if (unnamedDtypes.size() > 8)
            list += ", ...";
        return makeError(std::to_string(unnamedDtypes.size())
            + " tensors have a dtype safetensors has no name for: " + list
            + " (safetensors names bool, integers up to 64 bits, float4_e2m1fn_x2, float8/16/32/64, bfloat16 "
              "and complex64); "
              "nothing was written; leave them out with --select");
    }

    // 2. Order (largest element first keeps every tensor aligned) and shards.
    std::stable_sort(planned.begin(), planned.end(),
        [](const Planned& a, const Planned& b) { return a.dtype.elementSize > b.dtype.elementSize; });
    std::vector<std::uint64_t> shardBytes {0};
    for (Planned& p : planned) {
        if (options.maxShardBytes && shardBytes.back() > 0
            && shardBytes.back() + p.nbytes > options.maxShardBytes)
            shardBytes.push_back(0);
        p.shard = shardBytes.size() - 1;
        p.shardOffset = shardBytes.back();
        shardBytes.back() += p.nbytes;
    }
    const bool folder = options.maxShardBytes != 0;
    if (folder) {
        if (::mkdir(outputPath.c_str(), 0777) != 0 && errno != EEXIST)
            return makeError("cannot create the folder " + outputPath + ": " + std::strerror(errno));
        struct stat info { };
        if (::stat(outputPath.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
            return makeError(outputPath + " is not a folder; with --max-shard-size the output is a folder");
    }
    const std::string inputPath = tensors.front().checkpoint->path;
    std::uint64_t totalBytes = 0;
    for (std::uint64_t bytes : shardBytes)
        totalBytes += bytes;
    std::uint64_t done = 0;

    for (std::size_t shard = 0; shard < shardBytes.size(); ++shard) {
        SafetensorsShard written;
        written.path = !folder       ? outputPath
            : shardBytes.size() == 1 ? outputPath + "/model.safetensors"
                                     : outputPath + "/" + shardName(shard, shardBytes.size());
        JsonWriter header(JsonStyle::Compact);
        header.beginObject();
        header.key("__metadata__").beginObject().member("format", "pt").endObject();
        std::vector<const Planned*> inShard;
        for (const Planned& p : planned) {
            if (p.shard != shard)
                continue;
            inShard.push_back(&p);
            header.key(p.source->name).beginObject();
            header.member("dtype", std::string(p.dtype.safetensorsName));
            header.key("shape").beginArray();
            // F4 counts 4-bit values: the last dimension of a float4_e2m1fn_x2 tensor, doubled.
            for (std::size_t d = 0; d < p.tensor->shape.size(); ++d)
                header.value(d + 1 == p.tensor->shape.size()
                        ? p.tensor->shape[d] * static_cast<std::int64_t>(p.dtype.safetensorsPerElement)
                        : p.tensor->shape[d]);
            header.endArray();
            header.key("data_offsets")
                .beginArray()
                .value(p.shardOffset)
                .value(p.shardOffset + p.nbytes)
                .endArray();
            header.endObject();
            written.names.push_back(p.source->name);
        }
        header.endObject();
        std::string text = header.takeText();
        // The data starts 8-byte aligned, as the safetensors library pads its header with spaces.
        while (text.size() % 8)
            text += ' ';
        written.tensorBytes = shardBytes[shard];

        auto output = AtomicOutputFile::create(written.path, inputPath, 8 + text.size() + shardBytes[shard]);
        if (!output)
            return output.error();
        std::uint8_t length[8];
        for (int i = 0; i < 8; ++i)
            length[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
        Status status = output->get()->write(ByteView(length, 8));
        if (!status)
            status = output->get()->write(std::string_view(text));
        for (const Planned* p : inShard) {
            if (status)
                break;
            status = forEachChunk(*p, [&](ByteView chunk) -> Status {
                if (Status problem = output->get()->write(chunk))
                    return problem;
                done += chunk.size();
                if (options.progress && !options.progress(done, totalBytes))
                    return makeError("cancelled");
                return std::nullopt;
            });
        }
        if (status)
            return *status;

        // Read the file back before it takes its name: every tensor a contiguous view at offset 0
        // of its own storage, with its dtype and shape, no device recorded, and its bytes those of
        // the input's view, byte for byte.
        if (options.verifyAfterWriting) {
            IntendedOutput intended;
            intended.what = folder
                ? "the written shard " + written.path.substr(written.path.find_last_of('/') + 1)
                : std::string("the written safetensors file");
            intended.format = CheckpointFormat::Safetensors;
            intended.matchTensorsByName = true;
            intended.allowedGlobals.emplace(); // no pickle at all
            for (const Planned* p : inShard) {
                IntendedTensor tensor;
                tensor.name = p->source->name;
                tensor.dtype = std::string(p->dtype.name);
                tensor.shape = p->tensor->shape;
                tensor.stride = contiguousStrides(tensor.shape);
                tensor.storageOffset = 0;
                tensor.storageKey = p->source->name;
                intended.tensors.push_back(std::move(tensor));
                IntendedStorage storage;
                storage.key = p->source->name;
                storage.length = p->nbytes;
                storage.bytes
                    = [p](const std::function<Status(ByteView)>& sink) { return forEachChunk(*p, sink); };
                intended.storages.push_back(std::move(storage));
            }
            if (Status problem = verifyWrittenFile(**output, std::move(intended)))
                return *problem;
        }
        if (Status commit = output->get()->commit())
            return *commit;
        result.bytesWritten += 8 + text.size() + shardBytes[shard];
        result.tensorsWritten += inShard.size();
        result.shards.push_back(std::move(written));
    }
    result.verified = options.verifyAfterWriting;

    if (folder && result.shards.size() > 1) {
        JsonWriter index(JsonStyle::Pretty);
        index.beginObject();
        index.key("metadata").beginObject().member("total_size", totalBytes).endObject();
        index.key("weight_map").beginObject();
        std::map<std::string, std::string> sorted; // transformers writes the map sorted by name
        for (const SafetensorsShard& shard : result.shards)
            for (const std::string& name : shard.names)
                sorted[name] = shard.path.substr(shard.path.find_last_of('/') + 1);
        for (const auto& [name, file] : sorted)
            index.member(name, file);
        index.endObject();
        index.endObject();
        const std::string text = index.takeText() + "\n";
        result.indexPath = outputPath + "/model.safetensors.index.json";
        auto output = AtomicOutputFile::create(result.indexPath, inputPath, text.size());
        if (!output)
            return output.error();
        if (Status status = output->get()->write(std::string_view(text)))
            return *status;
        if (Status commit = output->get()->commit())
            return *commit;
        result.bytesWritten += text.size();
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace ckpt
