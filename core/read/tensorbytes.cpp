// SPDX-License-Identifier: MIT
#include "core/read/tensorbytes.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/dtype.h"
#include "core/read/storagebytes.h"

#include <algorithm>

namespace ckpt {

Expected<TensorByteLayout> tensorByteLayout(const Checkpoint& checkpoint, const TensorEntry& tensor)
{
    const std::string name = "tensor '" + tensor.name + "'";
    if (tensor.layout != TensorLayout::Strided || tensor.storage < 0 || !tensor.stride
        || !tensor.storageOffset)
        return makeError(name + " is not a dense tensor with a storage of its own");
    const auto dtype = dtypeByName(tensor.dtype);
    if (!dtype || dtype->valuesPerByte != 1 || dtype->elementSize == 0)
        return makeError(name + " has dtype '" + tensor.dtype + "' whose element size is not known");
    if (!checkpoint.file)
        return makeError(name + ": the file is not open");
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
    TensorByteLayout layout;
    layout.deflated = !storage.bytesComplete() && storage.bytesReadable();
    if (!storage.bytesComplete() && !layout.deflated)
        return makeError(name + ": the bytes of its storage are not complete in the file");
    if (!layout.deflated
        && (*storage.dataOffset > checkpoint.file->size()
            || checkpoint.file->size() - *storage.dataOffset < storage.nbytes))
        return makeError(name + ": its storage lies beyond the end of the file");
    layout.elementSize = dtype->elementSize;
    std::uint64_t numel = 1;
    bool empty = false;
    std::int64_t last = *tensor.storageOffset;
    if (last < 0)
        return makeError(name + " has a negative storage offset");
    const Dimensions& stride = *tensor.stride;
    if (stride.size() != tensor.shape.size())
        return makeError(name + " has a stride of another rank than its shape");
    for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
        if (tensor.shape[d] < 0 || stride[d] < 0)
            return makeError(name + " has a negative size or stride");
        if (tensor.shape[d] == 0)
            empty = true;
        if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(tensor.shape[d]), &numel))
            return makeError(name + " is too large");
        last += (std::max<std::int64_t>(tensor.shape[d], 1) - 1) * stride[d];
    }
    layout.numel = empty ? 0 : numel;
    layout.nbytes = layout.numel * layout.elementSize;
    if (layout.numel && (static_cast<std::uint64_t>(last) + 1) * layout.elementSize > storage.nbytes)
        return makeError(name + " reaches past the end of its storage");
    bool contiguous = true;
    std::int64_t expected = 1;
    for (std::size_t d = tensor.shape.size(); d-- > 0;) {
        if (tensor.shape[d] != 1 && stride[d] != expected)
            contiguous = false;
        expected *= tensor.shape[d];
    }
    layout.contiguous = contiguous || layout.numel == 0;
    layout.fileOffset = (layout.deflated ? 0 : *storage.dataOffset)
        + static_cast<std::uint64_t>(*tensor.storageOffset) * layout.elementSize;
    layout.wholeStorage = layout.contiguous && *tensor.storageOffset == 0 && layout.nbytes == storage.nbytes;
    return layout;
}

Status forEachTensorByteChunk(
    const Checkpoint& checkpoint, const TensorEntry& tensor, const std::function<Status(ByteView)>& sink)
{
    auto layout = tensorByteLayout(checkpoint, tensor);
    if (!layout)
        return layout.error();
    if (layout->numel == 0)
        return std::nullopt;
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
    ByteView file = checkpoint.file->bytes();
    StorageBytes inflated; // a deflated storage: `file` is its inflated bytes, offsets from 0
    if (layout->deflated && layout->contiguous) {
        // Inflated piece by piece up to the tensor's last byte, the bytes before it skipped.
        const std::uint64_t skip = layout->fileOffset;
        std::uint64_t seen = 0;
        return forEachStorageByteChunk(
            checkpoint, storage, skip + layout->nbytes, [&](ByteView piece) -> Status {
                const std::uint64_t start = seen;
                seen += piece.size();
                if (seen <= skip)
                    return std::nullopt;
                const std::uint64_t from = skip > start ? skip - start : 0;
                return sink(piece.subspan(static_cast<std::size_t>(from)));
            });
    }
    if (layout->deflated) {
        auto bytes = readStorageBytes(checkpoint, storage);
        if (!bytes)
            return bytes.error();
        inflated = std::move(*bytes);
        file = inflated.bytes;
    }
    if (layout->contiguous) {
        constexpr std::uint64_t kSlice = 64ull << 20;
        for (std::uint64_t done = 0; done < layout->nbytes; done += kSlice)
            if (Status status
                = sink(file.subspan(layout->fileOffset + done, std::min(kSlice, layout->nbytes - done))))
                return status;
        return std::nullopt;
    }
    const Dimensions& shape = tensor.shape;
    const Dimensions& stride = *tensor.stride;
    const std::size_t rank = shape.size();
    const std::uint64_t elementSize = layout->elementSize;
    const std::uint64_t storageStart
        = layout->fileOffset - static_cast<std::uint64_t>(*tensor.storageOffset) * elementSize;
    // Runs along the last dimension are copied whole when its stride is 1.
    const bool innerContiguous = rank > 0 && stride[rank - 1] == 1;
    const std::uint64_t runBytes
        = (innerContiguous ? static_cast<std::uint64_t>(shape[rank - 1]) : 1) * elementSize;
    const std::size_t outerRank = innerContiguous ? rank - 1 : rank;
    std::vector<std::int64_t> index(outerRank, 0);
    ByteBuffer buffer;
    constexpr std::size_t kBuffer = 8u << 20;
    buffer.reserve(kBuffer + runBytes);
    for (;;) {
        std::int64_t element = *tensor.storageOffset;
        for (std::size_t d = 0; d < outerRank; ++d)
            element += index[d] * stride[d];
        const ByteView run
            = file.subspan(storageStart + static_cast<std::uint64_t>(element) * elementSize, runBytes);
        buffer.insert(buffer.end(), run.begin(), run.end());
        if (buffer.size() >= kBuffer) {
            if (Status status = sink(buffer))
                return status;
            buffer.clear();
        }
        bool finished = true; // the next index in C order; done after the last
        for (std::size_t d = outerRank; d-- > 0;) {
            if (++index[d] < shape[d]) {
                finished = false;
                break;
            }
            index[d] = 0;
        }
        if (finished)
            break;
    }
    if (!buffer.empty())
        return sink(buffer);
    return std::nullopt;
}

} // namespace ckpt
