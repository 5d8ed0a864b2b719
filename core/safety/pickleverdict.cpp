// SPDX-License-Identifier: MIT
// The safety verdict over every pickle a loader could run (pickleverdict.h). It does not trust the
// checkpoint reader's view of the file, because scanner bypasses live exactly where a reader and a
// loader disagree (hostile-techniques.md §A): it walks the raw bytes itself — every zip member
// found by the central directory or by a local header, whatever its name, flags, CRC or
// compression; every stacked pickle of a stream and anything after a STOP; gzip/bz2/xz/zstd/7z/tar
// wrappers, unpacked with libarchive; and bytes handed to nested loaders (pickle.loads,
// torch.storage._load_from_bytes) — and runs each pickle through the symbolic machine, which never
// imports or calls anything. What it takes from the reader is only a machine run it would have
// made itself: the same bytes of the same mapping, the same limits, read to the STOP (ReaderRun);
// the walk that decides which bytes to run stays its own.
//
// Why one file of about 1,250 lines: the scanner is one walk whose parts (opcode scan, zip members,
// archive wrappers, nested loaders, the rating of each run) call one another recursively and share
// its depth limit, budget and findings; splitting it would put the class in a header for this file
// alone. Torch's messages and the value summaries it shares with the weights_only verdict live apart
// (torchmessages.h, core/pickle/picklesummary.h).
#include "core/safety/pickleverdict.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/format/crc32.h"
#include "core/format/zipformat.h"
#include "core/io/mappedfile.h"
#include "core/io/optionallibraries.h"
#include "core/model/checkpoint.h"
#include "core/pickle/bufferedframes.h"
#include "core/pickle/opcodes.h"
#include "core/pickle/picklegraph.h"
#include "core/pickle/picklemachine.h"
#include "core/pickle/picklesummary.h"
#include "core/safety/picklecatalog.h"
#include "core/safety/pythoncodecs.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <zlib.h>

namespace ckpt {

const char* pickleSafetyName(PickleSafety safety)
{
    switch (safety) {
    case PickleSafety::NoPickle:
        return "no-pickle";
    case PickleSafety::KnownInert:
        return "known-inert";
    case PickleSafety::NeedsAllowlist:
        return "needs-allowlisting";
    case PickleSafety::DangerousOrUnknown:
        return "dangerous";
    }
    return "dangerous";
}

namespace {

bool isIdentifierPath(std::string_view text)
{
    if (text.empty() || text.size() > 512)
        return false;
    bool start = true;
    for (char c : text) {
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        const bool digit = c >= '0' && c <= '9';
        if (c == '.') {
            if (start)
                return false;
            start = true;
            continue;
        }
        if (!(letter || (digit && !start)))
            return false;
        start = false;
    }
    return !start;
}

// One pass over the opcodes without a stack (like pickletools.genops): names the globals in parts
// of a pickle the machine did not reach, and checks that FRAME lengths agree with the opcodes in
// them (a frame that ends inside an opcode makes loaders disagree on where opcodes start). Without
// `collectNames` it only walks: the same opcodes, end, STOP and frame problems, but no names, and
// none of the strings and memo it takes to find them (most of its cost on a large pickle).
struct OpcodeScan {
    struct Name {
        std::string module, name;
        std::uint64_t offset = 0;
    };
    std::vector<Name> names;
    std::vector<std::string> frameProblems;
    std::uint64_t end = 0; // one past STOP, or where reading stopped
    bool reachedStop = false;
    bool extension = false; // an EXT1/EXT2/EXT4: a callable from copyreg's registry
};

OpcodeScan scanOpcodes(ByteView data, std::uint64_t from, bool stopAtStop, bool collectNames = true)
{
    OpcodeScan scan;
    std::uint64_t pos = from;
    bool inFrame = false;
    std::uint64_t frameEnd = 0;
    std::uint64_t frameStart = 0;
    std::vector<std::string> recent; // the last strings pushed, for STACK_GLOBAL
    std::map<std::string, std::string> memo; // memo key -> string
    bool lastWasString = false;
    std::size_t memoCounter = 0;
    auto line = [&](std::string& out) {
        const void* nl = std::memchr(data.data() + pos, '\n', data.size() - pos);
        if (!nl)
            return false;
        const auto length
            = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nl) - (data.data() + pos));
        out.assign(reinterpret_cast<const char*>(data.data()) + pos, length);
        if (!out.empty() && out.back() == '\r')
            out.pop_back();
        pos += length + 1;
        return true;
    };
    auto skip = [&](std::uint64_t n) {
        if (n > data.size() - pos)
            return false;
        pos += n;
        return true;
    };
    auto le = [&](int bytes, std::uint64_t& value) {
        if (static_cast<std::uint64_t>(bytes) > data.size() - pos)
            return false;
        value = 0;
        for (int i = 0; i < bytes; ++i)
            value |= static_cast<std::uint64_t>(data[pos + i]) << (8 * i);
        pos += bytes;
        return true;
    };
    // GET/PUT keys as CPython reads them (int(' 1') == int('+0_1') == 1, and _pickle stops at a
    // NUL): the same entry however a key is written.
    auto memoKey = [](std::string text) {
        text.resize(std::min(text.size(), text.find('\0')));
        const auto first = text.find_first_not_of(" \t\r\v\f");
        const auto last = text.find_last_not_of(" \t\r\v\f");
        text = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
        std::string digits;
        for (std::size_t i = text.starts_with('+') ? 1 : 0; i < text.size(); ++i) {
            if (text[i] >= '0' && text[i] <= '9')
                digits += text[i];
            else if (text[i] != '_')
                return text; // not a number a loader reads: keep it as written
        }
        const auto nonZero = digits.find_first_not_of('0');
        return digits.empty()              ? text
            : nonZero == std::string::npos ? std::string("0")
                                           : digits.substr(nonZero);
    };
    auto pushString = [&](std::string_view text) {
        if (!collectNames)
            return;
        recent.emplace_back(text);
        if (recent.size() > 2)
            recent.erase(recent.begin());
        lastWasString = true;
    };
    while (pos < data.size()) {
        const std::uint64_t at = pos;
        const std::uint8_t op = data[pos++];
        scan.extension |= op == pickleop::EXT1 || op == pickleop::EXT2 || op == pickleop::EXT4;
        const bool wasString = lastWasString;
        lastWasString = false;
        std::string a, b;
        std::uint64_t n = 0;
        bool ok = true;
        switch (op) {
        case pickleop::MARK:
        case pickleop::STOP:
        case pickleop::POP:
        case pickleop::POP_MARK:
        case pickleop::DUP:
        case pickleop::NONE:
        case pickleop::BINPERSID:
        case pickleop::REDUCE:
        case pickleop::APPEND:
        case pickleop::BUILD:
        case pickleop::DICT:
        case pickleop::EMPTY_DICT:
        case pickleop::APPENDS:
        case pickleop::LIST:
        case pickleop::EMPTY_LIST:
        case pickleop::OBJ:
        case pickleop::SETITEM:
        case pickleop::TUPLE:
        case pickleop::EMPTY_TUPLE:
        case pickleop::SETITEMS:
        case pickleop::NEWOBJ:
        case pickleop::TUPLE1:
        case pickleop::TUPLE2:
        case pickleop::TUPLE3:
        case pickleop::NEWTRUE:
        case pickleop::NEWFALSE:
        case pickleop::EMPTY_SET:
        case pickleop::ADDITEMS:
        case pickleop::FROZENSET:
        case pickleop::NEWOBJ_EX:
        case pickleop::NEXT_BUFFER:
        case pickleop::READONLY_BUFFER:
            break;
        case pickleop::STACK_GLOBAL:
            if (recent.size() == 2)
                scan.names.push_back({recent[0], recent[1], at});
            recent.clear();
            break;
        case pickleop::MEMOIZE:
            if (wasString && !recent.empty())
                memo[std::to_string(memoCounter)] = recent.back();
            ++memoCounter;
            lastWasString = wasString;
            break;
        case pickleop::BININT1:
        case pickleop::PROTO:
        case pickleop::EXT1:
            ok = skip(1);
            break;
        case pickleop::BINGET:
        case pickleop::LONG_BINGET: {
            ok = le(op == pickleop::BINGET ? 1 : 4, n);
            if (!collectNames)
                break;
            if (auto it = memo.find(std::to_string(n)); ok && it != memo.end())
                pushString(it->second);
            break;
        }
        case pickleop::BINPUT:
        case pickleop::LONG_BINPUT:
            ok = le(op == pickleop::BINPUT ? 1 : 4, n);
            if (ok && wasString && !recent.empty())
                memo[std::to_string(n)] = recent.back();
            lastWasString = wasString;
            break;
        case pickleop::BININT2:
        case pickleop::EXT2:
            ok = skip(2);
            break;
        case pickleop::BININT:
        case pickleop::EXT4:
            ok = skip(4);
            break;
        case pickleop::BINFLOAT:
            ok = skip(8);
            break;
        case pickleop::FRAME: {
            ok = le(8, n);
            if (!ok)
                break;
            if (inFrame && at < frameEnd)
                scan.frameProblems.push_back("a FRAME at byte " + formatThousands(at)
                    + " begins inside the frame that starts at byte " + formatThousands(frameStart));
            if (n > data.size() - pos)
                scan.frameProblems.push_back("the FRAME at byte " + formatThousands(at) + " says "
                    + formatThousands(n) + " bytes follow, but only " + formatThousands(data.size() - pos)
                    + " do");
            frameStart = at;
            inFrame = true;
            frameEnd = pos + std::min<std::uint64_t>(n, data.size() - pos);
            break;
        }
        case pickleop::FLOAT:
        case pickleop::INT:
        case pickleop::LONG:
        case pickleop::PERSID:
            ok = line(a);
            break;
        case pickleop::STRING:
        case pickleop::UNICODE:
            ok = line(a);
            if (ok) {
                if (op == pickleop::STRING && a.size() >= 2 && (a.front() == '\'' || a.front() == '"'))
                    a = a.substr(1, a.size() - 2);
                pushString(a);
            }
            break;
        case pickleop::GET:
            ok = line(a);
            if (!collectNames)
                break;
            if (auto it = memo.find(memoKey(a)); ok && it != memo.end())
                pushString(it->second);
            break;
        case pickleop::PUT:
            ok = line(a);
            if (ok && wasString && !recent.empty())
                memo[memoKey(a)] = recent.back();
            lastWasString = wasString;
            break;
        case pickleop::GLOBAL:
        case pickleop::INST:
            ok = line(a) && line(b);
            if (ok && collectNames)
                scan.names.push_back({a, b, at});
            break;
        case pickleop::SHORT_BINSTRING:
        case pickleop::SHORT_BINBYTES:
        case pickleop::SHORT_BINUNICODE:
        case pickleop::LONG1: { // 1-byte length
            ok = le(1, n) && n <= data.size() - pos;
            if (ok && (op == pickleop::SHORT_BINSTRING || op == pickleop::SHORT_BINUNICODE))
                pushString(std::string_view(reinterpret_cast<const char*>(data.data()) + pos, n));
            ok = ok && skip(n);
            break;
        }
        case pickleop::BINSTRING:
        case pickleop::BINUNICODE:
        case pickleop::BINBYTES:
        case pickleop::LONG4: { // 4-byte length
            ok = le(4, n) && n <= data.size() - pos;
            if (ok && (op == pickleop::BINSTRING || op == pickleop::BINUNICODE))
                pushString(std::string_view(
                    reinterpret_cast<const char*>(data.data()) + pos, std::min<std::uint64_t>(n, 4096)));
            ok = ok && skip(n);
            break;
        }
        case pickleop::BINUNICODE8:
        case pickleop::BINBYTES8:
        case pickleop::BYTEARRAY8: { // 8-byte length
            ok = le(8, n) && n <= data.size() - pos;
            if (ok && op == pickleop::BINUNICODE8)
                pushString(std::string_view(
                    reinterpret_cast<const char*>(data.data()) + pos, std::min<std::uint64_t>(n, 4096)));
            ok = ok && skip(n);
            break;
        }
        default:
            ok = false;
        }
        if (!ok) {
            scan.end = at;
            return scan;
        }
        if (inFrame && at < frameEnd && pos > frameEnd)
            scan.frameProblems.push_back("the FRAME at byte " + formatThousands(frameStart) + " ends at byte "
                + formatThousands(frameEnd) + ", inside the opcode at byte " + formatThousands(at)
                + " (which runs to byte " + formatThousands(pos) + "): loaders disagree on what follows");
        if (inFrame && pos >= frameEnd && op != pickleop::FRAME)
            inFrame = false;
        if (op == pickleop::STOP && stopAtStop) {
            scan.reachedStop = true;
            scan.end = pos;
            return scan;
        }
    }
    scan.end = pos;
    return scan;
}

// Raw deflate with a growing buffer and a hard cap (the recorded sizes of a hostile member lie).
// Corrupt or cut-off data: the bytes that unpacked, with `why` set; over the cap: nothing.
std::optional<ByteBuffer> inflateCapped(ByteView compressed, std::uint64_t cap, std::string& why)
{
    z_stream stream {};
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) {
        why = "zlib could not start";
        return std::nullopt;
    }
    ByteBuffer out;
    std::uint64_t inputDone = 0;
    int status = Z_OK;
    std::uint8_t buffer[65536];
    while (status != Z_STREAM_END) {
        if (stream.avail_in == 0 && inputDone < compressed.size()) {
            const auto chunk = std::min<std::uint64_t>(compressed.size() - inputDone, 1u << 30);
            stream.next_in = const_cast<Bytef*>(compressed.data() + inputDone);
            stream.avail_in = static_cast<uInt>(chunk);
            inputDone += chunk;
        }
        stream.next_out = buffer;
        stream.avail_out = sizeof buffer;
        status = inflate(&stream, Z_NO_FLUSH);
        out.insert(out.end(), buffer, buffer + (sizeof buffer - stream.avail_out));
        if (out.size() > cap) {
            why = "it inflates to more than the " + formatBytes(cap) + " the scanner unpacks";
            inflateEnd(&stream);
            return std::nullopt;
        }
        if (status == Z_STREAM_END)
            break;
        if (status != Z_OK
            && !(status == Z_BUF_ERROR && stream.avail_in == 0 && inputDone < compressed.size())) {
            if (status == Z_BUF_ERROR && stream.avail_in == 0 && inputDone >= compressed.size()) {
                why = "the deflate data is cut off";
            } else {
                why = std::string("the deflate data is corrupt (") + (stream.msg ? stream.msg : "zlib error")
                    + ")";
            }
            inflateEnd(&stream);
            return out; // what unpacked before the fault: a reader that ignores the fault hands that on
        }
    }
    inflateEnd(&stream);
    return out;
}

