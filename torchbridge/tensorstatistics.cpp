// SPDX-License-Identifier: MIT
#include "tensorstatistics.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/read/storagebytes.h"
#include "libtorchkernels.h"
#include "nativestatistics.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace ckpt {

const char* valueDomainName(ValueDomain domain)
{
    switch (domain) {
    case ValueDomain::Real:
        return "values";
    case ValueDomain::Boolean:
        return "booleans";
    case ValueDomain::Magnitude:
        return "magnitudes |z|";
    case ValueDomain::IntegerRepresentation:
        return "int_repr";
    }
    return "values";
}

std::vector<double> ValueHistogram::edges() const
{
    std::vector<double> result;
    if (counts.empty())
        return result;
    result.reserve(counts.size() + 1);
    const double width = (high - low) / double(counts.size());
    for (std::size_t i = 0; i < counts.size(); ++i)
        result.push_back(low + width * double(i));
    result.push_back(high);
    return result;
}

namespace {

ReadError failure(std::string message)
{
    return ReadError {std::move(message), std::nullopt, {}};
}

std::optional<NativeFloat> nativeFloatFor(const std::string& dtype)
{
    if (dtype == "float32")
        return NativeFloat::Float32;
    if (dtype == "float64")
        return NativeFloat::Float64;
    if (dtype == "float16")
        return NativeFloat::Float16;
    if (dtype == "bfloat16")
        return NativeFloat::BFloat16;
    return std::nullopt;
}

// Row-major without gaps: the view's elements are one run of bytes, read in order.
bool isContiguous(const TensorEntry& tensor)
{
    std::int64_t expected = 1;
    for (std::size_t d = tensor.shape.size(); d-- > 0;) {
        if (tensor.shape[d] != 1 && (*tensor.stride)[d] != expected)
            return false;
        expected *= tensor.shape[d];
    }
    return true;
}

// The cores this process may run on (its affinity mask, so `taskset` is honoured). Not libtorch's
// at::get_num_threads(): asking would load libtorch, and Debian's torch 1.13 counts the cores
// through cpuinfo and reports one on this two-core virtual machine anyway.
unsigned coresToScanOn()
{
    static const unsigned cores = [] {
        int available = 0;
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            available = CPU_COUNT(&set);
        return unsigned(std::max(1, available));
    }();
    return cores;
}

std::uint64_t elementSizeOf(NativeFloat type)
{
    switch (type) {
    case NativeFloat::Float32:
        return 4;
    case NativeFloat::Float64:
        return 8;
    case NativeFloat::Float16:
    case NativeFloat::BFloat16:
        return 2;
    }
    return 1;
}

// The tensor as the libtorch module reads it (libtorchkernels.h).
// A deflated storage is inflated into `holder`, which must outlive the bytes.
StridedTensorBytes stridedBytesOf(
    const Checkpoint& checkpoint, const TensorEntry& tensor, StorageBytes& holder)
{
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
    StridedTensorBytes bytes;
    bytes.name = tensor.name;
    bytes.dtype = tensor.dtype;
    if (storage.bytesComplete() && checkpoint.file) {
        bytes.storage = checkpoint.file->bytes().data() + *storage.dataOffset;
    } else if (storage.bytesReadable() && checkpoint.file) {
        auto inflated = readStorageBytes(checkpoint, storage);
        if (inflated) {
            holder = std::move(*inflated);
            bytes.storage = holder.bytes.data();
        } else {
            bytes.unreadable = inflated.error().message;
        }
    } else {
        bytes.unreadable = "the bytes of storage " + storage.key + " are not complete in the file";
    }
    bytes.storageBytes = storage.nbytes;
    bytes.shape = tensor.shape;
    bytes.stride = *tensor.stride;
    bytes.storageOffset = *tensor.storageOffset;
    return bytes;
}

Expected<TensorStatistics> throughLibtorch(const Checkpoint& checkpoint, const TensorEntry& tensor,
    const StatisticsOptions& options, const ValueProgress& progress)
{
    const auto kernels = libtorchKernels();
    if (!kernels)
        return failure(kernels.error().message);
    StorageBytes holder;
    return (*kernels)->statistics(stridedBytesOf(checkpoint, tensor, holder), options, progress);
}

} // namespace

