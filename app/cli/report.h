// SPDX-License-Identifier: MIT
#pragma once
// Renderers for results more than one command prints: the safety verdict (info, check, remap), a
// machine (devices, plan) and a finding (check).
#include <iosfwd>
#include <string>
#include <vector>

namespace ckpt {
class JsonWriter;
struct Checkpoint;
struct Finding;
struct MachineInventory;
struct RemappedStorage;
struct SafetyVerdict;
} // namespace ckpt

namespace cli {

// The safety verdict as text lines, for the top of `info` and `check`.
std::string safetyText(const ckpt::SafetyVerdict& safety);
void writeSafetyJson(ckpt::JsonWriter& writer, const ckpt::SafetyVerdict& safety);

void writeMachineJson(ckpt::JsonWriter& writer, const ckpt::MachineInventory& machine);
void printMachine(std::ostream& out, const ckpt::MachineInventory& machine);

void writeFindingJson(
    ckpt::JsonWriter& writer, const ckpt::Checkpoint& checkpoint, const ckpt::Finding& finding);

// The storages of a remapped copy (remap of a file, and each shard of a folder): key, recorded and
// planned device; `withOutputKey` adds the storage's key in the copy, which only remap's report has.
void writeRemappedStoragesJson(
    ckpt::JsonWriter& writer, const std::vector<ckpt::RemappedStorage>& storages, bool withOutputKey);

// 0 read, 1 read with warnings, 2 read with errors, 3 could not read.
int exitCodeFor(const ckpt::Checkpoint& checkpoint);

} // namespace cli
