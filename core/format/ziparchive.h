// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"
#include "core/base/finding.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

class MappedFile;

// One record of a zip archive as the reader found it. A torch file holds one record per storage, so
// a million-tensor checkpoint holds a million of these: the name is not copied but viewed where it
// lies in the mapped file (the central directory, or the local header of a record recovered by
// walking them), which the archive keeps mapped; the fields are ordered to leave no padding
// between them. An entry is only valid while its ZipArchive (or another owner of the same
// MappedFile) lives.
struct ZipEntry {
private:
    const char* m_name = nullptr; // first: the 8-byte fields, then the narrower ones, no padding

public:
    std::string_view name() const { return {m_name, m_nameLength}; } // full name ("archive/data/0")
    // `name` must live as long as the entry: in the mapped file while the directory is parsed, then
    // in the ZipArchive's own block of names. A zip name holds at most 65,535 bytes.
    void setName(std::string_view name)
    {
        m_name = name.data();
        m_nameLength = static_cast<std::uint16_t>(name.size());
    }

    std::uint64_t compressedSize = 0;
    std::uint64_t uncompressedSize = 0;
    std::uint64_t localHeaderOffset = 0; // offset of the local file header in the file
    std::uint64_t dataOffset = 0; // offset of the payload in the file
    std::uint32_t crc32 = 0; // as recorded (central directory, or data descriptor)
    std::uint16_t method = 0; // 0 stored, 8 deflate, anything else unsupported
    std::uint16_t flags = 0; // general purpose flags (bit 3: data descriptor)
    std::uint16_t localExtraLength = 0; // length of the local header's extra field (FB padding etc.)
    bool fromCentralDirectory = true; // false when recovered by scanning local headers
    bool payloadComplete = true; // the whole payload lies inside the file

private:
    std::uint16_t m_nameLength = 0;
};

// A tolerant zip reader over a memory-mapped file: ZIP64, stored and deflated records, archive
// prefixes, and recovery of entries from local headers when the central directory is missing or
// damaged (a truncated download). Every inconsistency becomes a Finding; nothing throws.
class ZipArchive {
public:
    // `file` must outlive the archive (it is kept alive through the shared pointer).
    static ZipArchive open(std::shared_ptr<const MappedFile> file);
    // How many times open() parsed a zip directory in this process: lets tests check that a
    // checkpoint's zip is parsed once, by its reader, and shared with the triage and the writers.
    static std::uint64_t openCount();

    bool hasEntries() const { return !m_entries.empty(); }
    const std::vector<ZipEntry>& entries() const { return m_entries; } // central-directory order
    const ZipEntry* find(std::string_view fullName) const;
    bool centralDirectoryFound() const { return m_centralDirectoryFound; }
    // Offset of the archive's first byte in the file: 0 unless other data was written before the
    // zip (as torch.distributed.checkpoint does, or a self-extracting archive). Every offset in a
    // ZipEntry is already a file offset.
    std::uint64_t archiveStart() const { return m_archiveStart; }
    const std::vector<Finding>& findings() const { return m_findings; }

    // The payload of a stored record as a view into the mapped file (no copy), or nothing when the
    // record is compressed or incomplete.
    std::optional<ByteView> storedPayload(const ZipEntry& entry) const;
    // The payload, inflated if needed; refuses records larger than maxSize.
    Expected<ByteBuffer> readPayload(const ZipEntry& entry, std::uint64_t maxSize) const;
    // The payload's bytes in order, inflated if needed, piece by piece into `sink` (slices of the
    // map for a stored record, pieces of at most 1 MiB for a deflated one), so memory stays flat
    // however large the record; stops after `stopAfter` bytes. Fails, naming the record, for what
    // readPayload refuses (incomplete, encrypted, another method) and for a corrupt or cut-off
    // deflate stream; a sink's error stops it and is returned.
    Status forEachPayloadChunk(const ZipEntry& entry, const std::function<Status(ByteView)>& sink,
        std::uint64_t stopAfter = UINT64_MAX) const;
    // Recomputes the CRC-32 of a record's (inflated) bytes and compares it with the recorded one.
    // Nothing when they agree; otherwise a Finding that says what is wrong. torch itself never
    // checks CRCs, so a damaged tensor loads silently there.
    std::optional<Finding> verifyCrc(const ZipEntry& entry, std::uint64_t maxSize) const;

    const std::shared_ptr<const MappedFile>& file() const { return m_file; }

private:
    std::shared_ptr<const MappedFile> m_file;
    std::vector<ZipEntry> m_entries;
    // Entries by name: open addressing over (hash, entry index + 1), the names themselves read from
    // m_entries. A torch file has one record per storage and its reader looks each one up, so a
    // node-based map (a heap node and a copy of every name, a heap string per look-up) cost more
    // than the look-ups themselves at 100,000 storages.
    struct NameSlot {
        std::uint32_t hash = 0;
        std::uint32_t entryPlusOne = 0; // 0: empty
    };
    std::vector<NameSlot> m_nameSlots; // a power of two in size, at most half full
    std::shared_ptr<char[]> m_names; // every entry's name, end to end (shared by copies)
    std::vector<Finding> m_findings;
    bool m_centralDirectoryFound = false;
    std::uint64_t m_archiveStart = 0;
};

} // namespace ckpt
