// SPDX-License-Identifier: MIT
#pragma once
// What changed between two checkpoints (`diff`, File > Compare With), as text and as JSON.
#include <iosfwd>
#include <string>

namespace ckpt {

class JsonWriter;
struct CheckpointDiff;
struct ValueDeltas;

// "2 removed, 1 added, 0 renamed, 3 changed, 120 unchanged": the line both faces lead with.
std::string diffCountsText(const CheckpointDiff& diff);
// "1.2 GiB hashed in 0.41 s on 8 threads".
std::string diffHashingText(const CheckpointDiff& diff);

// The whole comparison; `deltas` as readValueDeltas gives them (empty when none were measured),
// `valuesProblem` why no value differences were measured at all (empty when they were).
void writeDiffJson(JsonWriter& writer, const std::string& pathA, const std::string& pathB,
    const CheckpointDiff& diff, const ValueDeltas& deltas, const std::string& valuesProblem);
void writeDiffText(std::ostream& out, const std::string& pathA, const std::string& pathB,
    const CheckpointDiff& diff, const ValueDeltas& deltas, const std::string& valuesProblem);

} // namespace ckpt
