// SPDX-License-Identifier: MIT
// Says what a file is (torch zip, legacy stream, tar, TorchScript, safetensors, DCP, gzip, an LFS
// pointer, HTML, ...) from its first and last few kilobytes, and why, for a person.
//
// Why one file of about 650 lines: each container kind is a short recogniser and most of the length
// is the messages; a recogniser needs the same windowing and byte helpers as the others, and the
// order in which they are tried is itself the logic, visible here in one place.
#include "core/format/formatsniffer.h"
#include "core/base/textformat.h"
#include "core/format/zipformat.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace ckpt {

namespace {

// How far the sniffer looks. It runs on every file the user opens, possibly many gigabytes over
// a network mount, so it touches only the first and last few kilobytes (plus a bounded search for a
// zip that starts after other data).
constexpr std::size_t kTextWindow = 4096;
constexpr std::uint64_t kZipEndSearch = zipformat::kEndRecordSize + zipformat::kMaxCommentLength;
constexpr std::uint64_t kZipStartSearch = std::uint64_t {16} << 20;

std::string byteCount(std::uint64_t value)
{
    return formatThousands(value) + (value == 1 ? " byte" : " bytes");
}

bool startsWith(ByteView bytes, std::string_view prefix, std::uint64_t at = 0)
{
    const auto view = subView(bytes, at, prefix.size());
    return view && asText(*view) == prefix;
}

ByteView head(ByteView bytes, std::size_t length)
{
    return bytes.first(std::min(bytes.size(), length));
}

// A printable rendering of the first bytes, for descriptions of files nobody recognises.
std::string quotedStart(ByteView bytes, std::size_t length = 24)
{
    std::string text;
    for (const auto byte : head(bytes, length)) {
        if (byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\') {
            text += static_cast<char>(byte);
        } else if (byte == '\n') {
            text += "\\n";
        } else if (byte == '\t') {
            text += "\\t";
        } else if (byte == '\r') {
            text += "\\r";
        } else {
            static constexpr char digits[] = "0123456789abcdef";
            text += "\\x";
            text += digits[byte >> 4];
            text += digits[byte & 0xf];
        }
    }
    return "\"" + text + "\"";
}

// The first member's name: a NUL-padded field of 100 bytes at the start of a tar header.
std::string tarMemberName(ByteView bytes)
{
    std::string name;
    for (const auto byte : head(bytes, 100)) {
        if (byte == 0)
            break;
        name += static_cast<char>(byte);
    }
    return name;
}

// ---- Pickles ------------------------------------------------------------------------------------

// The legacy format's first pickle is the number 0x1950a86a20f9469cfc6c. torch writes it with
// protocol 2 (§4.1 of torch-format.md): PROTO 2, LONG1 of 10 bytes, STOP.
constexpr std::array<std::uint8_t, 15> kLegacyMagicPickle
    = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
constexpr std::array<std::uint8_t, 10> kLegacyMagicLittleEndian
    = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
// 0x1950a86a20f9469cfc6c in decimal, as protocol 0/1 writes a long ("L<digits>L\n").
constexpr std::string_view kLegacyMagicDecimal = "L119547037146038801333356";

// `_legacy_save` takes a pickle_protocol argument, so the magic number may also come as protocol
// 3..5 (with a FRAME) or in protocol 0/1 text form. Returns the protocol when it matches.
std::optional<int> legacyMagicProtocol(ByteView bytes)
{
    if (bytes.size() >= kLegacyMagicPickle.size()
        && std::equal(kLegacyMagicPickle.begin(), kLegacyMagicPickle.end(), bytes.begin()))
        return 2;
    if (bytes.size() >= 2 && bytes[0] == 0x80 && bytes[1] >= 2 && bytes[1] <= 5) {
        std::uint64_t at = 2;
        if (bytes.size() > at && bytes[at] == 0x95) // FRAME + u64 length
            at += 9;
        if (bytes.size() > at + 2 && bytes[at] == 0x8a && bytes[at + 1] == 0x0a) {
            const auto number = subView(bytes, at + 2, kLegacyMagicLittleEndian.size());
            if (number && std::equal(number->begin(), number->end(), kLegacyMagicLittleEndian.begin()))
                return bytes[1];
        }
        return std::nullopt;
    }
    if (startsWith(bytes, kLegacyMagicDecimal)
        && (startsWith(bytes, "L\n", kLegacyMagicDecimal.size())
            || startsWith(bytes, "\n", kLegacyMagicDecimal.size())))
        return 0;
    return std::nullopt;
}

// Protocol 0 and 1 pickles have no header: they start directly with an opcode, and protocol 0
// opcodes are printable characters, so a text file may start with one by chance. This walks
// the first opcodes syntactically (no values, no execution) and accepts the stream only if
// several opcodes in a row are well formed.
class OldPickleProbe {
public:
    explicit OldPickleProbe(ByteView bytes)
        : m_bytes(head(bytes, kTextWindow))
    { }

