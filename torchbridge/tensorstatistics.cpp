#include "tensorstatistics.h"

#include "checkpoint.h"
#include "dtype.h"
#include "mappedfile.h"

#include <torch/torch.h>

#include <map>

namespace ckpt {

namespace {

std::optional<c10::ScalarType> scalarTypeFor(const std::string& name)
{
    static const std::map<std::string, c10::ScalarType> types {
        {"float32", c10::kFloat},
        {"float64", c10::kDouble},
        {"float16", c10::kHalf},
        {"bfloat16", c10::kBFloat16},
        {"int64", c10::kLong},
        {"int32", c10::kInt},
        {"int16", c10::kShort},
        {"int8", c10::kChar},
        {"uint8", c10::kByte},
        {"bool", c10::kBool},
    };
    auto it = types.find(name);
    if (it == types.end())
        return std::nullopt;
    return it->second;
}

ReadError failure(std::string message)
{
    return ReadError {std::move(message), std::nullopt, {}};
}

} // namespace

Expected<TensorStatistics> computeTensorStatistics(const Checkpoint& checkpoint, std::uint32_t tensorIndex)
{
    if (tensorIndex >= checkpoint.tensors.size())
        return failure("no such tensor");
    const TensorEntry& tensor = checkpoint.tensors[tensorIndex];
    if (tensor.storage < 0 || !tensor.stride || !tensor.storageOffset)
        return failure("tensor '" + tensor.name + "' has no strided storage of its own to read values from");
    const auto type = scalarTypeFor(tensor.dtype);
    if (!type)
        return failure("values of dtype " + tensor.dtype + " cannot be summarised yet");
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
    if (!storage.bytesComplete() || !checkpoint.file)
        return failure("the bytes of storage " + storage.key + " are not complete in the file");

    // Bounds: the view's last element must lie inside the storage's bytes (the reader's
    // view-out-of-bounds check reports the same as a finding).
    const std::uint64_t elementSize = c10::elementSize(*type);
    std::int64_t last = *tensor.storageOffset;
    std::int64_t numel = 1;
    for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
        numel *= tensor.shape[d];
        if (tensor.shape[d] > 0)
            last += (tensor.shape[d] - 1) * (*tensor.stride)[d];
    }
    TensorStatistics statistics;
    if (numel == 0)
        return statistics;
    if (last < 0 || (static_cast<std::uint64_t>(last) + 1) * elementSize > storage.nbytes)
        return failure("tensor '" + tensor.name + "' views bytes past the end of its storage");

    auto* base = const_cast<std::uint8_t*>(checkpoint.file->bytes().data() + *storage.dataOffset);
    try {
        // from_blob does not copy: libtorch reads the mapped file's pages in place.
        const auto storageElements = static_cast<std::int64_t>(storage.nbytes / elementSize);
        const at::Tensor view = torch::from_blob(base, {storageElements}, torch::TensorOptions().dtype(*type))
                                    .as_strided(tensor.shape, *tensor.stride, *tensor.storageOffset);
        const at::Tensor values = view.to(torch::kDouble);
        statistics.count = static_cast<std::uint64_t>(numel);
        statistics.nanCount = static_cast<std::uint64_t>(values.isnan().sum().item<std::int64_t>());
        statistics.positiveInfinityCount
            = static_cast<std::uint64_t>(values.isposinf().sum().item<std::int64_t>());
        statistics.negativeInfinityCount
            = static_cast<std::uint64_t>(values.isneginf().sum().item<std::int64_t>());
        statistics.zeroCount = static_cast<std::uint64_t>((values == 0).sum().item<std::int64_t>());
        const at::Tensor finite = values.masked_select(values.isfinite());
        if (finite.numel() > 0) {
            statistics.min = finite.min().item<double>();
            statistics.max = finite.max().item<double>();
            statistics.mean = finite.mean().item<double>();
            statistics.std = finite.numel() > 1 ? finite.std().item<double>() : 0.0;
        }
    } catch (const std::exception& error) {
        return failure(std::string("libtorch could not read the values: ") + error.what());
    }
    return statistics;
}

} // namespace ckpt
