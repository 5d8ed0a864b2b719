// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

// Called as bytes are written: (bytes written so far, bytes expected in all). Returning false
// cancels the write; the operation then fails with a "cancelled" error.
using WriteProgress = std::function<bool(std::uint64_t done, std::uint64_t total)>;

struct WrittenRecord {
    std::string name;
    std::uint64_t localHeaderOffset = 0;
    std::uint64_t dataOffset = 0;
    std::uint64_t compressedSize = 0;
    std::uint64_t uncompressedSize = 0;
    std::uint32_t crc32 = 0;
    std::uint16_t method = 0;
};

// Writes a zip archive with exactly the framing torch.save's PyTorchStreamWriter (miniz) produces
// (torch-format.md §1.3): local headers with zeroed CRC and sizes, an "FB" extra field padding
// every payload to `alignment` bytes from the archive start, data descriptors (16 or 24 bytes),
// ZIP64 extras only where sizes or offsets need them, a central directory without padding, and
// always the ZIP64 end record, its locator and the classic end record. DOS time and date are 0.
// A torch.save archive rebuilt record by record with this writer is byte-identical to the original.
class TorchZipWriter {
public:
    // `outputFd` is an open, writable, empty file; the writer does not close it.
    TorchZipWriter(int outputFd, std::uint32_t alignment = 64, WriteProgress progress = {},
        std::uint64_t expectedTotal = 0);

    // A stored record whose bytes are in memory; its CRC-32 is computed.
    Status addRecord(std::string_view name, ByteView data);
    // A stored record copied from a range of another file (copy_file_range/sendfile where the OS
    // allows, read/write otherwise). With `knownCrc` the CRC is reused from the input's central
    // directory instead of being computed, so the bytes need not pass through this process.
    Status addRecordFromFile(std::string_view name, int inputFd, std::uint64_t inputOffset,
        std::uint64_t size, std::optional<std::uint32_t> knownCrc);
    // A DEFLATE-compressed record (TorchScript code) copied as it is: compressed stays compressed.
    Status addCompressedRecordFromFile(std::string_view name, int inputFd, std::uint64_t inputOffset,
        std::uint64_t compressedSize, std::uint64_t uncompressedSize, std::uint32_t crc);
    // A stored record of `size` bytes handed over piece by piece by `produce` (which calls the
    // sink it is given with every piece, in order): a deflated record written stored, inflated as
    // it is copied. Its CRC-32 is computed; fewer or more bytes than `size` fail.
    using ByteSink = std::function<Status(ByteView)>;
    Status addRecordFromPieces(
        std::string_view name, std::uint64_t size, const std::function<Status(const ByteSink&)>& produce);
    // Central directory and end records. No record can be added afterwards.
    Status finish();

    std::uint64_t bytesWritten() const { return m_offset; }
    const std::vector<WrittenRecord>& records() const { return m_records; }

private:
    Status writeBytes(ByteView bytes);
    Status writeLocalHeader(
        std::string_view name, std::uint64_t size, std::uint16_t method, WrittenRecord& record);
    Status writeDataDescriptor(const WrittenRecord& record);
    Status finishRecord(WrittenRecord record);
    Status reportProgress();
    Status checkUsable(std::string_view name) const;
    // Marks the archive as broken (a record is half written) and passes the error on.
    Status fail(ReadError error);
    // Copies `size` bytes of the input after the current output offset; with `crc`, the bytes
    // pass through a buffer and their CRC-32 is stored there.
    Status copyPayload(const std::string& name, int inputFd, std::uint64_t inputOffset, std::uint64_t size,
        std::uint32_t* crc);

    int m_fd;
    std::uint32_t m_alignment;
    WriteProgress m_progress;
    std::uint64_t m_expectedTotal;
    std::uint64_t m_offset = 0;
    std::vector<WrittenRecord> m_records;
    bool m_finished = false;
    bool m_failed = false;
    std::string m_currentRecord; // for error messages
    std::string m_currentPart = "the archive";
};

} // namespace ckpt