    bool looksLikePickle()
    {
        if (m_bytes.empty() || !isPlausibleFirstOpcode(m_bytes[0]))
            return false;
        int opcodes = 0;
        bool structural = false;
        while (m_at < m_bytes.size()) {
            const std::uint8_t opcode = m_bytes[m_at++];
            if (opcode == '.')
                return opcodes >= 2 && structural;
            const auto step = skipArgument(opcode);
            if (step == Step::Invalid)
                return false;
            if (step == Step::OutOfWindow)
                break;
            ++opcodes;
            if (std::string_view("(c]}ldtsuaeR").find(static_cast<char>(opcode)) != std::string_view::npos)
                structural = true;
        }
        // Reached the end of the window (or of a short file) without an error.
        return opcodes >= 4 && structural;
    }

private:
    enum class Step { Ok, Invalid, OutOfWindow };

    static bool isPlausibleFirstOpcode(std::uint8_t opcode)
    {
        return std::string_view("(c]})NISVFLiJKMTUXG").find(static_cast<char>(opcode))
            != std::string_view::npos;
    }

    // A newline-terminated argument of printable text; `check` validates its characters.
    template<class Check> Step skipLine(Check check)
    {
        const std::uint64_t start = m_at;
        while (m_at < m_bytes.size()) {
            const std::uint8_t byte = m_bytes[m_at++];
            if (byte == '\n')
                return m_at - 1 > start || m_allowEmptyLine ? Step::Ok : Step::Invalid;
            if (!check(byte))
                return Step::Invalid;
        }
        return Step::OutOfWindow;
    }

    Step skipFixed(std::uint64_t length)
    {
        if (m_bytes.size() - m_at < length) {
            m_at = m_bytes.size();
            return Step::OutOfWindow;
        }
        m_at += length;
        return Step::Ok;
    }

    Step skipCounted(std::uint64_t lengthBytes)
    {
        std::uint64_t length = 0;
        for (std::uint64_t i = 0; i < lengthBytes; ++i) {
            if (m_at + i >= m_bytes.size())
                return Step::OutOfWindow;
            length |= static_cast<std::uint64_t>(m_bytes[m_at + i]) << (8 * i);
        }
        m_at += lengthBytes;
        return skipFixed(length);
    }

