// SPDX-License-Identifier: MIT
#include "core/format/zipwriter.h"

#include "core/format/crc32.h"
#include "core/format/inflate.h"
#include "core/format/zipformat.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include <unistd.h>

namespace ckpt {

namespace {

using namespace zipformat;

constexpr std::uint64_t kZip64Threshold = kZip64Marker32; // miniz switches at ">=", not ">"

// Payload copies go in slices of this size so that progress is reported and a cancel is noticed
// at least this often.
constexpr std::uint64_t kCopySlice = 64ull << 20;
// Buffer for the paths where the bytes pass through this process (CRC, copy fallback).
constexpr std::size_t kBufferSize = 8u << 20;

// The largest alignment whose padding still fits the u16 extra-length field next to the FB
// header (4 bytes) and the largest ZIP64 extra (28 bytes).
constexpr std::uint32_t kMaxAlignment = 0xFFFF - 4 - 28 + 1;

const char* const kCancelled = "cancelled";

void put16(ByteBuffer& out, std::uint16_t value)
{
    out.push_back(static_cast<std::uint8_t>(value));
    out.push_back(static_cast<std::uint8_t>(value >> 8));
}

void put32(ByteBuffer& out, std::uint32_t value)
{
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

void put64(ByteBuffer& out, std::uint64_t value)
{
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

std::uint32_t clamp32(std::uint64_t value)
{
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(value, kZip64Marker32));
}

// miniz decides on ZIP64 per record from the uncompressed size and the local header offset only;
// the compressed size never triggers it (torch stores, so both sizes agree for tensor data).
bool needsZip64(std::uint64_t uncompressedSize, std::uint64_t localHeaderOffset)
{
    return uncompressedSize >= kZip64Threshold || localHeaderOffset >= kZip64Threshold;
}

// miniz's mz_zip_writer_create_zip64_extra_data: the present fields in this order. The local copy
// passes a compressed size of 0 (it is not known yet); the central copy passes the real one.
void putZip64Extra(ByteBuffer& out, std::uint64_t uncompressedSize, std::uint64_t compressedSize,
    std::uint64_t localHeaderOffset)
{
    const bool largeSize = uncompressedSize >= kZip64Threshold;
    const bool largeOffset = localHeaderOffset >= kZip64Threshold;
    put16(out, kZip64ExtraId);
    put16(out, static_cast<std::uint16_t>((largeSize ? 16 : 0) + (largeOffset ? 8 : 0)));
    if (largeSize) {
        put64(out, uncompressedSize);
        put64(out, compressedSize);
    }
    if (largeOffset)
        put64(out, localHeaderOffset);
}

std::uint16_t zip64ExtraLength(std::uint64_t uncompressedSize, std::uint64_t localHeaderOffset)
{
    if (!needsZip64(uncompressedSize, localHeaderOffset))
        return 0;
    return static_cast<std::uint16_t>(
        4 + (uncompressedSize >= kZip64Threshold ? 16 : 0) + (localHeaderOffset >= kZip64Threshold ? 8 : 0));
}

std::uint16_t recordFlags(std::uint64_t payloadSize)
{
    // miniz sets "data descriptor follows" only when it writes one, i.e. for a non-empty payload.
    return payloadSize > 0 ? static_cast<std::uint16_t>(kFlagUtf8Name | kFlagDataDescriptor) : kFlagUtf8Name;
}

std::uint16_t versionNeeded(std::uint16_t method)
{
    return method == kMethodDeflate ? 20 : 0;
}

std::string errnoText(int error)
{
    return std::strerror(error);
}

bool copyRangeUnsupported(int error)
{
    // EXDEV: different file systems (kernels before 5.3, or different types since 5.19);
    // ENOSYS: no such system call; EINVAL/EOPNOTSUPP: a file system or file type that cannot take
    // part (e.g. the output is a device); EBADF: an output opened with O_APPEND.
    return error == EXDEV || error == ENOSYS || error == EINVAL || error == EOPNOTSUPP || error == ENOTSUP
        || error == EBADF;
}

} // namespace

TorchZipWriter::TorchZipWriter(
    int outputFd, std::uint32_t alignment, WriteProgress progress, std::uint64_t expectedTotal)
    : m_fd(outputFd)
    , m_alignment(alignment)
    , m_progress(std::move(progress))
    , m_expectedTotal(expectedTotal)
{ }

Status TorchZipWriter::checkUsable(std::string_view name) const
{
    if (m_failed)
        return makeError("the archive is incomplete after an earlier error; no record can be added", m_offset,
            std::string(name));
    if (m_finished)
        return makeError(
            "the archive is already finished; no record can be added", m_offset, std::string(name));
    if (m_alignment == 0 || m_alignment > kMaxAlignment)
        return makeError("the record alignment must be between 1 and " + std::to_string(kMaxAlignment)
                + " bytes (got " + std::to_string(m_alignment) + ")",
            std::nullopt, std::string(name));
    if (name.empty())
        return makeError("a zip record needs a name");
    if (name.size() > 0xFFFF)
        return makeError(
            "the record name is " + std::to_string(name.size()) + " bytes long; zip allows at most 65,535",
            std::nullopt, std::string(name.substr(0, 64)));
    if (m_records.size() >= 0xFFFFFFFFull)
        return makeError("too many records for one zip archive (miniz allows 4,294,967,294)", std::nullopt,
            std::string(name));
    return std::nullopt;
}

Status TorchZipWriter::fail(ReadError error)
{
    m_failed = true;
    return error;
}

Status TorchZipWriter::writeBytes(ByteView bytes)
{
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n
            = ::pwrite(m_fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(m_offset));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return makeError("cannot write " + m_currentPart + " at output offset " + std::to_string(m_offset)
                    + ": " + errnoText(errno),
                m_offset, m_currentRecord);
        }
        if (n == 0)
            return makeError("cannot write " + m_currentPart + " at output offset " + std::to_string(m_offset)
                    + ": the system wrote nothing",
                m_offset, m_currentRecord);
        done += static_cast<std::size_t>(n);
        m_offset += static_cast<std::uint64_t>(n);
    }
    return std::nullopt;
}

