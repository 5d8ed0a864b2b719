// SPDX-License-Identifier: MIT
// The libtorch half of the value statistics (libtorchkernels.h): every dtype and view the native
// kernels do not read, through libtorch's kernels over the mapped bytes. Built into the module
// libckpt_torchkernels.so, which the value helper loads only when a tensor needs it.
#include "libtorchkernels.h"
#include "minifloat.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

namespace ckpt {

namespace {

ReadError failure(std::string message)
{
    return ReadError {std::move(message), std::nullopt, {}};
}

// How the bytes of a dtype become float64 values for libtorch.
enum class Decoding {
    Native, // a libtorch type viewed in place, widened per chunk
    ComplexParts, // real and imaginary parts viewed in place as the part type; magnitude per chunk
    Float8Table, // bytes viewed in place, looked up in a 256-entry table per chunk
    Unsigned16, // viewed as int16, reinterpreted per chunk
    Unsigned32,
    Unsigned64,
    SubByte, // quint4x2 / quint2x4: values packed from the low bits up
};

struct DTypePlan {
    Decoding decoding = Decoding::Native;
    c10::ScalarType viewType = c10::kByte; // what the storage bytes are viewed as
    ValueDomain domain = ValueDomain::Real;
    bool mayBeNonFinite = false;
    Float8Format float8 = Float8Format::E4M3FN;
    int bitsPerValue = 8; // SubByte only
};

std::optional<DTypePlan> planFor(const std::string& name)
{
    using D = Decoding;
    using V = ValueDomain;
    static const std::map<std::string, DTypePlan> plans {
        {"float32", {D::Native, c10::kFloat, V::Real, true}},
        {"float64", {D::Native, c10::kDouble, V::Real, true}},
        {"float16", {D::Native, c10::kHalf, V::Real, true}},
        {"bfloat16", {D::Native, c10::kBFloat16, V::Real, true}},
        {"int64", {D::Native, c10::kLong, V::Real, false}},
        {"int32", {D::Native, c10::kInt, V::Real, false}},
        {"int16", {D::Native, c10::kShort, V::Real, false}},
        {"int8", {D::Native, c10::kChar, V::Real, false}},
        {"uint8", {D::Native, c10::kByte, V::Real, false}},
        {"bool", {D::Native, c10::kBool, V::Boolean, false}},
        {"complex128", {D::ComplexParts, c10::kDouble, V::Magnitude, true}},
        {"complex64", {D::ComplexParts, c10::kFloat, V::Magnitude, true}},
        {"complex32", {D::ComplexParts, c10::kHalf, V::Magnitude, true}},
        {"bcomplex32", {D::ComplexParts, c10::kBFloat16, V::Magnitude, true}},
        {"qint8", {D::Native, c10::kChar, V::IntegerRepresentation, false}},
        {"quint8", {D::Native, c10::kByte, V::IntegerRepresentation, false}},
        {"qint32", {D::Native, c10::kInt, V::IntegerRepresentation, false}},
        {"quint4x2", {D::SubByte, c10::kByte, V::IntegerRepresentation, false, Float8Format::E4M3FN, 4}},
        {"quint2x4", {D::SubByte, c10::kByte, V::IntegerRepresentation, false, Float8Format::E4M3FN, 2}},
        {"uint16", {D::Unsigned16, c10::kShort, V::Real, false}},
        {"uint32", {D::Unsigned32, c10::kInt, V::Real, false}},
        {"uint64", {D::Unsigned64, c10::kLong, V::Real, false}},
    };
    if (auto it = plans.find(name); it != plans.end())
        return it->second;
    if (auto format = float8FormatByName(name)) {
        DTypePlan plan {D::Float8Table, c10::kByte, V::Real, true};
        plan.float8 = *format;
        return plan;
    }
    return std::nullopt;
}

// The float64 value of every bit pattern, as a libtorch tensor to index.
at::Tensor float8Table(Float8Format format)
{
    static const std::array<at::Tensor, 5> tables = [] {
        std::array<at::Tensor, 5> result;
        for (int f = 0; f < 5; ++f) {
            result[std::size_t(f)] = at::empty({256}, at::TensorOptions().dtype(at::kDouble));
            auto* values = result[std::size_t(f)].data_ptr<double>();
            for (int bits = 0; bits < 256; ++bits)
                values[bits] = decodeFloat8(Float8Format(f), std::uint8_t(bits));
        }
        return result;
    }();
    return tables[std::size_t(format)];
}

// A piece of the tensor's index space: the leading indices fixed by `selects`, then rows
// [start, start + length) of the next dimension (all of the remaining ones).
struct ChunkSlice {
    std::vector<std::int64_t> selects;
    std::int64_t start = 0, length = 1;
};

at::Tensor sliceOf(at::Tensor tensor, const ChunkSlice& slice)
{
    for (std::int64_t index : slice.selects)
        tensor = tensor.select(0, index);
    if (tensor.dim() > 0)
        tensor = tensor.narrow(0, slice.start, slice.length);
    return tensor;
}

// Splits the index space of `shape` into slices of at most `chunkElements` elements (or one row of
// the innermost dimension's single element), in row-major order; stops when `visit` returns false.
template<class Visit>
bool forEachChunk(const std::vector<std::int64_t>& shape, std::uint64_t chunkElements, Visit&& visit)
{
    ChunkSlice slice;
    auto walk = [&](auto&& self, std::size_t dim) -> bool {
        if (dim == shape.size())
            return visit(slice, std::uint64_t(1));
        std::uint64_t inner = 1;
        for (std::size_t d = dim + 1; d < shape.size(); ++d)
            inner *= std::uint64_t(shape[d]);
        if (inner <= chunkElements) {
            const auto rows
                = std::int64_t(std::max<std::uint64_t>(1, chunkElements / std::max<std::uint64_t>(inner, 1)));
            for (std::int64_t start = 0; start < shape[dim]; start += rows) {
                slice.start = start;
                slice.length = std::min(rows, shape[dim] - start);
                if (!visit(slice, std::uint64_t(slice.length) * inner))
                    return false;
            }
            return true;
        }
        for (std::int64_t index = 0; index < shape[dim]; ++index) {
            slice.selects.push_back(index);
            const bool go_on = self(self, dim + 1);
            slice.selects.pop_back();
            if (!go_on)
                return false;
        }
        return true;
    };
    return walk(walk, 0);
}

// The tensor's values as float64, one chunk at a time, read from the mapped bytes.
class ValueSource {
public:
    ValueSource(const DTypePlan& plan, std::uint8_t* base, std::uint64_t storageBytes,
        const StridedTensorBytes& tensor)
        : m_plan(plan)
        , m_tensor(tensor)
    {
        const auto options = at::TensorOptions().dtype(plan.viewType);
        const auto elementSize = std::int64_t(c10::elementSize(plan.viewType));
        // from_blob does not copy: libtorch reads the mapped file's pages in place.
        const at::Tensor storage = at::from_blob(base, {std::int64_t(storageBytes) / elementSize}, options);
        switch (plan.decoding) {
        case Decoding::ComplexParts: {
            std::vector<std::int64_t> stride = tensor.stride;
            for (auto& s : stride)
                s *= 2;
            m_view = storage.as_strided(tensor.shape, stride, tensor.storageOffset * 2);
            m_imaginary = storage.as_strided(tensor.shape, stride, tensor.storageOffset * 2 + 1);
            break;
        }
        case Decoding::SubByte:
            m_view = storage; // indexed per chunk
            break;
        default:
            m_view = storage.as_strided(tensor.shape, tensor.stride, tensor.storageOffset);
            if (plan.decoding == Decoding::Float8Table)
                m_table = float8Table(plan.float8);
        }
    }

