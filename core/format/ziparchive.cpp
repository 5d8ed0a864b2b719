// SPDX-License-Identifier: MIT
// The tolerant zip reader: central directory with ZIP64, and local-header recovery when the directory
// is missing or damaged (a truncated download), every problem a finding with its byte offset.
//
// Why one file of about 1,000 lines: it is one job, a parser whose parts (end-record search, ZIP64
// records, central entries, local headers, data-descriptor search, recovery) all cross-check one
// another through the parser's state; the format's numbers are shared with the writer and the
// verdicts in zipformat.h.
#include "core/format/ziparchive.h"

#include "core/base/checkedarithmetic.h"
#include "core/base/textformat.h"

#include "core/format/crc32.h"
#include "core/format/inflate.h"
#include "core/format/zipformat.h"
#include "core/io/mappedfile.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>

namespace ckpt {

namespace {

using namespace zipformat;

// The end record is 22 bytes plus a comment of at most 65,535 bytes, so it lies in the last 65,557.
constexpr std::uint64_t kEndRecordSearch = kEndRecordSize + kMaxCommentLength;

// A zip with more records than this is hostile or broken: a million-tensor checkpoint has about a
// million records, and each costs ~70 bytes of memory here (its entry and its name-table slots).
constexpr std::uint64_t kMaxEntries = 20'000'000;
// Hostile files can trigger the same problem for every record; past this many findings of one
// kind, the rest are summarised in one line.
constexpr std::size_t kMaxFindingsPerCode = 50;

std::string byteCount(std::uint64_t value)
{
    return formatThousands(value) + (value == 1 ? " byte" : " bytes");
}

std::string hex32(std::uint32_t value)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string text = "0x";
    for (int shift = 28; shift >= 0; shift -= 4)
        text += digits[(value >> shift) & 0xf];
    return text;
}

// Record names come from the file: show control characters and invalid bytes escaped so a
// hostile name cannot garble a terminal or a log.
std::string displayName(std::string_view name)
{
    if (name.empty())
        return "(a record with an empty name)";
    std::string text;
    for (const char c : name.substr(0, 200)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
            static constexpr char digits[] = "0123456789abcdef";
            text += "\\x";
            text += digits[byte >> 4];
            text += digits[byte & 0xf];
        } else {
            text += c;
        }
    }
    if (name.size() > 200)
        text += "…";
    return text;
}

const char* methodName(std::uint16_t method)
{
    switch (method) {
    case 0:
        return "stored";
    case 8:
        return "deflate";
    case 9:
        return "deflate64";
    case 12:
        return "bzip2";
    case 14:
        return "LZMA";
    case 93:
        return "zstd";
    case 95:
        return "xz";
    case 99:
        return "AES encryption";
    default:
        return "unknown";
    }
}

struct EndRecords {
    std::uint64_t endRecordOffset = 0;
    std::uint64_t entryCount = 0;
    std::uint64_t centralDirectorySize = 0;
    std::uint64_t centralDirectoryOffset = 0; // as recorded: relative to the archive's start
    std::uint64_t centralDirectoryEnd = 0; // where the end records begin, in the file
    bool zip64 = false;
};

struct Zip64Values {
    std::optional<std::uint64_t> uncompressedSize;
    std::optional<std::uint64_t> compressedSize;
    std::optional<std::uint64_t> localHeaderOffset;
};

// The ZIP64 extra field stores only the values whose 32-bit field holds the 0xFFFFFFFF marker, in
// a fixed order (APPNOTE 4.5.3).
Zip64Values readZip64Extra(ByteView extra, bool wantUncompressed, bool wantCompressed, bool wantOffset)
{
    Zip64Values values;
    std::uint64_t at = 0;
    while (at + 4 <= extra.size()) {
        const auto id = *readLittleEndian<std::uint16_t>(extra, at);
        const auto length = *readLittleEndian<std::uint16_t>(extra, at + 2);
        const auto data = subView(extra, at + 4, length);
        if (!data)
            break;
        if (id == kZip64ExtraId) {
            std::uint64_t field = 0;
            const auto next = [&]() -> std::optional<std::uint64_t> {
                const auto value = readLittleEndian<std::uint64_t>(*data, field);
                field += 8;
                return value;
            };
            if (wantUncompressed)
                values.uncompressedSize = next();
            if (wantCompressed)
                values.compressedSize = next();
            if (wantOffset)
                values.localHeaderOffset = next();
            return values;
        }
        at += 4 + length;
    }
    return values;
}

// torch (miniz) and zipfile write 64-bit data descriptors exactly when the local header carries a
// ZIP64 extra field, whatever it holds (for torch, possibly only the header's own offset).
bool hasZip64Extra(ByteView extra)
{
    std::uint64_t at = 0;
    while (at + 4 <= extra.size()) {
        if (*readLittleEndian<std::uint16_t>(extra, at) == kZip64ExtraId)
            return true;
        at += 4 + *readLittleEndian<std::uint16_t>(extra, at + 2);
    }
    return false;
}

struct DataDescriptor {
    std::uint32_t crc32 = 0;
    std::uint64_t compressedSize = 0;
    std::uint64_t uncompressedSize = 0;
    std::uint64_t length = 0; // 16 (32-bit sizes) or 24 (64-bit sizes), signature included
};

// Parses one zip held in a byte view; ZipArchive::open moves the results into the archive.
class ZipParser {
public:
    explicit ZipParser(ByteView bytes)
        : m_bytes(bytes)
        , m_size(bytes.size())
    { }

    // Reads every record; ZipArchive::open then indexes their names, which finds the duplicates
    // for reportDuplicates, and calls finish.
    void readRecords()
    {
        const auto end = findEndRecords();
        bool complete = false;
        if (end)
            complete = readCentralDirectory(*end);
        if (!complete) {
            const std::uint64_t start = recoveryStart();
            if (start < m_size)
                recoverFromLocalHeaders(start);
            else if (entries.empty() && !end)
                addFinding(Severity::Error, FindingCode::ZipNotFound,
                    "no zip records found: the file has neither an end-of-central-directory record nor a "
                    "local file header (\"PK\\3\\4\"); it is not a zip archive",
                    {}, std::nullopt);
        }
    }

