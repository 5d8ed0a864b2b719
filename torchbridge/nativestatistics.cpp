// SPDX-License-Identifier: MIT
#include "nativestatistics.h"

#include "core/format/crc32.h"

#include <emmintrin.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

namespace ckpt {

namespace {

// Values decoded per block: small enough to stay in L1 while the block is walked a second time
// (squared deviations from the block's mean), large enough to amortise the merge.
constexpr std::uint64_t kBlock = 2048;
// Elements per thread per round. Slices have fixed boundaries, so the merge order, and with it
// every rounding, is the same whatever the number of threads.
constexpr std::uint64_t kSlice = std::uint64_t(1) << 22;
// Two doubles: one register of x86-64's baseline (SSE2); wider types are split into scalar code
// with spills there, measured five times slower.
using Vec = double __attribute__((vector_size(16)));
using Mask = long long __attribute__((vector_size(16)));

// mask ? a : b lane by lane, in bit operations: GCC turns some vector ?: into branches per lane.
inline Vec select(Mask mask, Vec a, Vec b)
{
    return Vec(((Mask)a & mask) | ((Mask)b & ~mask));
}
using Floats = float __attribute__((vector_size(16)));
using Ints = std::int32_t __attribute__((vector_size(16)));
inline Floats selectFloats(Ints mask, Floats a, Floats b)
{
    return Floats(((Ints)a & mask) | ((Ints)b & ~mask));
}

float floatFromBits(std::uint32_t bits)
{
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// IEEE binary16 to binary32, exact for every pattern (subnormals, infinities, NaN payloads).
float halfToFloat(std::uint16_t half)
{
    const std::uint32_t sign = std::uint32_t(half & 0x8000u) << 16;
    std::uint32_t bits = std::uint32_t(half & 0x7FFFu) << 13;
    const std::uint32_t exponent = bits & 0x0F800000u;
    bits += (127u - 15u) << 23;
    if (exponent == 0x0F800000u) { // infinity or NaN
        bits += (128u - 16u) << 23;
    } else if (exponent == 0) { // zero or subnormal: renormalise through a float subtraction
        bits += 1u << 23;
        const float value = floatFromBits(bits) - floatFromBits(113u << 23);
        std::uint32_t out;
        std::memcpy(&out, &value, sizeof out);
        return floatFromBits(out | sign);
    }
    return floatFromBits(bits | sign);
}

template<NativeFloat Type> struct Traits;
template<> struct Traits<NativeFloat::Float32> {
    using Value = float;
    static constexpr std::size_t size = 4;
    static float load(const std::uint8_t* p)
    {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    static Vec pair(const std::uint8_t* p)
    {
        // One movq and one cvtps2pd: GCC 12 turns a two-float vector's conversion into two
        // scalar cvtss2sd instead.
        return Vec(_mm_cvtps_pd(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p)))));
    }
};
template<> struct Traits<NativeFloat::Float64> {
    using Value = double;
    static constexpr std::size_t size = 8;
    static double load(const std::uint8_t* p)
    {
        double v;
        std::memcpy(&v, p, 8);
        return v;
    }
    static Vec pair(const std::uint8_t* p)
    {
        Vec v;
        std::memcpy(&v, p, 16);
        return v;
    }
};
template<> struct Traits<NativeFloat::Float16> {
    using Value = float;
    static constexpr std::size_t size = 2;
    static float load(const std::uint8_t* p)
    {
        std::uint16_t bits;
        std::memcpy(&bits, p, 2);
        return halfToFloat(bits);
    }
    static Vec pair(const std::uint8_t* p) { return Vec {double(load(p)), double(load(p + 2))}; }
};
template<> struct Traits<NativeFloat::BFloat16> {
    using Value = float;
    static constexpr std::size_t size = 2;
    static float load(const std::uint8_t* p)
    {
        std::uint16_t bits;
        std::memcpy(&bits, p, 2);
        return floatFromBits(std::uint32_t(bits) << 16);
    }
    static Vec pair(const std::uint8_t* p) { return Vec {double(load(p)), double(load(p + 2))}; }
};

// Values i and i + 1 of `count` at `bytes`, widened to double; past the end, NaN (which every
// kernel below leaves out).
template<NativeFloat Type> Vec pairAt(const std::uint8_t* bytes, std::size_t i, std::size_t count)
{
    using T = Traits<Type>;
    if (i + 1 < count)
        return T::pair(bytes + i * T::size);
    return Vec {double(T::load(bytes + i * T::size)), std::numeric_limits<double>::quiet_NaN()};
}

// Mean and sum of squared deviations merged block by block (Chan et al.).
void mergeMoments(NativeStatistics& into, double n, double mean, double m2)
{
    if (n == 0)
        return;
    const double before = double(into.finiteCount);
    const double total = before + n;
    const double delta = mean - into.mean;
    into.mean += delta * n / total;
    into.m2 += m2 + delta * delta * before * n / total;
}

void mergeStatistics(NativeStatistics& into, const NativeStatistics& part)
{
    into.nanCount += part.nanCount;
    into.positiveInfinityCount += part.positiveInfinityCount;
    into.negativeInfinityCount += part.negativeInfinityCount;
    into.zeroCount += part.zeroCount;
    if (part.finiteCount > 0) {
        into.min = into.finiteCount ? std::min(into.min, part.min) : part.min;
        into.max = into.finiteCount ? std::max(into.max, part.max) : part.max;
        mergeMoments(into, double(part.finiteCount), part.mean, part.m2);
        into.finiteCount += part.finiteCount;
    }
}

// Pass 1 over one block: counts, range and sum in lanes, then the sum of squared deviations from
// the block's mean. Its two sums are chains of dependent additions (each waits for the one
// before), which is what bounds the pass; the order of those additions is what fixes the result,
// so it is never changed. Two blocks' chains are independent, though: momentsOf walks two blocks
// side by side, each through exactly the operations it would get alone.
template<NativeFloat Type> struct BlockLanes {
    using T = Traits<Type>;
    static constexpr double inf = std::numeric_limits<double>::infinity();
    static constexpr float infF = std::numeric_limits<float>::infinity();
    const std::uint8_t* bytes;
    std::size_t n;
    // Branch-free lanes in GCC/Clang vector types (the auto-vectoriser leaves these masked
    // reductions scalar): x - x is 0 exactly when x is finite (NaN for NaN and ±Inf).
    Vec low = {inf, inf}, high = {-inf, -inf}, sum = {0, 0}, finite = {0, 0}, zeros = {0, 0};
    // float32, four at a time: counts and range need no widening (a float's min, max and
    // finiteness are those of its double), so they run in four float lanes; only the sum goes
    // through doubles, added pair by pair in the same order as countPair.
    Floats low4 = {infF, infF, infF, infF}, high4 = {-infF, -infF, -infF, -infF};
    Ints finite4 = {0, 0, 0, 0}, zeros4 = {0, 0, 0, 0};
    Vec m2 = {0, 0};
    double mean = 0;

    BlockLanes(const std::uint8_t* blockBytes, std::size_t count)
        : bytes(blockBytes)
        , n(count)
    { }

    [[gnu::always_inline]] void countPair(const Vec x)
    {
        const Vec one = {1, 1}, nothing = {0, 0}, infinity = {inf, inf};
        const Mask isFinite = (x - x) == nothing;
        finite += select(isFinite, one, nothing);
        zeros += select(x == nothing, one, nothing);
        sum += select(isFinite, x, nothing);
        // Non-finite values enter the range as the infinity that changes nothing; a plain
        // comparison of one mask is one minpd/maxpd (two masks and'ed became branches).
        const Vec forLow = select(isFinite, x, infinity), forHigh = select(isFinite, x, -infinity);
        low = forLow < low ? forLow : low;
        high = forHigh > high ? forHigh : high;
    }

    // Values i .. i + 3 of a float32 block.
    [[gnu::always_inline]] void countFour(std::size_t i)
    {
        const Floats zero4 = {0, 0, 0, 0}, infinity4 = {infF, infF, infF, infF};
        Floats x;
        std::memcpy(&x, bytes + i * 4, sizeof x);
        const Ints isFinite = (x - x) == zero4;
        finite4 -= isFinite; // true is -1
        zeros4 -= x == zero4;
        const Floats kept = selectFloats(isFinite, x, zero4);
        sum += __builtin_convertvector(__builtin_shufflevector(kept, kept, 0, 1), Vec);
        sum += __builtin_convertvector(__builtin_shufflevector(kept, kept, 2, 3), Vec);
        const Floats forLow = selectFloats(isFinite, x, infinity4);
        const Floats forHigh = selectFloats(isFinite, x, -infinity4);
        low4 = forLow < low4 ? forLow : low4;
        high4 = forHigh > high4 ? forHigh : high4;
    }

    std::size_t pairs() const { return n & ~std::size_t(1); }

    [[gnu::always_inline]] void countAt(std::size_t i)
    {
        if constexpr (Type == NativeFloat::Float32)
            countFour(i);
        else
            countPair(T::pair(bytes + i * T::size));
    }
    // countAt covers [0, stepped()) in steps of `step`; countRest the pairs and the odd value after.
    static constexpr std::size_t step = Type == NativeFloat::Float32 ? 4 : 2;
    std::size_t stepped() const { return Type == NativeFloat::Float32 ? n & ~std::size_t(3) : pairs(); }

    void countRest()
    {
        for (std::size_t i = stepped(); i < pairs(); i += 2)
            countPair(T::pair(bytes + i * T::size));
        if (pairs() < n)
            countPair(pairAt<Type>(bytes, pairs(), n)); // the odd last value and a NaN
    }

    // The counts and range from the lanes; the block's mean, for the deviations.
    NativeStatistics counts()
    {
        NativeStatistics block;
        double blockSum = 0, blockFinite = 0, blockZeros = 0;
        double blockLow = low[0], blockHigh = high[0];
        for (int j = 0; j < 2; ++j) {
            blockFinite += finite[j];
            blockZeros += zeros[j];
            blockSum += sum[j];
            blockLow = std::min(blockLow, low[j]);
            blockHigh = std::max(blockHigh, high[j]);
        }
        for (int j = 0; j < 4; ++j) {
            blockFinite += finite4[j];
            blockZeros += zeros4[j];
            blockLow = std::min(blockLow, double(low4[j]));
            blockHigh = std::max(blockHigh, double(high4[j]));
        }
        block.finiteCount = std::uint64_t(blockFinite);
        block.zeroCount = std::uint64_t(blockZeros);
        if (block.finiteCount < n) { // rare: say which kind each non-finite value is
            for (std::size_t k = 0; k < n; ++k) {
                const double x = double(T::load(bytes + k * T::size));
                if (std::isnan(x))
                    ++block.nanCount;
                else if (x == std::numeric_limits<double>::infinity())
                    ++block.positiveInfinityCount;
                else if (x == -std::numeric_limits<double>::infinity())
                    ++block.negativeInfinityCount;
            }
        }
        if (block.finiteCount > 0) {
            block.min = blockLow;
            block.max = blockHigh;
            mean = blockSum / blockFinite;
            block.mean = mean;
        }
        return block;
    }

    // (x - mean)^2 of the pair at i, when every value of the block is finite: nothing to mask.
    [[gnu::always_inline]] void deviatePair(std::size_t i)
    {
        const Vec center = {mean, mean};
        const Vec d = T::pair(bytes + i * T::size) - center;
        m2 += d * d;
    }

    // The deviations from `from` on, masking the non-finite values out.
    void deviateRest(std::size_t from)
    {
        const Vec center = {mean, mean}, nothing = {0, 0};
        auto deviate = [&](const Vec x) {
            const Vec d = select((x - x) == nothing, x - center, nothing);
            m2 += d * d;
        };
        for (std::size_t k = from; k < pairs(); k += 2)
            deviate(T::pair(bytes + k * T::size));
        if (pairs() < n)
            deviate(pairAt<Type>(bytes, pairs(), n));
    }

    // The whole deviation pass of a block alone.
    void deviations(const NativeStatistics& block)
    {
        std::size_t k = 0;
        if (block.finiteCount == n)
            for (; k < pairs(); k += 2)
                deviatePair(k);
        deviateRest(k);
    }
};

template<NativeFloat Type>
void momentsOf(
    const std::uint8_t* data, std::uint64_t begin, std::uint64_t end, bool withCrc, NativeStatistics& out)
{
    using T = Traits<Type>;
    using Lanes = BlockLanes<Type>;
    std::uint32_t crc = 0;
    // Every dtype here widens exactly to double; working in doubles throughout keeps the lanes
    // one type, which is what lets the compiler turn them into vector instructions. Pairs are
    // widened straight from the mapping (one cvtps2pd for float32): no copy to a buffer first.
    for (std::uint64_t blockStart = begin; blockStart < end;) {
        if (end - blockStart >= 2 * kBlock) { // two whole blocks side by side
            const std::uint8_t* bytesA = data + blockStart * T::size;
            const std::uint8_t* bytesB = bytesA + kBlock * T::size;
            if (withCrc) { // first, so the blocks come into the cache for the lanes below
                crc = crc32Update(crc, bytesA, kBlock * T::size);
                crc = crc32Update(crc, bytesB, kBlock * T::size);
            }
            Lanes a(bytesA, kBlock), b(bytesB, kBlock);
            for (std::size_t i = 0; i < a.stepped(); i += Lanes::step)
                a.countAt(i);
            for (std::size_t i = 0; i < b.stepped(); i += Lanes::step)
                b.countAt(i);
            a.countRest();
            b.countRest();
            NativeStatistics blockA = a.counts(), blockB = b.counts();
            if (blockA.finiteCount == kBlock && blockB.finiteCount == kBlock) {
                for (std::size_t k = 0; k < a.pairs(); k += 2) {
                    a.deviatePair(k);
                    b.deviatePair(k);
                }
                a.deviateRest(a.pairs());
                b.deviateRest(b.pairs());
            } else {
                if (blockA.finiteCount > 0)
                    a.deviations(blockA);
                if (blockB.finiteCount > 0)
                    b.deviations(blockB);
            }
            blockA.m2 = blockA.finiteCount > 0 ? a.m2[0] + a.m2[1] : 0;
            blockB.m2 = blockB.finiteCount > 0 ? b.m2[0] + b.m2[1] : 0;
            mergeStatistics(out, blockA);
            mergeStatistics(out, blockB);
            blockStart += 2 * kBlock;
            continue;
        }
        const std::size_t n = std::size_t(std::min(kBlock, end - blockStart));
        const std::uint8_t* bytes = data + blockStart * T::size;
        if (withCrc)
            crc = crc32Update(crc, bytes, n * T::size);
        Lanes lanes(bytes, n);
        for (std::size_t i = 0; i < lanes.stepped(); i += Lanes::step)
            lanes.countAt(i);
        lanes.countRest();
        NativeStatistics block = lanes.counts();
        if (block.finiteCount > 0) {
            lanes.deviations(block);
            block.m2 = lanes.m2[0] + lanes.m2[1];
        }
        mergeStatistics(out, block);
        blockStart += n;
    }
    out.crc = crc;
}

// The bin of every value of [begin, end), by torch's own arithmetic: torch.histc bins by linear
// interpolation without the local search torch.histogram adds (HistogramKernel.cpp,
// LINEAR_INTERPOLATION): pos = int64((x - edges[0]) * bins / (edges[bins] - edges[0])), pos ==
// bins moved into the last bin, values outside [edges[0], edges[bins]] skipped. The same double
// operations in the same order give the same bin for every value, on an edge or not; a multiply by
// the reciprocal would not (it rounds differently next to an edge).
//
// Branch-free in vector lanes: a value to skip (NaN, ±Inf, outside) gets the index `bins`, a slot
// past the real ones. The counting then goes to four interleaved sub-histograms in turn, so
// consecutive values falling in the same bin do not wait on each other's store.
//
// The division bounds this pass (divpd: two doubles every few cycles), so it runs as wide as the
// processor allows: `Lanes` is two doubles in SSE2 (x86-64's baseline) or four in AVX2, chosen at
// run time. Each value goes through the same IEEE operations whatever the width (no contraction:
// there is no addition after a multiply), so the counts are the same.
struct Sse2Lanes {
    static constexpr std::size_t width = 2;
    using Vec = double __attribute__((vector_size(16)));
    using Index = std::int32_t __attribute__((vector_size(8)));
    using Floats = float __attribute__((vector_size(8)));
};
struct Avx2Lanes {
    static constexpr std::size_t width = 4;
    using Vec = double __attribute__((vector_size(32)));
    using Index = std::int32_t __attribute__((vector_size(16)));
    using Floats = float __attribute__((vector_size(16)));
};

// Values i .. i + width - 1 of `count` at `bytes`, widened to double; past the end, NaN (which
// the binning skips). Results through references: a function returning an AVX vector would change
// the calling convention where the caller is built for the baseline.
template<NativeFloat Type, class Lanes>
[[gnu::always_inline]] inline void lanesAt(
    const std::uint8_t* bytes, std::size_t i, std::size_t count, typename Lanes::Vec& out)
{
    using T = Traits<Type>;
    if (i + Lanes::width <= count) {
        if constexpr (Type == NativeFloat::Float32) {
            typename Lanes::Floats floats;
            std::memcpy(&floats, bytes + i * 4, sizeof floats);
            out = __builtin_convertvector(floats, typename Lanes::Vec);
        } else if constexpr (Type == NativeFloat::Float64) {
            std::memcpy(&out, bytes + i * 8, sizeof out);
        } else {
            for (std::size_t k = 0; k < Lanes::width; ++k)
                out[k] = double(T::load(bytes + (i + k) * T::size));
        }
        return;
    }
    for (std::size_t k = 0; k < Lanes::width; ++k)
        out[k] = i + k < count ? double(T::load(bytes + (i + k) * T::size))
                               : std::numeric_limits<double>::quiet_NaN();
}

template<NativeFloat Type, class Lanes>
[[gnu::always_inline]] inline void histogramLanes(const std::uint8_t* data, std::uint64_t begin,
    std::uint64_t end, double lowest, double highest, std::size_t bins, std::uint32_t* lanes)
{
    using T = Traits<Type>;
    using V = typename Lanes::Vec;
    using Index = typename Lanes::Index;
    constexpr std::size_t width = Lanes::width;
    const std::size_t stride = bins + 1;
    // Vector op scalar broadcasts the scalar to every lane.
    const V zero = {};
    const V low = zero + lowest, high = zero + highest;
    const V span = high - low, binCount = zero + double(bins);
    const V last = zero + double(bins - 1), skip = binCount;
    std::int32_t index[kBlock + 8]; // + 8: the last block padded to whole groups of four
    for (std::uint64_t blockStart = begin; blockStart < end; blockStart += kBlock) {
        const std::size_t n = std::size_t(std::min(kBlock, end - blockStart));
        const std::uint8_t* bytes = data + blockStart * T::size;
        const std::size_t padded = (n + width - 1) / width * width;
        auto binAt = [&](std::size_t i, std::size_t valid) __attribute__((always_inline))
        {
            V x;
            lanesAt<Type, Lanes>(bytes, i, valid, x);
            const auto inside = (x >= low) & (x <= high);
            V position = (x - low) * binCount / span;
            position = position >= last ? last : position;
            // Only a range wider than the largest double (x - low overflowing) gives NaN here.
            position = position >= zero ? position : zero;
            position = inside ? position : skip;
            const Index bin = __builtin_convertvector(position, Index); // one cvttpd2dq
            std::memcpy(index + i, &bin, sizeof bin);
        };
        // Whole groups first, where lanesAt's test of the end folds away; then the last one.
        const std::size_t whole = n / width * width;
        for (std::size_t i = 0; i < whole; i += width)
            binAt(i, whole);
        if (whole < padded)
            binAt(whole, n);
        std::size_t grouped = (padded + 3) & ~std::size_t(3);
        for (std::size_t i = padded; i < grouped; ++i)
            index[i] = std::int32_t(bins);
        for (std::size_t i = 0; i < grouped; i += 4) {
            ++lanes[std::size_t(index[i])];
            ++lanes[stride + std::size_t(index[i + 1])];
            ++lanes[2 * stride + std::size_t(index[i + 2])];
            ++lanes[3 * stride + std::size_t(index[i + 3])];
        }
    }
}

template<NativeFloat Type>
void histogramSse2(const std::uint8_t* data, std::uint64_t begin, std::uint64_t end, double lowest,
    double highest, std::size_t bins, std::uint32_t* lanes)
{
    histogramLanes<Type, Sse2Lanes>(data, begin, end, lowest, highest, bins, lanes);
}

template<NativeFloat Type>
__attribute__((target("avx2"))) void histogramAvx2(const std::uint8_t* data, std::uint64_t begin,
    std::uint64_t end, double lowest, double highest, std::size_t bins, std::uint32_t* lanes)
{
    histogramLanes<Type, Avx2Lanes>(data, begin, end, lowest, highest, bins, lanes);
}

bool hasAvx2()
{
    static const bool avx2 = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return avx2;
}

template<NativeFloat Type>
void histogramOf(const std::uint8_t* data, std::uint64_t begin, std::uint64_t end,
    const std::vector<double>& edges, bool widest, std::vector<std::uint64_t>& counts)
{
    const std::size_t bins = edges.size() - 1;
    const std::size_t stride = bins + 1;
    // 32-bit counters: a call covers at most one slice (kSlice values).
    std::vector<std::uint32_t> lanes(4 * stride, 0);
    if (widest && hasAvx2())
        histogramAvx2<Type>(data, begin, end, edges.front(), edges.back(), bins, lanes.data());
    else
        histogramSse2<Type>(data, begin, end, edges.front(), edges.back(), bins, lanes.data());
    for (std::size_t b = 0; b < bins; ++b)
        counts[b]
            += std::uint64_t(lanes[b]) + lanes[stride + b] + lanes[2 * stride + b] + lanes[3 * stride + b];
}

// Runs `work(begin, end, slot)` over [0, count) in rounds of `threads` slices, merging nothing
// itself; calls progress between rounds on this thread.
template<class Work>
bool inRounds(std::uint64_t count, const NativeScanOptions& options, std::uint64_t& done, Work&& work)
{
    const unsigned threads = std::max(1u, options.threads);
    for (std::uint64_t round = 0; round < count; round += kSlice * threads) {
        std::vector<std::thread> workers;
        unsigned slots = 0;
        for (unsigned t = 0; t < threads; ++t) {
            const std::uint64_t begin = round + kSlice * t;
            if (begin >= count)
                break;
            const std::uint64_t end = std::min(count, begin + kSlice);
            if (t == 0)
                continue; // the calling thread takes the first slice below
            workers.emplace_back([&work, begin, end, t] { work(begin, end, t); });
            slots = t;
        }
        work(round, std::min(count, round + kSlice), 0u);
        for (std::thread& worker : workers)
            worker.join();
        const std::uint64_t roundEnd = std::min(count, round + kSlice * (slots + 1));
        done += roundEnd - round;
        if (options.progress && !options.progress(done, options.totalForProgress))
            return false;
    }
    return true;
}

} // namespace

