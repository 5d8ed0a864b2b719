// SPDX-License-Identifier: MIT
// How far two tensors are apart, through libtorch (libtorchkernels.h: part of the module that the
// value helper loads when `diff` asks for value differences).
#include "libtorchkernels.h"

#include <torch/torch.h>

#include <map>
#include <optional>

namespace ckpt {

namespace {

std::optional<c10::ScalarType> scalarTypeOf(const std::string& dtype)
{
    static const std::map<std::string, c10::ScalarType> types {{"float64", c10::kDouble},
        {"float32", c10::kFloat}, {"float16", c10::kHalf}, {"bfloat16", c10::kBFloat16},
        {"int64", c10::kLong}, {"int32", c10::kInt}, {"int16", c10::kShort}, {"int8", c10::kChar},
        {"uint8", c10::kByte}, {"bool", c10::kBool}};
    auto it = types.find(dtype);
    if (it == types.end())
        return std::nullopt;
    return it->second;
}

// The tensor viewed in place over the mapped file (from_blob does not copy).
Expected<at::Tensor> viewOf(const StridedTensorBytes& tensor)
{
    const auto type = scalarTypeOf(tensor.dtype);
    if (!type)
        return makeError("values of dtype " + tensor.dtype + " are not compared");
    if (!tensor.storage)
        return makeError(tensor.unreadable);
    auto* base = const_cast<std::uint8_t*>(tensor.storage);
    const auto elements = static_cast<std::int64_t>(tensor.storageBytes / c10::elementSize(*type));
    const at::Tensor flat = at::from_blob(base, {elements}, at::TensorOptions().dtype(*type));
    return flat.as_strided(tensor.shape, tensor.stride, tensor.storageOffset);
}

} // namespace

Expected<ValueDifference> libtorchDifference(const StridedTensorBytes& a, const StridedTensorBytes& b)
{
    auto left = viewOf(a);
    if (!left)
        return left.error();
    auto right = viewOf(b);
    if (!right)
        return right.error();
    if (left->sizes() != right->sizes())
        return makeError("the shapes differ");
    at::NoGradGuard noGrad;
    ValueDifference result;
    result.count = static_cast<std::uint64_t>(left->numel());
    if (result.count == 0)
        return result;
    // Chunks along the first dimension keep the float64 temporaries small.
    const std::int64_t rows = left->dim() == 0 ? 1 : left->size(0);
    const std::int64_t perRow = left->dim() == 0 ? 1 : left->numel() / std::max<std::int64_t>(rows, 1);
    const std::int64_t step
        = std::max<std::int64_t>(1, (std::int64_t(1) << 22) / std::max<std::int64_t>(perRow, 1));
    for (std::int64_t start = 0; start < rows; start += step) {
        const std::int64_t length = std::min(step, rows - start);
        const at::Tensor x = (left->dim() == 0 ? *left : left->narrow(0, start, length)).to(at::kDouble);
        const at::Tensor y = (right->dim() == 0 ? *right : right->narrow(0, start, length)).to(at::kDouble);
        const at::Tensor bothNan = at::logical_and(at::isnan(x), at::isnan(y));
        const at::Tensor differs = at::logical_and(at::ne(x, y), at::logical_not(bothNan));
        result.differing += static_cast<std::uint64_t>(differs.sum().item<std::int64_t>());
        const at::Tensor absolute = at::abs(x - y);
        const at::Tensor finite = at::logical_not(at::isnan(absolute));
        if (finite.any().item<bool>()) {
            const at::Tensor kept = absolute.masked_select(finite);
            result.maxAbsolute = std::max(result.maxAbsolute, kept.max().item<double>());
            const at::Tensor scale = at::maximum(at::abs(x), at::abs(y)).masked_select(finite);
            const at::Tensor nonzero = scale > 0;
            if (nonzero.any().item<bool>())
                result.maxRelative = std::max(result.maxRelative,
                    (kept.masked_select(nonzero) / scale.masked_select(nonzero)).max().item<double>());
        }
    }
    return result;
}

} // namespace ckpt
