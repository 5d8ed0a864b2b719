// SPDX-License-Identifier: MIT
#include "core/format/inflate.h"
#include "core/base/textformat.h"
#include "core/format/crc32.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <limits>
#include <string>

#include <zlib.h>

namespace ckpt {

namespace {

// DEFLATE cannot expand data by more than about 1032:1 (a 258-byte match costs at least two
// bits). A record whose recorded size exceeds that bound is lying, and must not make us allocate.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

// zlib counts in uInt (32 bits); larger spans are fed in pieces.
constexpr std::uint64_t kMaxZlibChunk = std::numeric_limits<uInt>::max();

ReadError inflateError(std::string message)
{
    return ReadError {std::move(message), std::nullopt, {}};
}

// Owns a z_stream so every early return releases zlib's state.
class RawInflater {
public:
    RawInflater()
        : m_status(inflateInit2(&m_stream, -MAX_WBITS)) // m_stream is declared, so zeroed, first
    { }
    ~RawInflater()
    {
        if (m_status == Z_OK)
            inflateEnd(&m_stream);
    }
    RawInflater(const RawInflater&) = delete;
    RawInflater& operator=(const RawInflater&) = delete;

    bool ready() const { return m_status == Z_OK; }
    z_stream& stream() { return m_stream; }

private:
    z_stream m_stream {};
    int m_status = Z_STREAM_ERROR;
};

} // namespace

Expected<ByteBuffer> inflateRaw(ByteView compressed, std::uint64_t expectedSize)
{
    if (expectedSize > static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max()))
        return inflateError("the record claims " + formatThousands(expectedSize)
            + " bytes once inflated, more than this process can hold");
    if (compressed.empty())
        return inflateError(expectedSize == 0
                ? "the deflate stream is empty (0 bytes): it should hold at least "
                  "an end-of-stream block"
                : "the deflate stream is empty (0 bytes) but should inflate to "
                    + formatThousands(expectedSize) + " bytes");
    const std::uint64_t possible = static_cast<std::uint64_t>(compressed.size()) * kMaxDeflateRatio + 1024;
    if (expectedSize > possible)
        return inflateError("the record claims " + formatThousands(expectedSize)
            + " bytes once inflated, but " + formatThousands(compressed.size())
            + " compressed bytes can hold at most about " + formatThousands(possible)
            + ": its recorded size is wrong");

    RawInflater inflater;
    if (!inflater.ready())
        return inflateError("zlib could not start a raw inflate stream (out of memory?)");
    z_stream& stream = inflater.stream();

    // One spare byte past the expected end so that a stream which inflates to more than it claims
    // is caught instead of silently cut.
    ByteBuffer output(static_cast<std::size_t>(expectedSize) + 1);
    std::uint64_t inputDone = 0;
    std::uint64_t outputDone = 0;
    for (;;) {
        if (stream.avail_in == 0 && inputDone < compressed.size()) {
            const auto chunk = std::min<std::uint64_t>(compressed.size() - inputDone, kMaxZlibChunk);
            // zlib never writes through next_in; the cast only satisfies its pre-const signature.
            stream.next_in = const_cast<Bytef*>(compressed.data() + inputDone);
            stream.avail_in = static_cast<uInt>(chunk);
            inputDone += chunk;
        }
        if (stream.avail_out == 0) {
            const auto chunk = std::min<std::uint64_t>(output.size() - outputDone, kMaxZlibChunk);
            if (chunk == 0)
                return inflateError("the deflate stream inflates to more than the recorded "
                    + formatThousands(expectedSize) + " bytes");
            stream.next_out = output.data() + outputDone;
            stream.avail_out = static_cast<uInt>(chunk);
            outputDone += chunk;
        }
        const int status = inflate(&stream, Z_NO_FLUSH);
        if (status == Z_STREAM_END)
            break;
        if (status == Z_DATA_ERROR || status == Z_NEED_DICT)
            return inflateError(std::string("the deflate data is corrupt (zlib: ")
                + (stream.msg ? stream.msg : "invalid data") + ") after " + formatThousands(stream.total_in)
                + " compressed bytes");
        if (status == Z_MEM_ERROR)
            return inflateError("zlib ran out of memory while inflating");
        if (status == Z_BUF_ERROR || status == Z_OK) {
            // Z_BUF_ERROR means no progress was possible: either the input ran out before the
            // end-of-stream block, or the output is full (handled at the top of the loop).
            if (stream.avail_in == 0 && inputDone >= compressed.size() && stream.avail_out != 0)
                return inflateError("the deflate stream is cut off: all " + formatThousands(compressed.size())
                    + " compressed bytes gave only " + formatThousands(stream.total_out) + " of "
                    + formatThousands(expectedSize) + " bytes, with no end-of-stream block");
            if (status == Z_BUF_ERROR && stream.avail_out != 0)
                return inflateError("zlib stopped making progress after " + formatThousands(stream.total_in)
                    + " compressed bytes");
            continue;
        }
        return inflateError("zlib failed while inflating (status " + std::to_string(status) + ")");
    }

