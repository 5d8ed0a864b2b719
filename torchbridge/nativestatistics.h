// SPDX-License-Identifier: MIT
#pragma once

// The value statistics of a contiguous floating-point tensor computed over its native dtype, on
// several threads, reading the mapped bytes once per pass in order. libtorch's kernels (the other
// path, in tensorstatistics.cpp) widen every chunk to float64 first and walk it once per
// statistic (isfinite, isnan, isposinf, isneginf, eq(0), aminmax, var_mean, histc): about ten
// passes over eight bytes per value. Here a pass reads each value once and keeps every count in
// registers. No libtorch header: this is plain C++ the bridge chooses per dtype.
#include <cstdint>
#include <functional>
#include <vector>

namespace ckpt {

enum class NativeFloat { Float32, Float64, Float16, BFloat16 };

struct NativeStatistics {
    std::uint64_t nanCount = 0, positiveInfinityCount = 0, negativeInfinityCount = 0;
    std::uint64_t zeroCount = 0, finiteCount = 0;
    double min = 0, max = 0, mean = 0, m2 = 0; // over the finite values; m2: sum of squared deviations
    std::uint32_t crc = 0; // CRC-32 (zip's) of the bytes read, when NativeScanOptions::crc asks for it
};

struct NativeScanOptions {
    unsigned threads = 1;
    // Called from the calling thread between slices with elements done and in all (both passes
    // counted); returning false cancels.
    std::function<bool(std::uint64_t done, std::uint64_t total)> progress;
    std::uint64_t totalForProgress = 0; // elements of work in all (count x passes)
    // The histogram pass in the widest vectors this processor has (AVX2 where present); false: in
    // x86-64's baseline SSE2 only, for tests that compare the two (the counts are the same).
    bool widestVectors = true;
    // Pass 1 also computes the CRC-32 of the bytes it reads, block by block while each block is in
    // the cache: `check --values` so checks a storage record's CRC without reading it again.
    bool crc = false;
};

// Pass 1: counts, range and moments of `count` values at `data`. Returns false when cancelled.
bool nativeMoments(NativeFloat type, const std::uint8_t* data, std::uint64_t count,
    const NativeScanOptions& options, std::uint64_t& done, NativeStatistics& out);

// Pass 2: how many finite values fall in each of the bins between `edges.front()` and
// `edges.back()`, by torch.histc's own rule on float64 values: bin int64((x - front) * bins /
// (back - front)), x == back in the last bin, values outside not counted. `edges` are torch's
// (linspace); only their ends take part, as in histc. Returns false when cancelled.
bool nativeHistogram(NativeFloat type, const std::uint8_t* data, std::uint64_t count,
    const std::vector<double>& edges, const NativeScanOptions& options, std::uint64_t& done,
    std::vector<std::uint64_t>& counts);

// Hints the kernel that `length` bytes at `data` (a read-only mapping) will be read once, in order.
void adviseSequential(const std::uint8_t* data, std::uint64_t length);

} // namespace ckpt