    at::Tensor values(const ChunkSlice& slice) const
    {
        switch (m_plan.decoding) {
        case Decoding::Native:
            return sliceOf(m_view, slice).to(at::kDouble);
        case Decoding::ComplexParts:
            return at::hypot(
                sliceOf(m_view, slice).to(at::kDouble), sliceOf(m_imaginary, slice).to(at::kDouble));
        case Decoding::Float8Table:
            return m_table.index_select(0, sliceOf(m_view, slice).to(at::kLong).reshape({-1}));
        case Decoding::Unsigned16:
            return sliceOf(m_view, slice).to(at::kInt).bitwise_and(0xFFFF).to(at::kDouble);
        case Decoding::Unsigned32:
            return sliceOf(m_view, slice).to(at::kLong).bitwise_and(std::int64_t(0xFFFFFFFF)).to(at::kDouble);
        case Decoding::Unsigned64: {
            // Both 32-bit halves are exact in float64, so the sum rounds once, as a direct
            // uint64 -> double conversion does.
            const at::Tensor bits = sliceOf(m_view, slice);
            const at::Tensor low = bits.bitwise_and(std::int64_t(0xFFFFFFFF)).to(at::kDouble);
            const at::Tensor high
                = at::bitwise_right_shift(bits, 32).bitwise_and(std::int64_t(0xFFFFFFFF)).to(at::kDouble);
            return high * 4294967296.0 + low;
        }
        case Decoding::SubByte:
            return subByteValues(slice);
        }
        return {};
    }

private:
    // Element i of the storage lives in byte i / k at bit (i % k) * bits, as torch's int_repr
    // unpacks it.
    at::Tensor subByteValues(const ChunkSlice& slice) const
    {
        const auto& shape = m_tensor.shape;
        const auto& stride = m_tensor.stride;
        std::int64_t offset = m_tensor.storageOffset;
        for (std::size_t d = 0; d < slice.selects.size(); ++d)
            offset += slice.selects[d] * stride[d];
        const auto longs = at::TensorOptions().dtype(at::kLong);
        at::Tensor index = at::full({}, offset, longs);
        const std::size_t first = slice.selects.size();
        const std::size_t rank = shape.size() - first;
        for (std::size_t d = first; d < shape.size(); ++d) {
            const std::int64_t begin = d == first ? slice.start : 0;
            const std::int64_t end = d == first ? slice.start + slice.length : shape[d];
            std::vector<std::int64_t> broadcastShape(rank, 1);
            broadcastShape[d - first] = end - begin;
            index = index + (at::arange(begin, end, longs) * stride[d]).reshape(broadcastShape);
        }
        index = index.reshape({-1});
        const std::int64_t perByte = 8 / m_plan.bitsPerValue;
        const at::Tensor bytes = m_view.index_select(0, at::floor_divide(index, perByte)).to(at::kLong);
        const at::Tensor shift = at::remainder(index, perByte) * m_plan.bitsPerValue;
        return at::bitwise_right_shift(bytes, shift)
            .bitwise_and((1 << m_plan.bitsPerValue) - 1)
            .to(at::kDouble);
    }