    Step skipArgument(std::uint8_t opcode)
    {
        m_allowEmptyLine = false;
        const auto printable = [](std::uint8_t byte) { return byte >= 0x20 && byte < 0x7f; };
        const auto identifier = [](std::uint8_t byte) {
            return std::isalnum(byte) || byte == '_' || byte == '.' || byte == '-';
        };
        const auto number = [](std::uint8_t byte) {
            return std::isdigit(byte) || byte == '-' || byte == '+' || byte == 'L' || byte == '.'
                || byte == 'e' || byte == 'E' || byte == 'n' || byte == 'a' || byte == 'i' || byte == 'f';
        };
        switch (opcode) {
        case '(':
        case ')':
        case '0':
        case '1':
        case '2':
        case 'N':
        case 'R':
        case 'Q':
        case 'a':
        case 'b':
        case 'd':
        case 'e':
        case 'l':
        case 'o':
        case 's':
        case 't':
        case 'u':
        case '}':
        case ']':
            return Step::Ok;
        case 'I':
        case 'L':
        case 'F':
            return skipLine(number);
        case 'p':
        case 'g':
            return skipLine([](std::uint8_t byte) { return std::isdigit(byte) != 0; });
        case 'S':
            if (m_at < m_bytes.size() && m_bytes[m_at] != '\'' && m_bytes[m_at] != '"')
                return Step::Invalid;
            return skipLine(printable);
        case 'V':
            // raw-unicode-escape text: pickle escapes only \0, \n, \r, \x1a (and \\); every other
            // byte, control characters and latin-1 ones included, is written as it is (bytes
            // pickled at protocol 0 are _codecs.encode of such text: pickle.dump of a tensor).
            m_allowEmptyLine = true;
            return skipLine([](std::uint8_t byte) { return byte != 0 && byte != '\r' && byte != 0x1a; });
        case 'P':
            m_allowEmptyLine = true;
            return skipLine([](std::uint8_t byte) { return byte >= 0x20 || byte == '\t'; });
        case 'c':
        case 'i': {
            const Step module = skipLine(identifier);
            return module == Step::Ok ? skipLine(identifier) : module;
        }
        case 'J':
        case 'r':
        case 'j':
            return skipFixed(4);
        case 'K':
        case 'q':
        case 'h':
            return skipFixed(1);
        case 'M':
            return skipFixed(2);
        case 'G':
            return skipFixed(8);
        case 'T':
        case 'X':
            return skipCounted(4);
        case 'U':
            return skipCounted(1);
        default:
            return Step::Invalid;
        }
    }

    ByteView m_bytes;
    std::uint64_t m_at = 0;
    bool m_allowEmptyLine = false;
};

// ---- Text ---------------------------------------------------------------------------------------

// Is the start of the file text (UTF-8 without control characters other than whitespace)? A
// multi-byte sequence cut by the window end still counts as text.
bool looksLikeText(ByteView bytes)
{
    const ByteView window = head(bytes, kTextWindow);
    if (window.empty())
        return false;
    std::size_t i = 0;
    while (i < window.size()) {
        const std::uint8_t byte = window[i];
        if (byte < 0x80) {
            if (byte < 0x20 && byte != '\n' && byte != '\r' && byte != '\t' && byte != '\f')
                return false;
            if (byte == 0x7f)
                return false;
            ++i;
            continue;
        }
        std::size_t length = 0;
        if ((byte & 0xe0) == 0xc0 && byte >= 0xc2)
            length = 2;
        else if ((byte & 0xf0) == 0xe0)
            length = 3;
        else if ((byte & 0xf8) == 0xf0 && byte <= 0xf4)
            length = 4;
        else
            return false;
        for (std::size_t k = 1; k < length; ++k) {
            if (i + k >= window.size())
                return window.size() < bytes.size(); // cut by the window, not by the file
            if ((window[i + k] & 0xc0) != 0x80)
                return false;
        }
        i += length;
    }
    return true;
}

ByteView skipBomAndSpace(ByteView bytes)
{
    ByteView text = head(bytes, kTextWindow);
    if (startsWith(text, "\xef\xbb\xbf"))
        text = text.subspan(3);
    while (!text.empty() && std::isspace(text[0]))
        text = text.subspan(1);
    return text;
}

bool startsWithIgnoringCase(ByteView bytes, std::string_view prefix)
{
    if (bytes.size() < prefix.size())
        return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(bytes[i]) != std::tolower(static_cast<unsigned char>(prefix[i])))
            return false;
    }
    return true;
}

bool containsText(ByteView bytes, std::string_view needle)
{
    const auto text = asText(head(bytes, kTextWindow));
    return text.find(needle) != std::string_view::npos;
}