// One per member, and a torch checkpoint has one member per storage: the names are views into the
// bytes being scanned (which outlive the scan of the archive), so a member costs no heap of its own.
struct ZipMember {
    std::string_view name; // central directory name when there is one
    std::string_view localName;
    std::uint64_t compressedSize = 0;
    std::uint64_t localOffset = 0;
    std::uint64_t dataOffset = 0;
    std::uint16_t flags = 0;
    std::uint16_t method = 0;
    bool sizeKnown = false;
    bool inCentral = false;
    bool secondOfItsName = false; // the second central directory entry with this name
    bool primary = true; // found by the usual reading of the archive (not another reader's view)
    std::uint16_t localFlags = 0;
    std::uint64_t uncompressedSize = 0;
};

std::uint64_t le(ByteView bytes, std::uint64_t offset, int size)
{
    std::uint64_t value = 0;
    if (offset > bytes.size() || bytes.size() - offset < static_cast<std::uint64_t>(size))
        return 0;
    for (int i = 0; i < size; ++i)
        value |= static_cast<std::uint64_t>(bytes[offset + i]) << (8 * i);
    return value;
}

bool signatureAt(ByteView bytes, std::uint64_t offset, std::uint32_t signature)
{
    // Offsets come from the file: compare without adding, so a huge one cannot wrap around.
    return offset <= bytes.size() && bytes.size() - offset >= 4 && le(bytes, offset, 4) == signature;
}

std::optional<std::uint64_t> findEndOfCentralDirectory(ByteView bytes)
{
    using namespace zipformat;
    if (bytes.size() < kEndRecordSize)
        return std::nullopt;
    const std::uint64_t lowest = bytes.size() > kEndRecordSize + kMaxCommentLength
        ? bytes.size() - kEndRecordSize - kMaxCommentLength
        : 0;
    for (std::uint64_t at = bytes.size() - kEndRecordSize + 1; at-- > lowest;)
        if (signatureAt(bytes, at, zipformat::kEndRecordSignature))
            return at;
    return std::nullopt;
}

// Python's tarfile takes a file for a tar when its first 512-byte header has a valid checksum
// (an old v7 header has no "ustar" magic), and torch.load tries tarfile first (torch-format.md).
bool looksLikeTar(ByteView bytes)
{
    if (bytes.size() < 512)
        return false;
    if (std::memcmp(bytes.data() + 257, "ustar", 5) == 0)
        return true;
    // tarfile's nti(): the octal field up to its first NUL, stripped of spaces.
    std::string_view field(reinterpret_cast<const char*>(bytes.data()) + 148, 8);
    field = field.substr(0, std::min(field.find('\0'), field.size()));
    while (!field.empty() && (field.front() == ' ' || field.front() == '\t'))
        field.remove_prefix(1);
    while (!field.empty() && (field.back() == ' ' || field.back() == '\t'))
        field.remove_suffix(1);
    if (field.empty())
        return false;
    std::uint64_t recorded = 0;
    for (char c : field) {
        if (c < '0' || c > '7')
            return false;
        recorded = recorded * 8 + static_cast<std::uint64_t>(c - '0');
    }
    std::int64_t unsignedSum = 256, signedSum = 256; // the checksum field counts as eight spaces
    bool allZero = true;
    for (std::size_t i = 0; i < 512; ++i) {
        allZero &= bytes[i] == 0;
        if (i >= 148 && i < 156)
            continue;
        unsignedSum += bytes[i];
        signedSum += static_cast<std::int8_t>(bytes[i]);
    }
    return !allZero
        && (static_cast<std::int64_t>(recorded) == unsignedSum
            || static_cast<std::int64_t>(recorded) == signedSum);
}

// A zip member name as a loader matches it: Python's zipfile cuts it at the first NUL, torch's
// miniz compares case-insensitively. A member whose name says pickle must hold one.
bool namesPickle(std::string_view name)
{
    name = name.substr(0, std::min(name.find('\0'), name.size()));
    if (name.size() < 4)
        return false;
    // ASCII case folding: what std::tolower does to the letters of ".pkl" in any locale, without
    // a copy and a call per byte (100,000 member names in a large torch.save file).
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    const std::string_view tail = name.substr(name.size() - 4);
    return tail[0] == '.' && lower(tail[1]) == 'p' && lower(tail[2]) == 'k' && lower(tail[3]) == 'l';
}

// The Python literal of an .npy header ({'descr': ..., 'fortran_order': ..., 'shape': ...}, read
// by numpy with ast.literal_eval), parsed just far enough to tell whether its dtype holds Python
// objects: numpy.load(allow_pickle=True) then unpickles the data. numpy spells the object dtype
// in many ways ('O', '|O', '|O8', 'object', "O", '\x4f', a structured dtype with an object field,
// a subarray ('O', (2,)), 'f4,O'), so every string of the descr is looked at, not one spelling.
class NpyHeader {
public:
    enum class Objects { No, Yes, Unreadable };

    explicit NpyHeader(std::string_view text)
        : m_text(text)
    { }

    Objects objects()
    {
        skipSpace();
        if (!take('{'))
            return Objects::Unreadable;
        std::optional<Value> descr;
        for (;;) {
            skipSpace();
            if (take('}'))
                break;
            Value key = value(0);
            skipSpace();
            if (!m_ok || !take(':'))
                return Objects::Unreadable;
            Value item = value(0);
            if (!m_ok)
                return Objects::Unreadable;
            if (key.kind == Value::Kind::String && key.text == "descr")
                descr = std::move(item); // a repeated key: the last wins, as in a dict display
            skipSpace();
            if (take(','))
                continue;
            if (take('}'))
                break;
            return Objects::Unreadable;
        }
        if (!descr)
            return Objects::No; // numpy refuses a header without one
        return holdsObjects(*descr, 0) ? Objects::Yes : Objects::No;
    }

private:
    struct Value {
        enum class Kind { String, List, Tuple, Other } kind = Kind::Other;
        std::string text;
        std::vector<Value> items;
    };

    static bool holdsObjects(const Value& value, int depth)
    {
        if (depth > 32)
            return true;
        switch (value.kind) {
        case Value::Kind::String: {
            std::string lower = value.text;
            for (char& c : lower)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            return value.text.find('O') != std::string::npos || lower.find("obj") != std::string::npos;
        }
        case Value::Kind::List:
            // Fields: (name, format) or (name, format, shape); a name may be (title, name).
            for (const Value& field : value.items) {
                if (field.kind == Value::Kind::Tuple && field.items.size() >= 2) {
                    for (std::size_t i = 1; i < field.items.size(); ++i)
                        if (holdsObjects(field.items[i], depth + 1))
                            return true;
                } else if (holdsObjects(field, depth + 1)) {
                    return true;
                }
            }
            return false;
        case Value::Kind::Tuple:
            for (const Value& item : value.items)
                if (holdsObjects(item, depth + 1))
                    return true;
            return false;
        case Value::Kind::Other:
            return false;
        }
        return true;
    }

    void skipSpace()
    {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
            ++m_pos;
    }
    bool take(char c)
    {
        if (m_pos < m_text.size() && m_text[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return false;
    }

    Value value(int depth)
    {
        Value out;
        skipSpace();
        if (depth > 64 || m_pos >= m_text.size()) {
            m_ok = false;
            return out;
        }
        const char c = m_text[m_pos];
        if (c == '[' || c == '(') {
            const char close = c == '[' ? ']' : ')';
            out.kind = c == '[' ? Value::Kind::List : Value::Kind::Tuple;
            ++m_pos;
            for (;;) {
                skipSpace();
                if (take(close))
                    return out;
                out.items.push_back(value(depth + 1));
                if (!m_ok)
                    return out;
                skipSpace();
                if (take(','))
                    continue;
                if (take(close))
                    return out;
                m_ok = false;
                return out;
            }
        }
        if (c == '{') { // a nested dict: never a dtype numpy reads here; skip it whole
            int level = 0;
            for (; m_pos < m_text.size(); ++m_pos) {
                level += m_text[m_pos] == '{' ? 1 : m_text[m_pos] == '}' ? -1 : 0;
                if (level == 0) {
                    ++m_pos;
                    return out;
                }
            }
            m_ok = false;
            return out;
        }
        // Strings, with implicit concatenation ('O' '' is 'O').
        bool sawString = false;
        for (;;) {
            skipSpace();
            std::size_t at = m_pos;
            bool raw = false;
            while (at < m_text.size() && at < m_pos + 2
                && std::isalpha(static_cast<unsigned char>(m_text[at]))) {
                const char p = static_cast<char>(std::tolower(static_cast<unsigned char>(m_text[at])));
                if (p != 'r' && p != 'b' && p != 'u')
                    break;
                raw |= p == 'r';
                ++at;
            }
            if (at >= m_text.size() || (m_text[at] != '\'' && m_text[at] != '"'))
                break;
            m_pos = at;
            if (!string(raw, out.text))
                return out;
            sawString = true;
        }
        if (sawString) {
            out.kind = Value::Kind::String;
            return out;
        }
        // Numbers, True/False/None, signs: up to the next separator.
        const std::size_t start = m_pos;
        while (m_pos < m_text.size()
            && std::string_view(",:)]}").find(m_text[m_pos]) == std::string_view::npos
            && m_text[m_pos] != '\'' && m_text[m_pos] != '"' && m_text[m_pos] != '(' && m_text[m_pos] != '['
            && m_text[m_pos] != '{')
            ++m_pos;
        if (m_pos == start)
            m_ok = false;
        return out;
    }

    // A quoted string at m_pos (' or ", single or triple), its escapes decoded (ASCII results
    // only matter: a non-ASCII code point is kept as '?').
    bool string(bool raw, std::string& out)
    {
        const char quote = m_text[m_pos];
        const bool triple = m_text.substr(m_pos, 3) == std::string(3, quote);
        m_pos += triple ? 3 : 1;
        auto hex = [&](std::size_t digits) -> std::optional<std::uint32_t> {
            if (m_text.size() - m_pos < digits)
                return std::nullopt;
            std::uint32_t value = 0;
            for (std::size_t i = 0; i < digits; ++i) {
                const char h = m_text[m_pos + i];
                if (!std::isxdigit(static_cast<unsigned char>(h)))
                    return std::nullopt;
                value = value * 16
                    + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                            ? h - '0'
                            : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
            }
            m_pos += digits;
            return value;
        };
        auto put = [&](std::uint32_t code) { out += code < 0x80 ? static_cast<char>(code) : '?'; };
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c == quote && (!triple || m_text.substr(m_pos, 3) == std::string(3, quote))) {
                m_pos += triple ? 3 : 1;
                return true;
            }
            ++m_pos;
            if (c != '\\' || raw) {
                out += c;
                if (c == '\\' && m_pos < m_text.size())
                    out += m_text[m_pos++];
                continue;
            }
            if (m_pos >= m_text.size())
                break;
            const char e = m_text[m_pos++];
            std::optional<std::uint32_t> code;
            switch (e) {
            case 'x':
                code = hex(2);
                break;
            case 'u':
                code = hex(4);
                break;
            case 'U':
                code = hex(8);
                break;
            case 'N': // \N{NAME}: a name the scanner does not know; may be any letter
                m_ok = false;
                return false;
            case 'n':
                code = '\n';
                break;
            case 't':
                code = '\t';
                break;
            case 'r':
                code = '\r';
                break;
            case '\n':
                continue;
            default:
                if (e >= '0' && e <= '7') {
                    std::uint32_t value = static_cast<std::uint32_t>(e - '0');
                    for (int i = 0;
                         i < 2 && m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '7'; ++i)
                        value = value * 8 + static_cast<std::uint32_t>(m_text[m_pos++] - '0');
                    code = value;
                } else if (e == '\\' || e == '\'' || e == '"') {
                    code = static_cast<std::uint32_t>(e);
                } else {
                    out += '\\';
                    code = static_cast<std::uint32_t>(static_cast<unsigned char>(e));
                }
            }
            if (!code) {
                m_ok = false;
                return false;
            }
            put(*code);
        }
        m_ok = false;
        return false;
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
    bool m_ok = true;
};

// A pickle run the reader already made, over bytes of the mapped file, under limits that bound it
// as the scanner's own would: when the scanner comes to run the machine over exactly those bytes,
// the run and its nodes would be the same, so it rates them instead of making them again.
struct ReaderRun {
    const std::uint8_t* start = nullptr;
    std::uint64_t length = 0;
    const PickleGraph* graph = nullptr;
    NodeId firstNode = kNoNode;
    NodeId endNode = kNoNode;
    const PickleRun* run = nullptr;
};

// What identifies a pickle run whatever graph it went into (rateReaderSections).
std::string runFingerprint(const PickleRun& run)
{
    std::string key = std::to_string(run.endOffset) + "/" + std::to_string(run.opcodeCount) + "/"
        + (run.complete() ? "complete" : "stopped at " + std::to_string(run.errorOffset));
    for (const GlobalReference& global : run.globals)
        key += "\n" + std::to_string(global.offset) + " " + global.module + " " + global.name;
    return key;
}

// How much work the scanner may save. Neither changes the verdict: ratePickleSafetyReference makes
// none of them, and tests compare the two on every fixture, hostile file and corpus file.
enum class Shortcuts {
    None, // every stackless pass in full, every machine run made
    Taken, // stackless passes only where their result is needed; the reader's runs reused
};

class Scanner {
public:
    Scanner(SafetyVerdict& verdict, const SafetyScanLimits& limits, Shortcuts shortcuts)
        : m_verdict(verdict)
        , m_limits(limits)
        , m_shortcuts(shortcuts == Shortcuts::Taken)
    { }