    const std::uint64_t produced = stream.total_out;
    if (produced > expectedSize)
        return inflateError("the deflate stream inflates to more than the recorded "
            + formatThousands(expectedSize) + " bytes");
    if (produced < expectedSize)
        return inflateError("the deflate stream ends after " + formatThousands(produced)
            + " bytes, but the record says " + formatThousands(expectedSize));
    output.resize(static_cast<std::size_t>(produced));
    return output;
}

Status inflateRawChunks(ByteView compressed, std::uint64_t expectedSize,
    const std::function<Status(ByteView)>& sink, std::uint64_t stopAfter)
{
    if (compressed.empty())
        return inflateError(expectedSize == 0
                ? "the deflate stream is empty (0 bytes): it should hold at least "
                  "an end-of-stream block"
                : "the deflate stream is empty (0 bytes) but should inflate to "
                    + formatThousands(expectedSize) + " bytes");
    RawInflater inflater;
    if (!inflater.ready())
        return inflateError("zlib could not start a raw inflate stream (out of memory?)");
    z_stream& stream = inflater.stream();
    constexpr std::size_t kPiece = 1u << 20;
    ByteBuffer piece(kPiece);
    std::uint64_t inputDone = 0;
    std::uint64_t delivered = 0; // bytes handed to the sink
    for (;;) {
        if (stream.avail_in == 0 && inputDone < compressed.size()) {
            const auto chunk = std::min<std::uint64_t>(compressed.size() - inputDone, kMaxZlibChunk);
            // zlib never writes through next_in; the cast only satisfies its pre-const signature.
            stream.next_in = const_cast<Bytef*>(compressed.data() + inputDone);
            stream.avail_in = static_cast<uInt>(chunk);
            inputDone += chunk;
        }
        stream.next_out = piece.data();
        stream.avail_out = static_cast<uInt>(piece.size());
        const int status = inflate(&stream, Z_NO_FLUSH);
        const std::size_t produced = piece.size() - stream.avail_out;
        if (status == Z_DATA_ERROR || status == Z_NEED_DICT)
            return inflateError(std::string("the deflate data is corrupt (zlib: ")
                + (stream.msg ? stream.msg : "invalid data") + ") after " + formatThousands(stream.total_in)
                + " compressed bytes");
        if (status == Z_MEM_ERROR)
            return inflateError("zlib ran out of memory while inflating");
        if (produced > 0) {
            if (delivered + produced > expectedSize)
                return inflateError("the deflate stream inflates to more than the recorded "
                    + formatThousands(expectedSize) + " bytes");
            const std::uint64_t wanted = stopAfter > delivered ? stopAfter - delivered : 0;
            const auto handed = static_cast<std::size_t>(std::min<std::uint64_t>(produced, wanted));
            if (handed > 0)
                if (Status failed = sink(ByteView(piece.data(), handed)))
                    return failed;
            delivered += produced;
            // Only a part wanted: done. The whole wanted: the stream must still end where it says.
            if (delivered >= stopAfter && stopAfter < expectedSize)
                return std::nullopt;
        }
        if (status == Z_STREAM_END)
            break;
        if (status == Z_BUF_ERROR || (status == Z_OK && produced == 0 && stream.avail_in == 0)) {
            if (stream.avail_in == 0 && inputDone >= compressed.size())
                return inflateError("the deflate stream is cut off: all " + formatThousands(compressed.size())
                    + " compressed bytes gave only " + formatThousands(stream.total_out) + " of "
                    + formatThousands(expectedSize) + " bytes, with no end-of-stream block");
            if (status == Z_BUF_ERROR)
                return inflateError("zlib stopped making progress after " + formatThousands(stream.total_in)
                    + " compressed bytes");
            continue;
        }
        if (status != Z_OK)
            return inflateError("zlib failed while inflating (status " + std::to_string(status) + ")");
    }
    if (delivered < expectedSize)
        return inflateError("the deflate stream ends after " + formatThousands(delivered)
            + " bytes, but the record says " + formatThousands(expectedSize));
    return std::nullopt;
}