    // One name that more than one record carries: its first record (the one look-ups find), its
    // second, and how many carry it.
    struct DuplicateName {
        std::uint32_t first = 0;
        std::uint32_t second = 0;
        std::uint32_t count = 0;
    };

    // In name order, as a byte-wise comparison sorts them.
    void reportDuplicates(std::vector<DuplicateName> duplicates)
    {
        std::sort(duplicates.begin(), duplicates.end(), [&](const DuplicateName& a, const DuplicateName& b) {
            return entries[a.first].name() < entries[b.first].name();
        });
        for (const DuplicateName& duplicate : duplicates) {
            const ZipEntry& first = entries[duplicate.first];
            const ZipEntry& second = entries[duplicate.second];
            addFinding(Severity::Warning, FindingCode::DuplicateRecordName,
                "the name " + displayName(first.name()) + " appears " + std::to_string(duplicate.count)
                    + " times (local headers at bytes " + formatThousands(first.localHeaderOffset) + " and "
                    + formatThousands(second.localHeaderOffset)
                    + "); this tool uses the first, other zip readers may use the last: the file is "
                      "ambiguous and may be crafted",
                std::string(first.name()), second.localHeaderOffset);
        }
    }

    void finish()
    {
        // Where the archive starts: its first local header. Data before it is harmless to this
        // reader, but torch.load only recognises a zip from its first four bytes.
        std::optional<std::uint64_t> firstHeader;
        for (const auto& entry : entries) {
            if (entry.dataOffset != 0) // its local header was found
                firstHeader
                    = std::min(firstHeader.value_or(entry.localHeaderOffset), entry.localHeaderOffset);
        }
        archiveStart = firstHeader.value_or(m_offsetBias);
        if (archiveStart > 0)
            addFinding(Severity::Info, FindingCode::ZipAfterOtherData,
                "the zip archive starts at byte " + formatThousands(archiveStart) + ": "
                    + byteCount(archiveStart)
                    + " of other data come before it. torch.load accepts only zips that start at byte 0",
                {}, archiveStart);
    }

    std::vector<ZipEntry> entries;
    std::vector<Finding> findings;
    bool centralDirectoryFound = false;
    std::uint64_t archiveStart = 0;

private:
    template<class T> std::optional<T> read(std::uint64_t offset) const
    {
        return readLittleEndian<T>(m_bytes, offset);
    }

    bool signatureAt(std::uint64_t offset, std::uint32_t signature) const
    {
        const auto value = read<std::uint32_t>(offset);
        return value && *value == signature;
    }

    void addFinding(Severity severity, FindingCode code, std::string message, std::string record,
        std::optional<std::uint64_t> offset)
    {
        const std::size_t count = ++m_findingCounts[code];
        if (count > kMaxFindingsPerCode + 1)
            return;
        if (count == kMaxFindingsPerCode + 1) {
            findings.push_back({severity, code,
                "more problems of this kind (" + std::string(findingCodeId(code))
                    + ") follow; only the first " + std::to_string(kMaxFindingsPerCode) + " are listed",
                {}, std::nullopt});
            return;
        }
        findings.push_back({severity, code, std::move(message), std::move(record), offset});
    }

    // ---- End records ------------------------------------------------------------------------

    std::optional<std::uint64_t> findEndRecordOffset() const
    {
        if (m_size < kEndRecordSize)
            return std::nullopt;
        const std::uint64_t lowest = m_size > kEndRecordSearch ? m_size - kEndRecordSearch : 0;
        std::optional<std::uint64_t> firstFound;
        for (std::uint64_t at = m_size - kEndRecordSize + 1; at-- > lowest;) {
            if (!signatureAt(at, kEndRecordSignature))
                continue;
            const auto commentLength = *read<std::uint16_t>(at + 20);
            // The record whose comment reaches exactly to the end of the file is the real one; a
            // signature inside a comment or inside stored data would not line up.
            if (at + kEndRecordSize + commentLength == m_size)
                return at;
            if (!firstFound && at + kEndRecordSize + commentLength <= m_size)
                firstFound = at;
        }
        return firstFound;
    }

    std::optional<EndRecords> findEndRecords()
    {
        const auto endOffset = findEndRecordOffset();
        if (!endOffset) {
            m_endRecordMissing = true;
            addFinding(Severity::Error, FindingCode::ZipEndRecordMissing,
                "there is no end-of-central-directory record in the last "
                    + byteCount(std::min(m_size, kEndRecordSearch))
                    + " of the file, so the zip's table of contents is lost: the file is probably "
                      "truncated (an interrupted download or copy). The records are listed by walking "
                      "their local headers instead",
                {}, std::nullopt);
            return std::nullopt;
        }
        EndRecords end;
        end.endRecordOffset = *endOffset;
        end.entryCount = *read<std::uint16_t>(*endOffset + 10);
        end.centralDirectorySize = *read<std::uint32_t>(*endOffset + 12);
        end.centralDirectoryOffset = *read<std::uint32_t>(*endOffset + 16);
        end.centralDirectoryEnd = *endOffset;
        if (*endOffset + kEndRecordSize + *read<std::uint16_t>(*endOffset + 20) != m_size)
            addFinding(Severity::Warning, FindingCode::ZipTrailingData,
                "the zip's end record at byte " + formatThousands(*endOffset)
                    + " does not reach the end of the file: other data follows the archive",
                {}, *endOffset);

        // ZIP64: a locator right before the end record points at the ZIP64 end record, which holds
        // the 64-bit counts and offsets. torch always writes both (§1.3).
        if (*endOffset < kZip64LocatorSize
            || !signatureAt(*endOffset - kZip64LocatorSize, kZip64LocatorSignature))
            return end;
        const std::uint64_t locator = *endOffset - kZip64LocatorSize;
        const std::uint64_t recorded = *read<std::uint64_t>(locator + 8);
        std::optional<std::uint64_t> zip64End;
        if (signatureAt(recorded, kZip64EndRecordSignature) && recorded < locator)
            zip64End = recorded;
        else if (locator >= kZip64EndRecordSize
            && signatureAt(locator - kZip64EndRecordSize, kZip64EndRecordSignature))
            zip64End = locator - kZip64EndRecordSize; // data before the archive shifted everything
        if (!zip64End || !read<std::uint64_t>(*zip64End + 48)) {
            addFinding(Severity::Warning, FindingCode::Zip64EndRecordMissing,
                "the ZIP64 locator at byte " + formatThousands(locator) + " points to byte "
                    + formatThousands(recorded)
                    + ", but there is no ZIP64 end record there; using the 32-bit end record, which "
                      "cannot describe archives over 4 GiB",
                {}, locator);
            return end;
        }
        end.zip64 = true;
        end.entryCount = *read<std::uint64_t>(*zip64End + 32);
        end.centralDirectorySize = *read<std::uint64_t>(*zip64End + 40);
        end.centralDirectoryOffset = *read<std::uint64_t>(*zip64End + 48);
        end.centralDirectoryEnd = *zip64End;
        return end;
    }