    void offerReaderRun(const ReaderRun& run) { m_readerRuns.push_back(run); }
    std::size_t readerRunsReused() const { return m_readerRunsReused; }
    void rateReaderSections(const Checkpoint& checkpoint);
    void rateForeignGlobal(const std::string& module, const std::string& name, const std::string& where)
    {
        rateGlobal(module, name, where);
    }
    void scanFile(ByteView bytes, const std::string& label, int depth, bool mustBePickle, bool topLevel);

private:
    void scanZip(ByteView bytes, const std::string& label, int depth);
    bool unpackWrapper(ByteView bytes, const std::string& label, const char* wrapper, int depth, bool quiet);
    void scanStream(ByteView bytes, const std::string& label, int depth, bool mustBePickle, bool topLevel);
    void rateRun(const PickleGraph& graph, NodeId firstNode, NodeId endNode, const PickleRun& run,
        const std::string& label, std::uint64_t base, int depth);
    const ReaderRun* readerRunFor(
        ByteView pickle, std::uint64_t nodesBefore, const PickleLimits& limits) const;
    void rateGlobal(const std::string& module, const std::string& name, const std::string& where);
    void addUnsafe(UnsafeCallable callable);
    std::string resolveValue(const PickleGraph& graph, NodeId id, int depth) const;
    std::string calledName(const PickleGraph& graph, NodeId call) const;
    // What a nested loader is handed, and what a text argument is (nestedbytes below).
    struct HandedBytes {
        std::vector<std::string> values; // every byte string it could be (several for a Python 2 str)
        std::string how; // how they were made, for the label: "utf_8-encoded text"; empty for literals
        std::string unknown; // set when the scanner cannot tell what they are: why
        std::string raises; // set when building them raises in Python: nothing is handed on
    };
    struct TextValue {
        std::vector<std::u32string> values;
        std::string unknown, raises;
    };
    HandedBytes bytesArgument(
        const PickleGraph& graph, NodeId value, int depth, bool pathLoader = false) const;
    TextValue textArgument(const PickleGraph& graph, NodeId value) const;
    HandedBytes encodedText(const PickleGraph& graph, NodeId text, std::optional<NodeId> encoding,
        std::optional<NodeId> errors) const;
    void rateHandedBytes(
        const PickleGraph& graph, NodeId call, const std::string& name, const std::string& label, int depth);
    std::string summarise(const PickleGraph& graph, NodeId id) const;
    void cannotVerify(std::string text) { m_verdict.cannotVerify.push_back(std::move(text)); }
    void recordPickleBytes(const std::string& label, ByteView pickle, const PickleRun& run)
    {
        // Checked a few MB at a time, each piece of the checkpoint's own file given back to the
        // page cache once summed: the reader's run was made over these bytes already, and at
        // 200,000 legacy storages the pickle's pages were 25 MB of the resident peak of check.
        constexpr std::size_t kPiece = std::size_t(4) << 20;
        std::uint32_t crc = 0;
        for (std::size_t at = 0; at < pickle.size(); at += kPiece) {
            const ByteView piece = pickle.subspan(at, std::min(kPiece, pickle.size() - at));
            crc = crc32Update(crc, piece.data(), piece.size());
            releaseMappedPages(piece);
        }
        m_verdict.pickleBytes.push_back({label, pickle.size(), crc, run.complete()});
    }

public:
    // Gives bytes of the checkpoint's own mapping back to the page cache (MappedFile::
    // releaseResidentPages); other bytes (inflated, decoded) are left as they are.
    void setMappedFile(const MappedFile* file) { m_mappedFile = file; }
    void releaseMappedPages(ByteView view) const
    {
        if (!m_mappedFile || view.empty())
            return;
        const ByteView whole = m_mappedFile->bytes();
        if (view.data() < whole.data() || view.data() + view.size() > whole.data() + whole.size())
            return;
        m_mappedFile->releaseResidentPages(
            static_cast<std::uint64_t>(view.data() - whole.data()), view.size());
    }

private:
    void scanLegacyTarMember(ByteView bytes, const std::string& label, bool storages, int depth);
    void scanNpy(ByteView bytes, const std::string& label, int depth);
    bool spend(std::uint64_t bytes)
    {
        m_unpacked += bytes;
        return m_unpacked <= m_limits.maxUnpackedBytes;
    }