Status TorchZipWriter::reportProgress()
{
    if (m_progress && !m_progress(m_offset, m_expectedTotal))
        return makeError(kCancelled, m_offset, m_currentRecord);
    return std::nullopt;
}

Status TorchZipWriter::writeLocalHeader(
    std::string_view name, std::uint64_t size, std::uint16_t method, WrittenRecord& record)
{
    // `size` is the uncompressed size: with the header's own offset it decides ZIP64 and thereby
    // the padding, as in PyTorch's writeRecord. The flags follow record.compressedSize (the payload
    // actually written), which the caller has already set.
    record.name = std::string(name);
    m_currentRecord = record.name;
    m_currentPart = "record " + record.name;
    record.localHeaderOffset = m_offset;
    record.method = method;

    const std::uint16_t zip64Length = zip64ExtraLength(size, m_offset);
    // torch's detail::getPadding: the payload offset if the FB field carried no padding, then the
    // distance to the next multiple of the alignment.
    const std::uint64_t start = m_offset + kLocalHeaderSize + name.size() + zip64Length + 4;
    const std::uint64_t padding = (m_alignment - start % m_alignment) % m_alignment;

    ByteBuffer header;
    header.reserve(kLocalHeaderSize + name.size() + zip64Length + 4 + padding);
    put32(header, kLocalHeaderSignature);
    put16(header, versionNeeded(method));
    put16(header, recordFlags(record.compressedSize));
    put16(header, method);
    put16(header, 0); // DOS time: PyTorch builds miniz with MINIZ_NO_TIME
    put16(header, 0); // DOS date
    put32(header, 0); // CRC and sizes live in the data descriptor
    put32(header, 0);
    put32(header, 0);
    put16(header, static_cast<std::uint16_t>(name.size()));
    put16(header, static_cast<std::uint16_t>(zip64Length + 4 + padding));
    header.insert(header.end(), name.begin(), name.end());
    if (zip64Length > 0)
        putZip64Extra(header, size, 0, m_offset);
    put16(header, 0x4246); // "FB"
    put16(header, static_cast<std::uint16_t>(padding));
    header.insert(header.end(), padding, static_cast<std::uint8_t>('Z'));

    if (auto error = writeBytes(header))
        return error;
    record.dataOffset = m_offset;
    return std::nullopt;
}