// The value of a "key value" line of a Git LFS pointer.
std::string lfsField(ByteView bytes, std::string_view key)
{
    const auto text = asText(head(bytes, 1024));
    std::size_t at = 0;
    while (at < text.size()) {
        const auto end = std::min(text.find('\n', at), text.size());
        const auto line = text.substr(at, end - at);
        if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ')
            return std::string(line.substr(key.size() + 1));
        at = end + 1;
    }
    return {};
}

// ---- Zips ---------------------------------------------------------------------------------------

constexpr std::string_view kLocalHeader = zipformat::kLocalHeaderSignatureText;
constexpr std::string_view kCentralHeader = zipformat::kCentralHeaderSignatureText;
constexpr std::string_view kEndRecord = zipformat::kEndRecordSignatureText;
constexpr std::string_view kZip64EndRecord = zipformat::kZip64EndRecordSignatureText;

// A local header that a zip writer could have produced: sane version, a known method and a
// printable name. Random data contains "PK\3\4" by chance now and then; this filters it out.
bool plausibleLocalHeader(ByteView bytes, std::uint64_t at)
{
    const auto version = readLittleEndian<std::uint16_t>(bytes, at + 4);
    const auto method = readLittleEndian<std::uint16_t>(bytes, at + 8);
    const auto nameLength = readLittleEndian<std::uint16_t>(bytes, at + 26);
    if (!version || !method || !nameLength)
        return false;
    if ((*version & 0xff) > 63 || *nameLength == 0)
        return false;
    if (*method != 0 && *method != 8 && *method != 12 && *method != 14 && *method != 93 && *method != 95)
        return false;
    const auto name = subView(bytes, at + 30, *nameLength);
    if (!name)
        return false;
    return std::all_of(
        name->begin(), name->end(), [](std::uint8_t byte) { return byte >= 0x20 && byte != 0x7f; });
}

struct EmbeddedZip {
    std::uint64_t start = 0;
    // Whether the zip's own offsets count from its start (as when torch.save writes into an open
    // file after other bytes) rather than from the file's start (zipfile's append mode).
    bool offsetsFromZipStart = false;
};

// Where the zip that ends this file starts, from its end-of-central-directory record.
std::optional<EmbeddedZip> zipStartFromEnd(ByteView bytes)
{
    if (bytes.size() < zipformat::kEndRecordSize)
        return std::nullopt;
    const std::uint64_t lowest = bytes.size() > kZipEndSearch ? bytes.size() - kZipEndSearch : 0;
    for (std::uint64_t at = bytes.size() - zipformat::kEndRecordSize + 1; at-- > lowest;) {
        if (!startsWith(bytes, kEndRecord, at))
            continue;
        const auto entries = readLittleEndian<std::uint16_t>(bytes, at + 10);
        const auto cdSize = readLittleEndian<std::uint32_t>(bytes, at + 12);
        const auto cdOffset = readLittleEndian<std::uint32_t>(bytes, at + 16);
        if (!entries || !cdSize || !cdOffset || *entries == 0)
            continue;
        // The central directory ends where the ZIP64 end records or this record begin.
        std::uint64_t cdEnd = at;
        constexpr std::uint64_t kZip64Tail = zipformat::kZip64LocatorSize + zipformat::kZip64EndRecordSize;
        if (at >= kZip64Tail
            && startsWith(bytes, zipformat::kZip64LocatorSignatureText, at - zipformat::kZip64LocatorSize)
            && startsWith(bytes, kZip64EndRecord, at - kZip64Tail))
            cdEnd = at - kZip64Tail;
        if (*cdSize == zipformat::kZip64Marker32 || *cdSize > cdEnd)
            continue;
        const std::uint64_t cdStart = cdEnd - *cdSize;
        if (!startsWith(bytes, kCentralHeader, cdStart))
            continue;
        const auto firstLocal = readLittleEndian<std::uint32_t>(bytes, cdStart + 42);
        if (!firstLocal)
            continue;
        // Offsets in the zip count from the zip's start; the difference is what comes before it.
        const std::uint64_t recordedCdOffset = *cdOffset == zipformat::kZip64Marker32 ? cdStart : *cdOffset;
        if (recordedCdOffset > cdStart)
            continue;
        const std::uint64_t bias = cdStart - recordedCdOffset;
        if (bias > 0 && startsWith(bytes, kLocalHeader, bias + *firstLocal))
            return EmbeddedZip {bias + *firstLocal, true};
        if (startsWith(bytes, kLocalHeader, *firstLocal))
            return EmbeddedZip {*firstLocal, false};
    }
    return std::nullopt;
}

