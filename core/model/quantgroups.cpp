// SPDX-License-Identifier: MIT
#include "core/model/quantgroups.h"

#include "core/base/flatindex.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt {

namespace {

using Shape = std::vector<std::int64_t>;

// One naming convention of a scale-like tensor: the last name component, matched whole ("scales")
// or as the suffix of a weight's own component ("weight" + "_scale_inv", "w1" + "_scale_inv"), and
// the weight components it belongs to, in the order they are tried.
struct ScaleConvention {
    std::string_view component; // whole last component, or the suffix when `suffix`
    bool suffix = false;
    QuantScaleRole role = QuantScaleRole::Weight;
    std::array<std::string_view, 3> weights {}; // for whole components: the sibling weight names
    bool orphanWhenAlone = true; // a tensor of this name with no weight is a finding
};

// Whole components first (they name their weight), then the stem suffixes, longest first so that
// "_scale_inv" is not taken for "_scale".
constexpr std::array kConventions {
    ScaleConvention {"weight_scale_inv", false, QuantScaleRole::Weight, {"weight"}},
    ScaleConvention {"weight_scale_2", false, QuantScaleRole::Global, {"weight"}},
    ScaleConvention {"weight_global_scale", false, QuantScaleRole::Global, {"weight_packed", "weight"}},
    ScaleConvention {"weight_scale", false, QuantScaleRole::Weight, {"weight_packed", "weight", "qweight"}},
    ScaleConvention {"weight_zero_point", false, QuantScaleRole::ZeroPoint, {"weight_packed", "weight"}},
    ScaleConvention {
        "input_scale", false, QuantScaleRole::Activation, {"weight", "weight_packed", "qweight"}, false},
    ScaleConvention {
        "input_global_scale", false, QuantScaleRole::Activation, {"weight_packed", "weight"}, false},
    ScaleConvention {"scales", false, QuantScaleRole::Weight, {"qweight", "weight"}},
    ScaleConvention {"qzeros", false, QuantScaleRole::ZeroPoint, {"qweight", "weight"}},
    ScaleConvention {"zero_points", false, QuantScaleRole::ZeroPoint, {"qweight", "weight_packed", "weight"}},
    ScaleConvention {"zeros", false, QuantScaleRole::ZeroPoint, {"qweight"}, false},
    ScaleConvention {"biases", false, QuantScaleRole::ZeroPoint, {"weight"}, false}, // MLX, with scales
    ScaleConvention {"g_idx", false, QuantScaleRole::Index, {"qweight", "weight_packed"}, false},
    ScaleConvention {"_scale_inv", true, QuantScaleRole::Weight, {}, false}, // DeepSeek experts: w1_scale_inv
    ScaleConvention {"_scales", true, QuantScaleRole::Weight, {}, false}, // gpt-oss: X_blocks + X_scales
    ScaleConvention {"_scale", true, QuantScaleRole::Weight, {}, false}, // X + X_scale
};

bool isFloat8(std::string_view dtype)
{
    return dtype.starts_with("float8_") && dtype != "float8_e8m0fnu";
}

bool isPackedName(std::string_view component)
{
    return component == "qweight" || component == "weight_packed" || component.ends_with("_blocks");
}

bool isWeightName(std::string_view component)
{
    // "w1", "w13": stacked experts' weights (DeepSeek, Mixtral); "gate_up_proj": gpt-oss's.
    const bool numbered = component.size() >= 2 && component[0] == 'w'
        && std::all_of(component.begin() + 1, component.end(), [](char c) { return c >= '0' && c <= '9'; });
    return component == "weight" || numbered || isPackedName(component) || component.ends_with("_proj")
        || component.ends_with("_weight");
}

std::string_view lastComponent(std::string_view name)
{
    const auto dot = name.rfind('.');
    return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

std::string_view prefixOf(std::string_view name)
{
    const auto dot = name.rfind('.');
    return dot == std::string_view::npos ? std::string_view() : name.substr(0, dot + 1); // with the dot
}

// Shapes come from a file's header: sizes saturate rather than overflow.
constexpr std::int64_t kHuge = INT64_MAX;

std::int64_t times(std::int64_t a, std::int64_t b)
{
    std::int64_t out = 0;
    return __builtin_mul_overflow(a, b, &out) ? kHuge : out;
}

// Elements of a shape; -1 when a dimension is negative, kHuge past int64.
std::int64_t product(const Shape& shape)
{
    std::int64_t n = 1;
    for (std::int64_t d : shape) {
        if (d < 0)
            return -1;
        n = times(n, d);
    }
    return n;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b)
{
    return b <= 0 || a < 0 ? 0 : a / b + (a % b != 0 ? 1 : 0);
}

// The block sizes along one dimension of `size` that give `count` scales: powers of two (block
// and group sizes are, in every producer this knows), the whole dimension, or one per element.
std::vector<std::int64_t> blockCandidates(std::int64_t size, std::int64_t count)
{
    std::vector<std::int64_t> out;
    if (count <= 0 || size <= 0)
        return out;
    if (count == size)
        out.push_back(1);
    // ceil(size / 2^k) by shifts, not two divisions a candidate (48 a dimension, for every scale
    // of a DeepSeek-V3 folder's 68,000 groups), and no further once it falls below `count`: it
    // only falls as the blocks grow.
    for (int k = 1; k <= 24; ++k) {
        const std::int64_t c = std::int64_t(1) << k;
        const std::int64_t blocks = (size >> k) + ((size & (c - 1)) != 0 ? 1 : 0);
        if (blocks < count)
            break;
        if (blocks == count)
            out.push_back(c);
    }
    if (count == 1 && std::find(out.begin(), out.end(), size) == out.end())
        out.push_back(size);
    return out;
}

struct Tiling {
    bool tiles = false;
    std::string layout;
};

// Whether a scale of shape `scale` tiles a weight of logical shape `weight` (its leading dimensions,
// stacked experts, equal the weight's; the last two are blocks): the layout it gives.
Tiling tile(const Shape& weight, Shape scale)
{
    if (product(scale) == 1)
        return {true, "per-tensor"};
    if (weight.empty())
        return {};
    // [out] or [.., out] and [.., out, 1]: one scale per output channel.
    if (scale.size() + 1 == weight.size() && std::equal(scale.begin(), scale.end(), weight.begin()))
        return {true, "per-channel"};
    if (weight.size() == 1 && scale.size() == 1)
        scale.insert(scale.begin(), 1);
    if (weight.size() == 1)
        return {};
    Shape w = weight;
    if (w.size() == 1)
        w.insert(w.begin(), 1);
    if (scale.size() != w.size())
        return {};
    for (std::size_t d = 0; d + 2 < w.size(); ++d)
        if (scale[d] != w[d] && scale[d] != 1)
            return {};
    const std::size_t r = w.size() - 2;
    const std::size_t c = w.size() - 1;
    const auto rows = blockCandidates(w[r], scale[r]);
    const auto cols = blockCandidates(w[c], scale[c]);
    if (rows.empty() || cols.empty())
        return {};
    if (rows.front() == 1 && scale[c] == 1)
        return {true, "per-channel"};
    if (rows.front() == 1)
        return {true, "group " + std::to_string(cols.front())};
    if (cols.front() == 1)
        return {true, "group " + std::to_string(rows.front()) + " along dim " + std::to_string(r)};
    // Blocks: square in every producer (DeepSeek-V3 and compressed-tensors 128x128); a grid that
    // only tiles with oblong blocks is a transposed or mis-shaped one.
    for (std::int64_t b : rows)
        if (std::find(cols.begin(), cols.end(), b) != cols.end())
            return {true, "block " + std::to_string(b) + "x" + std::to_string(b)};
    return {};
}

// What a weight-scale grid of the weight's shape would be, for a message: blocks of the size one of
// the dimensions gives (128 when neither does).
Shape expectedGrid(const Shape& weight, const Shape& scale, std::int64_t& block)
{
    block = 128;
    if (weight.size() < 2 || scale.size() != weight.size())
        return {};
    const std::size_t r = weight.size() - 2;
    const std::size_t c = weight.size() - 1;
    if (auto rows = blockCandidates(weight[r], scale[r]); !rows.empty() && rows.front() > 1)
        block = rows.front();
    else if (auto cols = blockCandidates(weight[c], scale[c]); !cols.empty() && cols.front() > 1)
        block = cols.front();
    Shape out(weight.begin(), weight.end() - 2);
    out.push_back(ceilDiv(weight[r], block));
    out.push_back(ceilDiv(weight[c], block));
    return out;
}

Shape toShape(const Dimensions& dims)
{
    return Shape(dims.begin(), dims.end());
}

std::string shapeText(const Shape& shape)
{
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

struct Candidate {
    std::uint32_t tensor = 0;
    const ScaleConvention* convention = nullptr;
    std::optional<std::uint32_t> weight;
};

// How a weight's stored elements stand for values: the scheme and the packing.
void describeWeight(const Checkpoint& checkpoint, QuantGroup& group)
{
    const TensorEntry& weight = checkpoint.tensors[group.weight];
    const std::string_view dtype = std::string_view(weight.dtype);
    const std::string_view component = lastComponent(weight.name);
    Shape logical = toShape(weight.shape);
    auto scaleDtype = [&](QuantScaleRole role) -> std::string_view {
        for (const QuantScale& scale : group.scales)
            if (scale.role == role)
                return std::string_view(checkpoint.tensors[scale.tensor].dtype);
        return {};
    };
    const std::string_view weightScale = scaleDtype(QuantScaleRole::Weight);
    if (isFloat8(dtype)) {
        group.scheme = "fp8";
    } else if (dtype == "float4_e2m1fn_x2") {
        group.scheme = weightScale == "float8_e8m0fnu" ? "mxfp4" : "nvfp4";
        group.valuesPerElement = 2;
    } else if ((dtype == "uint8" || dtype == "int8") && component.ends_with("_blocks")
        && logical.size() >= 2) {
        // gpt-oss MXFP4: [.., out, groups, 16] bytes stand for [.., out, groups * 32] values.
        group.scheme = "mxfp4";
        group.valuesPerElement = 2;
        const std::int64_t bytes = logical.back();
        logical.pop_back();
        logical.back() = times(times(logical.back(), bytes), 2);
    } else if (dtype == "uint8" && (isFloat8(weightScale) || weightScale == "float8_e8m0fnu")) {
        group.scheme = weightScale == "float8_e8m0fnu" ? "mxfp4" : "nvfp4";
        group.valuesPerElement = 2;
    } else if (dtype == "int32" || dtype == "uint32") {
        group.scheme = "int4";
        group.valuesPerElement = 8;
    } else {
        group.scheme = dtype == "uint8" || dtype == "int8" ? "int8" : std::string(dtype);
    }
    if (group.valuesPerElement > 1 && !logical.empty() && !component.ends_with("_blocks")) {
        // Packed along the last dimension (NVFP4, compressed-tensors, AWQ, MLX), or along the first
        // for GPTQ's qweight [in / 8, out]: whichever its weight scale tiles.
        std::size_t dim = logical.size() - 1;
        if (component == "qweight" && logical.size() == 2) {
            Shape first = logical;
            first[0] = times(first[0], group.valuesPerElement);
            for (const QuantScale& scale : group.scales)
                if (scale.role == QuantScaleRole::Weight
                    && tile(first, toShape(checkpoint.tensors[scale.tensor].shape)).tiles)
                    dim = 0;
        }
        logical[dim] = times(logical[dim], group.valuesPerElement);
        group.packedDim = std::int32_t(dim);
    } else if (component.ends_with("_blocks")) {
        group.packedDim = std::int32_t(logical.size() - 1);
    }
    group.logicalShape = Dimensions(logical);
}

// tile() of the last few (weight, scale) shape pairs: a model's groups repeat a handful of shapes
// (a DeepSeek-V3 folder: 45,808 groups, a few pairs), and tile() builds vectors and text each time
// (issue 28: a twentieth of `info` on a 160-shard folder).
class TileMemo {
public:
    const Tiling& operator()(const Shape& weight, const Shape& scale)
    {
        for (const Entry& entry : m_entries)
            if (entry.used && entry.weight == weight && entry.scale == scale)
                return entry.tiling;
        Entry& slot = m_entries[m_next];
        m_next = (m_next + 1) % m_entries.size();
        slot.used = true;
        slot.weight = weight;
        slot.scale = scale;
        slot.tiling = tile(weight, scale);
        return slot.tiling;
    }

private:
    struct Entry {
        bool used = false;
        Shape weight;
        Shape scale;
        Tiling tiling;
    };
    std::array<Entry, 8> m_entries;
    std::size_t m_next = 0;
};

// The layout of each scale of the group against its weight's logical shape.
void judgeScales(const Checkpoint& checkpoint, QuantGroup& group, TileMemo& memo)
{
    const Shape weight = toShape(group.logicalShape);
    const TensorEntry& weightTensor = checkpoint.tensors[group.weight];
    for (QuantScale& scale : group.scales) {
        const TensorEntry& tensor = checkpoint.tensors[scale.tensor];
        Shape shape = toShape(tensor.shape);
        if (scale.role == QuantScaleRole::Index) {
            scale.layout = "index";
            continue;
        }
        if (scale.role == QuantScaleRole::ZeroPoint && group.valuesPerElement > 1
            && (std::string_view(tensor.dtype) == "int32" || std::string_view(tensor.dtype) == "uint32")
            && !shape.empty()) {
            // Packed like the weight: GPTQ's qzeros [groups, out / 8] along its last dimension,
            // compressed-tensors' weight_zero_point [out / 8, groups] along its first.
            // The one that equals the weight scale's grid, else the one that tiles.
            Shape last = shape;
            last.back() = times(last.back(), 8);
            Shape first = shape;
            first.front() = times(first.front(), 8);
            Shape grid;
            for (const QuantScale& other : group.scales)
                if (other.role == QuantScaleRole::Weight)
                    grid = toShape(checkpoint.tensors[other.tensor].shape);
            if (first == grid || (last != grid && !tile(weight, last).tiles))
                shape = first;
            else
                shape = last;
        }
        Tiling tiling = memo(weight, shape);
        // Activation scales stand for the input, not the weight: per tensor, or one per token or
        // channel of an input the file does not hold; only their presence is said.
        if (scale.role == QuantScaleRole::Activation) {
            scale.layout = product(shape) == 1 ? "per-tensor" : shapeText(shape);
            continue;
        }
        // A second level is one number; NVFP4's and a group scheme's first level is by groups.
        if (tiling.tiles && scale.role == QuantScaleRole::Global && tiling.layout != "per-tensor")
            tiling = {};
        if (tiling.tiles && scale.role == QuantScaleRole::Weight && group.scheme == "nvfp4"
            && tiling.layout != "group 16" && tiling.layout != "per-tensor")
            tiling = {false, "nvfp4"};
        if (tiling.tiles && scale.role == QuantScaleRole::Weight && group.scheme == "mxfp4"
            && tiling.layout != "group 32")
            tiling = {false, "mxfp4"};
        if (tiling.tiles) {
            scale.tiles = true;
            scale.layout = tiling.layout;
            continue;
        }
        scale.tiles = false;
        const std::string head = "scale '" + tensor.name + "' " + shapeText(toShape(tensor.shape)) + " ("
            + std::string(std::string_view(tensor.dtype)) + ") does not tile '" + weightTensor.name + "' "
            + shapeText(toShape(weightTensor.shape)) + " ("
            + std::string(std::string_view(weightTensor.dtype))
            + (weight != toShape(weightTensor.shape) ? ", " + shapeText(weight) + " values" : std::string())
            + ")";
        Shape swapped = shape;
        if (swapped.size() >= 2)
            std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
        if (swapped != shape && tile(weight, swapped).tiles && tiling.layout.empty()) {
            scale.layout = "transposed";
            scale.problem = head + ": its last two dimensions are swapped (" + shapeText(swapped)
                + " would tile it as " + tile(weight, swapped).layout
                + "); a converter transposed the scale but not the weight, or the weight but not the scale";
        } else if (tiling.layout == "nvfp4" || tiling.layout == "mxfp4") {
            const std::int64_t groupSize = tiling.layout == "nvfp4" ? 16 : 32;
            Shape expected = weight;
            expected.back() = ceilDiv(expected.back(), groupSize);
            scale.layout = "mismatch";
            scale.problem = head + ": " + tiling.layout + " scales one group of " + std::to_string(groupSize)
                + " values, which needs " + shapeText(expected);
        } else {
            scale.layout = "mismatch";
            scale.problem = head;
            if (scale.role == QuantScaleRole::Global) {
                scale.problem += ": a second-level scale is one number";
            } else if (std::int64_t block = 0; !expectedGrid(weight, shape, block).empty()) {
                const Shape expected = expectedGrid(weight, shape, block);
                scale.problem += ": the block count is wrong (blocks of " + std::to_string(block) + "x"
                    + std::to_string(block) + " need " + shapeText(expected) + ")";
            } else {
                scale.problem
                    += ": neither one scale, one per output channel, nor a grid of blocks or groups";
            }
        }
    }
}

} // namespace

const char* quantScaleRoleName(QuantScaleRole role)
{
    switch (role) {
    case QuantScaleRole::Weight:
        return "scale";
    case QuantScaleRole::Global:
        return "global scale";
    case QuantScaleRole::Activation:
        return "input scale";
    case QuantScaleRole::ZeroPoint:
        return "zero point";
    case QuantScaleRole::Index:
        return "group index";
    }
    return "scale";
}

bool QuantGroup::hasWeightScale() const
{
    return std::any_of(scales.begin(), scales.end(),
        [](const QuantScale& scale) { return scale.role == QuantScaleRole::Weight && scale.tiles; });
}

std::string quantShapeText(const Dimensions& shape)
{
    return shapeText(toShape(shape));
}

QuantScan findQuantGroups(const Checkpoint& checkpoint)
{
    QuantScan scan;
    const auto& tensors = checkpoint.tensors;
    scan.tensors = tensors.data();
    scan.tensorCount = tensors.size();
    scan.groupOf.assign(tensors.size(), -1);
    // Tensor index by name (the first of a name), built at the first scale-like name: most
    // checkpoints have none, and at a million tensors the index cost as much as the rest of the
    // scan (the app's open ran this twice: the reader's findings and the tree's texts). A flat
    // table of indices, no node or string per name (a 160-shard folder looks up 92,000 names).
    FlatIndex byName;
    bool indexed = false;
    const std::hash<std::string_view> hashName;
    const auto findByName = [&](std::string_view name) -> std::optional<std::uint32_t> {
        if (!indexed) {
            indexed = true;
            byName.reserve(tensors.size());
            for (std::uint32_t t = 0; t < tensors.size(); ++t) {
                const std::string_view tensorName(tensors[t].name);
                if (!tensorName.empty())
                    byName.findOrInsert(hashName(tensorName), t, [&](std::uint32_t other) {
                        return std::string_view(tensors[other].name) == tensorName;
                    });
            }
        }
        return byName.find(
            hashName(name), [&](std::uint32_t t) { return std::string_view(tensors[t].name) == name; });
    };

    // 1. Scale-like names and the weight each names.
    std::vector<Candidate> candidates;
    std::string sought; // the weight's name being looked up, one buffer for all
    for (std::uint32_t t = 0; t < tensors.size(); ++t) {
        const std::string_view name = tensors[t].name;
        const std::string_view component = lastComponent(name);
        const std::string_view prefix = prefixOf(name);
        for (const ScaleConvention& convention : kConventions) {
            Candidate candidate {t, &convention, std::nullopt};
            if (!convention.suffix) {
                if (component != convention.component)
                    continue;
                for (std::string_view weight : convention.weights) {
                    if (weight.empty())
                        break;
                    sought.assign(prefix).append(weight);
                    if (const auto found = findByName(sought)) {
                        candidate.weight = *found;
                        break;
                    }
                }
            } else {
                if (!component.ends_with(convention.component)
                    || component.size() == convention.component.size())
                    continue;
                const std::string_view stem
                    = component.substr(0, component.size() - convention.component.size());
                // gpt-oss: X_scales with X_blocks; the others: X_scale_inv, X_scale with X.
                sought.assign(prefix).append(stem);
                if (convention.component == "_scales")
                    sought.append("_blocks");
                const auto found = findByName(sought);
                if (!found)
                    break; // k_scale, v_scale, output_scale: an activation's, no weight of that name
                const std::string_view dtype(tensors[*found].dtype);
                const bool quantized = isFloat8(dtype) || dtype == "float4_e2m1fn_x2" || dtype == "uint8"
                    || dtype == "int8" || dtype == "int32" || dtype == "uint32";
                if (!quantized)
                    break;
                candidate.weight = *found;
            }
            candidates.push_back(candidate);
            break;
        }
    }

    // 2. One group per weight that a scale names, or whose dtype or name says it is quantized.
    std::vector<std::int32_t> groupOfWeight(tensors.size(), -1); // before the sort below
    auto groupFor = [&](std::uint32_t weight) -> QuantGroup& {
        if (groupOfWeight[weight] < 0) {
            groupOfWeight[weight] = std::int32_t(scan.groups.size());
            scan.groups.emplace_back();
            scan.groups.back().weight = weight;
        }
        return scan.groups[std::size_t(groupOfWeight[weight])];
    };
    std::vector<bool> isScale(tensors.size(), false);
    for (const Candidate& candidate : candidates)
        isScale[candidate.tensor] = true;
    for (std::uint32_t t = 0; t < tensors.size(); ++t) {
        if (isScale[t])
            continue;
        const TensorEntry& tensor = tensors[t];
        const std::string_view dtype = std::string_view(tensor.dtype);
        const std::string_view component = lastComponent(tensor.name);
        const bool lowPrecision = isFloat8(dtype) || dtype == "float4_e2m1fn_x2";
        if ((lowPrecision && tensor.shape.size() >= 2 && isWeightName(component))
            || (isPackedName(component) && tensor.shape.size() >= 2))
            groupFor(t);
    }
    // A module that holds a quantized tensor under a name no convention knows ("blocks") may be
    // what a scale beside it scales: such a scale is not said to be an orphan.
    // Built only when a scale has no weight: a tensor index per module prefix, flat.
    FlatIndex quantizedModules;
    bool modulesIndexed = false;
    auto quantizedSibling = [&](std::uint32_t scale) {
        if (!modulesIndexed) {
            modulesIndexed = true;
            for (std::uint32_t t = 0; t < tensors.size(); ++t) {
                const std::string_view dtype(tensors[t].dtype);
                if (!isScale[t]
                    && (isFloat8(dtype) || dtype == "float4_e2m1fn_x2" || dtype == "uint8"
                        || dtype == "int32")) {
                    const std::string_view prefix = prefixOf(tensors[t].name);
                    quantizedModules.findOrInsert(hashName(prefix), t,
                        [&](std::uint32_t other) { return prefixOf(tensors[other].name) == prefix; });
                }
            }
        }
        const std::string_view prefix = prefixOf(tensors[scale].name);
        return quantizedModules
            .find(hashName(prefix),
                [&](std::uint32_t other) { return prefixOf(tensors[other].name) == prefix; })
            .has_value();
    };
    // Weight scales first: they make a uint8 or int32 `weight` a quantized one, which the zero
    // points, group indices and input scales then join.
    std::stable_partition(candidates.begin(), candidates.end(), [](const Candidate& candidate) {
        return candidate.convention->role == QuantScaleRole::Weight
            || candidate.convention->role == QuantScaleRole::Global;
    });
    for (const Candidate& candidate : candidates) {
        if (!candidate.weight || isScale[*candidate.weight]) {
            if (candidate.convention->orphanWhenAlone && !quantizedSibling(candidate.tensor))
                scan.orphanScales.push_back(candidate.tensor);
            continue;
        }
        const bool known = groupOfWeight[*candidate.weight] >= 0;
        // A plain weight named by an MLX "biases" or a g_idx alone is no quantized weight.
        if (!known
            && (candidate.convention->role == QuantScaleRole::ZeroPoint
                || candidate.convention->role == QuantScaleRole::Index
                || candidate.convention->role == QuantScaleRole::Activation))
            continue;
        groupFor(*candidate.weight)
            .scales.push_back({candidate.tensor, candidate.convention->role, true, {}, {}});
    }
    std::sort(scan.groups.begin(), scan.groups.end(),
        [](const QuantGroup& a, const QuantGroup& b) { return a.weight < b.weight; });
    TileMemo tileMemo;
    for (std::uint32_t g = 0; g < scan.groups.size(); ++g) {
        QuantGroup& group = scan.groups[g];
        std::sort(group.scales.begin(), group.scales.end(),
            [](const QuantScale& a, const QuantScale& b) { return a.tensor < b.tensor; });
        describeWeight(checkpoint, group);
        judgeScales(checkpoint, group, tileMemo);
        scan.groupOf[group.weight] = std::int32_t(g);
        for (const QuantScale& scale : group.scales)
            scan.groupOf[scale.tensor] = std::int32_t(g);
    }
    return scan;
}

std::shared_ptr<const QuantScan> quantScanOf(const Checkpoint& checkpoint)
{
    if (checkpoint.quantScan && checkpoint.quantScan->tensors == checkpoint.tensors.data()
        && checkpoint.quantScan->tensorCount == checkpoint.tensors.size())
        return checkpoint.quantScan;
    return std::make_shared<const QuantScan>(findQuantGroups(checkpoint));
}

void addQuantScaleFindings(Checkpoint& checkpoint)
{
    auto stored = std::make_shared<const QuantScan>(findQuantGroups(checkpoint));
    checkpoint.quantScan = stored;
    const QuantScan& scan = *stored;
    for (const QuantGroup& group : scan.groups) {
        const TensorEntry& weight = checkpoint.tensors[group.weight];
        for (const QuantScale& scale : group.scales)
            if (!scale.tiles) {
                checkpoint.addFinding(Severity::Warning, FindingCode::QuantScaleMismatch, scale.problem);
                checkpoint.findings.back().tensors = {group.weight, scale.tensor};
            }
        const bool anyWeightScale = std::any_of(group.scales.begin(), group.scales.end(),
            [](const QuantScale& scale) { return scale.role == QuantScaleRole::Weight; });
        if (!anyWeightScale)
            checkpoint.addFinding(Severity::Warning, FindingCode::QuantScaleMissing,
                "quantized weight '" + weight.name + "' " + quantShapeText(weight.shape) + " ("
                    + std::string(std::string_view(weight.dtype)) + ", " + group.scheme
                    + ") has no scale: no weight_scale, weight_scale_inv or scales beside it, so its values "
                      "cannot be dequantized; a converter dropped it, or it lies in a file not opened");
        if (!anyWeightScale)
            checkpoint.findings.back().tensors = {group.weight};
    }
    for (std::uint32_t t : scan.orphanScales) {
        const TensorEntry& tensor = checkpoint.tensors[t];
        checkpoint.addFinding(Severity::Warning, FindingCode::QuantScaleOrphan,
            "scale '" + tensor.name + "' " + quantShapeText(tensor.shape) + " ("
                + std::string(std::string_view(tensor.dtype))
                + ") belongs to no weight: the quantized weight it scales is not in the file");
        checkpoint.findings.back().tensors = {t};
    }
}

} // namespace ckpt
