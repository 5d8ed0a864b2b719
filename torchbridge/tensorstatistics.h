#pragma once

#include "expected.h"

#include <cstdint>

namespace ckpt {

struct Checkpoint;

// What a researcher asks of a tensor that produces NaNs: how many values are not finite, and the
// range and spread of the rest.
struct TensorStatistics {
    std::uint64_t count = 0;
    std::uint64_t nanCount = 0;
    std::uint64_t positiveInfinityCount = 0;
    std::uint64_t negativeInfinityCount = 0;
    std::uint64_t zeroCount = 0;
    double min = 0, max = 0, mean = 0, std = 0; // over the finite values; std is torch's (unbiased)
};

// Computes the statistics of one strided tensor of an opened checkpoint through libtorch, reading
// the memory-mapped bytes in place (no copy of the storage). Fails with a message when the
// tensor's bytes are not in the file (truncated, compressed, storage-less) or its dtype has no
// arithmetic in libtorch.
Expected<TensorStatistics> computeTensorStatistics(const Checkpoint& checkpoint, std::uint32_t tensorIndex);

} // namespace ckpt