    // ---- Central directory ------------------------------------------------------------------

    // Returns true when the central directory described every record, false when the local
    // headers must be walked to find (more of) them.
    bool readCentralDirectory(const EndRecords& end)
    {
        // Where is the central directory? At its recorded offset, or, when other data comes before
        // the archive, right before the end records (the recorded offsets then count from the
        // archive's start: the difference is the archive's position in the file).
        std::optional<std::uint64_t> start;
        const bool emptyArchive = end.entryCount == 0 && end.centralDirectorySize == 0;
        if (signatureAt(end.centralDirectoryOffset, kCentralHeaderSignature)
            || (emptyArchive && end.centralDirectoryOffset == end.centralDirectoryEnd)) {
            start = end.centralDirectoryOffset;
        } else if (end.centralDirectorySize <= end.centralDirectoryEnd) {
            const std::uint64_t expected = end.centralDirectoryEnd - end.centralDirectorySize;
            if (expected > end.centralDirectoryOffset
                && (signatureAt(expected, kCentralHeaderSignature) || emptyArchive)) {
                start = expected;
                m_offsetBias = expected - end.centralDirectoryOffset;
            }
        }
        if (!start) {
            addFinding(Severity::Error, FindingCode::CentralDirectoryMissing,
                "the zip's end record says its central directory is at byte "
                    + formatThousands(end.centralDirectoryOffset) + " (" + byteCount(end.centralDirectorySize)
                    + "), but there is none there: the file is damaged. The records are listed by walking "
                      "their local headers instead",
                {}, end.centralDirectoryOffset);
            return false;
        }
        centralDirectoryFound = true;
        if (emptyArchive) {
            addFinding(Severity::Info, FindingCode::ZipEmpty, "the zip archive holds no records", {}, *start);
            return true;
        }

        // Each central entry takes at least 46 bytes, which bounds any honest count.
        const std::uint64_t room = (m_size - std::min(m_size, *start)) / kCentralHeaderSize;
        const bool countPlausible = end.entryCount <= room && end.entryCount <= kMaxEntries;
        if (!countPlausible)
            addFinding(Severity::Error, FindingCode::ZipEntryCountImplausible,
                "the zip's end record claims " + formatThousands(end.entryCount) + " records, but the "
                    + byteCount(m_size - std::min(m_size, *start))
                    + " from its central directory to the end of the file can hold at most "
                    + formatThousands(room)
                    + ": the count is damaged or hostile; reading the entries that are there",
                {}, end.endRecordOffset);

        // Room for the claimed count at once, so a million records do not grow the list by doubling
        // (old and new blocks alive together). Only a plausible count is trusted, and no further than
        // the directory's own stated size could hold: a hostile count costs no memory.
        if (countPlausible)
            entries.reserve(entries.size()
                + static_cast<std::size_t>(
                    std::min(end.entryCount, end.centralDirectorySize / kCentralHeaderSize)));

        std::uint64_t at = *start;
        std::uint64_t parsed = 0;
        while (parsed < kMaxEntries && signatureAt(at, kCentralHeaderSignature)) {
            const auto next = readCentralEntry(at);
            if (!next)
                return false; // cut off inside an entry: look for the rest in the local headers
            at = *next;
            ++parsed;
        }
        if (parsed >= kMaxEntries && signatureAt(at, kCentralHeaderSignature))
            addFinding(Severity::Error, FindingCode::ZipTooManyRecords,
                "the central directory lists more than " + formatThousands(kMaxEntries)
                    + " records; only the first " + formatThousands(kMaxEntries) + " are read",
                {}, at);
        if (!countPlausible || parsed == end.entryCount)
            return true;
        if (parsed > end.entryCount) {
            // Tolerated: some writers store the count modulo 65,536 when they skip ZIP64.
            addFinding(Severity::Warning, FindingCode::ZipEntryCountMismatch,
                "the zip's end record claims " + formatThousands(end.entryCount)
                    + " records, but its central directory lists " + formatThousands(parsed),
                {}, end.endRecordOffset);
            return true;
        }
        addFinding(Severity::Error, FindingCode::CentralDirectoryTruncated,
            "the central directory ends after " + formatThousands(parsed) + " of "
                + formatThousands(end.entryCount) + " records, at byte " + formatThousands(at)
                + ": it is damaged; looking for the other records in the local headers",
            {}, at);
        return false;
    }