    SafetyVerdict& m_verdict;
    const SafetyScanLimits& m_limits;
    const bool m_shortcuts;
    std::vector<ReaderRun> m_readerRuns;
    std::size_t m_readerRunsReused = 0;
    std::uint64_t m_unpacked = 0;
    std::vector<ByteBuffer> m_buffers; // unpacked bytes stay alive while their pickles are rated
    // Every run rated, by what identifies a run of the same bytes whichever graph it went into: where
    // it ended, its opcode count, whether it finished, and its globals with their offsets.
    std::set<std::string> m_ratedRuns;
    const MappedFile* m_mappedFile = nullptr;
};

const ReaderRun* Scanner::readerRunFor(
    ByteView pickle, std::uint64_t nodesBefore, const PickleLimits& limits) const
{
    if (!m_shortcuts)
        return nullptr;
    for (const ReaderRun& reader : m_readerRuns) {
        // The node limit counts every node of the graph a run goes into: the scanner's run would
        // have met it exactly when the nodes before it and the run's own exceed it.
        if (reader.start == pickle.data() && reader.length == pickle.size()
            && nodesBefore + (reader.endNode - reader.firstNode) <= limits.maxNodes)
            return &reader;
    }
    return nullptr;
}

void Scanner::addUnsafe(UnsafeCallable callable)
{
    for (UnsafeCallable& known : m_verdict.unsafe)
        if (known.name == callable.name) {
            if (known.call.empty())
                known.call = callable.call;
            return;
        }
    m_verdict.unsafe.push_back(std::move(callable));
}

void Scanner::rateGlobal(
    const std::string& writtenModule, const std::string& writtenName, const std::string& where)
{
    const auto [module, name] = python3Name(writtenModule, writtenName);
    const std::string path = module + "." + name;
    if (const auto inert = findInertGlobal(module, name)) {
        if (inert->torch113Default && inert->torch2Default)
            return;
        for (const AllowlistCandidate& known : m_verdict.allowlist)
            if (known.name == path)
                return;
        m_verdict.allowlist.push_back(
            {path, inert->reason, inert->torch113Default, inert->torch2Default, inert->offerAllowlist});
        return;
    }
    UnsafeCallable callable;
    callable.name = path;
    const auto danger = knownDanger(path);
    callable.knownDangerous = danger.has_value();
    callable.reason = danger
        ? *danger
        : "not on the vetted list of inert classes: cannot verify what it does; treat as dangerous";
    const std::string written = writtenModule + "." + writtenName;
    if (written != path)
        callable.reason += " (written " + written + ")";
    if (name.find('.') != std::string::npos)
        callable.reason += " (a dotted name: '" + name + "' is looked up attribute by attribute from module "
            + module + ")";
    if (const auto base = vettedBaseOf(path))
        callable.reason += " (a subclass of the vetted " + *base
            + " from another package: its own code, __setstate__ or __post_init__, is not vetted)";
    callable.where = where;
    addUnsafe(std::move(callable));
}

// The value a node stands for, as a dotted Python name, when it can be told statically: a GLOBAL,
// __import__('os'), getattr(x, 'system'), pkgutil.resolve_name('os:system'), attrgetter chains.
std::string Scanner::resolveValue(const PickleGraph& graph, NodeId id, int depth) const
{
    if (depth > 16)
        return {};
    const NodeKind kind = graph.kind(id);
    if (kind == NodeKind::Global) {
        const auto [module, name] = python3Name(std::string(graph.module(id)), std::string(graph.name(id)));
        return module + "." + name;
    }
    if (kind != NodeKind::Call)
        return {};
    const NodeId args = graph.arguments(id);
    auto stringArg = [&](std::size_t index) -> std::optional<std::string> {
        if (graph.kind(args) != NodeKind::Tuple || graph.tupleSize(args) <= index)
            return std::nullopt;
        const NodeId item = graph.tupleItem(args, index);
        if (!graph.isString(item))
            return std::nullopt;
        return std::string(graph.text(item));
    };
    const std::string callee = resolveValue(graph, graph.callee(id), depth + 1);
    if (callee == "builtins.getattr") {
        const auto attribute = stringArg(1);
        const std::string base = graph.kind(args) == NodeKind::Tuple && graph.tupleSize(args) >= 2
            ? resolveValue(graph, graph.tupleItem(args, 0), depth + 1)
            : std::string();
        if (attribute && !base.empty())
            return base + "." + *attribute;
        return {};
    }
    if (callee == "builtins.__import__" || callee == "importlib.import_module") {
        if (auto module = stringArg(0))
            return *module;
        return {};
    }
    // sys.modules['os'] and sys.modules.get('os'): the module by name.
    if ((callee == "operator.getitem" || callee == "_operator.getitem") && graph.kind(args) == NodeKind::Tuple
        && graph.tupleSize(args) == 2
        && resolveValue(graph, graph.tupleItem(args, 0), depth + 1) == "sys.modules") {
        if (auto module = stringArg(1))
            return *module;
        return {};
    }
    if (callee == "sys.modules.get" || callee == "sys.modules.__getitem__") {
        if (auto module = stringArg(0))
            return *module;
        return {};
    }
    if (callee == "pkgutil.resolve_name" || callee == "pydoc.locate") {
        if (auto target = stringArg(0)) {
            std::replace(target->begin(), target->end(), ':', '.');
            return *target;
        }
        return {};
    }
    // attrgetter('a.b')(x): x.a.b
    const NodeId inner = graph.callee(id);
    if (graph.kind(inner) == NodeKind::Call) {
        const std::string maker = resolveValue(graph, graph.callee(inner), depth + 1);
        if ((maker == "operator.itemgetter" || maker == "_operator.itemgetter")
            && graph.kind(args) == NodeKind::Tuple && graph.tupleSize(args) == 1
            && resolveValue(graph, graph.tupleItem(args, 0), depth + 1) == "sys.modules") {
            const NodeId makerArgs = graph.arguments(inner);
            if (graph.kind(makerArgs) == NodeKind::Tuple && graph.tupleSize(makerArgs) == 1
                && graph.isString(graph.tupleItem(makerArgs, 0)))
                return std::string(graph.text(graph.tupleItem(makerArgs, 0)));
        }
        if (maker == "operator.attrgetter" || maker == "_operator.attrgetter") {
            const NodeId makerArgs = graph.arguments(inner);
            if (graph.kind(makerArgs) == NodeKind::Tuple && graph.tupleSize(makerArgs) >= 1
                && graph.isString(graph.tupleItem(makerArgs, 0)) && graph.kind(args) == NodeKind::Tuple
                && graph.tupleSize(args) >= 1) {
                const std::string base = resolveValue(graph, graph.tupleItem(args, 0), depth + 1);
                if (!base.empty())
                    return base + "." + std::string(graph.text(graph.tupleItem(makerArgs, 0)));
            }
        }
    }
    return {};
}

// What a Call node calls, by name: its callee resolved, or for methodcaller('m', ...)(x), x.m.
std::string Scanner::calledName(const PickleGraph& graph, NodeId call) const
{
    const NodeId callee = graph.callee(call);
    if (graph.kind(callee) == NodeKind::Call) {
        const std::string maker = resolveValue(graph, graph.callee(callee), 0);
        if (maker == "operator.methodcaller" || maker == "_operator.methodcaller") {
            const NodeId makerArgs = graph.arguments(callee);
            const NodeId args = graph.arguments(call);
            if (graph.kind(makerArgs) == NodeKind::Tuple && graph.tupleSize(makerArgs) >= 1
                && graph.isString(graph.tupleItem(makerArgs, 0)) && graph.kind(args) == NodeKind::Tuple
                && graph.tupleSize(args) >= 1) {
                const std::string base = resolveValue(graph, graph.tupleItem(args, 0), 0);
                if (!base.empty())
                    return base + "." + std::string(graph.text(graph.tupleItem(makerArgs, 0)));
            }
        }
    }
    return resolveValue(graph, callee, 0);
}

// The str a text argument stands for: a BINUNICODE/UNICODE text as the unpickler decodes it; a
// Python 2 str (STRING/BINSTRING) as torch.load decodes it with encoding='utf-8' (its default) or
// 'latin1' (what Python 2 checkpoints need), both kept when they differ.
Scanner::TextValue Scanner::textArgument(const PickleGraph& graph, NodeId value) const
{
    TextValue text;
    if (graph.kind(value) != NodeKind::String) {
        text.unknown = "a value that is not a literal str (" + summarise(graph, value) + ")";
        return text;
    }
    const std::string_view raw = graph.text(value);
    const auto decoded = decodePickleText(raw);
    if (!(graph.flags(value) & FlagStringFromBytes)) {
        if (!decoded)
            text.raises = "the unpickler cannot decode the text as UTF-8 and stops there";
        else
            text.values.push_back(*decoded);
        return text;
    }
    if (decoded)
        text.values.push_back(*decoded);
    std::u32string latin1 = decodeLatin1(raw);
    if (!decoded || latin1 != *decoded)
        text.values.push_back(std::move(latin1));
    return text;
}

// text.encode(encoding, errors), with the defaults Python's encoders have ('utf-8', 'strict').
Scanner::HandedBytes Scanner::encodedText(const PickleGraph& graph, NodeId textNode,
    std::optional<NodeId> encodingNode, std::optional<NodeId> errorsNode) const
{
    HandedBytes handed;
    const TextValue text = textArgument(graph, textNode);
    if (!text.unknown.empty() || !text.raises.empty()) {
        handed.unknown = text.unknown.empty() ? std::string() : "text to encode that is " + text.unknown;
        handed.raises = text.raises;
        return handed;
    }
    // The encoding and error handler: literal ASCII names (a Python 2 str decodes the same either way).
    auto constantName
        = [&](std::optional<NodeId> node, const char* fallback, const char* what, std::string& out) {
              if (!node) {
                  out = fallback;
                  return true;
              }
              const TextValue name = textArgument(graph, *node);
              if (!name.raises.empty()) {
                  handed.raises = name.raises;
                  return false;
              }
              if (!name.unknown.empty() || name.values.size() != 1) {
                  handed.unknown = std::string(what) + " that is "
                      + (name.unknown.empty() ? std::string("read differently by different loaders")
                                              : name.unknown);
                  return false;
              }
              out.clear();
              for (char32_t c : name.values.front())
                  appendUtf8(out, c);
              return true;
          };
    std::string encoding, errors;
    if (!constantName(encodingNode, "utf-8", "an encoding", encoding)
        || !constantName(errorsNode, "strict", "an error handler", errors))
        return handed;
    for (const std::u32string& value : text.values) {
        PythonEncoding encoded = pythonEncode(value, encoding, errors);
        if (encoded.outcome == PythonEncoding::Outcome::Unknown) {
            handed.values.clear();
            handed.unknown = "text encoded with " + encoded.why;
            return handed;
        }
        if (encoded.outcome == PythonEncoding::Outcome::Raises) {
            handed.raises = encoded.why;
            continue; // a loader decoding the text the other way may still get bytes
        }
        handed.how = encoded.codec + "-encoded text ('" + encoding + "')";
        if (std::find(handed.values.begin(), handed.values.end(), encoded.bytes) == handed.values.end())
            handed.values.push_back(std::move(encoded.bytes));
    }
    if (!handed.values.empty())
        handed.raises.clear();
    return handed;
}

// The bytes a nested loader is given: b'...', io.BytesIO(b'...'), _codecs.encode('...', 'latin1')
// (how protocol 2 writes bytes), codecs.encode, bytes(s, ENC), bytearray(...) of bytes, of text or of
// small ints, s.encode(ENC) reached through getattr or methodcaller, bytes.fromhex. Every value is
// what Python would make of the pickle's own constants; anything else is "unknown", saying why.
// `pathLoader`: a loader that takes a str as a path of a file to open (torch.load, numpy.load).
Scanner::HandedBytes Scanner::bytesArgument(
    const PickleGraph& graph, NodeId value, int depth, bool pathLoader) const
{
    HandedBytes handed;
    if (depth > 8) {
        handed.unknown = "bytes built by calls nested more than 8 deep";
        return handed;
    }
    const NodeKind kind = graph.kind(value);
    if (kind == NodeKind::Bytes || kind == NodeKind::ByteArray) {
        handed.values.emplace_back(graph.text(value));
        return handed;
    }
    if (kind == NodeKind::String) {
        if (pathLoader) {
            handed.unknown = "a path, " + summarise(graph, value) + ": it loads whatever file is there";
        } else if (graph.flags(value) & FlagStringFromBytes) {
            // A Python 2 str stays bytes when the outer loader passes encoding='bytes'.
            handed.values.emplace_back(graph.text(value));
            handed.how = "a Python 2 str, bytes when loaded with encoding='bytes'";
        } else {
            handed.raises = "TypeError: it is given a str, not bytes";
        }
        return handed;
    }
    if (kind == NodeKind::PersistentId) {
        handed.unknown = "what the loader's persistent_load returns";
        return handed;
    }
    if (kind != NodeKind::Call && kind != NodeKind::NewObject) {
        if (kind == NodeKind::None || kind == NodeKind::Int || kind == NodeKind::Float
            || kind == NodeKind::Bool || kind == NodeKind::Dict || kind == NodeKind::Tuple)
            handed.raises = "TypeError: it is given " + summarise(graph, value) + ", not bytes";
        else
            handed.unknown = summarise(graph, value);
        return handed;
    }
    const NodeId args = graph.arguments(value);
    const bool tuple = graph.kind(args) == NodeKind::Tuple;
    const std::size_t count = tuple ? graph.tupleSize(args) : 0;
    auto arg = [&](std::size_t i) {
        return i < count ? std::optional<NodeId>(graph.tupleItem(args, i)) : std::nullopt;
    };
    const NodeId callee = graph.callee(value);
    std::string name = kind == NodeKind::Call ? calledName(graph, value) : resolveValue(graph, callee, 0);
    auto unevaluated = [&] {
        handed.unknown = "bytes made by " + summarise(graph, value) + ", which the scanner does not evaluate";
        return handed;
    };
    if (!tuple || (kind == NodeKind::NewObject && (graph.flags(value) & FlagNewObjectEx)))
        return unevaluated(); // keyword arguments, or arguments that are not a tuple
    // s.encode(...) on a str reached through getattr(s, 'encode') or methodcaller('encode', ...)(s).
    if (kind == NodeKind::Call && graph.kind(callee) == NodeKind::Call) {
        const std::string maker = resolveValue(graph, graph.callee(callee), 0);
        const NodeId makerArgs = graph.arguments(callee);
        const bool makerTuple = graph.kind(makerArgs) == NodeKind::Tuple;
        const std::size_t makerCount = makerTuple ? graph.tupleSize(makerArgs) : 0;
        auto makerArg = [&](std::size_t i) { return graph.tupleItem(makerArgs, i); };
        auto isText
            = [&](NodeId n, std::string_view text) { return graph.isString(n) && graph.text(n) == text; };
        if (maker == "builtins.getattr" && makerCount == 2 && isText(makerArg(1), "encode")
            && graph.isString(makerArg(0)) && count <= 2)
            return encodedText(graph, makerArg(0), arg(0), arg(1));
        if ((maker == "operator.methodcaller" || maker == "_operator.methodcaller") && makerCount >= 1
            && makerCount <= 3 && isText(makerArg(0), "encode") && count == 1 && graph.isString(*arg(0)))
            return encodedText(graph, *arg(0), makerCount > 1 ? std::optional(makerArg(1)) : std::nullopt,
                makerCount > 2 ? std::optional(makerArg(2)) : std::nullopt);
    }
    if (name == "io.BytesIO" || name == "_io.BytesIO") {
        if (count == 0) {
            handed.values.emplace_back();
            return handed;
        }
        return count == 1 ? bytesArgument(graph, *arg(0), depth + 1) : unevaluated();
    }
    if (name == "_codecs.encode" || name == "codecs.encode") {
        if (count < 1 || count > 3)
            return unevaluated();
        if (graph.kind(*arg(0)) != NodeKind::String)
            return unevaluated(); // bytes-to-bytes codecs (hex, base64, zlib) are not reproduced
        return encodedText(graph, *arg(0), arg(1), arg(2));
    }
    if (name == "builtins.str.encode") {
        if (count < 1 || count > 3)
            return unevaluated();
        return encodedText(graph, *arg(0), arg(1), arg(2));
    }
    if (name == "builtins.bytes" || name == "builtins.bytearray") {
        if (count == 0) {
            handed.values.emplace_back();
            return handed;
        }
        const NodeId source = *arg(0);
        if (count >= 2) // bytes(text, encoding[, errors])
            return count <= 3 ? encodedText(graph, source, arg(1), arg(2)) : unevaluated();
        const NodeKind sourceKind = graph.kind(source);
        if (sourceKind == NodeKind::Int) {
            const std::int64_t n = graph.intValue(source);
            if (n < 0) {
                handed.raises = "ValueError: negative count";
            } else if (static_cast<std::uint64_t>(n) > m_limits.maxUnpackedBytes) {
                handed.unknown = formatThousands(static_cast<std::uint64_t>(n))
                    + " zero bytes, above the scanner's limit";
            } else {
                handed.values.emplace_back(static_cast<std::size_t>(n), '\0');
                handed.how = "zero bytes";
            }
            return handed;
        }
        if (sourceKind == NodeKind::List || sourceKind == NodeKind::Tuple || sourceKind == NodeKind::Set
            || sourceKind == NodeKind::FrozenSet) {
            if (sourceKind == NodeKind::Set || sourceKind == NodeKind::FrozenSet) {
                handed.unknown = "bytes made from a set, whose order Python does not fix";
                return handed;
            }
            std::string bytes;
            for (const NodeId item : graph.sequence(source)) {
                if (graph.kind(item) != NodeKind::Int) {
                    handed.unknown = "bytes made from a list holding " + summarise(graph, item);
                    return handed;
                }
                const std::int64_t byte = graph.intValue(item);
                if (byte < 0 || byte > 255) {
                    handed.raises = "ValueError: bytes must be in range(0, 256)";
                    return handed;
                }
                bytes += static_cast<char>(byte);
            }
            handed.values.push_back(std::move(bytes));
            handed.how = "a list of byte values";
            return handed;
        }
        if (sourceKind == NodeKind::String && !(graph.flags(source) & FlagStringFromBytes)) {
            handed.raises = "TypeError: string argument without an encoding";
            return handed;
        }
        return bytesArgument(graph, source, depth + 1);
    }
    // Decompressors and base64: the bytes they unpack. gzip, bz2 and xz data is handed on as it is
    // (the scan of the nested bytes unpacks those wrappers itself); zlib and base64 are undone here.
    std::string codec; // codecs.decode(b, 'zlib'/'bz2'/'base64')
    if ((name == "_codecs.decode" || name == "codecs.decode") && count == 2) {
        const TextValue named = textArgument(graph, *arg(1));
        if (named.values.size() == 1 && named.values.front().size() < 64) {
            std::string text;
            for (char32_t c : named.values.front())
                text += c < 0x80 ? static_cast<char>(c) : '?';
            codec = pythonCodecModule(text);
        }
    }
    const bool zlibData = name == "zlib.decompress" || codec == "zlib_codec";
    const bool base64Data
        = name == "base64.b64decode" || name == "base64.decodebytes" || codec == "base64_codec";
    const char* wrapped = name == "gzip.decompress"        ? "gzip"
        : name == "bz2.decompress" || codec == "bz2_codec" ? "bz2"
        : name == "lzma.decompress"                        ? "xz"
                                                           : nullptr;
    if ((zlibData || base64Data || wrapped) && count == 1 + (codec.empty() ? 0 : 1)) {
        HandedBytes packed;
        if (base64Data && graph.kind(*arg(0)) == NodeKind::String) {
            const TextValue text = textArgument(graph, *arg(0));
            if (text.values.size() != 1) {
                packed.unknown = text.unknown.empty() ? "base64 text read differently by different loaders"
                                                      : text.unknown;
                packed.raises = text.raises;
                return packed;
            }
            for (char32_t c : text.values.front())
                if (c >= 0x80) {
                    packed.raises = "ValueError: string argument should contain only ASCII characters";
                    return packed;
                }
            std::string ascii;
            for (char32_t c : text.values.front())
                ascii += static_cast<char>(c);
            packed.values.push_back(std::move(ascii));
        } else {
            packed = bytesArgument(graph, *arg(0), depth + 1);
        }
        if (packed.values.empty())
            return packed;
        const std::string what = name.empty() ? "the call" : name;
        for (std::string& data : packed.values) {
            if (wrapped) {
                handed.values.push_back(std::move(data));
                handed.how = "data " + what + " unpacks (" + wrapped + ")";
            } else if (base64Data) {
                // binascii.a2b_base64 as b64decode calls it: other characters skipped, a complete
                // pad sequence ends the data, a partial last group raises.
                std::string out;
                int quad = 0, pads = 0;
                std::uint32_t left = 0;
                bool done = false;
                for (std::size_t i = 0; i < data.size() && !done; ++i) {
                    const char c = data[i];
                    if (c == '=') {
                        if (quad >= 2 && quad + ++pads >= 4)
                            done = true;
                        continue;
                    }
                    const int v = c >= 'A' && c <= 'Z' ? c - 'A'
                        : c >= 'a' && c <= 'z'         ? c - 'a' + 26
                        : c >= '0' && c <= '9'         ? c - '0' + 52
                        : c == '+'                     ? 62
                        : c == '/'                     ? 63
                                                       : -1;
                    if (v < 0)
                        continue;
                    pads = 0;
                    left = (left << 6) | static_cast<std::uint32_t>(v);
                    if (++quad == 4) {
                        out += static_cast<char>((left >> 16) & 0xFF);
                        out += static_cast<char>((left >> 8) & 0xFF);
                        out += static_cast<char>(left & 0xFF);
                        quad = 0;
                        left = 0;
                    }
                }
                if (quad == 1 || (quad != 0 && !done)) {
                    handed.raises = "binascii.Error: incorrect base64 padding";
                    continue;
                }
                if (quad == 2)
                    out += static_cast<char>((left >> 4) & 0xFF);
                if (quad == 3) {
                    out += static_cast<char>((left >> 10) & 0xFF);
                    out += static_cast<char>((left >> 2) & 0xFF);
                }
                handed.values.push_back(std::move(out));
                handed.how = "base64 text " + what + " decodes";
            } else {
                // zlib.decompress: a zlib header (deflate, checked by its modulo 31), then deflate data.
                const auto* bytes = reinterpret_cast<const std::uint8_t*>(data.data());
                if (data.size() < 2 || (bytes[0] & 0x0F) != 8 || (bytes[0] * 256 + bytes[1]) % 31 != 0
                    || (bytes[1] & 0x20)) {
                    handed.raises = "zlib.error: incorrect header check";
                    continue;
                }
                std::string why;
                const auto inflated
                    = inflateCapped(ByteView(bytes + 2, data.size() - 2), m_limits.maxUnpackedBytes, why);
                if (!inflated) {
                    handed.unknown = "zlib data " + what + " cannot unpack here: " + why;
                    handed.values.clear();
                    return handed;
                }
                handed.values.emplace_back(inflated->begin(), inflated->end());
                handed.how = "zlib data " + what + " unpacks";
            }
        }
        if (!handed.values.empty())
            handed.raises.clear();
        return handed;
    }
    if (name == "builtins.bytes.fromhex" || name == "builtins.bytearray.fromhex") {
        if (count != 1)
            return unevaluated();
        const TextValue text = textArgument(graph, *arg(0));
        if (text.values.size() != 1) {
            handed.unknown
                = text.unknown.empty() ? "hex text read differently by different loaders" : text.unknown;
            handed.raises = text.raises;
            return handed;
        }
        // bytes.fromhex: pairs of hex digits, ASCII whitespace allowed between pairs.
        auto hex = [](char32_t c) {
            return c >= '0' && c <= '9' ? int(c - '0')
                : c >= 'a' && c <= 'f'  ? int(c - 'a' + 10)
                : c >= 'A' && c <= 'F'  ? int(c - 'A' + 10)
                                        : -1;
        };
        std::string bytes;
        const std::u32string& digits = text.values.front();
        for (std::size_t i = 0; i < digits.size();) {
            const char32_t c = digits[i];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
                ++i;
                continue;
            }
            if (i + 1 >= digits.size() || hex(c) < 0 || hex(digits[i + 1]) < 0) {
                handed.raises = "ValueError: non-hexadecimal number found in fromhex() arg";
                return handed;
            }
            bytes += static_cast<char>(hex(c) * 16 + hex(digits[i + 1]));
            i += 2;
        }
        handed.values.push_back(std::move(bytes));
        handed.how = "bytes.fromhex text";
        return handed;
    }
    return unevaluated();
}

// Loaders of a file object (io.BytesIO(b) in a pickle) beyond the catalog's nested loaders, and
// unpicklers made over one (pickle.Unpickler(io.BytesIO(b)), whose .load() may be reached any way).
bool isFileLoader(std::string_view name)
{
    static constexpr std::array<std::string_view, 13> kLoaders {"pickle.load", "pickle._load", "_pickle.load",
        "cPickle.load", "dill.load", "cloudpickle.load", "pickle.Unpickler", "pickle._Unpickler",
        "_pickle.Unpickler", "pandas.read_pickle", "pandas.io.pickle.read_pickle", "torch.jit.load",
        "numpy.loads"};
    return std::find(kLoaders.begin(), kLoaders.end(), name) != kLoaders.end();
}