std::uint32_t crc32Of(ByteView bytes)
{
    return crc32Update(0, bytes.data(), bytes.size());
}

} // namespace ckpt

namespace ckpt {

namespace {

// Small enough to stay in the core's L2 cache between pread's copy and the CRC that reads it
// (measured: 256 KiB reads back a cached file at about twice the rate of 4 MiB).
constexpr std::uint64_t kCrcBuffer = 256 << 10;

// One thread's share: its CRC, or the errno that stopped it.
struct CrcPart {
    std::uint32_t crc = 0;
    int error = 0;
};

// Read through a mapping of the file this much at a time: the CRC reads the page cache where it
// lies, without pread's copy of every byte into a buffer (14% of a checked remap's samples in the
// profile of issue 28), and memory stays flat: one window a thread, unmapped when read. One thread's
// CRC of a cached 2.1 GiB file: pread 0.34 s of CPU, 1 MiB windows 0.31 s, 4 MiB windows 0.20 s.
constexpr std::uint64_t kCrcWindow = 4ull << 20;
// Below this a part is read with pread: a mapping costs two system calls and its page faults, which
// for small records (a million tensors of 32 bytes, checked at the app's open) cost far more than
// the copy they save (the app's triage spent half its CPU in mmap and munmap).
constexpr std::uint64_t kCrcMappedAtLeast = 1ull << 20;

CrcPart crcOfPartRead(int fd, std::uint64_t offset, std::uint64_t length, std::uint32_t crc)
{
    CrcPart part;
    std::vector<unsigned char> buffer(static_cast<std::size_t>(std::min(length, kCrcBuffer)));
    while (length > 0) {
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(length, buffer.size()));
        const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            part.error = got < 0 ? errno : EIO;
            return part;
        }
        crc = crc32Update(crc, buffer.data(), static_cast<std::size_t>(got));
        offset += static_cast<std::uint64_t>(got);
        length -= static_cast<std::uint64_t>(got);
    }
    part.crc = crc;
    return part;
}