std::optional<std::uint64_t> zipStartByScanning(ByteView bytes)
{
    const ByteView window = head(bytes, kZipStartSearch);
    const auto text = asText(window);
    for (std::size_t at = text.find(kLocalHeader); at != std::string_view::npos;
         at = text.find(kLocalHeader, at + 1)) {
        if (plausibleLocalHeader(bytes, at))
            return at;
    }
    return std::nullopt;
}

ContainerGuess guess(ContainerKind kind, std::string description)
{
    return ContainerGuess {kind, std::move(description)};
}

} // namespace

ContainerGuess sniffContainer(ByteView fileBytes)
{
    const ByteView bytes = fileBytes;
    const std::uint64_t size = bytes.size();
    const std::string sizeText = byteCount(size);

    if (size == 0)
        return guess(ContainerKind::Empty,
            "an empty file (0 bytes): nothing was ever written to it, or a save, "
            "copy or download failed; there is no checkpoint to read");

    if (startsWith(bytes, kLocalHeader))
        return guess(ContainerKind::TorchZip,
            "a zip archive (" + sizeText
                + "), the container torch.save has written since PyTorch 1.6 "
                  "and torch.jit.save writes for TorchScript");
    if (startsWith(bytes, kEndRecord) && size <= kZipEndSearch)
        return guess(ContainerKind::Unknown,
            "an empty zip archive (" + sizeText + "): it has an end record but no records at all");

    if (startsWith(bytes, "PYTORCH1"))
        return guess(ContainerKind::PreviewPytorch1,
            "a checkpoint in the PyTorch 1.0-preview format (\"PYTORCH1\"), which no released PyTorch "
            "can read: it has to be re-saved with the preview build that wrote it");
    if (startsWith(bytes, "PTMF", 4))
        return guess(ContainerKind::MobileFlatbuffer,
            "a PyTorch Mobile flatbuffer model (\"PTMF\" at byte 4, " + sizeText
                + "), written by _save_for_lite_interpreter; it is not a zip and holds no pickles");

    if (const auto protocol = legacyMagicProtocol(bytes)) {
        std::string description = "a PyTorch legacy checkpoint (" + sizeText
            + "): the stream format torch.save wrote before 1.6 or with _use_new_zipfile_serialization=False";
        if (*protocol != 2)
            description += " (its pickles use protocol " + std::to_string(*protocol) + ")";
        return guess(ContainerKind::TorchLegacy, std::move(description));
    }

    if (startsWith(bytes, "ustar", 257)) {
        const std::string member = tarMemberName(bytes);
        static constexpr std::array<std::string_view, 4> torchMembers
            = {"sys_info", "pickle", "tensors", "storages"};
        const bool torchLayout
            = std::find(torchMembers.begin(), torchMembers.end(), member) != torchMembers.end();
        if (torchLayout)
            return guess(ContainerKind::TorchTar,
                "a tar archive (" + sizeText
                    + ") in the PyTorch 0.1.x checkpoint layout (members sys_info, pickle, tensors, "
                      "storages)");
        return guess(ContainerKind::Tar,
            "a tar archive (" + sizeText + ") whose first member is \"" + member
                + "\", not sys_info: not the PyTorch 0.1.x layout but a bundle of files (an AllenNLP "
                  "model.tar.gz or a NeMo .nemo), whose checkpoint members are read one by one");
    }

    if (startsWith(bytes, "\x1f\x8b"))
        return guess(ContainerKind::Gzip,
            "gzip-compressed data (" + sizeText
                + "), not a checkpoint itself: decompress it first (gunzip -k, or tar -xzf for a .tar.gz) "
                  "and open what comes out");
    if (startsWith(bytes, "\x89PNG\r\n\x1a\n"))
        return guess(ContainerKind::Png, "a PNG image (" + sizeText + "), not a PyTorch checkpoint");
    if (startsWith(bytes, "\xff\xd8\xff"))
        return guess(ContainerKind::Jpeg, "a JPEG image (" + sizeText + "), not a PyTorch checkpoint");
    // HDF5 allows a user block before the signature, at 0, 512, 1024, 2048, ...
    for (std::uint64_t at = 0; at + 8 <= size && at <= (1u << 20); at = at == 0 ? 512 : at * 2) {
        if (startsWith(bytes, "\x89HDF\r\n\x1a\n", at))
            return guess(ContainerKind::Hdf5,
                "an HDF5 file (" + sizeText
                    + "), not a PyTorch checkpoint: probably a Keras/TensorFlow .h5 model or a data set; "
                      "open it with h5py or Keras");
    }

    const ByteView textStart = skipBomAndSpace(bytes);
    if (startsWith(textStart, "version https://git-lfs.github.com/spec/")
        || startsWith(textStart, "version https://hawser.github.com/spec/")) {
        std::string description = "a Git LFS pointer (" + sizeText + "), not the checkpoint itself";
        const std::string realSize = lfsField(textStart, "size");
        const std::string oid = lfsField(textStart, "oid");
        if (!realSize.empty()
            && std::all_of(realSize.begin(), realSize.end(), [](char c) { return c >= '0' && c <= '9'; })
            && realSize.size() < 20)
            description += ": it stands in for a file of " + byteCount(std::stoull(realSize));
        if (!oid.empty())
            description += " (" + oid.substr(0, 20) + (oid.size() > 20 ? "…" : "") + ")";
        description
            += ". Fetch the real file with `git lfs pull` in the repository it came from (or download "
               "it through the hosting site's LFS/raw link)";
        return guess(ContainerKind::GitLfsPointer, std::move(description));
    }

    // safetensors: u64 little-endian header length N, then N bytes of JSON starting with '{'.
    if (const auto headerLength = readLittleEndian<std::uint64_t>(bytes, 0);
        headerLength && size > 8 && bytes[8] == '{') {
        if (*headerLength >= 2 && *headerLength <= size - 8)
            return guess(ContainerKind::Safetensors,
                "a safetensors file (" + sizeText + ": a JSON header of " + byteCount(*headerLength)
                    + ", then tensor data); it records no devices");
        if (*headerLength <= 100'000'000 && size > 9 && (bytes[9] == '"' || bytes[9] == '}'))
            return guess(ContainerKind::Safetensors,
                "a safetensors file whose header claims " + byteCount(*headerLength) + " but only "
                    + byteCount(size - 8) + " follow: the file is truncated (download or copy it again)");
    }

    // Before the zip end record is looked for: a pickle may hold whole zip archives in its bytes
    // (pickle.dump of tensors whose storages were saved as torch.save zips), the last one's end
    // record near the end of the file.
    if (size >= 2 && bytes[0] == 0x80 && bytes[1] >= 2 && bytes[1] <= 5)
        return guess(ContainerKind::PlainPickle,
            "a Python pickle (protocol " + std::to_string(bytes[1]) + ", " + sizeText
                + ") without PyTorch's magic number: an ordinary pickled object, not a torch.save "
                  "checkpoint. Loading it with pickle or torch.load(weights_only=False) would run any "
                  "code it names");
    if (OldPickleProbe(bytes).looksLikePickle())
        return guess(ContainerKind::PlainPickle,
            "a Python pickle in the old text protocol 0/1 (" + sizeText
                + ", typical of Python 2), without PyTorch's magic number: not a torch.save checkpoint. "
                  "Loading it with pickle would run any code it names");
    if (const auto zip = zipStartFromEnd(bytes); zip && zip->start > 0) {
        const std::string prefix = byteCount(zip->start);
        return guess(ContainerKind::ZipWithPrefix,
            "a zip archive that starts at byte " + formatThousands(zip->start) + ", after " + prefix
                + " of other data (a self-extracting archive, a zip appended to another file, or one record "
                  "of "
                  "a larger container). torch.load accepts only zips that start at byte 0; "
                + (zip->offsetsFromZipStart
                        ? "cutting off the first " + prefix + " gives a file torch can load"
                        : "its offsets count from the start of the file, so after cutting off the first "
                            + prefix + " they must be adjusted too (zip -A does that)"));
    }

    if (const auto zipStart = zipStartByScanning(bytes); zipStart && *zipStart > 0)
        return guess(ContainerKind::ZipWithPrefix,
            "data with a zip archive starting at byte " + formatThousands(*zipStart)
                + " (the zip has no end record at the end of the file, so it may be truncated or "
                  "followed by other data); torch.load accepts only zips that start at byte 0");

    if (looksLikeText(bytes)) {
        if (startsWithIgnoringCase(textStart, "<!doctype html") || startsWithIgnoringCase(textStart, "<html")
            || (startsWithIgnoringCase(textStart, "<") && containsText(textStart, "<html")))
            return guess(ContainerKind::HtmlPage,
                "an HTML page (" + sizeText
                    + "), not a checkpoint: the download saved a web page (a login, error or preview "
                      "page) instead of the file; download the raw file instead");
        if (!textStart.empty() && (textStart[0] == '{' || textStart[0] == '[')) {
            if (containsText(textStart, "\"weight_map\""))
                return guess(ContainerKind::JsonText,
                    "JSON text (" + sizeText
                        + "): the index of a sharded checkpoint (weight_map names the shard file of each "
                          "tensor); open the shard files it lists");
            return guess(ContainerKind::JsonText,
                "JSON text (" + sizeText + "), not a checkpoint (perhaps a configuration file)");
        }
        return guess(ContainerKind::PlainText,
            "text (" + sizeText + ") starting with " + quotedStart(bytes)
                + ", not a PyTorch checkpoint (maybe a placeholder or a broken download)");
    }

    return guess(ContainerKind::Unknown,
        "unrecognised data (" + sizeText + ") starting with " + quotedStart(bytes)
            + ": not a format this tool knows (zip, legacy or tar torch.save, TorchScript, "
              "safetensors)");
}

