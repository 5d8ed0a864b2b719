// SPDX-License-Identifier: MIT
#include "core/report/quantreport.h"

#include "core/base/escaping.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/quantgroups.h"

namespace ckpt {

namespace {

std::string scaleLine(const Checkpoint& checkpoint, const QuantScale& scale)
{
    const TensorEntry& tensor = checkpoint.tensors[scale.tensor];
    std::string line = "    " + printableText(tensor.name) + "  " + quantScaleRoleName(scale.role) + ", "
        + std::string(std::string_view(tensor.dtype)) + " " + quantShapeText(tensor.shape) + ": "
        + scale.layout;
    if (!scale.tiles)
        line += "  (does not tile the weight)";
    return line + "\n";
}

} // namespace

std::string quantGroupsText(const Checkpoint& checkpoint, const QuantScan& scan)
{
    if (scan.groups.empty() && scan.orphanScales.empty())
        return {};
    std::string out = "Quantized weights and their scales (" + std::to_string(scan.groups.size()) + "):\n";
    for (const QuantGroup& group : scan.groups) {
        const TensorEntry& weight = checkpoint.tensors[group.weight];
        out += "  " + printableText(weight.name) + "  " + group.scheme + ", "
            + std::string(std::string_view(weight.dtype)) + " " + quantShapeText(weight.shape);
        if (group.valuesPerElement > 1)
            out += " packed, " + quantShapeText(group.logicalShape) + " values ("
                + std::to_string(group.valuesPerElement) + " a " + std::string(std::string_view(weight.dtype))
                + " element, along dim " + std::to_string(group.packedDim) + ")";
        bool anyWeightScale = false;
        for (const QuantScale& scale : group.scales)
            anyWeightScale = anyWeightScale || scale.role == QuantScaleRole::Weight;
        out += anyWeightScale ? "\n" : "  (no scale)\n";
        for (const QuantScale& scale : group.scales)
            out += scaleLine(checkpoint, scale);
    }
    for (std::uint32_t t : scan.orphanScales) {
        const TensorEntry& tensor = checkpoint.tensors[t];
        out += "  " + printableText(tensor.name) + "  orphan scale, "
            + std::string(std::string_view(tensor.dtype)) + " " + quantShapeText(tensor.shape)
            + ": its weight is not in the file\n";
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
