// SPDX-License-Identifier: MIT
#include "core/model/shardset.h"

#include "core/base/textformat.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"

#include <map>
#include <mutex>

namespace ckpt {

// A shard's own model, or what makes it again: the copies of a ShardFile share one, and a writer
// on another thread may be the first to ask for it.
struct ShardModel {
    std::shared_ptr<const MappedFile> file;
    CheckpointFormat format = CheckpointFormat::NotACheckpoint;
    std::function<Checkpoint(std::shared_ptr<const MappedFile>)> readAgain; // empty: read already
    std::mutex mutex;
    std::shared_ptr<const Checkpoint> model; // under the mutex while readAgain is set
};

std::shared_ptr<const Checkpoint> ShardFile::model() const
{
    if (!m_model)
        return nullptr;
    if (!m_model->readAgain)
        return m_model->model;
    std::lock_guard lock(m_model->mutex);
    if (!m_model->model)
        m_model->model = std::make_shared<const Checkpoint>(m_model->readAgain(m_model->file));
    return m_model->model;
}

void ShardFile::setModel(std::shared_ptr<const Checkpoint> model)
{
    if (!model) {
        m_model.reset();
        return;
    }
    m_model = std::make_shared<ShardModel>();
    m_model->file = model->file;
    m_model->format = model->format;
    m_model->model = std::move(model);
}

void ShardFile::setReadInPlace(std::shared_ptr<const MappedFile> file, CheckpointFormat format,
    std::function<Checkpoint(std::shared_ptr<const MappedFile>)> readAgain)
{
    m_model = std::make_shared<ShardModel>();
    m_model->file = std::move(file);
    m_model->format = format;
    m_model->readAgain = std::move(readAgain);
}

bool ShardFile::readInPlace() const
{
    return m_model && m_model->readAgain;
}

CheckpointFormat ShardFile::format() const
{
    return m_model ? m_model->format : CheckpointFormat::NotACheckpoint;
}

const std::shared_ptr<const MappedFile>& ShardFile::file() const
{
    static const std::shared_ptr<const MappedFile> none;
    return m_model ? m_model->file : none;
}

bool ShardFile::hasErrors() const
{
    // Read in place only when its reader said nothing but the dtype notes, which are no errors.
    return m_model && !m_model->readAgain && m_model->model->hasErrors();
}

const char* shardLayoutName(ShardLayout layout)
{
    switch (layout) {
    case ShardLayout::HuggingFaceBin:
        return "hf-bin-shards";
    case ShardLayout::HuggingFaceSafetensors:
        return "hf-safetensors-shards";
    case ShardLayout::Distributed:
        return "dcp";
    case ShardLayout::RunFolder:
        return "run-folder";
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
        if (set.layout == ShardLayout::RunFolder) {
            json.member("group", shard.group);
            json.member(
                "format", std::string(shard.readable() ? checkpointFormatName(shard.format()) : "unread"));
        }
        if (shard.companion)
            json.member("companion", true);
        if (set.layout != ShardLayout::Distributed || shard.companion) {
            json.member("storages", static_cast<std::uint64_t>(shard.storageCount));
            json.key("bytes_by_device").beginObject();
            for (const auto& [device, bytes] : bytesByDeviceOf(checkpoint, shard))
                json.member(device, bytes);
            json.endObject();
        }
        json.endObject();
    }
    json.endArray();
    if (set.layout == ShardLayout::RunFolder) {
        json.key("other_files").beginArray();
        for (const FolderFile& file : set.otherFiles) {
            json.beginObject();
            json.member("name", file.name);
            json.member("file_size", file.fileSize);
            json.member("what", file.what);
            json.endObject();
        }
        json.endArray();
        json.member("latest", set.latestStep);
        json.member("checkpoint", set.newestCheckpoint);
        json.key("folders_left_out").beginArray();
        for (const std::string& folder : set.foldersLeftOut)
            json.value(folder);
        json.endArray();
    }
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
    json.member("metadata_class", set.dcp->metadataClass);
    json.memberOrNull("framework", set.dcp->framework);
    json.key("metadata_files").beginArray();
    for (const std::string& name : set.dcp->metadataFiles)
        json.value(name);
    json.endArray();
    json.key("extra_fields").beginArray();
    for (const std::string& name : set.dcp->extraFields)
        json.value(name);
    json.endArray();
    json.key("companions").beginObject();
    for (const auto& [name, said] : set.dcp->companions)
        json.member(name, said);
    json.endObject();
    json.key("entries").beginArray();
    for (const DcpEntry& entry : set.dcp->entries) {
        json.beginObject();
        json.member("fqn", entry.fqn);
        json.member("kind",
            std::string(!entry.recognised ? "unrecognised"
                    : entry.isBytes       ? "bytes"
                                          : "tensor"));
        json.member("class", entry.className);
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
            if (!chunk.transforms.empty()) {
                json.key("transforms").beginArray();
                for (const std::string& transform : chunk.transforms)
                    json.value(transform);
                json.endArray();
            }
            json.endObject();
        }
        json.endArray();
        json.endObject();
    }
    json.endArray();
    // Each data file as the ranges it holds, by offset (every range its own torch.save or bytes).
    json.key("files").beginArray();
    for (const DcpDataFile& dataFile : set.dcp->files) {
        json.beginObject();
        json.member("name", dataFile.name);
        json.member("present", dataFile.present);
        json.member("file_size", dataFile.fileSize);
        json.member("unclaimed_bytes", dataFile.unclaimedBytes);
        json.member("overlaps", static_cast<std::uint64_t>(dataFile.overlaps));
        json.key("items").beginArray();
        for (const DcpItem& item : dataFile.items) {
            json.beginObject();
            json.member("fqn", item.fqn);
            json.member("kind", std::string(item.isBytes ? "bytes" : "tensor-chunk"));
            if (!item.isBytes)
                json.member("chunk", static_cast<std::int64_t>(item.chunk));
            json.member("offset", item.offset);
            json.member("length", item.length);
            json.member("content", item.content);
            if (!item.archiveDtype.empty()) {
                json.member("archive_dtype", item.archiveDtype);
                json.key("archive_shape");
                writeInts(json, item.archiveShape);
            }
            json.memberOrNull("problem", item.problem);
            json.endObject();
        }
        json.endArray();
        json.endObject();
    }
    json.endArray();
    json.member("archives_read", static_cast<std::uint64_t>(set.dcp->archivesRead));
    json.member("archives_not_read", static_cast<std::uint64_t>(set.dcp->archivesNotRead));
    json.endObject();
}