const char* containerKindName(ContainerKind kind)
{
    switch (kind) {
    case ContainerKind::TorchZip:
        return "torch-zip";
    case ContainerKind::ZipWithPrefix:
        return "zip-with-prefix";
    case ContainerKind::TorchLegacy:
        return "torch-legacy";
    case ContainerKind::TorchTar:
        return "torch-tar";
    case ContainerKind::Safetensors:
        return "safetensors";
    case ContainerKind::MobileFlatbuffer:
        return "mobile-flatbuffer";
    case ContainerKind::PreviewPytorch1:
        return "pytorch1-preview";
    case ContainerKind::PlainPickle:
        return "plain-pickle";
    case ContainerKind::Empty:
        return "empty";
    case ContainerKind::GitLfsPointer:
        return "git-lfs-pointer";
    case ContainerKind::HtmlPage:
        return "html-page";
    case ContainerKind::JsonText:
        return "json-text";
    case ContainerKind::PlainText:
        return "plain-text";
    case ContainerKind::Png:
        return "png";
    case ContainerKind::Jpeg:
        return "jpeg";
    case ContainerKind::Hdf5:
        return "hdf5";
    case ContainerKind::Gzip:
        return "gzip";
    case ContainerKind::Tar:
        return "tar";
    case ContainerKind::Unknown:
        return "unknown";
    }
    return "unknown";
}

} // namespace ckpt