// A nested loader's call: the bytes it is handed are rated as a file of their own (every value they
// could have), or the verdict says what stopped it.
void Scanner::rateHandedBytes(
    const PickleGraph& graph, NodeId call, const std::string& name, const std::string& label, int depth)
{
    const NodeId args = graph.arguments(call);
    const bool pathLoader = name == "torch.load" || name == "torch.serialization.load" || name == "numpy.load"
        || name == "joblib.load" || name == "torch.jit.load" || name == "pandas.read_pickle"
        || name == "pandas.io.pickle.read_pickle";
    HandedBytes handed;
    if (graph.kind(args) == NodeKind::Tuple && graph.tupleSize(args) >= 1)
        handed = bytesArgument(graph, graph.tupleItem(args, 0), 0, pathLoader);
    else
        handed.unknown = "arguments " + summarise(graph, args) + " the scanner cannot read";
    if (!handed.unknown.empty()) {
        cannotVerify(
            label + ": " + name + " is given " + handed.unknown + "; what it would unpickle cannot be read");
        return;
    }
    if (handed.values.empty()) {
        m_verdict.notes.push_back(label + ": " + name + " is never handed bytes: building them raises ("
            + (handed.raises.empty() ? std::string("an error") : handed.raises) + ")");
        return;
    }
    const std::string innerLabel = label + " > bytes given to " + name
        + (handed.how.empty() ? std::string() : " (" + handed.how + ")");
    if (depth + 1 > m_limits.maxNesting) {
        cannotVerify(innerLabel + ": nested deeper than " + std::to_string(m_limits.maxNesting)
            + " levels, the scanner's limit");
        return;
    }
    for (std::size_t i = 0; i < handed.values.size(); ++i) {
        std::string& value = handed.values[i];
        if (!spend(value.size())) {
            cannotVerify(innerLabel + ": above the " + formatBytes(m_limits.maxUnpackedBytes)
                + " the scanner unpacks");
            return;
        }
        m_buffers.emplace_back(value.begin(), value.end());
        const ByteBuffer& buffer = m_buffers.back();
        scanFile(ByteView(buffer.data(), buffer.size()),
            handed.values.size() == 1 ? innerLabel
                                      : innerLabel + " [reading " + std::to_string(i + 1) + " of "
                    + std::to_string(handed.values.size()) + "]",
            depth + 1, true, false);
    }
}

std::string Scanner::summarise(const PickleGraph& graph, NodeId id) const
{
    PickleSummaryNaming naming;
    naming.globalName = [&](NodeId global) { return resolveValue(graph, global, 0); };
    naming.calleeName = [&](NodeId call) {
        return graph.kind(call) == NodeKind::Call ? calledName(graph, call)
                                                  : resolveValue(graph, graph.callee(call), 0);
    };
    naming.arguments = [&](NodeId call) {
        if (const NodeId maker = graph.callee(call); graph.kind(maker) == NodeKind::Call) {
            const std::string makerName = resolveValue(graph, graph.callee(maker), 0);
            if (makerName == "operator.methodcaller" || makerName == "_operator.methodcaller")
                return std::pair {
                    graph.arguments(maker), std::size_t {1}}; // methodcaller('m', *a)(x) calls x.m(*a)
        }
        return std::pair {graph.arguments(call), std::size_t {0}};
    };
    return summarisePickleValue(graph, id, naming);
}

void Scanner::rateRun(const PickleGraph& graph, NodeId firstNode, NodeId endNode, const PickleRun& run,
    const std::string& label, std::uint64_t base, int depth)
{
    m_ratedRuns.insert(runFingerprint(run));
    m_verdict.pickles.push_back(label + " (bytes " + formatThousands(base) + "-"
        + formatThousands(base + run.endOffset) + (run.complete() ? ")" : ", not read to its end)"));
    for (const GlobalReference& global : run.globals)
        rateGlobal(global.module, global.name, label + ", byte " + formatThousands(base + global.offset));
    for (const GlobalMutation& change : run.globalMutations)
        cannotVerify(label + ": " + change.opcode + " at byte " + formatThousands(base + change.offset)
            + " changes " + change.module + "." + change.name
            + " itself, not a value the pickle built: what the loading process does after that cannot be "
              "verified");
    // A torch pickle calls the same few globals once per tensor (through one memoized node): what a
    // global callee names, and whether that is inert, is worked out once per node.
    struct GlobalCallee {
        std::string name;
        bool inert = false;
    };
    std::unordered_map<NodeId, GlobalCallee> globalCallees;
    for (NodeId id = firstNode; id < endNode; ++id) {
        const NodeKind kind = graph.kind(id);
        if (kind == NodeKind::Extension) {
            addUnsafe({"copyreg extension code " + std::to_string(graph.extensionCode(id)),
                "EXT1/EXT2/EXT4 fetch a callable from copyreg's extension registry of the loading process: "
                "nothing in the file says what it is; cannot verify, treat as dangerous",
                false, label, {}});
            continue;
        }
        if (kind != NodeKind::Call && kind != NodeKind::NewObject)
            continue;
        const NodeId callee = graph.callee(id);
        const bool reached = graph.kind(callee) != NodeKind::Global;
        auto inertGlobal = [](const std::string& name) {
            const auto dot = name.rfind('.');
            return dot != std::string::npos
                && findInertGlobal(name.substr(0, dot), name.substr(dot + 1)).has_value();
        };
        std::string named; // the name when it is not one worked out once per node
        const std::string* namePointer = &named;
        bool inert = false;
        if (!reached && m_shortcuts) {
            // (A call of a GLOBAL is named by resolveValue alone: calledName looks further only
            // when the callee is itself a call.)
            auto [known, added] = globalCallees.try_emplace(callee);
            if (added) {
                known->second.name = resolveValue(graph, callee, 0);
                known->second.inert = !known->second.name.empty() && inertGlobal(known->second.name);
            }
            namePointer = &known->second.name; // (a map's values stay where they are)
            inert = known->second.inert;
        } else {
            named = kind == NodeKind::Call ? calledName(graph, id) : resolveValue(graph, callee, 0);
            inert = !reached && inertGlobal(named);
        }
        const std::string& name = *namePointer;
        if (name.empty())
            continue;
        if (reached) {
            // Reached through getattr/attrgetter/resolve_name: rate the name it resolves to.
            const auto splitAt = name.rfind('.');
            if (splitAt == std::string::npos
                || !findInertGlobal(name.substr(0, splitAt), name.substr(splitAt + 1))) {
                const auto danger = knownDanger(name);
                addUnsafe({name,
                    (danger ? *danger : std::string("cannot verify; treat as dangerous"))
                        + " (reached through a call chain, not named by a GLOBAL)",
                    danger.has_value(), label, summarise(graph, id)});
            }
        } else if (!inert) {
            addUnsafe({name, {}, false, label, summarise(graph, id)}); // merges into the GLOBAL's entry
        }
        // A nested loader, or an unpickler made over a file of bytes (pickle.Unpickler(io.BytesIO(b))
        // whose .load() may be reached any way at all): the bytes are rated as a pickle of their own.
        if (kind == NodeKind::Call && (isNestedPickleLoader(name) || isFileLoader(name)))
            rateHandedBytes(graph, id, name, label, depth);
    }
}

// One judgement of each pickle: every pickle the checkpoint reader ran (what `info`, the load
// simulation and the weights-only verdict show) is rated here too. The walk above finds them on its
// own; where it did not rate one (a reader that took other bytes than the walk, a format the walk
// reads another way), the reader's run is rated as it is, and a note says so. A run the walk rated
// adds nothing.
void Scanner::rateReaderSections(const Checkpoint& checkpoint)
{
    for (const PickleSection& section : checkpoint.pickles) {
        if (m_ratedRuns.contains(runFingerprint(section.run)))
            continue;
        // A run whose nodes were not recorded (the tar reader's) is rated by its globals alone.
        const bool nodes = section.firstNode != kNoNode && section.endNode <= checkpoint.graph.size()
            && section.firstNode <= section.endNode;
        const std::size_t unsafe = m_verdict.unsafe.size(), allowlist = m_verdict.allowlist.size(),
                          problems = m_verdict.cannotVerify.size(), pickles = m_verdict.pickles.size(),
                          notes = m_verdict.notes.size();
        const std::string label = section.record + " (as the checkpoint reader read it)";
        rateRun(checkpoint.graph, nodes ? section.firstNode : 0, nodes ? section.endNode : 0, section.run,
            label, section.fileOffset, 0);
        // What the reader's run adds: names, problems, or the only pickle there is. A run that stopped
        // early and adds nothing (gzip bytes in a data.pkl the scan unpacked, a run under tighter
        // limits than the scan's) changes nothing; one that adds names was not read to its end.
        const bool added = m_verdict.unsafe.size() != unsafe || m_verdict.allowlist.size() != allowlist
            || m_verdict.cannotVerify.size() != problems || (pickles == 0 && section.run.complete());
        if (!added) {
            m_verdict.pickles.resize(pickles);
            m_verdict.notes.resize(notes);
            continue;
        }
        if (!section.run.complete())
            cannotVerify(label + ": not read to its end, so what it would do cannot be verified: "
                + section.run.error.value_or("no STOP opcode") + " (at byte "
                + formatThousands(section.fileOffset + section.run.errorOffset) + ")");
        m_verdict.notes.push_back("the checkpoint reader read " + section.record + " (from byte "
            + formatThousands(section.fileOffset)
            + "), a pickle the scanner's own walk did not rate: it is rated as the reader read it");
    }
}

void Scanner::scanStream(
    ByteView bytes, const std::string& label, int depth, bool mustBePickle, bool topLevel)
{
    const PickleLimits limits;
    PickleGraph graph;
    // Nodes of reader runs rated in place of runs into `graph`: the node limit counts them as if
    // they were there, so every later run stops exactly where it would have.
    std::uint64_t reusedNodes = 0;
    auto runMachine = [&](ByteView pickle) {
        PickleLimits bounds = limits;
        bounds.maxNodes -= std::min<std::uint64_t>(reusedNodes, bounds.maxNodes);
        return PickleMachine(bounds).run(pickle, graph);
    };
    std::uint64_t offset = 0;
    int index = 0;
    auto pickleLabel = [&](int i) {
        return index == 0 && i == 0 ? label : label + " [pickle " + std::to_string(i + 1) + "]";
    };
    // 1. Stacked pickles, back to back, as repeated pickle.load calls (and torch's legacy format) read them.
    while (offset < bytes.size()) {
        const ByteView rest = bytes.subspan(offset);
        // The stackless pass: it costs no memory, so tensor bytes that merely start with an opcode
        // are dismissed before the machine builds anything from them. With shortcuts it is made
        // only where its answer is needed, and its names (the costly part) only where they decide.
        std::optional<OpcodeScan> walk;
        auto walked = [&]() -> const OpcodeScan& {
            if (!walk)
                walk = scanOpcodes(rest, 0, true, !m_shortcuts);
            return *walk;
        };
        std::optional<bool> namedGlobalFound;
        // Where a loader reads (the stacked pickles of the file itself), a GLOBAL whose attribute is
        // no name still imports its module (CPython's find_class imports, then fails on the attribute).
        // The same for an EXT opcode there (the extension registry's callable is looked up). At most
        // five: what torch.load's legacy format reads before its storages' bytes.
        // Also in any bytes that open as a pickle does (PROTO): a member a loader may be pointed at.
        const bool moduleSuffices = (topLevel && index < 5)
            || (index == 0 && rest.size() >= 2 && rest[0] == pickleop::PROTO && rest[1] <= 5);
        // From the first byte of any bytes a reader hands out (a zip member under any name), an
        // attribute that is no name still imports its module: CPython's _pickle decodes both lines
        // as UTF-8 and calls find_class, which imports before it fails on the attribute. A GLOBAL
        // of 'os' and 'sy\0stem ...' in a member named data.txt is that (the container differential,
        // seed 1795820759). Past the first pickle, tensor bytes follow: there the name must be one.
        const bool attributeAnyText = index == 0;
        auto namedGlobal = [&] {
            auto names = [moduleSuffices, attributeAnyText](const OpcodeScan& scan) {
                bool found = moduleSuffices && scan.extension;
                for (const auto& name : scan.names)
                    found |= isIdentifierPath(name.module)
                        && (moduleSuffices || isIdentifierPath(name.name)
                            || (attributeAnyText && isValidUtf8(name.name)));
                return found;
            };
            if (!namedGlobalFound)
                namedGlobalFound = m_shortcuts ? names(scanOpcodes(rest, 0, true)) : names(walked());
            return *namedGlobalFound;
        };
        if (!m_shortcuts)
            namedGlobal(); // the reference makes the pass first, always
        const bool protoStart = rest.size() >= 2 && rest[0] == pickleop::PROTO && rest[1] <= 5;
        const bool required = index == 0 && (mustBePickle || (topLevel && protoStart));
        // A run the reader made over exactly these bytes is complete: the stackless pass would have
        // reached its STOP (the two agree on every opcode's length), so nothing below needs it.
        const ReaderRun* reader = readerRunFor(rest, graph.size() + reusedNodes, limits);
        if (!reader && !required && !walked().reachedStop && !namedGlobal()) {
            if (index > 0)
                break;
            return;
        }
        const auto ownFirst = static_cast<NodeId>(graph.size());
        PickleRun ownRun;
        if (!reader)
            ownRun = runMachine(rest);
        const PickleRun& run = reader ? *reader->run : ownRun;
        // Tensor bytes can start with an opcode: only a pickle that finishes, names a global or
        // must be one (data.pkl, a top-level PROTO) counts.
        // A run stopped by one of the machine's own limits is not a fault a loader would stop at:
        // whatever follows may still run, so it is never dismissed as "no pickle".
        const bool looksLikePickle = (run.complete() && run.opcodeCount >= 2)
            || (index == 0 && (mustBePickle || (topLevel && protoStart) || run.stoppedAtLimit))
            || namedGlobal();
        if (!looksLikePickle) {
            if (index > 0)
                break; // the stacked pickles end here: what follows is data (legacy storages) or junk
            return; // not a pickle at all
        }
        const std::string name = pickleLabel(index);
        if (index == 1 && !m_verdict.pickles.empty() && m_verdict.pickles.back().starts_with(label + " (")) {
            // The first pickle was labelled with the bare label; say it is the first of several.
            m_verdict.pickles.back().insert(label.size(), " [pickle 1]");
        }
        recordPickleBytes(name, rest.subspan(0, std::min<std::uint64_t>(run.endOffset, rest.size())), run);
        if (reader) {
            rateRun(*reader->graph, reader->firstNode, reader->endNode, run, name, offset, depth);
            reusedNodes += reader->endNode - reader->firstNode;
            ++m_readerRunsReused;
        } else {
            rateRun(graph, ownFirst, static_cast<NodeId>(graph.size()), run, name, offset, depth);
        }
        // A complete run without a FRAME opcode has no frame to disagree with its opcodes.
        const bool frameFree = m_shortcuts && run.complete() && !run.opcodesSeen.test(pickleop::FRAME);
        if (!frameFree)
            for (const std::string& problem : walked().frameProblems)
                cannotVerify(name + ": " + problem);
        if (!frameFree && !walked().frameProblems.empty()) {
            // Python 3.11's _pickle reads on after such a frame from other bytes: name what it
            // looks up there too.
            PickleGraph buffered;
            for (const GlobalReference& global : runAsPython311FileBuffer(rest, buffered, limits).globals)
                rateGlobal(global.module, global.name,
                    name + ", byte " + formatThousands(offset + global.offset)
                        + ", as Python 3.11's _pickle reads it");
        }
        if (!run.complete()) {
            cannotVerify(name + ": not read to its end, so what it would do cannot be verified: "
                + run.error.value_or("no STOP opcode") + " (at byte "
                + formatThousands(offset + run.errorOffset) + ")");
            // Name what the machine did not reach.
            const OpcodeScan tail = scanOpcodes(rest, run.errorOffset, true);
            for (const auto& global : tail.names)
                if (global.offset >= run.errorOffset)
                    rateGlobal(global.module, global.name,
                        name + ", byte " + formatThousands(offset + global.offset));
            offset += std::max<std::uint64_t>(1, std::max(run.endOffset, tail.end));
            ++index;
            break;
        }
        offset += run.endOffset;
        ++index;
    }
    if (offset >= bytes.size())
        return;
    // 2. Anything after: a scanner that stops at junk misses a pickle behind it (a loader that skips
    // or resyncs would run it). Only complete pickles that name globals count here, so tensor bytes
    // that happen to look like an opcode are not taken for code.
    const std::uint64_t end
        = bytes.size() - offset > m_limits.maxTrailingScan ? offset + m_limits.maxTrailingScan : bytes.size();
    if (end < bytes.size())
        m_verdict.notes.push_back(label + ": " + formatThousands(bytes.size() - end)
            + " bytes after the first " + formatBytes(m_limits.maxTrailingScan)
            + " that follow its pickles were not searched for further pickles (no loader reads them)");
    for (std::uint64_t at = offset; at < end;) {
        const std::uint8_t op = bytes[at];
        const bool candidate = (op == pickleop::PROTO && at + 1 < bytes.size() && bytes[at + 1] <= 5)
            || (op == pickleop::GLOBAL && at + 1 < bytes.size() && std::isalpha(bytes[at + 1]))
            || (op == pickleop::MARK && at + 1 < bytes.size()
                && (bytes[at + 1] == pickleop::GLOBAL || bytes[at + 1] == pickleop::INST));
        if (!candidate) {
            ++at;
            continue;
        }
        const ByteView rest = bytes.subspan(at);
        const OpcodeScan opcodes = scanOpcodes(rest, 0, true, !m_shortcuts);
        if (!opcodes.reachedStop || (m_shortcuts ? scanOpcodes(rest, 0, true) : opcodes).names.empty()) {
            ++at;
            continue;
        }
        PickleGraph scratch;
        const PickleRun run = PickleMachine(limits).run(rest, scratch);
        bool named = false;
        for (const GlobalReference& global : run.globals)
            named |= isIdentifierPath(global.module) && isIdentifierPath(global.name);
        if (!run.complete() || !named) {
            ++at;
            continue;
        }
        const std::string name
            = label + " [a pickle at byte " + formatThousands(at) + ", after the stream's end]";
        recordPickleBytes(name, rest.subspan(0, std::min<std::uint64_t>(run.endOffset, rest.size())), run);
        rateRun(scratch, 0, static_cast<NodeId>(scratch.size()), run, name, at, depth);
        for (const std::string& problem : opcodes.frameProblems)
            cannotVerify(name + ": " + problem);
        at += std::max<std::uint64_t>(1, run.endOffset);
    }
}

