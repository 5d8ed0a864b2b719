// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <memory>
#include <string>

namespace ckpt {

// A read-only memory map of a whole file. Tensor bytes are never read unless something asks for
// them: the OS pages in only what is touched. Opening never modifies the file (O_RDONLY,
// MAP_PRIVATE + PROT_READ). An empty file is a valid, empty map.
class MappedFile {
public:
    static Expected<std::shared_ptr<const MappedFile>> open(const std::string& path);
    // For tests and for data that is already in memory (e.g. an inflated record).
    static std::shared_ptr<const MappedFile> fromBuffer(ByteBuffer buffer, std::string name);
    // Bytes [offset, offset + length) of `whole` as a file of their own, without copying (a DCP
    // .distcp file holds one torch.save archive per chunk, each read as a checkpoint). Keeps
    // `whole` mapped; null when the range does not lie inside it.
    static std::shared_ptr<const MappedFile> slice(
        std::shared_ptr<const MappedFile> whole, std::uint64_t offset, std::uint64_t length);

    // Bytes mapped by someone else (a remote file's mirror, remotefile.h), kept mapped while
    // `owner` lives.
    static std::shared_ptr<const MappedFile> fromExternal(
        ByteView bytes, std::shared_ptr<const void> owner, std::string name);

    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    ByteView bytes() const { return m_bytes; }
    std::uint64_t size() const { return m_bytes.size(); }
    const std::string& path() const { return m_path; }

    // Gives the pages of bytes [offset, offset + length) that this process has touched back to the
    // page cache (madvise MADV_DONTNEED; the whole pages inside the range): a reader that walked a
    // region once (a pickle run, a zip's local headers) need not keep it resident, and touching it
    // again reads it again from the page cache, unchanged, as the mapping is read-only. Only for a
    // file this object mapped itself: a buffer, a slice or an external mapping is left as it is.
    void releaseResidentPages(std::uint64_t offset, std::uint64_t length) const;

private:
    MappedFile() = default;
    ByteView m_bytes;
    void* m_mapping = nullptr;
    std::size_t m_mappingSize = 0;
    ByteBuffer m_ownedBuffer;
    std::shared_ptr<const MappedFile> m_whole; // a slice's file
    std::shared_ptr<const void> m_owner; // an external mapping's owner
    std::string m_path;
};

} // namespace ckpt