    DTypePlan m_plan;
    const StridedTensorBytes& m_tensor;
    at::Tensor m_view, m_imaginary, m_table;
};

std::uint64_t countOf(const at::Tensor& mask)
{
    return std::uint64_t(mask.sum().item<std::int64_t>());
}

// Mean and sum of squared deviations of a set, merged chunk by chunk (Chan et al.).
struct Moments {
    double n = 0, mean = 0, m2 = 0;
    void merge(double otherN, double otherMean, double otherM2)
    {
        if (otherN == 0)
            return;
        const double total = n + otherN;
        const double delta = otherMean - mean;
        mean += delta * otherN / total;
        m2 += otherM2 + delta * delta * n * otherN / total;
        n = total;
    }
};

Expected<TensorStatistics> libtorchStatistics(
    const StridedTensorBytes& tensor, const StatisticsOptions& options, const ValueProgress& progress)
{
    const auto plan = planFor(tensor.dtype);
    if (!plan)
        return failure("values of dtype " + tensor.dtype + " have no arithmetic meaning to summarise");
    if (!tensor.storage)
        return failure(tensor.unreadable);

    // Bounds: every element the view reaches must lie inside the storage's bytes (the reader's
    // view-out-of-bounds check reports the same as a finding).
    std::int64_t last = tensor.storageOffset;
    std::uint64_t numel = 1;
    for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
        if (tensor.shape[d] < 0 || tensor.stride[d] < 0)
            return failure("tensor '" + tensor.name + "' has a negative size or stride");
        numel *= std::uint64_t(tensor.shape[d]);
        if (tensor.shape[d] > 0)
            last += (tensor.shape[d] - 1) * tensor.stride[d];
    }
    TensorStatistics statistics;
    statistics.domain = plan->domain;
    statistics.copied = plan->decoding != Decoding::Native && plan->decoding != Decoding::ComplexParts;
    if (numel == 0)
        return statistics;
    const std::uint64_t elementsInStorage = plan->decoding == Decoding::SubByte
        ? tensor.storageBytes * std::uint64_t(8 / plan->bitsPerValue)
        : tensor.storageBytes
            / (c10::elementSize(plan->viewType) * (plan->decoding == Decoding::ComplexParts ? 2 : 1));
    if (tensor.storageOffset < 0 || std::uint64_t(last) >= elementsInStorage)
        return failure("tensor '" + tensor.name + "' views bytes past the end of its storage");