// `mappableEnd`: the size of the regular file `fd` is (0: not mapped, read with pread). Only bytes
// below it are mapped, so a range past the end of the file fails as a read does (EIO), not with
// SIGBUS; a mapping the kernel refuses falls back to pread for the rest of the part.
CrcPart crcOfPart(int fd, std::uint64_t offset, std::uint64_t length, std::uint64_t mappableEnd)
{
    static const auto kPage = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    std::uint32_t crc = 0;
    while (length >= kCrcMappedAtLeast && offset <= mappableEnd && length <= mappableEnd - offset) {
        const std::uint64_t start = offset - offset % kPage;
        const std::uint64_t take = std::min(length, kCrcWindow - (offset - start));
        const std::size_t mapped = static_cast<std::size_t>(offset - start + take);
        void* view
            = ::mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, static_cast<off_t>(start));
        if (view == MAP_FAILED)
            break;
        crc = crc32Update(crc, static_cast<const std::uint8_t*>(view) + (offset - start), take);
        ::munmap(view, mapped);
        offset += take;
        length -= take;
    }
    return crcOfPartRead(fd, offset, length, crc);
}

} // namespace

Expected<std::vector<std::uint32_t>> crc32OfFileRanges(
    int fd, const std::vector<FileRange>& ranges, unsigned threads)
{
    // hardware_concurrency() reads /sys on every call, and triage checks the CRC of each of a
    // million small records: ask once.
    static const unsigned kCores = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    if (threads == 0)
        threads = kCores;
    // Every range cut into pieces of at most kPiece bytes, taken by the threads in order from one
    // shared counter: a checkpoint of many 64 MiB storages keeps every thread busy, not only a
    // storage larger than the rest.
    constexpr std::uint64_t kPiece = 16ull << 20;
    struct Piece {
        std::size_t range;
        std::uint64_t offset, length;
        CrcPart result;
    };
    std::vector<Piece> pieces;
    std::uint64_t total = 0;
    for (std::size_t r = 0; r < ranges.size(); ++r) {
        total += ranges[r].length;
        std::uint64_t done = 0;
        do {
            const std::uint64_t length = std::min(kPiece, ranges[r].length - done);
            pieces.push_back({r, ranges[r].offset + done, length, {}});
            done += length;
        } while (done < ranges[r].length);
    }
    // Work under two pieces is not worth a thread (a thread costs tens of microseconds, a piece
    // about three milliseconds); a 64 MiB record, torch's usual, is checked on four.
    const auto workers = static_cast<unsigned>(
        std::min<std::uint64_t>({threads, std::max<std::uint64_t>(1, total / kPiece), pieces.size()}));
    // A regular file is read through mappings of its pages (crcOfPart), up to its size; asked only
    // where a piece is large enough to be mapped (the triage checks a million small records one by
    // one).
    const bool anyMapped = std::any_of(
        pieces.begin(), pieces.end(), [](const Piece& piece) { return piece.length >= kCrcMappedAtLeast; });
    struct stat status { };
    const std::uint64_t mappableEnd = anyMapped && ::fstat(fd, &status) == 0 && S_ISREG(status.st_mode)
        ? static_cast<std::uint64_t>(status.st_size)
        : 0;
    std::atomic<std::size_t> next {0};
    auto work = [&] {
        for (std::size_t i = next++; i < pieces.size(); i = next++)
            pieces[i].result = crcOfPart(fd, pieces[i].offset, pieces[i].length, mappableEnd);
    };
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < workers; ++t)
        helpers.emplace_back(work);
    work();
    for (std::thread& helper : helpers)
        helper.join();

    std::vector<std::uint32_t> crcs(ranges.size(), 0);
    std::vector<bool> started(ranges.size(), false);
    for (const Piece& piece : pieces) {
        if (piece.result.error)
            return makeError(
                std::string("cannot read the file to check its bytes: ") + std::strerror(piece.result.error));
        std::uint32_t& crc = crcs[piece.range];
        crc = started[piece.range] ? crc32Combine(crc, piece.result.crc, piece.length) : piece.result.crc;
        started[piece.range] = true;
    }
    return crcs;
}

Expected<std::uint32_t> crc32OfFileRange(int fd, std::uint64_t offset, std::uint64_t length, unsigned threads)
{
    auto crcs = crc32OfFileRanges(fd, {FileRange {offset, length}}, threads);
    if (!crcs)
        return crcs.error();
    return crcs->front();
}

} // namespace ckpt
