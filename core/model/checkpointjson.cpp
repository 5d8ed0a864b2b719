// SPDX-License-Identifier: MIT
#include "core/model/checkpointjson.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"

#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"

#include <set>
#include <span>

namespace ckpt {

using literals::operator""_key;

namespace {

void writeIntArray(JsonWriter& json, std::span<const std::int64_t> values)
{
    json.beginArray();
    for (std::int64_t v : values)
        json.value(v);
    json.endArray();
}

std::set<std::string> referencedGlobals(const Checkpoint& checkpoint)
{
    std::set<std::string> globals;
    for (const PickleSection& section : checkpoint.pickles)
        for (const GlobalReference& ref : section.run.globals)
            globals.insert(ref.module + "." + ref.name);
    return globals;
}

} // namespace

std::string checkpointToJson(const Checkpoint& checkpoint, bool pretty)
{
    JsonWriter json(pretty ? JsonStyle::Pretty : JsonStyle::Compact);
    json.beginObject();
    writeCheckpointJsonMembers(json, checkpoint);
    json.endObject();
    std::string text = json.takeText();
    text += '\n';
    return text;
}

void writeCheckpointJsonMembers(JsonWriter& json, const Checkpoint& checkpoint)
{
    json.member("file", checkpoint.path);
    json.member("file_size", checkpoint.fileSize);
    json.member("format", std::string(checkpointFormatName(checkpoint.format)));
    json.member("container", std::string(containerKindName(checkpoint.container.kind)));
    json.member("container_description", checkpoint.container.description);
    json.member("archive_prefix", checkpoint.archivePrefix);

    json.key("tensors"_key).beginArray();
    for (const TensorEntry& tensor : checkpoint.tensors) {
        json.beginObject();
        json.member("name"_key, tensor.name);
        json.member("dtype"_key, tensor.dtype);
        json.key("shape"_key);
        if (tensor.layout == TensorLayout::Nested) // each component has its own shape
            json.null();
        else
            writeIntArray(json, tensor.shape);
        json.key("stride"_key);
        if (tensor.stride)
            writeIntArray(json, *tensor.stride);
        else
            json.null();
        json.key("storage_offset"_key);
        if (tensor.storageOffset)
            json.value(*tensor.storageOffset);
        else
            json.null();
        json.key("storage"_key);
        if (tensor.storage >= 0)
            json.value(checkpoint.storages[static_cast<std::size_t>(tensor.storage)].key);
        else
            json.null();
        json.key("device"_key);
        if (tensor.device)
            json.value(*tensor.device);
        else
            json.null();
        if (checkpoint.shardSet)
            writeShardOf(json, checkpoint, tensor.storage);
        json.member("requires_grad"_key, tensor.requiresGrad);
        json.member("is_parameter"_key, tensor.isParameter);
        json.member("layout"_key, tensorLayoutName(tensor.layout));
        json.member("rebuild"_key, tensor.rebuildFunction);
        if (!tensor.subclass.empty())
            json.member("subclass"_key, tensor.subclass);
        json.endObject();
    }
    json.endArray();

    json.key("storages"_key).beginArray();
    for (const StorageRecord& storage : checkpoint.storages) {
        json.beginObject();
        json.member("key"_key, storage.key);
        json.member("dtype"_key, storage.dtype);
        json.member("numel"_key, storage.numel);
        json.member("nbytes"_key, storage.nbytes);
        json.key("device"_key);
        if (storage.device)
            json.value(*storage.device);
        else
            json.null();
        json.member("storage_class"_key, storage.storageClass);
        json.member("record"_key, storage.record());
        json.key("data_offset"_key);
        if (storage.dataOffset)
            json.value(*storage.dataOffset);
        else
            json.null();
        json.member("bytes_complete"_key, storage.bytesReadable());
        if (storage.deflated) // its record is deflated: read by inflating it (no data_offset)
            json.member("compression"_key, std::string("deflate"));
        json.member("tensor_count"_key, static_cast<std::uint64_t>(storage.tensors.size()));
        if (checkpoint.shardSet)
            writeShardOf(json, checkpoint, static_cast<std::int32_t>(&storage - checkpoint.storages.data()));
        json.endObject();
    }
    json.endArray();

    if (checkpoint.shardSet)
        writeShardSetJson(json, checkpoint);

    json.key("bytes_by_device").beginObject();
    for (const auto& [device, bytes] : checkpoint.bytesByDevice())
        json.member(device, bytes);
    json.endObject();

    json.key("globals").beginArray();
    for (const std::string& name : referencedGlobals(checkpoint))
        json.value(name);
    json.endArray();

    json.key("findings").beginArray();
    for (const Finding& finding : checkpoint.findings) {
        json.beginObject();
        json.member("severity", std::string(severityName(finding.severity)));
        json.member("code", finding.codeId());
        json.member("message", finding.message);
        if (!finding.record.empty())
            json.member("record", finding.record);
        if (finding.offset)
            json.member("offset", *finding.offset);
        json.endObject();
    }
    json.endArray();
}

std::string checkpointToText(const Checkpoint& checkpoint)
{
    // Every line passes through printableText: names, classes, paths and messages come from the
    // file, and an escape sequence in a tensor name must not move the cursor or hide the lines
    // after it (issue 9). Only the line breaks added here reach the terminal as line breaks.
    std::string out;
    out.reserve(checkpoint.tree.size() * 96); // a line per node, most of them tensors
    // Each line as printableText makes it: printable ASCII (almost every line) is appended as it is.
    const auto addLine = [&out](std::string_view line) {
        appendPrintableText(out, line);
        out += '\n';
    };
    addLine(checkpoint.path);
    addLine("  format: " + std::string(checkpointFormatName(checkpoint.format)) + " ("
        + checkpoint.container.description + ")");
    addLine("  " + formatThousands(checkpoint.tensors.size()) + " tensors in "
        + formatThousands(checkpoint.storages.size()) + " storages, "
        + formatBytes(checkpoint.totalStorageBytes()));
    addLine("");

    // The tree, indented; tensors with dtype, shape, size and recorded device.
    struct Item {
        std::uint32_t node;
        int depth;
    };
    std::vector<Item> stack;
    if (!checkpoint.tree.empty()) {
        const auto& rootChildren = checkpoint.tree[0].children;
        for (std::size_t i = rootChildren.size(); i-- > 0;)
            stack.push_back({rootChildren[i], 0});
    }
    // Each line of the tree is built straight into `out` and then made printable where it stands:
    // a line of printable ASCII (almost every one) is scanned once and not copied again.
    std::string sizeText; // formatBytes of sizeOfText
    std::uint64_t sizeOfText = 0;
    while (!stack.empty()) {
        const Item item = stack.back();
        stack.pop_back();
        const TreeNode& node = checkpoint.tree[item.node];
        const std::size_t lineStart = out.size();
        out.append(static_cast<std::size_t>(item.depth) * 2 + 2, ' ');
        out += node.name.empty() ? std::string_view("(root)") : node.name.view();
        if (node.kind == TreeNodeKind::Tensor && node.tensor >= 0) {
            const TensorEntry& tensor = checkpoint.tensors[static_cast<std::size_t>(node.tensor)];
            out += "  ";
            out += std::string_view(tensor.dtype);
            out += ' ';
            appendIntegerList(out, tensor.shape);
            if (tensor.layout != TensorLayout::Strided) {
                out += ' ';
                out += tensorLayoutName(tensor.layout);
            }
            if (tensor.storage >= 0) {
                const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
                out += "  ";
                // Tensors of one size come in runs (a layer's weights, every bias): its text is
                // made once per run.
                if (const std::uint64_t nbytes = tensor.nbytes(); nbytes != sizeOfText || sizeText.empty()) {
                    sizeOfText = nbytes;
                    sizeText.clear();
                    appendBytes(sizeText, nbytes);
                }
                out += sizeText;
                out += "  storage ";
                out += std::string_view(storage.key);
                if (storage.tensors.size() > 1)
                    out += " (shared by " + std::to_string(storage.tensors.size()) + ")";
            }
            out += "  @";
            out += tensor.device ? std::string_view(*tensor.device) : std::string_view("(no device)");
            if (const ShardFile* shard
                = checkpoint.shardSet ? checkpoint.shardSet->shardOfStorage(tensor.storage) : nullptr) {
                out += "  [";
                out += shard->name;
                out += ']';
            }
            if (tensor.isParameter)
                out += "  Parameter";
        } else if (node.kind == TreeNodeKind::Value || node.kind == TreeNodeKind::Alias) {
            out += " = " + node.summary;
        } else if (node.kind == TreeNodeKind::Placeholder) {
            out += "  <" + (node.className.empty() ? node.summary : node.className.str()) + ">";
        } else if (!node.className.empty()) {
            out += "  (" + node.className + ")";
        }
        makePrintableFrom(out, lineStart);
        out += '\n';
        for (std::size_t i = node.children.size(); i-- > 0;)
            stack.push_back({node.children[i], item.depth + 1});
    }

    if (checkpoint.shardSet) { // names from an index: printable like every other line
        const std::string shards = shardSetText(checkpoint);
        std::size_t start = 0;
        for (std::size_t end = shards.find('\n'); end != std::string::npos; end = shards.find('\n', start)) {
            addLine(std::string_view(shards).substr(start, end - start));
            start = end + 1;
        }
    }
    addLine("");
    addLine("Bytes by recorded device (each storage once):");
    for (const auto& [device, bytes] : checkpoint.bytesByDevice()) {
        std::size_t count = 0;
        for (const StorageRecord& storage : checkpoint.storages)
            count += storage.device.value_or("(none)") == device ? 1 : 0;
        addLine("  " + device + ": " + formatBytes(bytes) + " in " + formatThousands(count) + " storages");
    }
    const auto globals = referencedGlobals(checkpoint);
    if (!globals.empty()) {
        addLine("");
        addLine("Globals referenced by the pickle (never imported or called):");
        for (const std::string& name : globals)
            addLine("  " + name);
    }
    if (!checkpoint.findings.empty()) {
        addLine("");
        addLine("Findings:");
        for (const Finding& finding : checkpoint.findings) {
            std::string line = "  [" + std::string(severityName(finding.severity)) + "] " + finding.message;
            if (finding.offset)
                line += " (byte " + formatThousands(*finding.offset) + ")";
            addLine(line);
        }
    }
    return out;
}

} // namespace ckpt