    // Parses the central entry at `at`; returns the offset of the next one, or nothing when the
    // entry runs past the end of the file.
    std::optional<std::uint64_t> readCentralEntry(std::uint64_t at)
    {
        const auto nameLength = read<std::uint16_t>(at + 28);
        const auto extraLength = read<std::uint16_t>(at + 30);
        const auto commentLength = read<std::uint16_t>(at + 32);
        const std::uint64_t total = kCentralHeaderSize + nameLength.value_or(0) + extraLength.value_or(0)
            + commentLength.value_or(0);
        if (!nameLength || !extraLength || !commentLength || !subView(m_bytes, at, total)) {
            addFinding(Severity::Error, FindingCode::CentralDirectoryTruncated,
                "the central directory entry at byte " + formatThousands(at) + " runs past the end of the "
                    + byteCount(m_size) + " file: the central directory is cut off",
                {}, at);
            return std::nullopt;
        }

        ZipEntry entry;
        entry.flags = *read<std::uint16_t>(at + 8);
        entry.method = *read<std::uint16_t>(at + 10);
        entry.crc32 = *read<std::uint32_t>(at + 16);
        const std::uint32_t compressed32 = *read<std::uint32_t>(at + 20);
        const std::uint32_t uncompressed32 = *read<std::uint32_t>(at + 24);
        const std::uint16_t disk = *read<std::uint16_t>(at + 34);
        const std::uint32_t offset32 = *read<std::uint32_t>(at + 42);
        entry.setName(asText(*subView(m_bytes, at + kCentralHeaderSize, *nameLength)));
        entry.compressedSize = compressed32;
        entry.uncompressedSize = uncompressed32;
        entry.localHeaderOffset = offset32;
        entry.fromCentralDirectory = true;

        const bool wantUncompressed = uncompressed32 == kZip64Marker32;
        const bool wantCompressed = compressed32 == kZip64Marker32;
        const bool wantOffset = offset32 == kZip64Marker32;
        bool usable = true;
        if (wantUncompressed || wantCompressed || wantOffset) {
            const auto extra = *subView(m_bytes, at + kCentralHeaderSize + *nameLength, *extraLength);
            const auto values = readZip64Extra(extra, wantUncompressed, wantCompressed, wantOffset);
            if ((wantUncompressed && !values.uncompressedSize) || (wantCompressed && !values.compressedSize)
                || (wantOffset && !values.localHeaderOffset)) {
                addFinding(Severity::Error, FindingCode::Zip64ExtraMissing,
                    "record " + displayName(entry.name())
                        + ": its central directory entry defers its size or offset to a ZIP64 extra "
                          "field, but the field is missing or too short: the entry is damaged",
                    std::string(entry.name()), at);
                usable = false;
            }
            entry.uncompressedSize = values.uncompressedSize.value_or(entry.uncompressedSize);
            entry.compressedSize = values.compressedSize.value_or(entry.compressedSize);
            entry.localHeaderOffset = values.localHeaderOffset.value_or(entry.localHeaderOffset);
        }
        if (disk != 0 && disk != kZip64Marker16)
            addFinding(Severity::Warning, FindingCode::ZipMultiDisk,
                "record " + displayName(entry.name()) + " says it starts on disk " + std::to_string(disk)
                    + " of a split archive; only single-file archives are supported",
                std::string(entry.name()), at);
        entry.localHeaderOffset += m_offsetBias;

        if (usable)
            checkLocalHeader(entry);
        else
            entry.payloadComplete = false;
        checkEntryMethod(entry);
        addEntry(entry);
        return at + total;
    }

    // The payload starts after the LOCAL header, whose extra field (torch's FB padding) differs
    // from the central one: the data offset can only come from there.
    void checkLocalHeader(ZipEntry& entry)
    {
        const std::uint64_t at = entry.localHeaderOffset;
        if (at + kLocalHeaderSize > m_size || at + kLocalHeaderSize < at) {
            entry.payloadComplete = false;
            addFinding(Severity::Error, FindingCode::RecordTruncated,
                "record " + displayName(entry.name()) + " starts at byte " + formatThousands(at)
                    + " but the file is only " + byteCount(m_size) + " long: the file is truncated",
                std::string(entry.name()), at);
            return;
        }
        if (!signatureAt(at, kLocalHeaderSignature)) {
            entry.payloadComplete = false;
            addFinding(Severity::Error, FindingCode::LocalHeaderMissing,
                "record " + displayName(entry.name())
                    + ": the central directory puts its local header at byte " + formatThousands(at)
                    + ", but there is none there: the file is damaged",
                std::string(entry.name()), at);
            return;
        }
        const auto nameLength = *read<std::uint16_t>(at + 26);
        const auto extraLength = *read<std::uint16_t>(at + 28);
        entry.localExtraLength = extraLength;
        entry.dataOffset = at + kLocalHeaderSize + nameLength + extraLength;

        if (const auto localName = subView(m_bytes, at + kLocalHeaderSize, nameLength)) {
            if (asText(*localName) != entry.name())
                addFinding(Severity::Error, FindingCode::LocalNameMismatch,
                    "record " + displayName(entry.name()) + ": the central directory calls it \""
                        + displayName(entry.name()) + "\" but its local header at byte " + formatThousands(at)
                        + " says \"" + displayName(asText(*localName))
                        + "\". Zip readers disagree on which name to believe, a trick used to hide "
                          "content from scanners: treat this file as hostile",
                    std::string(entry.name()), at);
        }
        const auto localMethod = *read<std::uint16_t>(at + 8);
        if (localMethod != entry.method)
            addFinding(Severity::Warning, FindingCode::LocalHeaderMismatch,
                "record " + displayName(entry.name()) + ": its local header says compression method "
                    + std::to_string(localMethod) + " but the central directory says "
                    + std::to_string(entry.method) + "; using the central directory",
                std::string(entry.name()), at);

        const std::optional<std::uint64_t> dataEnd = checkedAdd(entry.dataOffset, entry.compressedSize);
        if (entry.dataOffset > m_size || !dataEnd || *dataEnd > m_size) {
            entry.payloadComplete = false;
            addFinding(Severity::Error, FindingCode::RecordTruncated,
                "record " + displayName(entry.name()) + " ends at byte "
                    + (dataEnd ? formatThousands(*dataEnd) : std::string("2^64 or beyond"))
                    + " but the file is only " + byteCount(m_size) + " long: the file is truncated",
                std::string(entry.name()), entry.dataOffset);
        }
    }

