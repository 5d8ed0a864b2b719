// SPDX-License-Identifier: MIT
#pragma once

// The value scan of a whole checkpoint, for the CLI's --values and the GUI's background job. No
// libtorch header here (style.md).
#include "tensorstatistics.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

// One tensor's outcome in a value scan.
struct TensorValues {
    std::uint32_t tensorIndex = 0;
    std::optional<TensorStatistics> statistics;
    std::string error; // why there are no statistics (set exactly when statistics is empty)
};

struct ValueScanResult {
    std::vector<TensorValues> tensors; // in the order scanned; only those finished when cancelled
    std::vector<std::uint32_t> nonFiniteTensors; // tensor indices holding NaN or ±Inf, ascending
    bool cancelled = false;
    std::uint64_t bytesScanned = 0; // bytes of tensor data read (views count what they cover)
    double seconds = 0; // wall time of the scan
};

// Scans the values of all tensors of a checkpoint (or the given subset), reporting progress in
// bytes of tensor data through `progress` (called often, from the calling thread; return false to
// cancel). Only reads the checkpoint, so it may run off the GUI thread while the GUI reads the same
// Checkpoint; concurrent scans of one checkpoint are fine too. On cancel the result holds the
// tensors finished so far and says cancelled.
ValueScanResult scanValues(const Checkpoint& checkpoint, const ValueProgress& progress = {},
    const std::optional<std::vector<std::uint32_t>>& tensorIndices = std::nullopt,
    const StatisticsOptions& options = {});

} // namespace ckpt