bool nativeMoments(NativeFloat type, const std::uint8_t* data, std::uint64_t count,
    const NativeScanOptions& options, std::uint64_t& done, NativeStatistics& out)
{
    const unsigned threads = std::max(1u, options.threads);
    std::vector<NativeStatistics> parts(threads);
    const std::uint64_t elementSize = type == NativeFloat::Float64 ? 8 : type == NativeFloat::Float32 ? 4 : 2;
    out.crc = 0;
    // Each round's slices are merged in slice order after the round: the same order, and the
    // same result, for any number of threads.
    auto each = [&](auto kernel) {
        const unsigned n = threads;
        for (std::uint64_t round = 0; round < count; round += kSlice * n) {
            std::vector<std::thread> workers;
            unsigned used = 0;
            for (unsigned t = 0; t < n && round + kSlice * t < count; ++t)
                used = t + 1;
            for (unsigned t = 1; t < used; ++t) {
                const std::uint64_t begin = round + kSlice * t, end = std::min(count, begin + kSlice);
                workers.emplace_back([&, begin, end, t] {
                    parts[t] = NativeStatistics {};
                    kernel(data, begin, end, options.crc, parts[t]);
                });
            }
            parts[0] = NativeStatistics {};
            kernel(data, round, std::min(count, round + kSlice), options.crc, parts[0]);
            for (std::thread& worker : workers)
                worker.join();
            for (unsigned t = 0; t < used; ++t) {
                mergeStatistics(out, parts[t]);
                if (options.crc) {
                    const std::uint64_t sliceEnd = std::min(count, round + kSlice * (t + 1));
                    const std::uint64_t sliceBytes = (sliceEnd - (round + kSlice * t)) * elementSize;
                    out.crc = crc32Combine(out.crc, parts[t].crc, sliceBytes);
                }
            }
            done += std::min(count, round + kSlice * used) - round;
            if (options.progress && !options.progress(done, options.totalForProgress))
                return false;
        }
        return true;
    };
    switch (type) {
    case NativeFloat::Float32:
        return each(momentsOf<NativeFloat::Float32>);
    case NativeFloat::Float64:
        return each(momentsOf<NativeFloat::Float64>);
    case NativeFloat::Float16:
        return each(momentsOf<NativeFloat::Float16>);
    case NativeFloat::BFloat16:
        return each(momentsOf<NativeFloat::BFloat16>);
    }
    return false;
}

