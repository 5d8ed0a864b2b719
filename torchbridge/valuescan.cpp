// SPDX-License-Identifier: MIT
#include "valuescan.h"

#include "core/model/checkpoint.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace ckpt {

ValueScanResult scanValues(const Checkpoint& checkpoint, const ValueProgress& progress,
    const std::optional<std::vector<std::uint32_t>>& tensorIndices, const StatisticsOptions& options)
{
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::uint32_t> indices;
    if (tensorIndices) {
        indices = *tensorIndices;
    } else {
        indices.resize(checkpoint.tensors.size());
        std::iota(indices.begin(), indices.end(), 0u);
    }
    auto bytesOf = [&](std::uint32_t index) {
        return index < checkpoint.tensors.size() ? checkpoint.tensors[index].nbytes() : 0;
    };
    std::uint64_t total = 0;
    for (std::uint32_t index : indices)
        total += bytesOf(index);

    ValueScanResult result;
    result.tensors.reserve(indices.size());
    bool cancelled = false;
    for (std::uint32_t index : indices) {
        if (progress && !progress(result.bytesScanned, total)) {
            cancelled = true;
            break;
        }
        const std::uint64_t bytes = bytesOf(index);
        // Progress inside a tensor, so a single large tensor still moves the bar and can be cancelled.
        const std::uint64_t before = result.bytesScanned;
        ValueProgress inner;
        if (progress) {
            inner = [&](std::uint64_t done, std::uint64_t of) {
                const double fraction = of ? double(done) / double(of) : 1.0;
                if (!progress(before + std::uint64_t(fraction * double(bytes)), total))
                    cancelled = true;
                return !cancelled;
            };
        }
        auto statistics = computeTensorStatistics(checkpoint, index, options, inner);
        if (cancelled)
            break;
        TensorValues values;
        values.tensorIndex = index;
        if (statistics.hasValue()) {
            if (statistics->hasNonFinite())
                result.nonFiniteTensors.push_back(index);
            values.statistics = std::move(*statistics);
        } else {
            values.error = statistics.error().message;
        }
        result.tensors.push_back(std::move(values));
        result.bytesScanned += bytes;
    }
    if (!cancelled && progress)
        progress(result.bytesScanned, total);
    result.cancelled = cancelled;
    std::sort(result.nonFiniteTensors.begin(), result.nonFiniteTensors.end());
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

} // namespace ckpt