Status TorchZipWriter::writeDataDescriptor(const WrittenRecord& record)
{
    if (record.compressedSize == 0)
        return std::nullopt; // miniz writes none for an empty payload
    ByteBuffer descriptor;
    put32(descriptor, kDataDescriptorSignature);
    put32(descriptor, record.crc32);
    if (needsZip64(record.uncompressedSize, record.localHeaderOffset)) {
        put64(descriptor, record.compressedSize);
        put64(descriptor, record.uncompressedSize);
    } else {
        put32(descriptor, static_cast<std::uint32_t>(record.compressedSize));
        put32(descriptor, static_cast<std::uint32_t>(record.uncompressedSize));
    }
    if (auto error = writeBytes(descriptor))
        return error;
    return std::nullopt;
}

Status TorchZipWriter::addRecord(std::string_view name, ByteView data)
{
    if (auto error = checkUsable(name))
        return error;
    WrittenRecord record;
    record.compressedSize = data.size();
    record.uncompressedSize = data.size();
    record.crc32 = crc32Of(data);
    if (auto error = writeLocalHeader(name, data.size(), kMethodStored, record))
        return fail(*error);
    // Slices, so a large in-memory record still reports progress and can be cancelled.
    std::uint64_t done = 0;
    while (done < data.size()) {
        const std::uint64_t slice = std::min<std::uint64_t>(data.size() - done, kCopySlice);
        if (auto error
            = writeBytes(data.subspan(static_cast<std::size_t>(done), static_cast<std::size_t>(slice))))
            return fail(*error);
        done += slice;
        if (auto error = reportProgress())
            return fail(*error);
    }
    return finishRecord(std::move(record));
}

Status TorchZipWriter::copyPayload(
    const std::string& name, int inputFd, std::uint64_t inputOffset, std::uint64_t size, std::uint32_t* crc)
{
    const auto inputError = [&](const std::string& what, std::uint64_t at) {
        return makeError(what + " (record " + name + ", input offset " + std::to_string(at) + ")", at, name);
    };
    const auto outputError = [&](int error) {
        return makeError("cannot write record " + name + " at output offset " + std::to_string(m_offset)
                + ": " + errnoText(error),
            m_offset, name);
    };

    std::uint64_t done = 0;
    // Whole slices through the kernel when the bytes need not be seen (copy_file_range copies
    // inside the page cache, or clones extents where the file system can).
    bool kernelCopy = crc == nullptr;
    std::vector<std::uint8_t> buffer;
    std::uint32_t crcValue = 0;

    while (done < size) {
        const std::uint64_t slice = std::min<std::uint64_t>(size - done, kCopySlice);
        std::uint64_t sliceDone = 0;
        while (sliceDone < slice) {
            const std::uint64_t want = slice - sliceDone;
            if (kernelCopy) {
                auto in = static_cast<off64_t>(inputOffset + done + sliceDone);
                auto out = static_cast<off64_t>(m_offset);
                const ssize_t n
                    = ::copy_file_range(inputFd, &in, m_fd, &out, static_cast<std::size_t>(want), 0);
                if (n < 0) {
                    if (errno == EINTR)
                        continue;
                    // Nothing has been copied by a call that failed, so the same range can go
                    // through the buffer instead.
                    if (copyRangeUnsupported(errno)) {
                        kernelCopy = false;
                        continue;
                    }
                    // The kernel reads and writes in one call, so the cause may lie on either side.
                    return makeError("cannot copy record " + name + " from input offset "
                            + std::to_string(inputOffset + done + sliceDone) + " to output offset "
                            + std::to_string(m_offset) + ": " + errnoText(errno),
                        m_offset, name);
                }
                if (n == 0)
                    return inputError("the input ends " + std::to_string(size - done - sliceDone)
                            + " bytes before the end of the record",
                        inputOffset + done + sliceDone);
                sliceDone += static_cast<std::uint64_t>(n);
                m_offset += static_cast<std::uint64_t>(n);
                continue;
            }

            if (buffer.empty())
                buffer.resize(kBufferSize);
            const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(want, buffer.size()));
            const std::uint64_t readAt = inputOffset + done + sliceDone;
            std::size_t filled = 0;
            while (filled < chunk) {
                const ssize_t n = ::pread(
                    inputFd, buffer.data() + filled, chunk - filled, static_cast<off_t>(readAt + filled));
                if (n < 0) {
                    if (errno == EINTR)
                        continue;
                    return inputError("cannot read the input: " + errnoText(errno), readAt + filled);
                }
                if (n == 0)
                    return inputError("the input ends " + std::to_string(size - done - sliceDone - filled)
                            + " bytes before the end of the record",
                        readAt + filled);
                filled += static_cast<std::size_t>(n);
            }
            if (crc)
                crcValue = crc32Update(crcValue, buffer.data(), chunk);
            std::size_t written = 0;
            while (written < chunk) {
                const ssize_t n
                    = ::pwrite(m_fd, buffer.data() + written, chunk - written, static_cast<off_t>(m_offset));
                if (n < 0) {
                    if (errno == EINTR)
                        continue;
                    return outputError(errno);
                }
                if (n == 0)
                    return outputError(EIO);
                written += static_cast<std::size_t>(n);
                m_offset += static_cast<std::uint64_t>(n);
            }
            sliceDone += chunk;
        }
        done += slice;
        if (auto error = reportProgress())
            return error;
    }
    if (crc)
        *crc = crcValue;
    return std::nullopt;
}