    void checkEntryMethod(const ZipEntry& entry)
    {
        if (entry.flags & kFlagEncrypted)
            addFinding(Severity::Warning, FindingCode::EncryptedRecord,
                "record " + displayName(entry.name())
                    + " is encrypted; it cannot be read (torch never writes encrypted records)",
                std::string(entry.name()), entry.localHeaderOffset);
        if (entry.method != kMethodStored && entry.method != kMethodDeflate)
            addFinding(Severity::Warning, FindingCode::UnsupportedCompression,
                "record " + displayName(entry.name()) + " uses compression method "
                    + std::to_string(entry.method) + " (" + methodName(entry.method)
                    + "); only stored and deflate records can be read, which is all torch writes",
                std::string(entry.name()), entry.localHeaderOffset);
        if (entry.method == kMethodStored && entry.compressedSize != entry.uncompressedSize)
            addFinding(Severity::Warning, FindingCode::StoredSizeMismatch,
                "record " + displayName(entry.name()) + " is stored uncompressed but records "
                    + byteCount(entry.compressedSize) + " in the archive and "
                    + byteCount(entry.uncompressedSize) + " of content: one of the sizes is wrong",
                std::string(entry.name()), entry.localHeaderOffset);
    }

    void addEntry(const ZipEntry& entry) { entries.push_back(entry); }

    // ---- Recovery from local headers --------------------------------------------------------

    std::uint64_t recoveryStart()
    {
        if (m_offsetBias > 0 && signatureAt(m_offsetBias, kLocalHeaderSignature))
            return m_offsetBias;
        const auto found = asText(m_bytes).find(kLocalHeaderSignatureText);
        return found == std::string_view::npos ? m_size : found;
    }

    // Is `at` where a record boundary may be: the end of the file, a cut inside the next
    // signature, or a zip signature?
    // How surely a record boundary lies at `at`: a zip signature there is sure; the end of the file,
    // or a cut inside what may be the next signature, is only possible.
    enum class Boundary { None, Possible, Sure };

    Boundary boundaryAt(std::uint64_t at) const
    {
        if (at > m_size)
            return Boundary::None;
        const std::uint64_t left = m_size - at;
        if (left >= 4) {
            const auto signature = *read<std::uint32_t>(at);
            const bool known = signature == kLocalHeaderSignature || signature == kCentralHeaderSignature
                || signature == kEndRecordSignature || signature == kZip64EndRecordSignature
                || signature == kDataDescriptorSignature;
            return known ? Boundary::Sure : Boundary::None;
        }
        static constexpr std::uint8_t prefix[] = {'P', 'K'};
        for (std::uint64_t i = 0; i < left && i < 2; ++i) {
            if (m_bytes[at + i] != prefix[i])
                return Boundary::None;
        }
        return Boundary::Possible;
    }

    // Records written with bit 3 (torch writes every non-empty record this way) have zeros in
    // their local sizes; the payload ends at a data descriptor whose recorded compressed size
    // equals the distance from the payload's start. Checking that distance, and that a zip
    // signature (or the end of the file) follows, rules out "PK\7\8" appearing inside tensor data.
    std::optional<DataDescriptor> findDataDescriptor(const ZipEntry& entry, bool zip64Header) const
    {
        const auto text = asText(m_bytes);
        std::uint64_t from = entry.dataOffset;
        while (from < m_size) {
            const auto found = text.find(kDataDescriptorSignatureText, static_cast<std::size_t>(from));
            if (found == std::string_view::npos)
                return std::nullopt;
            const std::uint64_t distance = found - entry.dataOffset;
            std::optional<DataDescriptor> narrow;
            std::optional<DataDescriptor> wide;
            Boundary narrowEnd = Boundary::None;
            Boundary wideEnd = Boundary::None;
            const auto crc = read<std::uint32_t>(found + 4);
            if (const auto size = read<std::uint32_t>(found + 8); crc && size && *size == distance) {
                const auto uncompressed = read<std::uint32_t>(found + 12);
                narrowEnd = boundaryAt(found + 16);
                if (uncompressed && narrowEnd != Boundary::None)
                    narrow = DataDescriptor {*crc, *size, *uncompressed, 16};
            }
            if (const auto size = read<std::uint64_t>(found + 8); crc && size && *size == distance) {
                const auto uncompressed = read<std::uint64_t>(found + 16);
                wideEnd = boundaryAt(found + 24);
                if (uncompressed && wideEnd != Boundary::None)
                    wide = DataDescriptor {*crc, *size, *uncompressed, 24};
            }
            if (narrow && wide) {
                // A small size reads the same in both forms (its high half is zero). Believe the form
                // followed by a real signature, then a stored record's equal sizes, then the header:
                // writers use 64-bit descriptors exactly when the local header has a ZIP64 extra.
                if (narrowEnd != wideEnd)
                    return narrowEnd == Boundary::Sure ? narrow : wide;
                if (entry.method == kMethodStored
                    && (narrow->uncompressedSize == distance) != (wide->uncompressedSize == distance))
                    return narrow->uncompressedSize == distance ? narrow : wide;
                return zip64Header ? wide : narrow;
            }
            if (narrow)
                return narrow;
            if (wide)
                return wide;
            from = found + 1;
        }
        return std::nullopt;
    }

    // Where the next record starts after a data descriptor that begins at `at`, for records whose
    // sizes are known. The descriptor's signature is optional (APPNOTE 4.3.9.3), its sizes are
    // 32 or 64 bits: the form followed by a record boundary wins.
    std::uint64_t afterDescriptor(std::uint64_t at) const
    {
        if (signatureAt(at, kDataDescriptorSignature)) {
            const Boundary narrow = boundaryAt(at + 16);
            const Boundary wide = boundaryAt(at + 24);
            return wide == Boundary::Sure && narrow != Boundary::Sure ? at + 24 : at + 16;
        }
        if (boundaryAt(at + 12) != Boundary::None)
            return at + 12;
        return boundaryAt(at + 20) != Boundary::None ? at + 20 : at;
    }

    void reportCut(const ZipEntry* entry, std::uint64_t headerOffset, std::size_t completeBefore,
        const std::string& what)
    {
        const std::string record = entry ? "record " + displayName(entry->name()) : "the record";
        addFinding(Severity::Error, FindingCode::ZipTruncated,
            "the file ends at byte " + formatThousands(m_size) + ", inside " + record
                + " (local header at byte " + formatThousands(headerOffset) + "; " + what
                + "): the file is truncated. The " + formatThousands(completeBefore) + " record"
                + (completeBefore == 1 ? "" : "s") + " before it " + (completeBefore == 1 ? "is" : "are")
                + " complete",
            entry ? std::string(entry->name()) : std::string(), headerOffset);
    }

