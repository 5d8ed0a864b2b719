// SPDX-License-Identifier: MIT
#include "core/read/storagebytes.h"

#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"

#include <algorithm>

namespace ckpt {

const ZipEntry* deflatedRecordOf(const Checkpoint& checkpoint, const StorageRecord& storage)
{
    if (!storage.deflated || !checkpoint.file)
        return nullptr;
    const ZipEntry* entry = checkpoint.zipArchive()->find(storage.record());
    return entry && entry->method == zipformat::kMethodDeflate ? entry : nullptr;
}

const NestedBlob* decodedBlobOf(const Checkpoint& checkpoint, const StorageRecord& storage)
{
    if (!storage.inDecodedBlob || checkpoint.storages.empty() || &storage < checkpoint.storages.data()
        || &storage >= checkpoint.storages.data() + checkpoint.storages.size())
        return nullptr;
    const auto index = static_cast<std::uint32_t>(&storage - checkpoint.storages.data());
    // The blobs are recorded as their storages are added: in the order of the storages' indices.
    const auto found = std::lower_bound(checkpoint.nestedBlobs.begin(), checkpoint.nestedBlobs.end(), index,
        [](const NestedBlob& blob, std::uint32_t wanted) { return blob.storage < wanted; });
    if (found == checkpoint.nestedBlobs.end() || found->storage != index || !found->decoded)
        return nullptr;
    return &*found;
}

namespace {

ReadError notComplete(const StorageRecord& storage)
{
    return makeError(
        "the bytes of storage " + storage.key + " (" + storage.record() + ") are not complete in the file",
        std::nullopt, storage.record());
}

// The first `length` bytes of a storage whose bytes lie in a decoded blob, or nothing.
std::optional<ByteView> decodedBytesOf(
    const Checkpoint& checkpoint, const StorageRecord& storage, std::uint64_t length)
{
    const NestedBlob* blob = decodedBlobOf(checkpoint, storage);
    if (!blob || !storage.bytesReadable() || length > *storage.availableBytes)
        return std::nullopt;
    return subView(blob->decoded->bytes(), blob->decodedDataOffset, length);
}

} // namespace

Status forEachStorageByteChunk(const Checkpoint& checkpoint, const StorageRecord& storage,
    std::uint64_t length, const std::function<Status(ByteView)>& sink)
{
    if ((storage.bytesComplete() && checkpoint.file) || storage.inDecodedBlob) {
        const auto bytes = storage.inDecodedBlob
            ? decodedBytesOf(checkpoint, storage, length)
            : subView(checkpoint.file->bytes(), *storage.dataOffset, length);
        if (!bytes || length > *storage.availableBytes)
            return notComplete(storage);
        constexpr std::uint64_t kSlice = 64ull << 20;
        for (std::uint64_t done = 0; done < length; done += kSlice)
            if (Status failed = sink(bytes->subspan(static_cast<std::size_t>(done),
                    static_cast<std::size_t>(std::min(kSlice, length - done)))))
                return failed;
        return std::nullopt;
    }
    const ZipEntry* entry = deflatedRecordOf(checkpoint, storage);
    if (!entry || !storage.bytesReadable() || length > entry->uncompressedSize)
        return notComplete(storage);
    if (length == 0)
        return std::nullopt;
    return checkpoint.zipArchive()->forEachPayloadChunk(*entry, sink, length);
}

Expected<StorageBytes> readStorageBytes(const Checkpoint& checkpoint, const StorageRecord& storage)
{
    StorageBytes result;
    if (storage.bytesComplete() && checkpoint.file) {
        const auto bytes = subView(checkpoint.file->bytes(), *storage.dataOffset, storage.nbytes);
        if (!bytes)
            return notComplete(storage);
        result.bytes = *bytes;
        return result;
    }
    if (storage.inDecodedBlob) {
        const auto bytes = decodedBytesOf(checkpoint, storage, storage.nbytes);
        if (!bytes)
            return notComplete(storage);
        result.bytes = *bytes;
        return result; // a view of the decoded copy, which the checkpoint keeps
    }
    const ZipEntry* entry = deflatedRecordOf(checkpoint, storage);
    if (!entry || !storage.bytesReadable())
        return notComplete(storage);
    auto inflated = checkpoint.zipArchive()->readPayload(*entry, entry->uncompressedSize);
    if (!inflated)
        return inflated.error();
    auto owned = std::make_shared<ByteBuffer>(std::move(*inflated));
    result.bytes = ByteView(owned->data(), std::min<std::size_t>(owned->size(), storage.nbytes));
    result.owned = std::move(owned);
    return result;
}

} // namespace ckpt
