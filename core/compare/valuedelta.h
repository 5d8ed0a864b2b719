// SPDX-License-Identifier: MIT
#pragma once
// How far the values of changed float tensors moved: measured by `ckpt-inspect-values --diff A B`
// (libtorch, in its own process), which reads "INDEX_A INDEX_B" lines and answers with JSON. What
// to ask and how to read each answer; the comparison task (core/tasks/comparison.h) asks, for the
// CLI's `diff` and the app's Compare With alike.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

class JsonValue;
struct CheckpointDiff;

struct ValueDelta {
    std::uint64_t count = 0; // elements compared
    std::uint64_t differing = 0;
    double maxAbsolute = 0;
    double maxRelative = 0; // max |a - b| / max(|a|, |b|)
};

// One entry per CheckpointDiff::changed.
struct ValueDeltas {
    std::vector<std::optional<ValueDelta>> measured;
    std::vector<std::optional<std::string>> errors; // why the helper could not measure that one
};

// The changes worth asking about: float tensors whose bytes changed with the same dtype and shape
// (indices into diff.changed).
std::vector<std::size_t> changesToMeasure(const CheckpointDiff& diff);

// The helper's standard input for those changes: "INDEX_A INDEX_B\n" per change, each tensor by
// its number in its own checkpoint.
std::string valueHelperPairs(const CheckpointDiff& diff, const std::vector<std::size_t>& changes);

// The helper's answers, one per pair asked (in the order of `changes`), spread over diff.changed.
// core/tasks/valueshelper.h reads them from the helper's output.
ValueDeltas readValueDeltas(
    const std::vector<JsonValue>& answers, const std::vector<std::size_t>& changes, std::size_t changedCount);
// The same from a whole answer {"pairs": [...]}.
ValueDeltas readValueDeltas(
    const JsonValue& answer, const std::vector<std::size_t>& changes, std::size_t changedCount);

} // namespace ckpt
