// SPDX-License-Identifier: MIT
#include "core/report/extractreport.h"

#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/tasks/exportweights.h"
#include "core/write/extractwriter.h"

#include <ostream>
#include <sstream>

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

namespace {

// --dtype: what was cast and what was left in its dtype (text and JSON).
void writeCastText(std::ostream& out, const std::string& castTo, const std::vector<std::string>& cast,
    const std::vector<DroppedItem>& notCast)
{
    if (castTo.empty())
        return;
    constexpr std::size_t kShown = 12;
    out << "  floating tensors cast to " << castTo << " as torch's .to(torch." << castTo
        << ") rounds them (to nearest, ties to even) (" << cast.size() << "):\n";
    for (std::size_t i = 0; i < cast.size() && i < kShown; ++i)
        out << "    " << cast[i] << "\n";
    if (cast.size() > kShown)
        out << "    ... (--json lists all)\n";
    if (!notCast.empty()) {
        out << "  floating tensors left in their dtype (" << notCast.size() << "):\n";
        for (std::size_t i = 0; i < notCast.size() && i < kShown; ++i)
            out << "    " << notCast[i].path << ": " << notCast[i].what << "\n";
    }
}

void writeCastJson(JsonWriter& writer, const std::string& castTo, const std::vector<std::string>& cast,
    const std::vector<DroppedItem>& notCast)
{
    if (castTo.empty()) {
        writer.key("dtype").null();
        return;
    }
    writer.key("dtype").beginObject();
    writer.member("to", castTo);
    writer.member("tensors_cast", cast);
    writer.key("not_cast").beginArray();
    for (const DroppedItem& item : notCast) {
        writer.beginObject();
        writer.member("path", item.path);
        writer.member("what", item.what);
        writer.endObject();
    }
    writer.endArray();
    writer.endObject();
}

} // namespace

void writeExtractText(std::ostream& out, const ExtractResult& result)
{
    out << result.outputPath << ": " << result.summary() << "\n";
    out << "  root: " << (result.root.empty() ? std::string("(whole file)") : "'" + result.root + "'") << " ("
        << result.rootReason << ")\n";
    writeCastText(out, result.castTo, result.tensorsCast, result.notCast);
    if (!result.plainValues.empty()) {
        out << "  NumPy values written as plain values (" << result.plainValues.size() << "):\n";
        for (std::size_t i = 0; i < result.plainValues.size() && i < 12; ++i)
            out << "    " << result.plainValues[i].path << ": " << result.plainValues[i].what << "\n";
        if (result.plainValues.size() > 12)
            out << "    ... (--json lists all)\n";
    }
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
    writeCastJson(writer, result.castTo, result.tensorsCast, result.notCast);
    writer.key("plain_values").beginArray();
    for (const DroppedItem& item : result.plainValues) {
        writer.beginObject();
        writer.member("path", item.path);
        writer.member("what", item.what);
        writer.endObject();
    }
    writer.endArray();
    writer.member("storages_written", result.storagesWritten);
    writer.member("bytes_written", result.bytesWritten);
    writer.member("verified", result.verified);
    writer.member("summary", result.summary());
    writer.endObject();
}

namespace {

ExtractResult droppedOf(const ExportedInput& input)
{
    ExtractResult dropped;
    dropped.droppedTensors = input.droppedTensors;
    dropped.droppedObjects = input.droppedObjects;
    dropped.globalsNotCarried = input.globalsNotCarried;
    return dropped;
}

} // namespace

void writeExportWeightsText(std::ostream& out, const ExportWeightsOutcome& outcome)
{
    if (outcome.stateDict && !outcome.fromFolder) {
        writeExtractText(out, *outcome.stateDict);
        return;
    }
    out << outcome.outputPath << ": " << outcome.summary() << "\n";
    if (outcome.safetensors && !outcome.safetensors->sharedWrittenAsCopies.empty()) {
        out << (outcome.stateDict
                ? "  tensors that shared a storage are written as separate copies:\n"
                : "  safetensors cannot express shared storage; written as separate copies (load_state_dict "
                  "and from_pretrained tie them again where the model ties them):\n");
        for (std::size_t i = 0; i < outcome.safetensors->sharedWrittenAsCopies.size() && i < 12; ++i)
            out << "    " << outcome.safetensors->sharedWrittenAsCopies[i] << "\n";
    }
    if (outcome.stateDict)
        writeCastText(
            out, outcome.stateDict->castTo, outcome.stateDict->tensorsCast, outcome.stateDict->notCast);
    else if (outcome.safetensors)
        writeCastText(out, outcome.safetensors->castTo, outcome.safetensors->tensorsCast, {});
    for (const ExportedInput& input : outcome.inputs) {
        const bool nothingLeft
            = input.droppedTensors.empty() && input.droppedObjects.empty() && input.globalsNotCarried.empty();
        if (nothingLeft)
            continue;
        if (outcome.inputs.size() > 1)
            out << "  " << input.file << ":\n";
        writeDroppedText(out, droppedOf(input));
    }
}

std::string exportWeightsText(const ExportWeightsOutcome& outcome)
{
    std::ostringstream text;
    writeExportWeightsText(text, outcome);
    return text.str();
}

void writeExportWeightsJson(JsonWriter& writer, const ExportWeightsOutcome& outcome)
{
    if (outcome.stateDict && !outcome.fromFolder) {
        writeExtractJson(writer, outcome.input, *outcome.stateDictSource, *outcome.stateDict);
        return;
    }
    writer.beginObject();
    writer.member("input", outcome.input);
    writer.member("output", outcome.outputPath);
    if (outcome.stateDict) {
        writer.key("tensors").beginArray();
        for (const ExtractedTensor& tensor : outcome.stateDict->tensors) {
            writer.beginObject();
            writer.member("name", tensor.name);
            writer.member("storage", tensor.outputKey);
            writer.member("device", tensor.device);
            writer.endObject();
        }
        writer.endArray();
    } else if (outcome.safetensors) {
        writer.key("shards").beginArray();
        for (const SafetensorsShard& shard : outcome.safetensors->shards) {
            writer.beginObject();
            writer.member("path", shard.path);
            writer.member("tensor_bytes", shard.tensorBytes);
            writer.member("tensors", shard.names);
            writer.endObject();
        }
        writer.endArray();
        writer.memberOrNull("index", outcome.safetensors->indexPath);
    }
    if (outcome.safetensors) {
        writer.member("shared_written_as_copies", outcome.safetensors->sharedWrittenAsCopies);
        writer.member("views_made_contiguous", outcome.safetensors->viewsMadeContiguous);
    }
    if (outcome.stateDict)
        writeCastJson(
            writer, outcome.stateDict->castTo, outcome.stateDict->tensorsCast, outcome.stateDict->notCast);
    else if (outcome.safetensors)
        writeCastJson(writer, outcome.safetensors->castTo, outcome.safetensors->tensorsCast, {});
    writer.key("inputs").beginArray();
    for (const ExportedInput& input : outcome.inputs) {
        writer.beginObject();
        writer.member("file", input.file);
        writer.member("root", input.root);
        writeDroppedJson(writer, droppedOf(input));
        writer.endObject();
    }
    writer.endArray();
    writer.member("tensors_written", outcome.tensorsWritten());
    writer.member("bytes_written",
        outcome.stateDict ? outcome.stateDict->bytesWritten : outcome.safetensors->bytesWritten);
    writer.member(
        "verified", outcome.stateDict ? outcome.stateDict->verified : outcome.safetensors->verified);
    writer.member("summary", outcome.summary());
    writer.endObject();
}

} // namespace ckpt
