// SPDX-License-Identifier: MIT
#pragma once

// No libtorch header here: ckpt_ui and the CLI include this file (style.md, "libtorch lives in one
// folder and one target").
#include "core/base/expected.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// What the statistics of a tensor are computed over, since not every dtype has plain real values.
enum class ValueDomain {
    Real, // floating and integer dtypes (float8, uint16/32/64 decoded exactly, then as torch's .double())
    Boolean, // bool: false = 0, true = 1
    Magnitude, // complex dtypes: |z| = hypot(real, imag) in float64; NaN if a part is NaN, +Inf if one is
               // infinite
    IntegerRepresentation, // quantized dtypes: torch's int_repr(), the stored integers, not dequantized
};
const char* valueDomainName(ValueDomain domain); // "values", "booleans", "magnitudes |z|", "int_repr"

// Counts of the finite values in equal-width bins, as torch.histc(finite, bins, min=low, max=high)
// counts them: values equal to `high` fall in the last bin. Over [min, max] of the finite values;
// when min == max the range is widened to [min - 1, max + 1] as torch.histc does.
struct ValueHistogram {
    double low = 0, high = 0;
    std::vector<std::uint64_t> counts; // empty when the tensor holds no finite value
    std::vector<double> edges() const; // counts.size() + 1 bin edges from low to high
};

// What a researcher asks of a tensor that produces NaNs: how many values are not finite, and the
// range, spread and distribution of the rest.
struct TensorStatistics {
    ValueDomain domain = ValueDomain::Real;
    std::uint64_t count = 0;
    std::uint64_t nanCount = 0;
    std::uint64_t positiveInfinityCount = 0;
    std::uint64_t negativeInfinityCount = 0;
    std::uint64_t zeroCount = 0;
    std::uint64_t finiteCount = 0;
    double min = 0, max = 0, mean = 0, std = 0; // over the finite values; std is torch's (unbiased)
    ValueHistogram histogram;
    bool copied = false; // the values had to be decoded (float8, uint16+, sub-byte quantized) in chunks
    // CRC-32 (zip's) of the bytes the tensor covers, when StatisticsOptions::crc asked for it and
    // the native kernels read them as one run (contiguous float tensors); otherwise none.
    std::optional<std::uint32_t> bytesCrc;
    bool hasNonFinite() const { return nanCount + positiveInfinityCount + negativeInfinityCount > 0; }
};

struct StatisticsOptions {
    std::uint32_t histogramBins = 64; // 0: no histogram (one pass over the bytes instead of two)
    // Elements converted to float64 at a time; bounds the memory a tensor's scan takes (8 bytes
    // each, plus libtorch's temporaries) whatever the tensor's size.
    std::uint64_t chunkElements = std::uint64_t(1) << 16;
    // Threads for the native kernels (contiguous float32/float64/float16/bfloat16); 0: every core
    // this process may run on.
    unsigned threads = 0;
    // The native histogram pass in the widest vectors the processor has (AVX2 where present);
    // false: in x86-64's baseline SSE2, for tests that compare the two (the counts are the same).
    bool widestVectors = true;
    // Also the CRC-32 of the tensor's bytes, computed in the same read (TensorStatistics::bytesCrc):
    // `check --values` checks storage records' CRCs with it instead of reading them again.
    bool crc = false;
    // Always take libtorch's kernels (widened to float64 per chunk), never the native ones: for
    // benchmarks that compare the two engines.
    bool libtorchOnly = false;
};

// Called between chunks with the bytes of tensor data scanned so far and in all; returning false
// cancels.
using ValueProgress = std::function<bool(std::uint64_t done, std::uint64_t total)>;

// Computes the statistics of one strided tensor of an opened checkpoint. Contiguous float32,
// float64, float16 and bfloat16 tensors (nearly every weight) go through the native kernels of
// nativestatistics.h: their native dtype, one read of the mapped bytes per pass, on
// `options.threads` threads; measured several times faster than libtorch's kernels below
// (bench/run-values-benchmark.sh), and without loading libtorch. Everything else goes through
// libtorch, in the module libtorchkernels.h loads on the first such tensor (a failure to load it
// is that tensor's error). Dtypes
// libtorch 1.13 knows are read in place from the memory-mapped bytes (torch::from_blob +
// as_strided, no copy of the storage; each chunk is widened to float64); float8 (e4m3fn, e5m2,
// e4m3fnuz, e5m2fnuz, e8m0fnu), uint16/32/64 and quint4x2/quint2x4, which it lacks, are decoded
// exactly in chunks. Fails with a message when the tensor's bytes are not in the file (truncated,
// compressed, storage-less), its view leaves its storage, its dtype has no numeric values
// (bits*, float4_e2m1fn_x2), or it was cancelled.
//
// Not shown: the conj/neg bits of a saved view (the core does not record them; magnitudes are
// unaffected) and quantization parameters (statistics are of int_repr).
Expected<TensorStatistics> computeTensorStatistics(const Checkpoint& checkpoint, std::uint32_t tensorIndex,
    const StatisticsOptions& options = {}, const ValueProgress& progress = {});

} // namespace ckpt