bool nativeHistogram(NativeFloat type, const std::uint8_t* data, std::uint64_t count,
    const std::vector<double>& edges, const NativeScanOptions& options, std::uint64_t& done,
    std::vector<std::uint64_t>& counts)
{
    counts.assign(edges.size() > 1 ? edges.size() - 1 : 0, 0);
    if (counts.empty())
        return true;
    const unsigned threads = std::max(1u, options.threads);
    std::vector<std::vector<std::uint64_t>> parts(threads, std::vector<std::uint64_t>(counts.size()));
    auto kernel = [&](std::uint64_t begin, std::uint64_t end, unsigned slot) {
        switch (type) {
        case NativeFloat::Float32:
            return histogramOf<NativeFloat::Float32>(
                data, begin, end, edges, options.widestVectors, parts[slot]);
        case NativeFloat::Float64:
            return histogramOf<NativeFloat::Float64>(
                data, begin, end, edges, options.widestVectors, parts[slot]);
        case NativeFloat::Float16:
            return histogramOf<NativeFloat::Float16>(
                data, begin, end, edges, options.widestVectors, parts[slot]);
        case NativeFloat::BFloat16:
            return histogramOf<NativeFloat::BFloat16>(
                data, begin, end, edges, options.widestVectors, parts[slot]);
        }
    };
    const bool finished = inRounds(count, options, done, kernel);
    for (const auto& part : parts)
        for (std::size_t b = 0; b < counts.size(); ++b)
            counts[b] += part[b];
    return finished;
}

void adviseSequential(const std::uint8_t* data, std::uint64_t length)
{
    static const auto page = std::uint64_t(sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(data) & ~(page - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(data) + length;
    // Hints only: a failure changes nothing but speed.
    madvise(reinterpret_cast<void*>(start), end - start, MADV_SEQUENTIAL);
    madvise(reinterpret_cast<void*>(start), end - start, MADV_WILLNEED);
}

} // namespace ckpt
