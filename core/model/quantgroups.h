// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/checkpoint.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ckpt {

// Quantized weights and the tensors that give them meaning (docs/quantization.md): each weight of a
// float8, float4 or packed integer checkpoint grouped with its scales, zero points and group index
// across the producers' naming conventions (DeepSeek-V3's `weight_scale_inv`, compressed-tensors'
// and vLLM's `weight_scale`/`input_scale`, NVFP4's `weight_scale` + `weight_scale_2` or
// `weight_global_scale`, GPTQ/AWQ's `scales`/`qzeros`/`g_idx`, MLX's `scales`/`biases`, gpt-oss's
// `_blocks`/`_scales`), with the scale layout inferred from the shapes alone.

enum class QuantScaleRole : std::uint8_t {
    Weight, // dequantizes the weight: weight * scale (weight_scale, weight_scale_inv, scales)
    Global, // a second, per-tensor level above the weight scale (NVFP4 weight_scale_2, weight_global_scale)
    Activation, // an input's scale, kept beside the weight (input_scale, input_global_scale)
    ZeroPoint, // subtracted before scaling (qzeros, zero_points, weight_zero_point, MLX biases)
    Index, // which group each input channel belongs to (g_idx)
};
const char* quantScaleRoleName(QuantScaleRole role); // "scale", "global scale", "input scale", ...

struct QuantScale {
    std::uint32_t tensor = 0; // index into Checkpoint::tensors
    QuantScaleRole role = QuantScaleRole::Weight;
    bool tiles = true; // its shape tiles the weight's logical shape
    // "per-tensor", "per-channel", "block 128x128", "group 16", "group 32 along dim 0", "index";
    // when it does not tile: why ("transposed", "mismatch").
    std::string layout;
    std::string problem; // when it does not tile: a sentence naming the shapes and what would tile
};

struct QuantGroup {
    std::uint32_t weight = 0; // index into Checkpoint::tensors
    std::string scheme; // "fp8", "nvfp4", "mxfp4", "int4", "int8"
    Dimensions logicalShape; // the values the weight stands for (packed 4-bit: unpacked)
    std::uint32_t valuesPerElement = 1; // 4-bit values in one stored element (2 a byte, 8 an int32)
    std::int32_t packedDim = -1; // the dimension the values are packed along, -1 when not packed
    std::vector<QuantScale> scales;
    bool hasWeightScale() const;
};

struct QuantScan {
    std::vector<QuantGroup> groups; // in the order of the weights in Checkpoint::tensors
    std::vector<std::uint32_t> orphanScales; // scale-named tensors whose weight is absent
    // Tensor index -> its group (weights and their scales alike); -1 when in none.
    std::vector<std::int32_t> groupOf;
    // The tensors scanned (Checkpoint::tensors' data and size then): quantScanOf() reuses a stored
    // scan only while the checkpoint still holds that very array.
    const TensorEntry* tensors = nullptr;
    std::size_t tensorCount = 0;
};

// Groups every quantized weight of the checkpoint with its scales. Reads names, dtypes and shapes
// only, never tensor bytes.
QuantScan findQuantGroups(const Checkpoint& checkpoint);

// The scan's findings: quant-scale-missing, quant-scale-mismatch, quant-scale-orphan. Keeps the
// scan in Checkpoint::quantScan for the report, the tree and the writers (quantScanOf).
void addQuantScaleFindings(Checkpoint& checkpoint);

// The checkpoint's scan: the one its reader kept (addQuantScaleFindings) while it still describes
// these tensors (tensors added or replaced: scans again), else one made now. Never null.
std::shared_ptr<const QuantScan> quantScanOf(const Checkpoint& checkpoint);

// "[256, 384]" as the reports write shapes.
std::string quantShapeText(const Dimensions& shape);

} // namespace ckpt