Status TorchZipWriter::addRecordFromFile(std::string_view name, int inputFd, std::uint64_t inputOffset,
    std::uint64_t size, std::optional<std::uint32_t> knownCrc)
{
    if (auto error = checkUsable(name))
        return error;
    if (inputOffset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) - size)
        return makeError("the input range of record " + std::string(name) + " lies beyond any file",
            inputOffset, std::string(name));
    WrittenRecord record;
    record.compressedSize = size;
    record.uncompressedSize = size;
    // An empty record has CRC 0 whatever the caller says: that is the CRC of no bytes.
    record.crc32 = size == 0 ? 0 : knownCrc.value_or(0);
    if (auto error = writeLocalHeader(name, size, kMethodStored, record))
        return fail(*error);
    std::uint32_t computed = 0;
    if (auto error = copyPayload(record.name, inputFd, inputOffset, size, knownCrc ? nullptr : &computed))
        return fail(*error);
    if (!knownCrc)
        record.crc32 = computed;
    return finishRecord(std::move(record));
}

Status TorchZipWriter::addCompressedRecordFromFile(std::string_view name, int inputFd,
    std::uint64_t inputOffset, std::uint64_t compressedSize, std::uint64_t uncompressedSize,
    std::uint32_t crc)
{
    if (auto error = checkUsable(name))
        return error;
    if (inputOffset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) - compressedSize)
        return makeError("the input range of record " + std::string(name) + " lies beyond any file",
            inputOffset, std::string(name));
    if (compressedSize == 0)
        return makeError("a deflated record cannot be empty: even no bytes deflate to a 2-byte stream",
            std::nullopt, std::string(name));
    WrittenRecord record;
    record.compressedSize = compressedSize;
    record.uncompressedSize = uncompressedSize;
    record.crc32 = crc;
    // ZIP64 and the padding follow the uncompressed size, as in PyTorch's writeRecord.
    if (auto error = writeLocalHeader(name, uncompressedSize, kMethodDeflate, record))
        return fail(*error);
    if (auto error = copyPayload(record.name, inputFd, inputOffset, compressedSize, nullptr))
        return fail(*error);
    return finishRecord(std::move(record));
}

Status TorchZipWriter::addRecordFromPieces(
    std::string_view name, std::uint64_t size, const std::function<Status(const ByteSink&)>& produce)
{
    if (auto error = checkUsable(name))
        return error;
    WrittenRecord record;
    record.compressedSize = size;
    record.uncompressedSize = size;
    if (auto error = writeLocalHeader(name, size, kMethodStored, record))
        return fail(*error);
    std::uint64_t written = 0;
    std::uint32_t crc = 0;
    const Status produced = produce([&](ByteView piece) -> Status {
        if (piece.size() > size - written)
            return makeError(
                "record " + record.name + " gets more than its " + std::to_string(size) + " bytes", m_offset,
                record.name);
        crc = crc32Update(crc, piece.data(), piece.size());
        if (auto error = writeBytes(piece))
            return error;
        written += piece.size();
        return reportProgress();
    });
    if (produced)
        return fail(*produced);
    if (written != size)
        return fail(makeError("record " + record.name + " got " + std::to_string(written) + " of its "
                + std::to_string(size) + " bytes",
            m_offset, record.name));
    record.crc32 = crc;
    return finishRecord(std::move(record));
}

