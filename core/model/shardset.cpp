// SPDX-License-Identifier: MIT
#include "core/model/shardset.h"

#include "core/base/textformat.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"

#include <map>

namespace ckpt {

const char* shardLayoutName(ShardLayout layout)
{
    switch (layout) {
    case ShardLayout::HuggingFaceBin:
        return "hf-bin-shards";
    case ShardLayout::HuggingFaceSafetensors:
        return "hf-safetensors-shards";
    case ShardLayout::Distributed:
        return "dcp";
    case ShardLayout::Bundle:
        return "bundle";
    }
    return "dcp";
}

const char* bundleKindName(BundleKind kind)
{
    switch (kind) {
    case BundleKind::Tar:
        return "tar";
    case BundleKind::CompressedTar:
        return "compressed-tar";
    case BundleKind::Zip:
        return "zip";
    case BundleKind::CompressedFile:
        return "compressed-file";
    }
    return "tar";
}

namespace {

void writeInts(JsonWriter& json, const std::vector<std::int64_t>& values)
{
    json.beginArray();
    for (std::int64_t value : values)
        json.value(value);
    json.endArray();
}

// Bytes per recorded device of one shard's storages, each storage once.
std::map<std::string, std::uint64_t> bytesByDeviceOf(const Checkpoint& checkpoint, const ShardFile& shard)
{
    std::map<std::string, std::uint64_t> bytes;
    for (std::uint32_t k = shard.firstStorage; k < shard.firstStorage + shard.storageCount; ++k)
        bytes[checkpoint.storages[k].device.value_or("(none)")] += checkpoint.storages[k].nbytes;
    return bytes;
}

} // namespace

void writeShardOf(JsonWriter& json, const Checkpoint& checkpoint, std::int32_t storage)
{
    json.key("shard");
    if (const ShardFile* shard = checkpoint.shardSet ? checkpoint.shardSet->shardOfStorage(storage) : nullptr)
        json.value(shard->name);
    else
        json.null();
}

void writeShardSetJson(JsonWriter& json, const Checkpoint& checkpoint)
{
    const ShardSet& set = *checkpoint.shardSet;
    json.member("layout", std::string(shardLayoutName(set.layout)));
    json.member("folder", set.folder);
    json.member("index", set.indexPath);
    json.memberOrNull("index_total_size", set.indexTotalSize);
    json.key("shards").beginArray();
    for (const ShardFile& shard : set.shards) {
        json.beginObject();
        json.member("name", shard.name);
        json.member("present", shard.present);
        json.member("file_size", shard.fileSize);
        json.memberOrNull("problem", shard.problem);
        if (set.layout != ShardLayout::Distributed) {
            json.member("storages", static_cast<std::uint64_t>(shard.storageCount));
            json.key("bytes_by_device").beginObject();
            for (const auto& [device, bytes] : bytesByDeviceOf(checkpoint, shard))
                json.member(device, bytes);
            json.endObject();
        }
        json.endObject();
    }
    json.endArray();
    if (set.bundle) {
        const BundleInfo& bundle = *set.bundle;
        json.key("bundle").beginObject();
        json.member("kind", std::string(bundleKindName(bundle.kind)));
        json.member("format", bundle.format);
        json.member("filter", bundle.filter);
        json.memberOrNull("damage", bundle.damage);
        json.key("members").beginArray();
        for (const BundleMember& member : bundle.members) {
            json.beginObject();
            json.member("name", member.name);
            json.member("type", member.type);
            json.member("size", member.size);
            json.member("checkpoint", member.shard >= 0);
            json.memberOrNull("read_as", member.readAs);
            json.memberOrNull("description", member.description);
            json.memberOrNull("data_offset", member.dataOffset);
            json.member("truncated", member.truncated);
            json.endObject();
        }
        json.endArray();
        json.endObject();
    }
    if (!set.dcp)
        return;
    json.key("dcp").beginObject();
    json.member("version", set.dcp->version);
    json.member("records_device", false);
    json.key("entries").beginArray();
    for (const DcpEntry& entry : set.dcp->entries) {
        json.beginObject();
        json.member("fqn", entry.fqn);
        json.member("kind", std::string(entry.isBytes ? "bytes" : "tensor"));
        if (!entry.isBytes) {
            json.member("dtype", entry.dtype);
            json.key("size");
            writeInts(json, entry.size);
        }
        json.key("planner_path").beginArray();
        for (const std::string& part : entry.plannerPath)
            json.value(part);
        json.endArray();
        json.key("chunks").beginArray();
        for (const DcpChunk& chunk : entry.chunks) {
            json.beginObject();
            if (!entry.isBytes) {
                json.key("offsets");
                writeInts(json, chunk.offsets);
                json.key("sizes");
                writeInts(json, chunk.sizes);
            }
            json.key("file");
            chunk.located ? json.value(chunk.file) : json.null();
            json.member("file_offset", chunk.fileOffset);
            json.member("length", chunk.length);
            json.endObject();
        }
        json.endArray();
        json.endObject();
    }
    json.endArray();
    json.endObject();
}

std::string shardSetText(const Checkpoint& checkpoint)
{
    const ShardSet& set = *checkpoint.shardSet;
    std::string out = "\nFiles (" + std::string(shardLayoutName(set.layout))
        + (set.indexPath.empty() ? std::string(", no index") : ", index " + set.indexPath) + "):\n";
    for (const ShardFile& shard : set.shards) {
        out += "  " + shard.name + "  " + formatBytes(shard.fileSize);
        if (!shard.problem.empty())
            out += "  PROBLEM: " + shard.problem;
        else if (set.layout != ShardLayout::Distributed) {
            out += "  " + formatThousands(shard.storageCount) + " storages:";
            for (const auto& [device, bytes] : bytesByDeviceOf(checkpoint, shard))
                out += " " + device + " " + formatBytes(bytes);
        }
        out += "\n";
    }
    if (set.bundle) {
        const BundleInfo& bundle = *set.bundle;
        out += "\nBundle members (" + std::string(bundleKindName(bundle.kind)) + ", " + bundle.format
            + (bundle.filter == "none" ? std::string() : ", " + bundle.filter) + "):\n";
        for (const BundleMember& member : bundle.members) {
            out += "  " + member.name + "  " + member.type;
            if (member.type == "file")
                out += "  " + formatBytes(member.size) + (member.shard >= 0 ? "  checkpoint, " : "  ")
                    + member.readAs;
            if (member.truncated)
                out += "  TRUNCATED";
            out += "\n";
        }
        if (!bundle.damage.empty())
            out += "  DAMAGED: " + bundle.damage + "\n";
    }
    if (set.dcp) {
        out += "\nDCP metadata (version "
            + (set.dcp->version.empty() ? std::string("not recorded") : set.dcp->version)
            + "; DCP records no device):\n";
        for (const DcpEntry& entry : set.dcp->entries) {
            if (entry.isBytes) {
                out += "  " + entry.fqn
                    + "  <BytesStorageMetadata: a pickled non-tensor value, not unpickled>\n";
                continue;
            }
            out += "  " + entry.fqn + "  " + entry.dtype + " [";
            for (std::size_t d = 0; d < entry.size.size(); ++d)
                out += (d ? ", " : "") + std::to_string(entry.size[d]);
            out += "]  " + std::to_string(entry.chunks.size()) + " chunk(s):";
            for (const DcpChunk& chunk : entry.chunks) {
                out += " {at [";
                for (std::size_t d = 0; d < chunk.offsets.size(); ++d)
                    out += (d ? ", " : "") + std::to_string(chunk.offsets[d]);
                out += "] "
                    + (chunk.located ? chunk.file + " @" + std::to_string(chunk.fileOffset) + " +"
                                + std::to_string(chunk.length)
                                     : std::string("no bytes recorded"))
                    + "}";
            }
            out += "\n";
        }
    }
    return out;
}

} // namespace ckpt
