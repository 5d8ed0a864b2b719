// SPDX-License-Identifier: MIT
#include "core/report/quantreport.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/quantgroups.h"

#include <string>
#include <string_view>

namespace ckpt {

namespace {

void appendScaleLine(std::string& out, const Checkpoint& checkpoint, const QuantScale& scale)
{
    const TensorEntry& tensor = checkpoint.tensors[scale.tensor];
    out += "    ";
    appendPrintableText(out, tensor.name);
    out += "  ";
    out += quantScaleRoleName(scale.role);
    out += ", ";
    out += std::string_view(tensor.dtype);
    out += ' ';
    appendIntegerList(out, tensor.shape);
    out += ": ";
    out += scale.layout;
    if (!scale.tiles)
        out += "  (does not tile the weight)";
    out += '\n';
}

} // namespace

// Appends into one buffer: a 160-shard FP8 folder has 68,712 groups and twice as many lines.
std::string quantGroupsText(const Checkpoint& checkpoint, const QuantScan& scan)
{
    if (scan.groups.empty() && scan.orphanScales.empty())
        return {};
    std::string out = "Quantized weights and their scales (" + std::to_string(scan.groups.size()) + "):\n";
    out.reserve(scan.groups.size() * 160 + scan.orphanScales.size() * 96);
    for (const QuantGroup& group : scan.groups) {
        const TensorEntry& weight = checkpoint.tensors[group.weight];
        const std::string_view dtype(weight.dtype);
        out += "  ";
        appendPrintableText(out, weight.name);
        out += "  ";
        out += group.scheme;
        out += ", ";
        out += dtype;
        out += ' ';
        appendIntegerList(out, weight.shape);
        if (group.valuesPerElement > 1) {
            out += " packed, ";
            appendIntegerList(out, group.logicalShape);
            out += " values (";
            out += std::to_string(group.valuesPerElement);
            out += " a ";
            out += dtype;
            out += " element, along dim ";
            out += std::to_string(group.packedDim);
            out += ')';
        }
        bool anyWeightScale = false;
        for (const QuantScale& scale : group.scales)
            anyWeightScale = anyWeightScale || scale.role == QuantScaleRole::Weight;
        out += anyWeightScale ? "\n" : "  (no scale)\n";
        for (const QuantScale& scale : group.scales)
            appendScaleLine(out, checkpoint, scale);
    }
    for (std::uint32_t t : scan.orphanScales) {
        const TensorEntry& tensor = checkpoint.tensors[t];
        out += "  ";
        appendPrintableText(out, tensor.name);
        out += "  orphan scale, ";
        out += std::string_view(tensor.dtype);
        out += ' ';
        appendIntegerList(out, tensor.shape);
        out += ": its weight is not in the file\n";
    }
    return out;
}

void writeQuantGroupsJson(JsonWriter& writer, const Checkpoint& checkpoint, const QuantScan& scan)
{
    auto shape = [&](const Dimensions& dims) {
        writer.beginArray();
        for (std::int64_t d : dims)
            writer.value(d);
        writer.endArray();
    };
    writer.key("quant_groups").beginArray();
    for (const QuantGroup& group : scan.groups) {
        const TensorEntry& weight = checkpoint.tensors[group.weight];
        writer.beginObject();
        writer.member("weight", weight.name);
        writer.member("dtype", std::string_view(weight.dtype));
        writer.member("scheme", group.scheme);
        writer.key("shape");
        shape(weight.shape);
        writer.key("logical_shape");
        shape(group.logicalShape);
        writer.member("values_per_element", std::uint64_t(group.valuesPerElement));
        writer.member("packed_dim", std::int64_t(group.packedDim));
        writer.key("scales").beginArray();
        for (const QuantScale& scale : group.scales) {
            const TensorEntry& tensor = checkpoint.tensors[scale.tensor];
            writer.beginObject();
            writer.member("name", tensor.name);
            writer.member("role", std::string_view(quantScaleRoleName(scale.role)));
            writer.member("dtype", std::string_view(tensor.dtype));
            writer.key("shape");
            shape(tensor.shape);
            writer.member("layout", scale.layout);
            writer.member("tiles", scale.tiles);
            if (!scale.problem.empty())
                writer.member("problem", scale.problem);
            writer.endObject();
        }
        writer.endArray();
        writer.endObject();
    }
    writer.endArray();
    writer.key("quant_orphan_scales").beginArray();
    for (std::uint32_t t : scan.orphanScales)
        writer.value(checkpoint.tensors[t].name);
    writer.endArray();
}

} // namespace ckpt