void Scanner::scanZip(ByteView bytes, const std::string& givenLabel, int depth)
{
    const std::string label = givenLabel.empty() ? std::string("the archive") : givenLabel;
    std::vector<ZipMember> members;
    // Bytes before the archive move every offset the directory records by the same amount. Added
    // modulo 2^64: the offsets are the file's words, and a hostile one near 2^64 must wrap (and then
    // fail the bounds checks below), not overflow a signed sum.
    // Which central directory a reader takes differs (hostile-techniques.md §A): Python's zipfile
    // reads it at (end record − its size) and shifts every offset by the bytes in front; torch's
    // miniz at the offset the end record gives, unshifted; for ZIP64, zipfile 3.11 takes the ZIP64
    // end record just before the locator, miniz (and zipfile 3.14, when it checks out) the one at
    // the locator's offset. Every directory one of them would read is a view, and every member of
    // every view is rated; the first view (the usual reading) is the one whose faults are reported.
    // zipfile reads entries for the directory's size, miniz for its count: both are followed.
    struct DirectoryView {
        std::uint64_t start = 0, end = 0, shift = 0, count = 0;
    };
    std::vector<DirectoryView> views;
    auto addView = [&](const DirectoryView& view) {
        for (const DirectoryView& known : views)
            if (known.start == view.start && known.shift == view.shift)
                return;
        views.push_back(view);
    };
    if (const auto eocd = findEndOfCentralDirectory(bytes)) {
        struct EndRecord {
            std::uint64_t count, size, offset, at;
        };
        std::vector<EndRecord> records;
        // A ZIP64 end record (torch writes one) sits between the directory and this record.
        const std::uint64_t locator = *eocd - zipformat::kZip64LocatorSize;
        if (*eocd >= zipformat::kZip64LocatorSize
            && signatureAt(bytes, locator, zipformat::kZip64LocatorSignature)) {
            const std::uint64_t pointed = le(bytes, locator + 8, 8);
            const std::uint64_t before = locator - zipformat::kZip64EndRecordSize; // data written in front
            for (const std::uint64_t record : {pointed, before})
                if ((record == pointed || locator >= zipformat::kZip64EndRecordSize)
                    && signatureAt(bytes, record, zipformat::kZip64EndRecordSignature))
                    records.push_back({le(bytes, record + 32, 8), le(bytes, record + 40, 8),
                        le(bytes, record + 48, 8), record});
        }
        records.push_back(
            {le(bytes, *eocd + 10, 2), le(bytes, *eocd + 12, 4), le(bytes, *eocd + 16, 4), *eocd});
        for (const EndRecord& record : records) {
            if (record.size <= record.at)
                addView({record.at - record.size, record.at, record.at - record.size - record.offset,
                    record.count});
            if (record.offset <= bytes.size() && record.size <= bytes.size() - record.offset)
                addView({record.offset, record.offset + record.size, 0, record.count});
        }
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> directories; // the ranges views read
    for (std::size_t v = 0; v < views.size(); ++v) {
        const DirectoryView& view = views[v];
        const bool primary = v == 0;
        // (The count is the file's word: reserve no more than the directory could hold.)
        if (primary)
            members.reserve(
                std::min<std::uint64_t>(view.count, (view.end - view.start) / zipformat::kCentralHeaderSize));
        std::uint64_t at = view.start;
        const std::size_t before = members.size();
        for (std::uint64_t i = 0;
             (i < view.count || at < view.end) && signatureAt(bytes, at, zipformat::kCentralHeaderSignature);
             ++i) {
            ZipMember member;
            member.inCentral = true;
            member.flags = static_cast<std::uint16_t>(le(bytes, at + 8, 2));
            member.method = static_cast<std::uint16_t>(le(bytes, at + 10, 2));
            member.compressedSize = le(bytes, at + 20, 4);
            // (Python's zipfile hands on no more than this many bytes of the member.)
            const std::uint64_t uncompressedSize = le(bytes, at + 24, 4);
            const std::uint64_t nameLength = le(bytes, at + 28, 2), extraLength = le(bytes, at + 30, 2),
                                commentLength = le(bytes, at + 32, 2);
            std::uint64_t local = le(bytes, at + 42, 4);
            const std::uint64_t nameAt = at + zipformat::kCentralHeaderSize;
            if (auto name = subView(bytes, nameAt, nameLength))
                member.name = asText(*name);
            // ZIP64 extra field: the 0xFFFFFFFF fields, in this order.
            for (std::uint64_t e = nameAt + nameLength; e + 4 <= nameAt + nameLength + extraLength;) {
                const std::uint64_t id = le(bytes, e, 2), length = le(bytes, e + 2, 2);
                if (id == zipformat::kZip64ExtraId) {
                    std::uint64_t field = e + 4;
                    if (uncompressedSize == zipformat::kZip64Marker32)
                        member.uncompressedSize = le(bytes, field, 8), field += 8;
                    if (member.compressedSize == zipformat::kZip64Marker32)
                        member.compressedSize = le(bytes, field, 8), field += 8;
                    if (local == zipformat::kZip64Marker32)
                        local = le(bytes, field, 8);
                }
                e += 4 + length;
            }
            if (uncompressedSize != zipformat::kZip64Marker32)
                member.uncompressedSize = uncompressedSize;
            member.localOffset = local + view.shift;
            member.primary = primary;
            member.sizeKnown = true;
            members.push_back(member);
            at = nameAt + nameLength + extraLength + commentLength;
        }
        if (members.size() > before)
            directories.push_back({view.start, std::max(view.end, at)});
    }
    // Offsets that rise from member to member (one view read, as torch's ZIP64 end records give
    // beside the 32-bit one that points nowhere) hold no entry twice: no set is needed to see it
    // (the set was a twentieth of `info --json` of 100,000 tensors).
    const bool offsetsRise
        = std::adjacent_find(members.begin(), members.end(),
              [](const ZipMember& a, const ZipMember& b) { return a.localOffset >= b.localOffset; })
        == members.end();
    if (views.size() > 1 && !offsetsRise) {
        // The same entry seen by several views is rated once: the first in directory order stays.
        // Found by sorting the members' indices (4 bytes a member), not a set of their entries
        // beside a second copy of the members: at 100,000 records those two were 15 MB at the
        // peak of info --json, though torch's files have one view that finds members (the second
        // is the 32-bit end record's, which names no central header).
        auto entry = [&](std::uint32_t i) {
            const ZipMember& member = members[i];
            return std::tie(
                member.localOffset, member.name, member.compressedSize, member.method, member.flags);
        };
        std::vector<std::uint32_t> order(members.size());
        for (std::uint32_t i = 0; i < order.size(); ++i)
            order[i] = i;
        std::stable_sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return entry(a) < entry(b); });
        std::vector<bool> repeated(members.size());
        for (std::size_t k = 1; k < order.size(); ++k)
            if (entry(order[k]) == entry(order[k - 1]))
                repeated[order[k]] = true;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < members.size(); ++i)
            if (!repeated[i])
                members[kept++] = members[i];
        members.resize(kept);
    }
    // Local headers: those the central directory names, and any it does not (gaps, a missing
    // directory): a reader that recovers entries from local headers would find them.
    auto readLocal = [&](std::uint64_t at, ZipMember& member) {
        if (!signatureAt(bytes, at, zipformat::kLocalHeaderSignature))
            return false;
        const std::uint64_t nameLength = le(bytes, at + 26, 2), extraLength = le(bytes, at + 28, 2);
        if (auto name = subView(bytes, at + zipformat::kLocalHeaderSize, nameLength))
            member.localName = asText(*name);
        member.dataOffset = at + zipformat::kLocalHeaderSize + nameLength + extraLength;
        member.localFlags = static_cast<std::uint16_t>(le(bytes, at + 6, 2));
        if (!member.inCentral) {
            member.name = member.localName;
            member.flags = static_cast<std::uint16_t>(le(bytes, at + 6, 2));
            member.method = static_cast<std::uint16_t>(le(bytes, at + 8, 2));
            member.compressedSize = le(bytes, at + 18, 4);
            member.uncompressedSize = le(bytes, at + 22, 4);
            member.sizeKnown = !(member.flags & zipformat::kFlagDataDescriptor)
                && member.compressedSize != zipformat::kZip64Marker32;
        }
        return true;
    };
    // The walks below over the members, in file order, read each local header and each member's
    // bytes again: the pages behind each walk go back to the page cache 4 MB at a time (at 100,000
    // records each walk made the whole file resident, 19 MB above the graph and the records at the
    // peak of info --json). Out-of-order offsets only give back pages a later step reads again.
    std::uint64_t releasedTo = 0;
    auto releaseBehind = [&](std::uint64_t offset) {
        constexpr std::uint64_t kPiece = std::uint64_t(4) << 20;
        if (offset > bytes.size() || offset < releasedTo + kPiece)
            return;
        releaseMappedPages(bytes.subspan(releasedTo, offset - releasedTo));
        releasedTo = offset;
    };
    // The directories are read into the members: their pages go back before the walks (the walk
    // reads no name but for a finding), rather than stay under each walk's window (6.9 MB of the
    // 18 MB of the file resident at the peak of info --json of 100,000 tensors).
    releaseMappedPages(bytes);
    for (ZipMember& member : members) {
        releaseBehind(member.localOffset);
        if (!readLocal(member.localOffset, member) && member.primary)
            cannotVerify(label + ": the central directory names member '" + std::string(member.name)
                + "' at byte " + formatThousands(member.localOffset) + ", where no local header is");
    }
    // Another reader's view that names no local header there is no member of that reader either.
    std::erase_if(members, [](const ZipMember& member) { return !member.primary && !member.dataOffset; });
    // The local headers the directory names, sorted for lookup. Headers the search below finds
    // need not join them: the search only moves forward, past each header it finds.
    std::vector<std::uint64_t> centralLocalOffsets;
    centralLocalOffsets.reserve(members.size());
    for (const ZipMember& member : members)
        centralLocalOffsets.push_back(member.localOffset);
    std::sort(centralLocalOffsets.begin(), centralLocalOffsets.end());
    // Reserved: grown by doubling it held two blocks at the peak of info --json (2.1 MB at 100,000
    // records).
    std::vector<std::pair<std::uint64_t, std::uint64_t>> covered;
    covered.reserve(members.size() + 1);
    for (const ZipMember& member : members)
        if (member.dataOffset)
            covered.push_back(
                {member.localOffset, member.dataOffset + std::min(member.compressedSize, bytes.size())});
    covered.insert(covered.end(), directories.begin(), directories.end());
    std::sort(covered.begin(), covered.end());
    std::uint64_t at = 0;
    std::size_t next = 0;
    while (at + 4 <= bytes.size()) {
        while (next < covered.size() && covered[next].second <= at)
            ++next;
        if (next < covered.size() && covered[next].first <= at) {
            at = covered[next].second;
            continue;
        }
        const std::uint64_t limit = next < covered.size() ? covered[next].first : bytes.size();
        const void* found = memmem(bytes.data() + at, limit - at, "PK\3\4", 4);
        if (!found) {
            at = limit;
            continue;
        }
        const std::uint64_t header
            = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(found) - bytes.data());
        ZipMember member;
        member.localOffset = header;
        if (!std::binary_search(centralLocalOffsets.begin(), centralLocalOffsets.end(), header)
            && readLocal(header, member)) {
            members.push_back(member);
            m_verdict.notes.push_back(label + ": member '" + std::string(member.name) + "' at byte "
                + formatThousands(header)
                + " has a local header but no central directory entry; rated anyway");
        }
        at = header + 4;
    }
    // The directory and every local header are read: their pages go back to the page cache (at
    // 100,000 records the walk made the whole file resident again, 31 MB at the peak of info --json).
    releaseMappedPages(bytes);
    std::uint64_t archiveStart = bytes.size();
    for (const ZipMember& member : members)
        archiveStart = std::min(archiveStart, member.localOffset);
    if (archiveStart > 0) {
        // torch.load decides "zip or legacy" from the first bytes: a file that does not start with
        // a zip header is unpickled from byte 0 (and a stray end record proves nothing).
        scanStream(bytes.subspan(0, static_cast<std::size_t>(archiveStart)),
            members.empty() ? (givenLabel.empty() ? std::string("the file") : givenLabel)
                            : label + " (bytes before the zip archive)",
            depth, false, depth == 0);
    }
    // Duplicate names, name mismatches, several roots: notes; every member is rated anyway.
    {
        // Duplicates found by sorting the members' indices by name (no node per member): a stable
        // sort keeps each name's entries in directory order, so the second in a run is the second.
        std::vector<std::size_t> byName;
        byName.reserve(members.size());
        for (std::size_t i = 0; i < members.size(); ++i)
            if (members[i].inCentral)
                byName.push_back(i);
        std::stable_sort(byName.begin(), byName.end(),
            [&](std::size_t a, std::size_t b) { return members[a].name < members[b].name; });
        for (std::size_t k = 1; k < byName.size(); ++k) {
            const std::string_view name = members[byName[k]].name;
            if (name == members[byName[k - 1]].name && (k < 2 || name != members[byName[k - 2]].name))
                members[byName[k]].secondOfItsName = true;
        }
    }
    // The sort read every name in the directory again: back before the walk below.
    releaseMappedPages(bytes);
    std::set<std::string_view> roots;
    releasedTo = 0;
    for (const ZipMember& member : members) {
        releaseBehind(member.localOffset);
        if (member.secondOfItsName)
            m_verdict.notes.push_back(label + ": two members are named '" + std::string(member.name)
                + "': Python's zipfile reads the last, torch's miniz the first; both are rated");
        if (member.inCentral && !member.localName.empty() && member.localName != member.name)
            m_verdict.notes.push_back(label + ": the member at byte " + formatThousands(member.localOffset)
                + " is named '" + std::string(member.name) + "' in the central directory but '"
                + std::string(member.localName) + "' in its local header; rated under both names");

        if (member.name.ends_with("data.pkl"))
            roots.insert(member.name.substr(0, member.name.size() - 8));
    }
    if (roots.size() > 1) {
        std::string list;
        for (const std::string_view root : roots)
            list += (list.empty() ? "'" : ", '") + std::string(root) + "'";
        m_verdict.notes.push_back(label + ": " + std::to_string(roots.size())
            + " archive roots hold a data.pkl (" + list
            + "); torch reads the one under the first entry's prefix, '" + std::string(members.front().name)
            + "'; every one is rated");
    }
    // A torch.package archive (its .data/ records) ships Python sources: PackageImporter imports
    // the archive's own module, running its code, when a pickle names it (or a module importing
    // it). That is code, never inert, whatever the pickles name.
    const bool package = std::any_of(members.begin(), members.end(), [](const ZipMember& member) {
        return member.name.ends_with(".data/extern_modules") || member.name.ends_with(".data/version");
    });
    for (const ZipMember& member : members) {
        if (!package || !member.name.ends_with(".py"))
            continue;
        std::string module(member.name.substr(0, member.name.size() - 3));
        if (const auto slash = module.find('/'); slash != std::string::npos)
            module.erase(0, slash + 1); // the archive's prefix
        if (module.ends_with("/__init__"))
            module.resize(module.size() - 9);
        std::replace(module.begin(), module.end(), '/', '.');
        addUnsafe({module + " (Python source in the archive)",
            "torch.package ships this module's source (" + std::string(member.name)
                + "); PackageImporter runs it when a pickle names the module or one that imports it: "
                  "cannot verify, treat as dangerous",
            false, label + " > " + std::string(member.name), {}});
    }
    // An AOTInductor package (a torch.export archive with data/aotinductor/) ships compiled code:
    // torch.export.load and aoti_load_package load its shared libraries and run them. Code, never
    // inert, whatever its pickles name.
    for (const ZipMember& member : members) {
        const std::string_view name = member.name;
        const auto at = name.find("data/aotinductor/");
        if (at == std::string_view::npos || (at != 0 && name[at - 1] != '/') || name.ends_with("/"))
            continue;
        static constexpr std::array<std::string_view, 11> kCode {
            ".so", ".cubin", ".cpp", ".hsaco", ".ptx", ".spv", ".o", ".dll", ".dylib", ".fatbin", ".py"};
        if (std::none_of(
                kCode.begin(), kCode.end(), [&](std::string_view end) { return name.ends_with(end); }))
            continue;
        addUnsafe({std::string(name) + " (compiled code in an AOTInductor package)",
            "a torch.export AOTInductor package ships compiled code (" + std::string(name)
                + "); torch.export.load and torch._inductor.aoti_load_package load and run it: cannot "
                  "verify, "
                  "treat as dangerous",
            false, label + " > " + std::string(name), {}});
    }
    releasedTo = 0;
    for (const ZipMember& member : members) {
        releaseBehind(member.localOffset);
        if (member.name.ends_with("/") && member.compressedSize == 0)
            continue;
        std::uint64_t length = member.compressedSize;
        if (!member.sizeKnown || member.dataOffset + length > bytes.size()) {
            // Size unknown (data descriptor without a directory) or cut off: up to the next header.
            std::uint64_t stop = bytes.size();
            if (const void* found = memmem(bytes.data() + std::min(member.dataOffset, bytes.size()),
                    bytes.size() - std::min(member.dataOffset, bytes.size()), "PK", 2)) {
                std::uint64_t candidate
                    = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(found) - bytes.data());
                while (candidate + 4 <= bytes.size()
                    && !(signatureAt(bytes, candidate, zipformat::kLocalHeaderSignature)
                        || signatureAt(bytes, candidate, zipformat::kCentralHeaderSignature)
                        || signatureAt(bytes, candidate, zipformat::kDataDescriptorSignature)
                        || signatureAt(bytes, candidate, zipformat::kEndRecordSignature))) {
                    const void* again
                        = memmem(bytes.data() + candidate + 1, bytes.size() - candidate - 1, "PK", 2);
                    candidate = again
                        ? static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(again) - bytes.data())
                        : bytes.size();
                }
                stop = std::min<std::uint64_t>(candidate, bytes.size());
            }
            length = stop > member.dataOffset ? stop - member.dataOffset : 0;
        }
        const ByteView raw = bytes.subspan(std::min(member.dataOffset, bytes.size()),
            std::min<std::uint64_t>(length, bytes.size() - std::min(member.dataOffset, bytes.size())));
        const std::string memberLabel = (givenLabel.empty() ? std::string() : givenLabel + " > ")
            + std::string(member.name)
            + (!member.localName.empty() && member.localName != member.name
                    ? " (local header: " + std::string(member.localName) + ")"
                    : "");
        const bool namedPickle = namesPickle(member.name) || namesPickle(member.localName);
        if (((member.flags | member.localFlags)
                & (zipformat::kFlagEncrypted | zipformat::kFlagStrongEncryption))
            && !raw.empty())
            // torch's miniz refuses it; Python's zipfile decrypts it given the password, and what it
            // would then unpickle cannot be read here. Its bytes are still rated as they stand.
            cannotVerify(memberLabel + ": it is encrypted (general-purpose flag bits "
                + std::to_string((member.flags | member.localFlags)
                    & (zipformat::kFlagEncrypted | zipformat::kFlagStrongEncryption))
                + "); a reader given the password would unpickle bytes the scanner cannot read");
        // Python's zipfile stops at the uncompressed size its central directory records: where that
        // cuts the member short, what it hands on is rated as well. A member found only by walking
        // local headers is one zipfile never reads (it opens no archive without a directory).
        auto scanMember = [&](ByteView data) {
            scanFile(data, memberLabel, depth + 1, namedPickle, false);
            if (member.inCentral && member.uncompressedSize < data.size())
                scanFile(data.subspan(0, member.uncompressedSize),
                    memberLabel + " (its first " + formatThousands(member.uncompressedSize)
                        + " bytes, as Python's zipfile reads it)",
                    depth + 1, namedPickle, false);
        };
        if (member.method == zipformat::kMethodStored) {
            scanMember(raw);
        } else if (member.method == zipformat::kMethodDeflate) {
            std::string why;
            auto inflated = inflateCapped(
                raw, m_limits.maxUnpackedBytes - std::min(m_unpacked, m_limits.maxUnpackedBytes), why);
            if (!inflated || !spend(inflated->size())) {
                if (namedPickle || !inflated)
                    cannotVerify(memberLabel + ": its deflated bytes cannot be unpacked: "
                        + (why.empty() ? std::string("above the scanner's limit") : why));
                continue;
            }
            if (!why.empty()) {
                // torch's miniz (CRC checks off) hands on what inflated before the fault: rated too.
                cannotVerify(memberLabel + ": its deflated bytes cannot be unpacked to their end: " + why
                    + "; the " + formatThousands(inflated->size()) + " bytes before the fault are rated");
                if (inflated->empty())
                    continue;
            }
            m_buffers.push_back(std::move(*inflated));
            const ByteBuffer& buffer = m_buffers.back();
            scanMember(ByteView(buffer.data(), buffer.size()));
        } else if (!raw.empty()) {
            cannotVerify(memberLabel + ": compression method " + std::to_string(member.method)
                + ", which the scanner does not unpack (Python's zipfile may)");
        }
    }
}

