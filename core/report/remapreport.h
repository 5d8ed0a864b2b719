// SPDX-License-Identifier: MIT
#pragma once
// What a remapped copy holds (`remap`, `plan --save`): one file, or a folder of shards, as text
// and as JSON.
#include <iosfwd>
#include <string>
#include <vector>

namespace ckpt {

class JsonWriter;
struct Checkpoint;
struct RemapResult;
struct RemappedStorage;
struct SafetyVerdict;
struct ShardedRemapResult;

// The member "storages" of an open object: key, recorded and planned device per storage;
// `withOutputKey` adds the storage's key in the copy, which only a single file's report has.
void writeRemappedStoragesJson(
    JsonWriter& writer, const std::vector<RemappedStorage>& storages, bool withOutputKey);

// A remapped copy of one file. `copySafety`, given for the copy of a file rated dangerous (written
// under the override), adds "as_dangerous_as_input": true and the copy's own "safety".
void writeRemapJson(JsonWriter& writer, const std::string& input, const Checkpoint& checkpoint,
    const RemapResult& result, const SafetyVerdict* copySafety = nullptr);
void writeRemapText(std::ostream& out, const std::string& output, const RemapResult& result);

// A remapped folder of .bin shards.
void writeShardedRemapJson(JsonWriter& writer, const Checkpoint& checkpoint, const ShardedRemapResult& result,
    const SafetyVerdict* copySafety = nullptr);
void writeShardedRemapText(std::ostream& out, const ShardedRemapResult& result);

} // namespace ckpt
