// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <cstdint>
#include <functional>
#include <memory>

namespace ckpt {

struct Checkpoint;
struct NestedBlob;
struct StorageRecord;
struct ZipEntry;

// The bytes of a storage whichever way its file keeps them: in place (a view of the file's map),
// in a deflated zip record (StorageRecord::deflated: TorchSharp and other zip writers, which
// torch.load inflates), inflated here, or in the decoded copy of a torch.save file a pickle holds
// as text (StorageRecord::inDecodedBlob: pickle protocols 0-2). Every reader of storage bytes that
// may meet a deflated record or a decoded blob goes through these.

// The deflated zip record holding the storage's bytes, or null (stored, or not a zip).
const ZipEntry* deflatedRecordOf(const Checkpoint& checkpoint, const StorageRecord& storage);

// The storage inside bytes whose decoded copy holds `storage`'s bytes, or null (`storage` must be
// one of checkpoint.storages).
const NestedBlob* decodedBlobOf(const Checkpoint& checkpoint, const StorageRecord& storage);

// The storage's first `length` bytes, in order, into `sink`: slices of the map, or the record
// inflated piece by piece (memory stays flat). Fails, naming the record, when the bytes are not
// complete or the deflate stream is corrupt or cut off; a sink's error stops it and is returned.
Status forEachStorageByteChunk(const Checkpoint& checkpoint, const StorageRecord& storage,
    std::uint64_t length, const std::function<Status(ByteView)>& sink);

// The whole storage in memory: a view of the map (nothing copied), or its record inflated into a
// buffer held by `owned` (for views that need its bytes in any order). Fails as above.
struct StorageBytes {
    ByteView bytes;
    std::shared_ptr<const ByteBuffer> owned; // set when inflated
};
Expected<StorageBytes> readStorageBytes(const Checkpoint& checkpoint, const StorageRecord& storage);

} // namespace ckpt
