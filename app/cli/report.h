#pragma once
// Renderers for results more than one command prints: the safety verdict (info, check, remap), a
// machine (devices, plan) and a finding (check).
#include <iosfwd>
#include <string>

namespace ckpt {
class JsonWriter;
struct Checkpoint;
struct Finding;
struct MachineInventory;
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

// 0 read, 1 read with warnings, 2 read with errors, 3 could not read.
int exitCodeFor(const ckpt::Checkpoint& checkpoint);

} // namespace cli
