// SPDX-License-Identifier: MIT
#pragma once

#include <string>

namespace ckpt {

struct Checkpoint;
struct QuantScan;
class JsonWriter;

// Each quantized weight with its scales (core/model/quantgroups.h), as `info` says them: one line
// for the weight (dtype, stored and logical shape, scheme), one indented line per scale (its role,
// dtype, shape, the layout inferred). Empty when the checkpoint holds no quantized weight.
std::string quantGroupsText(const Checkpoint& checkpoint, const QuantScan& scan);

// The same as the JSON member "quant_groups": [{weight, dtype, scheme, shape, logical_shape,
// packed_dim, scales: [{name, role, dtype, shape, layout, tiles, problem}]}], and
// "quant_orphan_scales": [names].
void writeQuantGroupsJson(JsonWriter& writer, const Checkpoint& checkpoint, const QuantScan& scan);

} // namespace ckpt
