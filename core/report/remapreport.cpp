// SPDX-License-Identifier: MIT
#include "core/report/remapreport.h"

#include "core/base/escaping.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/report/safetyreport.h"
#include "core/write/remapwriter.h"
#include "core/write/shardedwriter.h"

#include <ostream>

namespace ckpt {

void writeRemappedStoragesJson(
    JsonWriter& writer, const std::vector<RemappedStorage>& storages, bool withOutputKey)
{
    writer.key("storages").beginArray();
    for (const RemappedStorage& storage : storages) {
        writer.beginObject();
        writer.member("key", storage.key);
        if (withOutputKey)
            writer.member("output_key", storage.outputKey);
        writer.memberOrNull("recorded", storage.recorded);
        writer.memberOrNull("planned", storage.planned);
        writer.endObject();
    }
    writer.endArray();
}

namespace {

void writeCarriedDanger(JsonWriter& writer, const SafetyVerdict* copySafety)
{
    if (!copySafety)
        return;
    writer.member("as_dangerous_as_input", true);
    writer.key("safety");
    writeSafetyJson(writer, *copySafety);
}

} // namespace

void writeRemapJson(JsonWriter& writer, const std::string& input, const Checkpoint& checkpoint,
    const RemapResult& result, const SafetyVerdict* copySafety)
{
    writer.beginObject();
    writer.member("input", input);
    writer.member("output", result.outputPath);
    writer.member("format", std::string(checkpointFormatName(checkpoint.format)));
    writeRemappedStoragesJson(writer, result.storages, true);
    writer.member("globals_renamed", result.globalsRenamed);
    writer.member("records_copied", result.recordsCopied);
    writer.member("records_rewritten", result.recordsRewritten);
    writer.member("records_inflated", result.recordsInflated);
    writer.member("bytes_written", result.bytesWritten);
    writer.member("seconds", result.seconds);
    writer.member("verified", result.verified);
    writer.member("summary", result.summary());
    writeCarriedDanger(writer, copySafety);
    writer.endObject();
}

void writeRemapText(std::ostream& out, const std::string& output, const RemapResult& result)
{
    out << printableText(output) << ": " << printableText(result.summary()) << "\n";
    for (const std::string& renamed : result.globalsRenamed)
        out << "  renamed " << printableText(renamed) << "\n";
}

void writeShardedRemapJson(JsonWriter& writer, const Checkpoint& checkpoint, const ShardedRemapResult& result,
    const SafetyVerdict* copySafety)
{
    writer.beginObject();
    writer.member("input", checkpoint.shardSet->folder);
    writer.member("output", result.outputFolder);
    writer.member("layout", std::string(shardLayoutName(checkpoint.shardSet->layout)));
    writer.member("rewritten", true);
    writer.key("shards").beginArray();
    for (const RemapResult& shard : result.shards) {
        writer.beginObject();
        writer.member("output", shard.outputPath);
        writer.member("verified", shard.verified);
        writer.member("records_copied", shard.recordsCopied);
        writer.member("records_rewritten", shard.recordsRewritten);
        writeRemappedStoragesJson(writer, shard.storages, false);
        writer.endObject();
    }
    writer.endArray();
    writer.member("files_copied", result.filesCopied);
    writer.member("files_left_out", result.filesLeftOut);
    writer.member("bytes_written", result.bytesWritten);
    writer.member("summary", result.summary());
    writeCarriedDanger(writer, copySafety);
    writer.endObject();
}

void writeShardedRemapText(std::ostream& out, const ShardedRemapResult& result)
{
    for (const RemapResult& shard : result.shards)
        out << printableText(shard.outputPath) << ": " << printableText(shard.summary()) << "\n";
    for (const std::string& left : result.filesLeftOut)
        out << "left out " << printableText(left) << "\n";
    out << printableText(result.outputFolder) << ": " << printableText(result.summary()) << "\n";
}

} // namespace ckpt
