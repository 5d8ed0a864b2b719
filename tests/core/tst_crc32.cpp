// SPDX-License-Identifier: MIT
// The fast CRC-32 (carry-less multiplication where the processor has it) against zlib's crc32 on
// every length and alignment around its block sizes, and the threaded file-range CRC that checks
// a remapped copy against the CRC of the same bytes in memory; one wrong byte anywhere in a range,
// including on the boundary between two threads' pieces, must change its CRC.
#include "core/format/crc32.h"
#include "core/format/inflate.h"

#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

using namespace ckpt;

namespace {

std::vector<std::uint8_t> noise(std::size_t size, std::uint64_t seed)
{
    std::vector<std::uint8_t> bytes(size);
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (std::uint8_t& byte : bytes) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        byte = static_cast<std::uint8_t>(state >> 24);
    }
    return bytes;
}

bool writeFile(const QString& path, const std::vector<std::uint8_t>& bytes)
{
    const int fd = ::open(path.toLocal8Bit().constData(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0)
        return false;
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) {
            ::close(fd);
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return ::close(fd) == 0;
}

} // namespace

class TestCrc32 : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void knownValues()
    {
        const char* check = "123456789";
        QCOMPARE(crc32Update(0, reinterpret_cast<const std::uint8_t*>(check), 9), 0xCBF43926u);
        QCOMPARE(crc32Update(0, nullptr, 0), 0u);
        const std::vector<std::uint8_t> zeros(4096, 0);
        QCOMPARE(
            crc32Update(0, zeros.data(), zeros.size()), crc32UpdatePortable(0, zeros.data(), zeros.size()));
        qInfo("CRC-32 engine on this processor: %s", crc32Engine());
    }

    // Every length from 0 to 1,100 bytes (the folding path starts at 64 and works in 16-byte
    // blocks, the tail goes through zlib) at 17 alignments, continued from different CRCs.
    void matchesZlibOnEveryLengthAndAlignment()
    {
        const std::vector<std::uint8_t> bytes = noise(4096, 1);
        int compared = 0;
        for (std::size_t offset = 0; offset < 17; ++offset)
            for (std::size_t length = 0; length <= 1100; ++length) {
                const auto seed = static_cast<std::uint32_t>(length * 2654435761u + offset);
                const std::uint32_t fast = crc32Update(seed, bytes.data() + offset, length);
                const std::uint32_t reference = crc32UpdatePortable(seed, bytes.data() + offset, length);
                if (fast != reference)
                    QFAIL(qPrintable(QStringLiteral("offset %1 length %2").arg(offset).arg(length)));
                ++compared;
            }
        QCOMPARE(compared, 17 * 1101);
        const std::vector<std::uint8_t> large = noise((5 << 20) + 13, 2);
        QCOMPARE(
            crc32Update(0, large.data(), large.size()), crc32UpdatePortable(0, large.data(), large.size()));
    }

    void combineJoinsPieces()
    {
        const std::vector<std::uint8_t> bytes = noise(10'000, 3);
        const std::uint32_t whole = crc32Update(0, bytes.data(), bytes.size());
        for (std::size_t cut :
            {std::size_t(0), std::size_t(1), std::size_t(64), std::size_t(4999), bytes.size()}) {
            const std::uint32_t first = crc32Update(0, bytes.data(), cut);
            const std::uint32_t second = crc32Update(0, bytes.data() + cut, bytes.size() - cut);
            QCOMPARE(crc32Combine(first, second, bytes.size() - cut), whole);
        }
    }

    // Ranges larger than the 16 MiB pieces, on one and on several threads, equal the CRC of the same
    // bytes in memory; a byte changed at the start, on a piece boundary or at the end is caught.
    void fileRangesMatchMemoryAndCatchAWrongByte()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("ranges.bin"));
        std::vector<std::uint8_t> bytes = noise((130u << 20) + 77, 4);
        QVERIFY(writeFile(path, bytes));
        const std::vector<FileRange> ranges {
            {0, 0}, {5, 90}, {100, (70u << 20) + 3}, {(70u << 20) + 103, bytes.size() - (70u << 20) - 103}};
        std::vector<std::uint32_t> expected;
        expected.reserve(ranges.size());
        for (const FileRange& range : ranges)
            expected.push_back(crc32Update(0, bytes.data() + range.offset, range.length));

        const int fd = ::open(path.toLocal8Bit().constData(), O_RDONLY);
        QVERIFY(fd >= 0);
        for (unsigned threads : {1u, 2u, 4u}) {
            const auto crcs = crc32OfFileRanges(fd, ranges, threads);
            QVERIFY2(crcs.hasValue(), crcs.hasValue() ? "" : crcs.error().message.c_str());
            QVERIFY(*crcs == expected);
        }
        const auto single = crc32OfFileRange(fd, ranges[2].offset, ranges[2].length, 2);
        QVERIFY(single.hasValue());
        QCOMPARE(*single, expected[2]);
        ::close(fd);

        // The third range starts at 100: its pieces meet at 100 + 16 MiB, 100 + 32 MiB, ...
        for (const std::uint64_t at :
            {std::uint64_t(100), std::uint64_t(100 + (16u << 20)), std::uint64_t(100 + (32u << 20) - 1),
                std::uint64_t(100 + (32u << 20)), std::uint64_t(bytes.size() - 1)}) {
            std::vector<std::uint8_t> changed = bytes;
            changed[at] ^= 0x10;
            QVERIFY(writeFile(path, changed));
            const int changedFd = ::open(path.toLocal8Bit().constData(), O_RDONLY);
            QVERIFY(changedFd >= 0);
            const auto crcs = crc32OfFileRanges(changedFd, ranges, 2);
            ::close(changedFd);
            QVERIFY(crcs.hasValue());
            int differing = 0;
            for (std::size_t r = 0; r < ranges.size(); ++r)
                differing += (*crcs)[r] != expected[r];
            QVERIFY2(differing == 1, qPrintable(QStringLiteral("byte %1").arg(at)));
        }
    }

    // Regular files are read through mappings of their pages: a range that reaches past the end of
    // the file (a record whose size lies) fails as a read does, with the cause, and never touches
    // a mapped page the file does not have (SIGBUS); the bytes before it are still read.
    void rangePastTheEndFailsAsARead()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("short.bin"));
        const std::vector<std::uint8_t> bytes = noise((5u << 20) + 11, 5);
        QVERIFY(writeFile(path, bytes));
        const int fd = ::open(path.toLocal8Bit().constData(), O_RDONLY);
        QVERIFY(fd >= 0);
        const std::uint64_t size = bytes.size();
        for (const FileRange& range : {FileRange {0, size + 1}, FileRange {4096, size}, FileRange {size, 1},
                 FileRange {size + (1u << 20), 1u << 20}, FileRange {~std::uint64_t(0) - 8, 64}}) {
            const auto crcs = crc32OfFileRanges(fd, {range}, 2);
            QVERIFY2(!crcs.hasValue(), qPrintable(QStringLiteral("offset %1").arg(range.offset)));
            QVERIFY(crcs.error().message.find("cannot read") != std::string::npos);
        }
        const auto whole = crc32OfFileRanges(fd, {FileRange {0, size}, FileRange {size - 3, 3}}, 2);
        ::close(fd);
        QVERIFY(whole.hasValue());
        QCOMPARE((*whole)[0], crc32Update(0, bytes.data(), bytes.size()));
        QCOMPARE((*whole)[1], crc32Update(0, bytes.data() + size - 3, 3));
    }

    void unreadableRangeSaysWhy()
    {
        const auto crcs = crc32OfFileRanges(-1, {FileRange {0, 10}});
        QVERIFY(!crcs.hasValue());
        QVERIFY(crcs.error().message.find("cannot read") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestCrc32)
#include "tst_crc32.moc"