// Every record ends the same way: its data descriptor, its central-directory entry to come, and a
// progress report (which may cancel).
Status TorchZipWriter::finishRecord(WrittenRecord record)
{
    if (auto error = writeDataDescriptor(record))
        return fail(*error);
    m_records.push_back(std::move(record));
    if (auto error = reportProgress())
        return fail(*error);
    return std::nullopt;
}

Status TorchZipWriter::finish()
{
    if (m_failed)
        return makeError("the archive is incomplete after an earlier error; it cannot be finished", m_offset);
    if (m_finished)
        return makeError("the archive is already finished", m_offset);

    m_currentRecord.clear();
    m_currentPart = "the central directory";
    // miniz records a central directory offset of 0 when the archive has no entries.
    const std::uint64_t centralOffset = m_records.empty() ? 0 : m_offset;
    ByteBuffer tail;
    for (const WrittenRecord& record : m_records) {
        const bool zip64 = needsZip64(record.uncompressedSize, record.localHeaderOffset);
        put32(tail, kCentralHeaderSignature);
        put16(tail, 0); // version made by: miniz as PyTorch configures it writes 0
        put16(tail, versionNeeded(record.method));
        put16(tail, recordFlags(record.compressedSize));
        put16(tail, record.method);
        put16(tail, 0); // time
        put16(tail, 0); // date
        put32(tail, record.crc32);
        put32(tail, clamp32(record.compressedSize));
        put32(tail, clamp32(record.uncompressedSize));
        put16(tail, static_cast<std::uint16_t>(record.name.size()));
        put16(tail, zip64ExtraLength(record.uncompressedSize, record.localHeaderOffset));
        put16(tail, 0); // comment length
        put16(tail, 0); // disk number
        put16(tail, 0); // internal attributes
        put32(tail, 0); // external attributes
        put32(tail, clamp32(record.localHeaderOffset));
        tail.insert(tail.end(), record.name.begin(), record.name.end());
        if (zip64)
            putZip64Extra(tail, record.uncompressedSize, record.compressedSize, record.localHeaderOffset);
    }
    const std::uint64_t centralSize = tail.size();
    if (centralSize >= 0xFFFFFFFF)
        return fail(makeError("the central directory would be " + std::to_string(centralSize)
                + " bytes; torch's reader (miniz) accepts less than 4 GiB",
            m_offset));

    const std::uint64_t zip64EndOffset = m_offset + centralSize;
    const auto count = static_cast<std::uint64_t>(m_records.size());
    put32(tail, kZip64EndRecordSignature);
    put64(tail, 44); // size of the rest of this record
    put16(tail, 0x031E); // version made by: miniz hard-codes "Unix, 3.0"
    put16(tail, 45); // version needed: ZIP64
    put32(tail, 0); // this disk
    put32(tail, 0); // disk with the central directory
    put64(tail, count);
    put64(tail, count);
    put64(tail, centralSize);
    put64(tail, centralOffset);

    put32(tail, kZip64LocatorSignature);
    put32(tail, 0); // disk with the ZIP64 end record
    put64(tail, zip64EndOffset);
    put32(tail, 1); // total disks

    put32(tail, kEndRecordSignature);
    put16(tail, 0);
    put16(tail, 0);
    put16(tail, static_cast<std::uint16_t>(std::min<std::uint64_t>(count, 0xFFFF)));
    put16(tail, static_cast<std::uint16_t>(std::min<std::uint64_t>(count, 0xFFFF)));
    put32(tail, clamp32(centralSize));
    put32(tail, clamp32(centralOffset));
    put16(tail, 0); // comment length

    if (auto error = writeBytes(tail))
        return fail(*error);
    m_finished = true;
    if (auto error = reportProgress())
        return fail(*error);
    return std::nullopt;
}

} // namespace ckpt