std::string shardSetText(const Checkpoint& checkpoint)
{
    const ShardSet& set = *checkpoint.shardSet;
    std::string out = "\nFiles (" + std::string(shardLayoutName(set.layout))
        + (set.indexPath.empty() ? std::string(", no index") : ", index " + set.indexPath) + "):\n";
    for (const ShardFile& shard : set.shards) {
        out += "  " + shard.name + "  " + formatBytes(shard.fileSize);
        if (set.layout == ShardLayout::RunFolder && shard.readable())
            out += std::string("  ") + checkpointFormatName(shard.format());
        if (!shard.problem.empty())
            out += "  PROBLEM: " + shard.problem;
        else if (set.layout != ShardLayout::Distributed || shard.companion) {
            out += "  " + formatThousands(shard.storageCount) + " storages:";
            for (const auto& [device, bytes] : bytesByDeviceOf(checkpoint, shard))
                out += " " + device + " " + formatBytes(bytes);
        }
        out += "\n";
    }
    for (const FolderFile& file : set.otherFiles)
        out += "  " + file.name + "  " + formatBytes(file.fileSize) + "  " + file.what + "\n";
    if (!set.latestStep.empty())
        out += "  `latest` names " + set.latestStep + ": its files are shown\n";
    if (!set.newestCheckpoint.empty())
        out += "  " + set.newestCheckpoint + "/ is the newest checkpoint folder: its files are shown\n";
    for (const std::string& folder : set.foldersLeftOut)
        out += "  " + folder + "/  left out ("
            + (!set.newestCheckpoint.empty() && folder.starts_with("checkpoint-")
                        && folder.find('/') == std::string::npos
                    ? std::string("an older checkpoint folder")
                    : std::string("not the step `latest` names"))
            + ")\n";
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
        if (!set.dcp->framework.empty())
            out += "  written by: " + set.dcp->framework + "\n";
        if (!set.dcp->metadataClass.empty()
            && set.dcp->metadataClass != "torch.distributed.checkpoint.metadata.Metadata")
            out += "  metadata class: " + set.dcp->metadataClass + " (read by its fields, never imported)\n";
        if (!set.dcp->extraFields.empty()) {
            out += "  fields beyond DCP's own:";
            for (const std::string& name : set.dcp->extraFields)
                out += " " + name;
            out += "\n";
        }
        for (const auto& [name, said] : set.dcp->companions)
            out += "  " + name + ": " + said + "\n";
        for (const DcpEntry& entry : set.dcp->entries) {
            if (!entry.recognised) {
                out += "  " + entry.fqn + "  <" + entry.className
                    + ": not a tensor or bytes entry, not read>\n";
                continue;
            }
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
        for (const DcpDataFile& dataFile : set.dcp->files) {
            out += "\n" + dataFile.name + ": " + std::to_string(dataFile.items.size()) + " range(s), "
                + formatBytes(dataFile.fileSize)
                + (dataFile.unclaimedBytes ? ", " + formatBytes(dataFile.unclaimedBytes) + " unclaimed"
                                           : std::string())
                + (dataFile.overlaps ? ", " + std::to_string(dataFile.overlaps) + " overlapping"
                                     : std::string())
                + "\n";
            for (const DcpItem& item : dataFile.items) {
                out += "  @" + std::to_string(item.offset) + " +" + std::to_string(item.length) + "  "
                    + item.fqn
                    + (item.isBytes ? std::string(" (bytes)") : " chunk " + std::to_string(item.chunk)) + "  "
                    + item.content;
                if (!item.archiveDtype.empty()) {
                    out += ": " + item.archiveDtype + " [";
                    for (std::size_t d = 0; d < item.archiveShape.size(); ++d)
                        out += (d ? ", " : "") + std::to_string(item.archiveShape[d]);
                    out += "]";
                }
                if (!item.problem.empty())
                    out += "  PROBLEM: " + item.problem;
                out += "\n";
            }
        }
    }
    return out;
}

} // namespace ckpt
