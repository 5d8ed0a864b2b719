// SPDX-License-Identifier: MIT
#pragma once
// How extract and convert report what they wrote and what they left behind.
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/triage/pickleverdict.h"
#include "core/triage/triage.h"
#include "core/write/extractwriter.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>
#include <string>

namespace cli {

// The writers list the globals of the pickle they read. A hostile file may hide a pickle where
// that reader does not look (before the zip, in a second archive root, a duplicate member, a
// storage record): the safety verdict, which scans every pickle in the file, names its callables,
// and they are not carried either. Adds those `globals` lacks.
inline void addUnsafeNotCarried(const ckpt::Checkpoint& checkpoint, std::vector<std::string>& globals)
{
    const ckpt::SafetyVerdict safety
        = checkpoint.shardSet ? ckpt::rateShardSafety(checkpoint) : ckpt::ratePickleSafety(checkpoint);
    for (const ckpt::UnsafeCallable& callable : safety.unsafe)
        if (std::find(globals.begin(), globals.end(), callable.name) == globals.end())
            globals.push_back(callable.name);
}

// What extract and convert keep: --select PREFIX... and --root PATH.
inline void addSelectionOptions(CLI::App& command, ckpt::ExtractOptions& options)
{
    command.add_option("--select", options.select, "keep only the tensors under PREFIX; repeatable")
        ->type_name("PREFIX");
    command.add_option("--root", options.root, "the object in the file that holds the state_dict")
        ->type_name("PATH");
}

inline void printDropped(std::ostream& out, const ckpt::ExtractResult& result)
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

inline void printExtractReport(std::ostream& out, const ckpt::Checkpoint&, const ckpt::ExtractResult& result)
{
    out << result.outputPath << ": " << result.summary() << "\n";
    out << "  root: " << (result.root.empty() ? std::string("(whole file)") : "'" + result.root + "'") << " ("
        << result.rootReason << ")\n";
    printDropped(out, result);
}

inline void writeDroppedJson(ckpt::JsonWriter& writer, const ckpt::ExtractResult& result)
{
    auto items = [&](const char* key, const std::vector<ckpt::DroppedItem>& list) {
        writer.key(key).beginArray();
        for (const ckpt::DroppedItem& item : list) {
            writer.beginObject();
            writer.member("path", item.path);
            writer.member("what", item.what);
            writer.endObject();
        }
        writer.endArray();
    };
    items("dropped_tensors", result.droppedTensors);
    items("dropped_objects", result.droppedObjects);
    writer.key("globals_not_carried").beginArray();
    for (const std::string& name : result.globalsNotCarried)
        writer.value(name);
    writer.endArray();
}

inline void writeExtractJson(ckpt::JsonWriter& writer, const std::string& input,
    const ckpt::Checkpoint& checkpoint, const ckpt::ExtractResult& result)
{
    writer.beginObject();
    writer.member("input", input);
    writer.member("output", result.outputPath);
    writer.member("format", std::string(ckpt::checkpointFormatName(checkpoint.format)));
    writer.member("root", result.root);
    writer.member("root_reason", result.rootReason);
    writer.key("tensors").beginArray();
    for (const ckpt::ExtractedTensor& tensor : result.tensors) {
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

} // namespace cli