Expected<TensorStatistics> computeTensorStatistics(const Checkpoint& checkpoint, std::uint32_t tensorIndex,
    const StatisticsOptions& options, const ValueProgress& progress)
{
    if (tensorIndex >= checkpoint.tensors.size())
        return failure("no such tensor");
    const TensorEntry& tensor = checkpoint.tensors[tensorIndex];
    if (tensor.storage < 0 || std::size_t(tensor.storage) >= checkpoint.storages.size() || !tensor.stride
        || !tensor.storageOffset || tensor.stride->size() != tensor.shape.size())
        return failure("tensor '" + tensor.name + "' has no strided storage of its own to read values from");
    const auto native = nativeFloatFor(tensor.dtype);
    if (!native || options.libtorchOnly)
        return throughLibtorch(checkpoint, tensor, options, progress);

    // The same checks, in the same order and words, as the libtorch module makes
    // (libtorchstatistics.cpp): a float dtype always has a plan there.
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
    if (!storage.bytesReadable() || !checkpoint.file)
        return failure("the bytes of storage " + storage.key + " are not complete in the file");
    std::int64_t last = *tensor.storageOffset;
    std::uint64_t numel = 1;
    for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
        if (tensor.shape[d] < 0 || (*tensor.stride)[d] < 0)
            return failure("tensor '" + tensor.name + "' has a negative size or stride");
        numel *= std::uint64_t(tensor.shape[d]);
        if (tensor.shape[d] > 0)
            last += (tensor.shape[d] - 1) * (*tensor.stride)[d];
    }
    TensorStatistics statistics;
    statistics.domain = ValueDomain::Real;
    if (numel == 0)
        return statistics;
    const std::uint64_t elementSize = elementSizeOf(*native);
    if (*tensor.storageOffset < 0 || std::uint64_t(last) >= storage.nbytes / elementSize)
        return failure("tensor '" + tensor.name + "' views bytes past the end of its storage");
    if (!isContiguous(tensor)) // a strided view: libtorch walks it
        return throughLibtorch(checkpoint, tensor, options, progress);

    StorageBytes inflated; // a deflated storage, inflated whole while it is scanned
    const std::uint8_t* storageStart = nullptr;
    if (storage.bytesComplete()) {
        storageStart = checkpoint.file->bytes().data() + *storage.dataOffset;
    } else {
        auto bytes = readStorageBytes(checkpoint, storage);
        if (!bytes)
            return failure(bytes.error().message);
        inflated = std::move(*bytes);
        storageStart = inflated.bytes.data();
    }
    const std::uint8_t* start = storageStart + std::uint64_t(*tensor.storageOffset) * elementSize;
    const std::uint64_t passes = options.histogramBins > 0 ? 2 : 1;
    adviseSequential(start, numel * elementSize);
    NativeScanOptions scan;
    scan.threads = options.threads ? options.threads : coresToScanOn();
    scan.progress = progress;
    scan.totalForProgress = numel * passes;
    scan.widestVectors = options.widestVectors;
    scan.crc = options.crc;
    NativeStatistics moments;
    std::uint64_t done = 0;
    if (!nativeMoments(*native, start, numel, scan, done, moments))
        return failure("cancelled");
    statistics.count = numel;
    statistics.nanCount = moments.nanCount;
    statistics.positiveInfinityCount = moments.positiveInfinityCount;
    statistics.negativeInfinityCount = moments.negativeInfinityCount;
    statistics.zeroCount = moments.zeroCount;
    statistics.finiteCount = moments.finiteCount;
    if (options.crc)
        statistics.bytesCrc = moments.crc;
    if (moments.finiteCount > 0) {
        statistics.min = moments.min;
        statistics.max = moments.max;
        statistics.mean = moments.mean;
        statistics.std
            = moments.finiteCount > 1 ? std::sqrt(moments.m2 / double(moments.finiteCount - 1)) : 0.0;
    }
    if (options.histogramBins > 0 && moments.finiteCount > 0) {
        ValueHistogram& histogram = statistics.histogram;
        histogram.low = moments.min == moments.max ? moments.min - 1 : moments.min;
        histogram.high = moments.min == moments.max ? moments.max + 1 : moments.max;
        histogram.counts.assign(options.histogramBins, 0); // edges() counts them
        // torch.histc bins within the ends of its linspace edges, and linspace's ends are its
        // arguments exactly (start + 0 * step, end - 0 * step): the bins need no libtorch.
        if (!nativeHistogram(*native, start, numel, histogram.edges(), scan, done, histogram.counts))
            return failure("cancelled");
    } else if (passes == 2 && progress && !progress(numel * passes, numel * passes)) {
        return failure("cancelled");
    }
    return statistics;
}

} // namespace ckpt