    auto* base = const_cast<std::uint8_t*>(tensor.storage);
    const std::uint64_t chunkElements = std::max<std::uint64_t>(options.chunkElements, 1);
    const std::uint64_t passes = options.histogramBins > 0 ? 2 : 1;
    std::uint64_t done = 0;
    bool cancelled = false;
    auto advance = [&](std::uint64_t elements) {
        done += elements;
        if (progress && !progress(done, numel * passes))
            cancelled = true;
        return !cancelled;
    };
    try {
        c10::InferenceMode inferenceMode;
        const ValueSource source(*plan, base, tensor.storageBytes, tensor);
        auto finiteValues = [&](const at::Tensor& values, std::uint64_t elements, bool count) {
            if (!plan->mayBeNonFinite)
                return std::pair(values, elements);
            const at::Tensor finite = values.isfinite();
            const std::uint64_t finiteCount = countOf(finite);
            if (count && finiteCount < elements) {
                statistics.nanCount += countOf(values.isnan());
                statistics.positiveInfinityCount += countOf(values.isposinf());
                statistics.negativeInfinityCount += countOf(values.isneginf());
            }
            return std::pair(finiteCount == elements ? values : values.masked_select(finite), finiteCount);
        };

        // Pass 1: counts, range and moments.
        Moments moments;
        double min = std::numeric_limits<double>::infinity(), max = -min;
        forEachChunk(tensor.shape, chunkElements, [&](const ChunkSlice& slice, std::uint64_t elements) {
            const at::Tensor values = source.values(slice);
            statistics.zeroCount += countOf(values.eq(0));
            const auto [finite, finiteCount] = finiteValues(values, elements, true);
            if (finiteCount > 0) {
                const auto [low, high] = at::aminmax(finite);
                min = std::min(min, low.item<double>());
                max = std::max(max, high.item<double>());
                const auto [variance, mean] = at::var_mean(finite, /*unbiased=*/false);
                moments.merge(
                    double(finiteCount), mean.item<double>(), variance.item<double>() * double(finiteCount));
            }
            statistics.finiteCount += finiteCount;
            return advance(elements);
        });
        if (cancelled)
            return failure("cancelled");
        statistics.count = numel;
        if (statistics.finiteCount > 0) {
            statistics.min = min;
            statistics.max = max;
            statistics.mean = moments.mean;
            statistics.std = statistics.finiteCount > 1
                ? std::sqrt(moments.m2 / double(statistics.finiteCount - 1))
                : 0.0;
        }

        // Pass 2: the histogram over the range pass 1 found.
        if (options.histogramBins > 0 && statistics.finiteCount > 0) {
            ValueHistogram& histogram = statistics.histogram;
            histogram.low = min == max ? min - 1 : min;
            histogram.high = min == max ? max + 1 : max;
            const auto bins = std::int64_t(options.histogramBins);
            at::Tensor counts = at::zeros({bins}, at::TensorOptions().dtype(at::kLong));
            forEachChunk(tensor.shape, chunkElements, [&](const ChunkSlice& slice, std::uint64_t elements) {
                const auto [finite, finiteCount] = finiteValues(source.values(slice), elements, false);
                if (finiteCount > 0)
                    counts += at::histc(finite, bins, histogram.low, histogram.high).to(at::kLong);
                return advance(elements);
            });
            if (cancelled)
                return failure("cancelled");
            const auto* data = counts.data_ptr<std::int64_t>();
            histogram.counts.assign(data, data + bins);
        } else if (passes == 2 && !advance(numel)) {
            return failure("cancelled");
        }
    } catch (const std::exception& error) {
        return failure(std::string("libtorch could not read the values: ") + error.what());
    }
    return statistics;
}

} // namespace

Expected<ValueDifference> libtorchDifference(const StridedTensorBytes& a, const StridedTensorBytes& b);

} // namespace ckpt

// The one symbol the loader looks up (libtorchkernels.cpp).
extern "C" __attribute__((visibility("default"))) const ckpt::LibtorchKernels* ckptLibtorchKernels()
{
    static const ckpt::LibtorchKernels kernels {
        ckpt::kLibtorchKernelsInterface, ckpt::libtorchStatistics, ckpt::libtorchDifference};
    return &kernels;
}