    // The records the central directory listed, by local header offset (the first of equal
    // offsets first). Only recovery needs them, and only the ones listed before it starts: the walk
    // moves forward, past every record it adds.
    struct ListedHeader {
        std::uint64_t offset = 0;
        std::uint32_t entry = 0;
    };

    std::vector<ListedHeader> listedHeaders() const
    {
        std::vector<ListedHeader> listed;
        listed.reserve(entries.size());
        for (std::size_t i = 0; i < entries.size(); ++i)
            listed.push_back({entries[i].localHeaderOffset, static_cast<std::uint32_t>(i)});
        std::stable_sort(listed.begin(), listed.end(),
            [](const ListedHeader& a, const ListedHeader& b) { return a.offset < b.offset; });
        return listed;
    }

    static std::optional<std::uint32_t> listedAt(const std::vector<ListedHeader>& listed, std::uint64_t at)
    {
        const auto found = std::lower_bound(listed.begin(), listed.end(), at,
            [](const ListedHeader& header, std::uint64_t offset) { return header.offset < offset; });
        if (found == listed.end() || found->offset != at)
            return std::nullopt;
        return found->entry;
    }

    void recoverFromLocalHeaders(std::uint64_t start)
    {
        const std::vector<ListedHeader> listedHeaders = this->listedHeaders();
        std::uint64_t at = start;
        std::size_t recovered = 0;
        std::size_t complete = 0;
        while (entries.size() < kMaxEntries) {
            if (at == m_size) {
                addFinding(Severity::Error, FindingCode::ZipTruncated,
                    "the file ends at byte " + formatThousands(m_size)
                        + ", right after a record: the central directory and the end records are "
                          "missing, so the file is truncated. "
                        + formatThousands(complete) + " complete record" + (complete == 1 ? " was" : "s were")
                        + " found before the cut",
                    {}, m_size);
                break;
            }
            if (m_size - at < 4) {
                reportCut(nullptr, at, complete, "not even its signature is complete");
                break;
            }
            const auto signature = *read<std::uint32_t>(at);
            if (signature == kCentralHeaderSignature || signature == kEndRecordSignature
                || signature == kZip64EndRecordSignature || signature == kZip64LocatorSignature) {
                // The local records end where the central directory begins. With the end record
                // missing, the cut lies somewhere after this point.
                if (m_endRecordMissing)
                    addFinding(Severity::Error, FindingCode::ZipTruncated,
                        "the file ends at byte " + formatThousands(m_size)
                            + ", after the start of the central directory "
                              "(the zip's table of contents, at byte "
                            + formatThousands(at)
                            + ") but without the end record that closes it: the file is truncated (or its "
                              "end is "
                              "damaged). All "
                            + formatThousands(complete) + " record" + (complete == 1 ? "" : "s")
                            + " before it " + (complete == 1 ? "is" : "are") + " complete",
                        {}, m_size);
                break;
            }
            if (signature != kLocalHeaderSignature) {
                addFinding(Severity::Warning, FindingCode::ZipUnexpectedData,
                    "at byte " + formatThousands(at)
                        + " there is neither a local file header nor a central directory: the archive "
                          "is damaged there, and no records after that point can be found",
                    {}, at);
                break;
            }
            if (const auto known = listedAt(listedHeaders, at)) {
                // Already listed by the (partial) central directory: step over it using its sizes.
                const ZipEntry& listed = entries[*known];
                if (!listed.payloadComplete)
                    break;
                const std::uint64_t dataEnd = listed.dataOffset + listed.compressedSize;
                at = (listed.flags & kFlagDataDescriptor) ? afterDescriptor(dataEnd) : dataEnd;
                ++complete;
                continue;
            }
            if (m_size - at < kLocalHeaderSize) {
                reportCut(nullptr, at, complete, "its 30-byte local header is cut off");
                break;
            }
            ZipEntry entry;
            entry.fromCentralDirectory = false;
            entry.localHeaderOffset = at;
            entry.flags = *read<std::uint16_t>(at + 6);
            entry.method = *read<std::uint16_t>(at + 8);
            entry.crc32 = *read<std::uint32_t>(at + 14);
            const std::uint32_t compressed32 = *read<std::uint32_t>(at + 18);
            const std::uint32_t uncompressed32 = *read<std::uint32_t>(at + 22);
            entry.compressedSize = compressed32;
            entry.uncompressedSize = uncompressed32;
            const auto nameLength = *read<std::uint16_t>(at + 26);
            entry.localExtraLength = *read<std::uint16_t>(at + 28);
            const auto name = subView(m_bytes, at + kLocalHeaderSize, nameLength);
            if (!name) {
                reportCut(nullptr, at, complete, "its name is cut off");
                break;
            }
            entry.setName(asText(*name));
            entry.dataOffset = at + kLocalHeaderSize + nameLength + entry.localExtraLength;
            const auto extra = subView(m_bytes, at + kLocalHeaderSize + nameLength, entry.localExtraLength);
            if (!extra) {
                entry.payloadComplete = false;
                entry.compressedSize = entry.uncompressedSize = 0;
                reportCut(&entry, at, complete, "its header's extra field is cut off");
                addEntry(entry);
                ++recovered;
                break;
            }
            // A local ZIP64 extra holds both sizes whenever either 32-bit field is the marker.
            const bool zip64Header = hasZip64Extra(*extra);
            if (compressed32 == kZip64Marker32 || uncompressed32 == kZip64Marker32) {
                const auto values = readZip64Extra(*extra, true, true, false);
                entry.uncompressedSize = values.uncompressedSize.value_or(entry.uncompressedSize);
                entry.compressedSize = values.compressedSize.value_or(entry.compressedSize);
            }

            std::uint64_t next = 0;
            const bool sizesDeferred = (entry.flags & kFlagDataDescriptor) != 0;
            if (sizesDeferred && entry.compressedSize == 0) {
                const auto descriptor = findDataDescriptor(entry, zip64Header);
                if (!descriptor) {
                    entry.payloadComplete = false;
                    const std::uint64_t have = entry.dataOffset < m_size ? m_size - entry.dataOffset : 0;
                    reportCut(&entry, at, complete,
                        "its data starts at byte " + formatThousands(entry.dataOffset) + " and "
                            + byteCount(have) + " of it are present, but its data descriptor is missing");
                    addEntry(entry);
                    ++recovered;
                    break;
                }
                entry.crc32 = descriptor->crc32;
                entry.compressedSize = descriptor->compressedSize;
                entry.uncompressedSize = descriptor->uncompressedSize;
                next = entry.dataOffset + descriptor->compressedSize + descriptor->length;
            } else {
                if (entry.dataOffset > m_size || entry.compressedSize > m_size - entry.dataOffset) {
                    entry.payloadComplete = false;
                    const std::uint64_t dataEnd = entry.dataOffset + entry.compressedSize;
                    reportCut(&entry, at, complete,
                        dataEnd < entry.dataOffset
                            ? "its recorded size of " + byteCount(entry.compressedSize) + " is impossible"
                            : "it ends at byte " + formatThousands(dataEnd) + " but the file is only "
                                + byteCount(m_size) + " long");
                    addEntry(entry);
                    ++recovered;
                    break;
                }
                const std::uint64_t dataEnd = entry.dataOffset + entry.compressedSize;
                // Sizes given although a descriptor follows: step over the descriptor too.
                next = sizesDeferred ? afterDescriptor(dataEnd) : dataEnd;
            }
            checkEntryMethod(entry);
            addEntry(entry);
            ++recovered;
            ++complete;
            at = next;
        }
        if (entries.size() >= kMaxEntries)
            addFinding(Severity::Error, FindingCode::ZipTooManyRecords,
                "more than " + formatThousands(kMaxEntries) + " records; the rest are not listed", {}, at);
        if (recovered > 0)
            addFinding(Severity::Warning, FindingCode::ZipRecoveredRecords,
                formatThousands(recovered) + " record" + (recovered == 1 ? " was" : "s were")
                    + " found by walking local headers rather than through the central directory",
                {}, start);
    }

