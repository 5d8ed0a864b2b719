// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <cstdint>
#include <functional>

namespace ckpt {

struct Checkpoint;
struct TensorEntry;

// Where a dense tensor's values lie in its file.
struct TensorByteLayout {
    std::uint64_t elementSize = 0;
    std::uint64_t numel = 0;
    std::uint64_t nbytes = 0; // numel x element size: the bytes it shows
    std::uint64_t fileOffset = 0; // of its first element (deflated: in the storage's own bytes)
    bool contiguous = false; // the values are one run of bytes from fileOffset, in C order
    bool wholeStorage = false; // ... and that run is its whole storage
    // Its storage's bytes are not in the file's map as they are (a deflated record, inflated; a
    // decoded blob, StorageRecord::inDecodedBlob): they are read through core/read/storagebytes.h.
    bool deflated = false;
};

// Checks that a strided tensor with a storage lies inside its storage and its storage inside the
// file, and says where its bytes are. Fails (with the tensor's name) for composite layouts,
// unknown or sub-byte dtypes, negative strides and missing bytes.
Expected<TensorByteLayout> tensorByteLayout(const Checkpoint& checkpoint, const TensorEntry& tensor);

// Calls `sink` with the bytes the tensor shows, in C order: a contiguous tensor as slices of the
// file's map (the OS pages them in as they are read), any other view gathered run by run into a
// buffer of about 8 MiB. A deflated storage is inflated as it is read (a contiguous tensor piece
// by piece; another view from the storage inflated whole in memory). A sink's error stops the
// walk and is returned.
Status forEachTensorByteChunk(
    const Checkpoint& checkpoint, const TensorEntry& tensor, const std::function<Status(ByteView)>& sink);

} // namespace ckpt
