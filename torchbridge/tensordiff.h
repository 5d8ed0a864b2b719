// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"

#include <cstdint>

namespace ckpt {

struct Checkpoint;

// How far two tensors of the same shape are apart, computed by libtorch in float64 over the
// core's mapped bytes: max |a - b|, and max |a - b| / max(|a|, |b|) over the elements where that
// is not 0/0. Positions where both are NaN count as equal; where one is, as differing (and are
// left out of the maxima).
struct ValueDifference {
    std::uint64_t count = 0; // elements compared
    std::uint64_t differing = 0; // elements not equal
    double maxAbsolute = 0;
    double maxRelative = 0;
};

// Real dtypes torch computes with (float64/32/16, bfloat16, integers, bool); others fail.
Expected<ValueDifference> compareTensorValues(
    const Checkpoint& a, std::uint32_t tensorA, const Checkpoint& b, std::uint32_t tensorB);

} // namespace ckpt
