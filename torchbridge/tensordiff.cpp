// SPDX-License-Identifier: MIT
#include "tensordiff.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/read/storagebytes.h"
#include "core/read/tensorbytes.h"
#include "libtorchkernels.h"

namespace ckpt {

namespace {

// The tensor as the libtorch module reads it: where its storage lies in the mapping, or why its
// bytes cannot be read (the module says so after its own dtype check, as before the split).
// A deflated storage is inflated into `holder`, which must outlive the bytes.
StridedTensorBytes bytesOf(const Checkpoint& checkpoint, std::uint32_t index, StorageBytes& holder)
{
    const TensorEntry& tensor = checkpoint.tensors.at(index);
    StridedTensorBytes bytes;
    bytes.name = tensor.name;
    bytes.dtype = tensor.dtype;
    bytes.shape = tensor.shape;
    auto layout = tensorByteLayout(checkpoint, tensor);
    if (!layout) {
        bytes.unreadable = layout.error().message;
        return bytes;
    }
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
    if (layout->deflated) {
        auto inflated = readStorageBytes(checkpoint, storage);
        if (!inflated) {
            bytes.unreadable = inflated.error().message;
            return bytes;
        }
        holder = std::move(*inflated);
        bytes.storage = holder.bytes.data();
    } else {
        bytes.storage = checkpoint.file->bytes().data() + *storage.dataOffset;
    }
    bytes.storageBytes = storage.nbytes;
    bytes.stride = *tensor.stride;
    bytes.storageOffset = *tensor.storageOffset;
    return bytes;
}

} // namespace

Expected<ValueDifference> compareTensorValues(
    const Checkpoint& a, std::uint32_t tensorA, const Checkpoint& b, std::uint32_t tensorB)
{
    const auto kernels = libtorchKernels();
    if (!kernels)
        return kernels.error();
    StorageBytes holderA, holderB;
    return (*kernels)->difference(bytesOf(a, tensorA, holderA), bytesOf(b, tensorB, holderB));
}

} // namespace ckpt
