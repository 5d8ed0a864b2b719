// SPDX-License-Identifier: MIT
#include "core/compare/valuedelta.h"

#include "core/compare/checkpointdiff.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"

namespace ckpt {

namespace {

bool isFloat(const std::string& dtype)
{
    return dtype == "float64" || dtype == "float32" || dtype == "float16" || dtype == "bfloat16";
}

} // namespace

std::vector<std::size_t> changesToMeasure(const CheckpointDiff& diff)
{
    std::vector<std::size_t> changes;
    for (std::size_t c = 0; c < diff.changed.size(); ++c) {
        const TensorChange& change = diff.changed[c];
        if (change.valueChangeComparable() && isFloat(change.a.checkpoint->tensors[change.a.tensor].dtype))
            changes.push_back(c);
    }
    return changes;
}

std::string valueHelperPairs(const CheckpointDiff& diff, const std::vector<std::size_t>& changes)
{
    std::string pairs;
    for (std::size_t c : changes)
        pairs += std::to_string(diff.changed[c].a.sideIndex) + " "
            + std::to_string(diff.changed[c].b.sideIndex) + "\n";
    return pairs;
}

ValueDeltas readValueDeltas(
    const JsonValue& answer, const std::vector<std::size_t>& changes, std::size_t changedCount)
{
    return readValueDeltas(answer.member("pairs").items(), changes, changedCount);
}

ValueDeltas readValueDeltas(
    const std::vector<JsonValue>& items, const std::vector<std::size_t>& changes, std::size_t changedCount)
{
    ValueDeltas deltas;
    deltas.measured.resize(changedCount);
    deltas.errors.resize(changedCount);
    for (std::size_t k = 0; k < changes.size() && k < items.size(); ++k) {
        if (changes[k] >= changedCount)
            continue;
        if (const JsonValue* error = items[k].find("error")) {
            deltas.errors[changes[k]] = error->toString();
            continue;
        }
        ValueDelta delta;
        delta.count = items[k].member("count").toUInt64().value_or(0);
        delta.differing = items[k].member("differing").toUInt64().value_or(0);
        delta.maxAbsolute = items[k].member("max_abs").toDouble();
        delta.maxRelative = items[k].member("max_rel").toDouble();
        deltas.measured[changes[k]] = delta;
    }
    return deltas;
}

} // namespace ckpt