// libarchive may have no message at all (a null pointer).
std::string archiveError(archive* reader)
{
    const char* message = libarchive().error_string(reader);
    return message ? message : "unknown error";
}

bool Scanner::unpackWrapper(
    ByteView bytes, const std::string& label, const char* wrapper, int depth, bool quiet)
{
    if (auto library = archiveLibrary(); !library) {
        // Whether these bytes are a wrapper, and what it holds, cannot be seen: never "inert".
        cannotVerify((label.empty() ? std::string("the file") : label) + ": may be " + wrapper
            + "-compressed, which cannot be unpacked here: " + library.error().message);
        return !quiet;
    }
    if (quiet) {
        // Tensor bytes that happen to start like a wrapper: only a wrapper if it unpacks cleanly.
        archive* probe = libarchive().read_new();
        libarchive().read_support_filter_all(probe);
        libarchive().read_support_format_all(probe);
        libarchive().read_support_format_raw(probe);
        archive_entry* entry = nullptr;
        bool clean = libarchive().read_open_memory(probe, bytes.data(), bytes.size()) == ARCHIVE_OK;
        while (clean) {
            const int status = libarchive().read_next_header(probe, &entry);
            if (status == ARCHIVE_EOF)
                break;
            if ((status != ARCHIVE_OK && status != ARCHIVE_WARN)
                || libarchive().read_data_skip(probe) != ARCHIVE_OK)
                clean = false;
        }
        libarchive().read_free(probe);
        if (!clean)
            return false;
    }
    m_verdict.notes.push_back((label.empty() ? std::string("the file") : label) + " is " + wrapper
        + "-compressed, not a checkpoint torch.load reads as it is; a script that unpacks it first runs "
          "what is inside, so that is rated");
    archive* reader = libarchive().read_new();
    libarchive().read_support_filter_all(reader);
    libarchive().read_support_format_all(reader);
    libarchive().read_support_format_raw(reader);
    if (libarchive().read_open_memory(reader, bytes.data(), bytes.size()) != ARCHIVE_OK) {
        cannotVerify(label + ": the " + wrapper + " data cannot be opened: " + archiveError(reader));
        libarchive().read_free(reader);
        return false;
    }
    archive_entry* entry = nullptr;
    int status;
    // ARCHIVE_WARN: a usable entry with a flaw, such as a name that is not text in this locale (a
    // tar member named with a pickle's bytes): Python's tarfile reads on, and so does the scan.
    while ((status = libarchive().read_next_header(reader, &entry)) == ARCHIVE_OK || status == ARCHIVE_WARN) {
        const char* path = libarchive().entry_pathname(entry);
        const std::string name
            = (label.empty() ? std::string() : label + " > ") + wrapper + ":" + (path ? path : "data");
        if (libarchive().entry_filetype(entry) == AE_IFDIR)
            continue;
        ByteBuffer buffer;
        char chunk[65536];
        la_ssize_t got;
        bool tooBig = false;
        while ((got = libarchive().read_data(reader, chunk, sizeof chunk)) > 0) {
            if (!spend(static_cast<std::uint64_t>(got))) {
                tooBig = true;
                break;
            }
            buffer.insert(buffer.end(), chunk, chunk + got);
        }
        if (tooBig) {
            cannotVerify(name + ": unpacks to more than the " + formatBytes(m_limits.maxUnpackedBytes)
                + " the scanner unpacks");
            break;
        }
        if (got < 0) {
            cannotVerify(name + ": the " + wrapper + " data is damaged: " + archiveError(reader));
            break;
        }
        m_buffers.push_back(std::move(buffer));
        const ByteBuffer& kept = m_buffers.back();
        const std::string_view member = path ? path : "";
        if (std::strcmp(wrapper, "tar") == 0 && (member == "storages" || member == "tensors")
            && !kept.empty())
            scanLegacyTarMember(ByteView(kept.data(), kept.size()), name, member == "storages", depth + 1);
        else
            scanFile(ByteView(kept.data(), kept.size()), name, depth + 1, member == "pickle", true);
    }
    if (status != ARCHIVE_EOF && status != ARCHIVE_OK)
        cannotVerify(label + ": the " + wrapper + " data cannot be read to its end: " + archiveError(reader));
    libarchive().read_free(reader);
    return true;
}