    ByteView m_bytes;
    std::uint64_t m_size;
    std::map<FindingCode, std::size_t> m_findingCounts;
    // What the zip's own offsets count from: non-zero when data was written before the archive
    // and its offsets were not adjusted (torch.save into an open file after other bytes).
    std::uint64_t m_offsetBias = 0;
    bool m_endRecordMissing = false;
};

std::atomic<std::uint64_t> g_openCount {0};

ReadError recordError(const ZipEntry& entry, std::string message)
{
    return ReadError {"record " + displayName(entry.name()) + ": " + std::move(message), entry.dataOffset,
        std::string(entry.name())};
}

} // namespace

std::uint64_t ZipArchive::openCount()
{
    return g_openCount.load(std::memory_order_relaxed);
}

ZipArchive ZipArchive::open(std::shared_ptr<const MappedFile> file)
{
    ZipArchive archive;
    archive.m_file = std::move(file);
    if (!archive.m_file) {
        archive.m_findings.push_back({Severity::Error, FindingCode::ZipNoFile,
            "no file was given to the zip reader", {}, std::nullopt});
        return archive;
    }
    ++g_openCount;
    ZipParser parser(archive.m_file->bytes());
    parser.readRecords();
    const std::vector<ZipEntry>& entries = parser.entries;
    // Index the names, which also finds the duplicates (a name table built once serves both):
    // every later record with a name already in the table, with the first record of that name.
    struct Repeat {
        std::uint32_t first = 0;
        std::uint32_t entry = 0;
    };
    std::vector<Repeat> repeats;
    std::size_t slots = 16;
    while (slots < entries.size() * 2)
        slots *= 2;
    archive.m_nameSlots.assign(slots, {});
    const std::size_t mask = slots - 1;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string_view name = entries[i].name();
        const std::size_t hash = std::hash<std::string_view> {}(name);
        for (std::size_t at = hash & mask;; at = (at + 1) & mask) {
            NameSlot& slot = archive.m_nameSlots[at];
            if (slot.entryPlusOne == 0) {
                slot = {static_cast<std::uint32_t>(hash), static_cast<std::uint32_t>(i + 1)};
                break;
            }
            if (slot.hash == static_cast<std::uint32_t>(hash)
                && entries[slot.entryPlusOne - 1].name() == name) {
                // Keeps the first of duplicates.
                repeats.push_back({slot.entryPlusOne - 1, static_cast<std::uint32_t>(i)});
                break;
            }
        }
    }
    // Grouped by first record; within a group the repeats stay in record order (a hostile file
    // may repeat many names many times, so no search per repeat).
    std::stable_sort(
        repeats.begin(), repeats.end(), [](const Repeat& a, const Repeat& b) { return a.first < b.first; });
    std::vector<ZipParser::DuplicateName> duplicates;
    for (const Repeat& repeat : repeats) {
        if (!duplicates.empty() && duplicates.back().first == repeat.first)
            ++duplicates.back().count;
        else
            duplicates.push_back({repeat.first, repeat.entry, 2});
    }
    parser.reportDuplicates(std::move(duplicates));
    parser.finish();
    archive.m_entries = std::move(parser.entries);
    archive.m_findings = std::move(parser.findings);
    archive.m_centralDirectoryFound = parser.centralDirectoryFound;
    archive.m_archiveStart = parser.archiveStart;
    // The names, which point into the central directory, copied into one block of the archive's
    // own: the reader gives the directory's pages back once it is parsed, and a look-up per
    // storage read the names there again, page by page, while the records were built (6.8 MB of
    // the file resident at the peak of info --json of 100,000 tensors, against 2.3 MB of names).
    // Names of a hostile size (65,535 bytes each, a directory of gigabytes) stay in the file.
    constexpr std::size_t kMostNameBytesCopied = std::size_t(64) << 20;
    std::size_t nameBytes = 0;
    for (const ZipEntry& entry : archive.m_entries)
        nameBytes += entry.name().size();
    if (nameBytes == 0 || nameBytes > kMostNameBytesCopied)
        return archive;
    archive.m_names = std::shared_ptr<char[]>(new char[nameBytes]);
    char* next = archive.m_names.get();
    for (ZipEntry& entry : archive.m_entries) {
        const std::string_view name = entry.name();
        std::copy(name.begin(), name.end(), next);
        entry.setName(std::string_view(next, name.size()));
        next += name.size();
    }
    return archive;
}

