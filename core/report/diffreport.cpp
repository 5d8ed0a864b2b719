// SPDX-License-Identifier: MIT
#include "core/report/diffreport.h"

#include "core/base/textformat.h"
#include "core/compare/checkpointdiff.h"
#include "core/compare/valuedelta.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"

#include <cstdio>
#include <ostream>

namespace ckpt {

namespace {

std::string joinShape(const std::vector<std::int64_t>& values)
{
    std::string text = "[";
    for (std::size_t i = 0; i < values.size(); ++i)
        text += (i ? ", " : "") + std::to_string(values[i]);
    return text + "]";
}

const TensorEntry& entry(const DiffTensor& tensor)
{
    return tensor.checkpoint->tensors[tensor.tensor];
}

const std::optional<ValueDelta>* measured(const ValueDeltas& deltas, std::size_t change)
{
    return change < deltas.measured.size() ? &deltas.measured[change] : nullptr;
}

} // namespace

std::string diffCountsText(const CheckpointDiff& diff)
{
    char text[200];
    std::snprintf(text, sizeof text, "%zu removed, %zu added, %zu renamed, %zu changed, %llu unchanged",
        diff.removed.size(), diff.added.size(), diff.renamed.size(), diff.changed.size(),
        static_cast<unsigned long long>(diff.unchanged));
    return text;
}

std::string diffHashingText(const CheckpointDiff& diff)
{
    char text[120];
    std::snprintf(text, sizeof text, "%s hashed in %.2f s on %u threads",
        formatBytes(diff.bytesHashed).c_str(), diff.hashSeconds, diff.threads);
    return text;
}

void writeDiffJson(JsonWriter& writer, const std::string& pathA, const std::string& pathB,
    const CheckpointDiff& diff, const ValueDeltas& deltas, const std::string& valuesProblem)
{
    writer.beginObject();
    writer.member("a", pathA);
    writer.member("b", pathB);
    writer.member("identical", diff.identical());
    writer.member("added", diff.added);
    writer.member("removed", diff.removed);
    writer.key("renamed").beginArray();
    for (const RenamedTensor& renamed : diff.renamed)
        writer.beginObject().member("from", renamed.from).member("to", renamed.to).endObject();
    writer.endArray();
    writer.key("changed").beginArray();
    for (std::size_t c = 0; c < diff.changed.size(); ++c) {
        const TensorChange& change = diff.changed[c];
        const TensorEntry& x = entry(change.a);
        const TensorEntry& y = entry(change.b);
        writer.beginObject();
        writer.member("name", change.name);
        if (change.dtypeChanged)
            writer.key("dtype").beginArray().value(x.dtype).value(y.dtype).endArray();
        if (change.shapeChanged)
            writer.key("shape").beginArray().value(joinShape(x.shape)).value(joinShape(y.shape)).endArray();
        if (change.strideChanged)
            writer.key("stride")
                .beginArray()
                .value(joinShape(*x.stride))
                .value(joinShape(*y.stride))
                .endArray();
        if (change.deviceChanged)
            writer.key("device").beginArray().value(*x.device).value(*y.device).endArray();
        writer.member("value_changed", change.valueChanged);
        if (const auto* delta = measured(deltas, c); delta && *delta) {
            writer.member("differing", (*delta)->differing);
            writer.member("count", (*delta)->count);
            writer.member("max_abs", (*delta)->maxAbsolute);
            writer.member("max_rel", (*delta)->maxRelative);
        } else if (c < deltas.errors.size() && deltas.errors[c]) {
            writer.member("values_error", *deltas.errors[c]);
        }
        if (!change.valueNotCompared.empty())
            writer.member("value_not_compared", change.valueNotCompared);
        writer.endObject();
    }
    writer.endArray();
    writer.member("unchanged", diff.unchanged);
    writer.member("bytes_hashed", diff.bytesHashed);
    writer.member("hash_seconds", diff.hashSeconds);
    writer.member("threads", static_cast<std::uint64_t>(diff.threads));
    if (!valuesProblem.empty())
        writer.member("values_error", valuesProblem);
    writer.endObject();
}

void writeDiffText(std::ostream& out, const std::string& pathA, const std::string& pathB,
    const CheckpointDiff& diff, const ValueDeltas& deltas, const std::string& valuesProblem)
{
    out << "--- " << pathA << "\n+++ " << pathB << "\n";
    for (const std::string& name : diff.removed)
        out << "removed  " << name << "\n";
    for (const std::string& name : diff.added)
        out << "added    " << name << "\n";
    for (const RenamedTensor& renamed : diff.renamed)
        out << "renamed  " << renamed.from << " -> " << renamed.to << " (same bytes)\n";
    for (std::size_t c = 0; c < diff.changed.size(); ++c) {
        const TensorChange& change = diff.changed[c];
        const TensorEntry& x = entry(change.a);
        const TensorEntry& y = entry(change.b);
        out << "changed  " << change.name << ":";
        if (change.dtypeChanged)
            out << " dtype " << x.dtype << " -> " << y.dtype;
        if (change.shapeChanged)
            out << " shape " << joinShape(x.shape) << " -> " << joinShape(y.shape);
        if (change.strideChanged)
            out << " stride " << joinShape(*x.stride) << " -> " << joinShape(*y.stride);
        if (change.deviceChanged)
            out << " device " << *x.device << " -> " << *y.device;
        if (change.valueChanged) {
            out << " values";
            if (const auto* delta = measured(deltas, c); delta && *delta) {
                char text[160];
                std::snprintf(text, sizeof text, " (%llu of %llu differ, max abs %.6g, max rel %.6g)",
                    static_cast<unsigned long long>((*delta)->differing),
                    static_cast<unsigned long long>((*delta)->count), (*delta)->maxAbsolute,
                    (*delta)->maxRelative);
                out << text;
            }
        }
        out << "\n";
    }
    out << diffCountsText(diff) << "; " << diffHashingText(diff) << "\n";
    if (!valuesProblem.empty())
        out << "note: " << valuesProblem << "\n";
}

} // namespace ckpt