// An .npy file (or .npz member): numpy.load(allow_pickle=True) unpickles what follows the header
// when the header's dtype holds Python objects. numpy reads format versions 1.0 to 3.0.
void Scanner::scanNpy(ByteView bytes, const std::string& label, int depth)
{
    const int major = bytes[6];
    if (major < 1 || major > 3)
        return; // numpy refuses the file
    const std::uint64_t headerStart = major == 1 ? 10 : 12;
    const std::uint64_t headerLength = major == 1 ? le(bytes, 8, 2) : le(bytes, 8, 4);
    if (bytes.size() < headerStart || headerLength > bytes.size() - headerStart)
        return; // numpy: "EOF: reading array header"
    const std::string name = (label.empty() ? std::string("the file") : label) + " (NumPy object array)";
    const auto objects = NpyHeader(asText(bytes.subspan(headerStart, headerLength))).objects();
    if (objects == NpyHeader::Objects::No)
        return;
    if (objects == NpyHeader::Objects::Unreadable)
        cannotVerify(name
            + ": its header is written in a form the scanner does not parse, and numpy may read "
              "it as an object array, whose data it unpickles");
    scanStream(
        bytes.subspan(headerStart + headerLength), name, depth, objects == NpyHeader::Objects::Yes, false);
}

// Members 'storages' and 'tensors' of torch's 0.1.x tar format, which torch.load unpickles piece by
// piece (torch/serialization.py, legacy_load): a count pickle; then per storage an argument pickle
// (key, location, storage class) followed by the storage's bytes (i64 element count, then count ×
// element size bytes), and a last storage_views pickle; or per tensor an argument pickle followed
// by ndim (i32), 4 bytes, size and stride (ndim × i64 each) and an i64 offset. Every pickle is
// rated where torch reads it: behind storage bytes that do not look like opcodes.
void Scanner::scanLegacyTarMember(ByteView bytes, const std::string& label, bool storages, int depth)
{
    static const std::map<std::string, std::uint64_t, std::less<>> elementSizes = {{"DoubleStorage", 8},
        {"FloatStorage", 4}, {"HalfStorage", 2}, {"LongStorage", 8}, {"IntStorage", 4}, {"ShortStorage", 2},
        {"CharStorage", 1}, {"ByteStorage", 1}, {"BoolStorage", 1}, {"BFloat16Storage", 2},
        {"ComplexDoubleStorage", 16}, {"ComplexFloatStorage", 8}, {"QInt8Storage", 1}, {"QUInt8Storage", 1},
        {"QInt32Storage", 4}, {"QUInt4x2Storage", 1}, {"QUInt2x4Storage", 1}};
    std::uint64_t at = 0;
    for (int index = 0; at < bytes.size() && index < 1000000; ++index) {
        const ByteView rest = bytes.subspan(at);
        const std::string name = index == 0 ? label : label + " [pickle at byte " + formatThousands(at) + "]";
        const OpcodeScan walk = scanOpcodes(rest, 0, true);
        if (!walk.reachedStop) {
            scanStream(rest, name, depth, true, false); // rated as far as it reads: cannot verify
            return;
        }
        scanStream(rest.subspan(0, walk.end), name, depth, true, false);
        at += walk.end;
        if (index == 0)
            continue; // the count
        if (storages) {
            std::uint64_t elementSize = 0;
            for (const auto& global : walk.names)
                if (const auto found = elementSizes.find(global.name); found != elementSizes.end())
                    elementSize = found->second;
            if (!elementSize || bytes.size() - at < 8)
                return; // storage_views, the last pickle
            const std::uint64_t count = le(bytes, at, 8);
            at += 8;
            if (count > (bytes.size() - at) / elementSize)
                return;
            at += count * elementSize;
        } else {
            if (bytes.size() - at < 8)
                return;
            const auto ndim = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(bytes, at, 4)));
            if (ndim < 0 || ndim > 64 || bytes.size() - at < 16 + 16 * static_cast<std::uint64_t>(ndim))
                return;
            at += 16 + 16 * static_cast<std::uint64_t>(ndim);
        }
    }
}

void Scanner::scanFile(ByteView bytes, const std::string& label, int depth, bool mustBePickle, bool topLevel)
{
    if (bytes.empty()) {
        if (mustBePickle)
            cannotVerify(label + ": empty, where a pickle should be");
        return;
    }
    if (depth > m_limits.maxNesting) {
        cannotVerify(label + ": nested deeper than " + std::to_string(m_limits.maxNesting)
            + " levels, the scanner's limit");
        return;
    }
    auto starts = [&](std::initializer_list<std::uint8_t> magic) {
        return bytes.size() >= magic.size() && std::equal(magic.begin(), magic.end(), bytes.begin());
    };
    const char* wrapper = nullptr;
    if (starts({0x1f, 0x8b}))
        wrapper = "gzip";
    else if (starts({'B', 'Z', 'h'}))
        wrapper = "bzip2";
    else if (starts({0xfd, '7', 'z', 'X', 'Z', 0x00}))
        wrapper = "xz";
    else if (starts({0x28, 0xb5, 0x2f, 0xfd}))
        wrapper = "zstd";
    else if (starts({'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}))
        wrapper = "7z";
    else if (starts({0x04, 0x22, 0x4d, 0x18}))
        wrapper = "lz4";
    else if (looksLikeTar(bytes))
        wrapper = "tar";
    if (wrapper && unpackWrapper(bytes, label, wrapper, depth, !topLevel && !mustBePickle)) {
        // A tar header starts with a member's name, which may itself be a pickle that pickle.load
        // (numpy.load with allow_pickle) runs from byte 0 of the file; where a loader must unpickle
        // these bytes (a data.pkl, a stream torch.load reads from memory, which tries no tarfile)
        // they are rated as that pickle, with everything that follows.
        if (std::strcmp(wrapper, "tar") == 0)
            scanStream(bytes, label.empty() ? std::string("the file") : label, depth, mustBePickle, topLevel);
        return;
    }
    if (topLevel && bytes.size() >= 10) {
        // safetensors: u64 header length, then a JSON object; no pickle of its own. But the same
        // bytes may also be a pickle torch.load (or numpy.load) reads from byte 0, or a torch zip
        // (a file starting with a local header): a polyglot is rated as every format it passes for.
        const std::uint64_t headerLength = le(bytes, 0, 8);
        if (bytes[8] == '{' && headerLength >= 2 && headerLength <= bytes.size() - 8) {
            std::uint64_t last = 8 + headerLength - 1;
            while (last > 8 && bytes[last] == ' ')
                --last;
            if (bytes[last] == '}') {
                if (signatureAt(bytes, 0, zipformat::kLocalHeaderSignature))
                    scanZip(bytes, label, depth);
                else
                    scanStream(bytes, label.empty() ? std::string("the file") : label, depth, false, false);
                return;
            }
        }
    }
    if (starts({0x93, 'N', 'U', 'M', 'P', 'Y'}) && bytes.size() >= 10) {
        scanNpy(bytes, label, depth);
        return;
    }
    bool zip = signatureAt(bytes, 0, zipformat::kLocalHeaderSignature);
    if (!zip && topLevel && findEndOfCentralDirectory(bytes).has_value()) {
        // A pickle whose bytes hold zip archives (pickle.dump of storages saved as torch.save zips,
        // torch.storage._load_from_bytes(b'PK...')) has the last one's end record near its end; but
        // its loaders (pickle.load; torch.load, which tries a zip only where byte 0 starts one)
        // unpickle it from byte 0 to a STOP at its last byte. Such a file is rated as that pickle,
        // the archives inside through the loader they are handed to; a pickle that ends before
        // the end record is followed by a zip, rated as both.
        const OpcodeScan whole = scanOpcodes(bytes, 0, true, false);
        zip = !whole.reachedStop || whole.end != bytes.size();
    }
    if (zip) {
        scanZip(bytes, label, depth);
        return;
    }
    scanStream(bytes, label.empty() ? std::string("the file") : label, depth, mustBePickle, topLevel);
}

std::string joinNames(const std::vector<std::string>& names, std::size_t limit)
{
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < limit; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > limit)
        out += ", and " + std::to_string(names.size() - limit) + " more";
    return out;
}

std::string addSafeGlobalsCall(const std::vector<std::string>& paths)
{
    if (paths.empty())
        return {};
    std::string imports, list;
    for (const std::string& path : paths) {
        const auto dot = path.rfind('.');
        imports += "from " + path.substr(0, dot) + " import " + path.substr(dot + 1) + "\n";
        list += (list.empty() ? "" : ", ") + path.substr(dot + 1);
    }
    return "import torch\n" + imports + "torch.serialization.add_safe_globals([" + list + "])";
}

// The rating, headline and allowlist calls, from what the scan found.
void concludeVerdict(SafetyVerdict& verdict)
{
    std::vector<std::string> dangerous, unknown;
    for (const UnsafeCallable& callable : verdict.unsafe)
        (callable.knownDangerous ? dangerous : unknown).push_back(callable.name);
    bool torch2Lacks = false;
    for (const AllowlistCandidate& candidate : verdict.allowlist)
        torch2Lacks |= !candidate.torch2Default;

    if (!verdict.unsafe.empty() || !verdict.cannotVerify.empty()) {
        verdict.rating = PickleSafety::DangerousOrUnknown;
        if (!dangerous.empty()) {
            std::string call;
            for (const UnsafeCallable& callable : verdict.unsafe)
                if (callable.knownDangerous && !callable.call.empty()) {
                    call = callable.call;
                    break;
                }
            verdict.headline = "DANGEROUS: loading it with weights_only=False calls "
                + joinNames(dangerous, 6)
                + (call.empty() ? std::string()
                                : ", e.g. " + (call.size() > 160 ? call.substr(0, 160) + "..." : call))
                + (unknown.empty() ? std::string() : "; also unverifiable: " + joinNames(unknown, 4));
        } else if (!unknown.empty()) {
            verdict.headline = "CANNOT VERIFY; treat as dangerous: it calls " + joinNames(unknown, 6)
                + ", not on the vetted list of inert classes"
                + (verdict.cannotVerify.empty() ? std::string() : "; and " + verdict.cannotVerify.front());
        } else {
            verdict.headline = "CANNOT VERIFY; treat as dangerous: " + verdict.cannotVerify.front();
        }
    } else if (torch2Lacks) {
        verdict.rating = PickleSafety::NeedsAllowlist;
        std::vector<std::string> names;
        for (const AllowlistCandidate& candidate : verdict.allowlist)
            if (!candidate.torch2Default)
                names.push_back(candidate.name);
        verdict.headline
            = "needs allowlisting: only vetted inert classes that torch's weights_only list lacks ("
            + joinNames(names, 6) + ")";
    } else if (!verdict.pickles.empty()) {
        verdict.rating = PickleSafety::KnownInert;
        verdict.headline
            = "known inert: every global is a vetted inert class on torch's default weights_only "
              "allowlist; loading it cannot run code";
    } else {
        verdict.rating = PickleSafety::NoPickle;
        verdict.headline = "no pickle: nothing in it would be unpickled";
    }
    if (verdict.rating != PickleSafety::DangerousOrUnknown) {
        std::vector<std::string> for113, for2;
        for (const AllowlistCandidate& candidate : verdict.allowlist) {
            if (!candidate.offerAllowlist)
                continue;
            if (!candidate.torch113Default)
                for113.push_back(candidate.name);
            if (!candidate.torch2Default)
                for2.push_back(candidate.name);
        }
        verdict.addSafeGlobals113 = addSafeGlobalsCall(for113);
        verdict.addSafeGlobals2 = addSafeGlobalsCall(for2);
    }
}

SafetyVerdict rate(ByteView bytes, const SafetyScanLimits& limits, Shortcuts shortcuts,
    const std::vector<ReaderRun>& readerRuns = {}, std::size_t* readerRunsReused = nullptr,
    const Checkpoint* checkpoint = nullptr, const MappedFile* mappedFile = nullptr)
{
    SafetyVerdict verdict;
    Scanner scanner(verdict, limits, shortcuts);
    for (const ReaderRun& run : readerRuns)
        scanner.offerReaderRun(run);
    if (checkpoint && checkpoint->file && checkpoint->file->bytes().data() == bytes.data())
        mappedFile = checkpoint->file.get();
    if (mappedFile)
        scanner.setMappedFile(mappedFile);
    scanner.scanFile(bytes, {}, 0, false, true);
    if (checkpoint)
        scanner.rateReaderSections(*checkpoint);
    // What the scan touched of the file goes back to the page cache: what follows (the load
    // simulation, the report) reads the records, not the file.
    scanner.releaseMappedPages(bytes);
    concludeVerdict(verdict);
    if (readerRunsReused)
        *readerRunsReused = scanner.readerRunsReused();
    return verdict;
}

} // namespace

SafetyVerdict ratePickleSafety(ByteView bytes, const SafetyScanLimits& limits)
{
    return rate(bytes, limits, Shortcuts::Taken);
}

void rateFurtherGlobal(
    SafetyVerdict& verdict, const std::string& module, const std::string& name, const std::string& where)
{
    Scanner scanner(verdict, SafetyScanLimits {}, Shortcuts::Taken);
    scanner.rateForeignGlobal(module, name, where);
    verdict.addSafeGlobals113.clear();
    verdict.addSafeGlobals2.clear();
    concludeVerdict(verdict);
}

SafetyVerdict ratePickleSafetyReference(ByteView bytes, const SafetyScanLimits& limits)
{
    return rate(bytes, limits, Shortcuts::None);
}

SafetyVerdict ratePickleSafety(const MappedFile& file)
{
    return rate(file.bytes(), {}, Shortcuts::Taken, {}, nullptr, nullptr, &file);
}

SafetyVerdict ratePickleSafety(const Checkpoint& checkpoint, std::size_t* readerRunsReused)
{
    if (readerRunsReused)
        *readerRunsReused = 0;
    if (checkpoint.graph.released())
        throw std::logic_error("ratePickleSafety: the pickle graph was released before it was judged");
    if (!checkpoint.file) {
        SafetyVerdict verdict;
        verdict.headline = "no pickle: the file could not be read";
        return verdict;
    }
    // The reader's complete runs over bytes of this very mapping, under the bounds the scanner's
    // machine uses: the scanner rates those in place of running them again (ReaderRun).
    const ByteView bytes = checkpoint.file->bytes();
    std::vector<ReaderRun> readerRuns;
    for (const PickleSection& section : checkpoint.pickles) {
        if (!section.mappedByteLength || !section.run.complete()
            || !sameBounds(section.limits, PickleLimits {}) || section.firstNode == kNoNode
            || section.endNode > checkpoint.graph.size() || section.fileOffset > bytes.size()
            || bytes.size() - section.fileOffset < *section.mappedByteLength)
            continue;
        readerRuns.push_back({bytes.data() + section.fileOffset, *section.mappedByteLength, &checkpoint.graph,
            section.firstNode, section.endNode, &section.run});
    }
    return rate(bytes, {}, Shortcuts::Taken, readerRuns, readerRunsReused, &checkpoint);
}

} // namespace ckpt