const ZipEntry* ZipArchive::find(std::string_view fullName) const
{
    if (m_nameSlots.empty())
        return nullptr;
    const std::size_t mask = m_nameSlots.size() - 1;
    const std::size_t hash = std::hash<std::string_view> {}(fullName);
    for (std::size_t at = hash & mask;; at = (at + 1) & mask) {
        const NameSlot& slot = m_nameSlots[at];
        if (slot.entryPlusOne == 0)
            return nullptr;
        if (slot.hash == static_cast<std::uint32_t>(hash)
            && m_entries[slot.entryPlusOne - 1].name() == fullName)
            return &m_entries[slot.entryPlusOne - 1];
    }
}

std::optional<ByteView> ZipArchive::storedPayload(const ZipEntry& entry) const
{
    if (!m_file || entry.method != kMethodStored || (entry.flags & kFlagEncrypted) || !entry.payloadComplete)
        return std::nullopt;
    return subView(m_file->bytes(), entry.dataOffset, entry.compressedSize);
}

Expected<ByteBuffer> ZipArchive::readPayload(const ZipEntry& entry, std::uint64_t maxSize) const
{
    if (!m_file)
        return recordError(entry, "the archive has no file");
    if (!entry.payloadComplete)
        return recordError(entry,
            "its data is not complete in the file (it is truncated or damaged), so it "
            "cannot be read");
    if (entry.flags & kFlagEncrypted)
        return recordError(entry, "it is encrypted and cannot be read");
    if (entry.uncompressedSize > maxSize)
        return recordError(entry,
            "it is " + byteCount(entry.uncompressedSize) + ", more than the " + byteCount(maxSize)
                + " allowed for it here");
    const auto compressed = subView(m_file->bytes(), entry.dataOffset, entry.compressedSize);
    if (!compressed)
        return recordError(entry, "its data lies outside the file");
    if (entry.method == kMethodStored) {
        if (entry.compressedSize > maxSize)
            return recordError(entry,
                "it is " + byteCount(entry.compressedSize) + ", more than the " + byteCount(maxSize)
                    + " allowed for it here");
        return ByteBuffer(compressed->begin(), compressed->end());
    }
    if (entry.method != kMethodDeflate)
        return recordError(entry,
            std::string("it uses compression method ") + std::to_string(entry.method) + " ("
                + methodName(entry.method) + "), which this tool cannot read");
    auto inflated = inflateRaw(*compressed, entry.uncompressedSize);
    if (!inflated)
        return recordError(entry, inflated.error().message);
    return inflated;
}

Status ZipArchive::forEachPayloadChunk(
    const ZipEntry& entry, const std::function<Status(ByteView)>& sink, std::uint64_t stopAfter) const
{
    if (!m_file)
        return recordError(entry, "the archive has no file");
    if (!entry.payloadComplete)
        return recordError(entry,
            "its data is not complete in the file (it is truncated or damaged), so it "
            "cannot be read");
    if (entry.flags & kFlagEncrypted)
        return recordError(entry, "it is encrypted and cannot be read");
    const auto compressed = subView(m_file->bytes(), entry.dataOffset, entry.compressedSize);
    if (!compressed)
        return recordError(entry, "its data lies outside the file");
    if (entry.method == kMethodStored) {
        constexpr std::uint64_t kSlice = 64ull << 20;
        const std::uint64_t length = std::min<std::uint64_t>(compressed->size(), stopAfter);
        for (std::uint64_t done = 0; done < length; done += kSlice)
            if (Status failed = sink(compressed->subspan(static_cast<std::size_t>(done),
                    static_cast<std::size_t>(std::min(kSlice, length - done)))))
                return failed;
        return std::nullopt;
    }
    if (entry.method != kMethodDeflate)
        return recordError(entry,
            std::string("it uses compression method ") + std::to_string(entry.method) + " ("
                + methodName(entry.method) + "), which this tool cannot read");
    bool sinkFailed = false;
    Status status = inflateRawChunks(
        *compressed, entry.uncompressedSize,
        [&](ByteView piece) -> Status {
            Status failed = sink(piece);
            sinkFailed = failed.has_value();
            return failed;
        },
        stopAfter);
    if (status && !sinkFailed)
        return recordError(entry, status->message);
    return status;
}

std::optional<Finding> ZipArchive::verifyCrc(const ZipEntry& entry, std::uint64_t maxSize) const
{
    std::uint32_t actual = 0;
    if (const auto stored = storedPayload(entry)) {
        actual = crc32Of(*stored);
    } else if (entry.method == kMethodDeflate) {
        // Inflated piece by piece: a deflated storage of any size is checked in flat memory.
        (void)maxSize;
        if (Status failed = forEachPayloadChunk(entry, [&](ByteView piece) -> Status {
                actual = crc32Update(actual, piece.data(), piece.size());
                return std::nullopt;
            }))
            return Finding {Severity::Error, FindingCode::RecordUnreadable, failed->message,
                std::string(entry.name()), entry.dataOffset};
    } else {
        const auto payload = readPayload(entry, maxSize);
        if (!payload)
            return Finding {Severity::Error, FindingCode::RecordUnreadable, payload.error().message,
                std::string(entry.name()), entry.dataOffset};
        actual = crc32Of(*payload);
    }
    if (actual == entry.crc32)
        return std::nullopt;
    std::string message = "record " + displayName(entry.name()) + ": its bytes have CRC-32 " + hex32(actual)
        + " but the archive records " + hex32(entry.crc32) + ": the data changed after it was written";
    if (entry.crc32 == 0)
        message += " (or it was saved with CRC computation turned off, "
                   "torch.serialization.set_crc32_options(False))";
    return Finding {Severity::Error, FindingCode::CrcMismatch, std::move(message), std::string(entry.name()),
        entry.dataOffset};
}

} // namespace ckpt
