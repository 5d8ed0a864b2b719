// SPDX-License-Identifier: MIT
#include "core/report/extractreport.h"

#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/write/extractwriter.h"

#include <ostream>

namespace ckpt {

void writeDroppedText(std::ostream& out, const ExtractResult& result)
{
    constexpr std::size_t kShown = 12;
    if (!result.droppedTensors.empty()) {
        out << "  tensors not written (" << result.droppedTensors.size() << "):\n";
        for (std::size_t i = 0; i < result.droppedTensors.size() && i < kShown; ++i)
            out << "    " << result.droppedTensors[i].path << ": " << result.droppedTensors[i].what << "\n";
        if (result.droppedTensors.size() > kShown)
            out << "    ... (--json lists all)\n";
    }
    if (!result.droppedObjects.empty()) {
        out << "  other values dropped (" << result.droppedObjects.size() << "):\n";
        for (std::size_t i = 0; i < result.droppedObjects.size() && i < kShown; ++i)
            out << "    " << result.droppedObjects[i].path << ": " << result.droppedObjects[i].what << "\n";
        if (result.droppedObjects.size() > kShown)
            out << "    ... (--json lists all)\n";
    }
    if (!result.globalsNotCarried.empty()) {
        out << "  classes and functions named by the input, never imported and not in the output:";
        for (const std::string& name : result.globalsNotCarried)
            out << " " << name;
        out << "\n";
    }
}

void writeExtractText(std::ostream& out, const ExtractResult& result)
{
    out << result.outputPath << ": " << result.summary() << "\n";
    out << "  root: " << (result.root.empty() ? std::string("(whole file)") : "'" + result.root + "'") << " ("
        << result.rootReason << ")\n";
    writeDroppedText(out, result);
}

void writeDroppedJson(JsonWriter& writer, const ExtractResult& result)
{
    auto items = [&](const char* key, const std::vector<DroppedItem>& list) {
        writer.key(key).beginArray();
        for (const DroppedItem& item : list) {
            writer.beginObject();
            writer.member("path", item.path);
            writer.member("what", item.what);
            writer.endObject();
        }
        writer.endArray();
    };
    items("dropped_tensors", result.droppedTensors);
    items("dropped_objects", result.droppedObjects);
    writer.member("globals_not_carried", result.globalsNotCarried);
}

void writeExtractJson(
    JsonWriter& writer, const std::string& input, const Checkpoint& checkpoint, const ExtractResult& result)
{
    writer.beginObject();
    writer.member("input", input);
    writer.member("output", result.outputPath);
    writer.member("format", std::string(checkpointFormatName(checkpoint.format)));
    writer.member("root", result.root);
    writer.member("root_reason", result.rootReason);
    writer.key("tensors").beginArray();
    for (const ExtractedTensor& tensor : result.tensors) {
        writer.beginObject();
        writer.member("name", tensor.name);
        writer.member("source", checkpoint.tensors[tensor.tensor].name);
        writer.member("storage", tensor.outputKey);
        writer.member("device", tensor.device);
        writer.endObject();
    }
    writer.endArray();
    writeDroppedJson(writer, result);
    writer.member("storages_written", result.storagesWritten);
    writer.member("bytes_written", result.bytesWritten);
    writer.member("verified", result.verified);
    writer.member("summary", result.summary());
    writer.endObject();
}

} // namespace ckpt
