// SPDX-License-Identifier: MIT
// The pickle machine: runs a pickle's opcodes (protocols 0 to 5) symbolically into a PickleGraph.
// Nothing is imported or called: GLOBAL/STACK_GLOBAL become names, REDUCE/BUILD/NEWOBJ become
// call nodes, persistent ids become storage references, with limits on every resource.
//
// Why one file of about 1,400 lines: it is one dispatch loop over the opcodes (declared once in
// opcodes.h), and each case is a few lines that share the stack, memo and mark bookkeeping; split
// by opcode family, every part would need that machinery's internals. The machine reads what
// CPython's unpicklers read (issue 24; tests/tools/pickle_differential.py holds it to them): the
// integer parsers of the text opcodes come first, then the dispatch loop.
#include "core/pickle/picklemachine.h"
#include "core/base/ascii.h"
#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/pickle/bufferedframes.h"
#include "core/pickle/opcodes.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>

namespace ckpt {

namespace {

using namespace pickleop; // the machine's switch names opcodes bare: `case MARK:`

struct Failure {
    std::string message;
    bool limit = false; // a limit of this reader, not a fault CPython would stop at too
};

// ---- numbers written as text (INT, LONG, GET, PUT) ----
// CPython reads these with several parsers, and a pickle is loaded by whichever the process uses:
// Python 3.11's pickle.py calls int(text, 0) for INT and LONG, 3.14's int(text); _pickle.c tries
// C's strtol (base 0 up to 3.13, base 10 since) and falls back on PyLong_FromString, which reads a
// C string, so a NUL ends the number ("1\0junk" is 1). Memo keys are int(text) or
// PyLong_FromString(text, 10). The machine accepts a number when any of them does.

// An integer of any width: its sign and its magnitude in little-endian 32-bit limbs.
struct WideInteger {
    bool negative = false;
    std::vector<std::uint32_t> limbs;

    bool isZero() const
    {
        return std::all_of(limbs.begin(), limbs.end(), [](std::uint32_t limb) { return limb == 0; });
    }
    void multiplyAdd(std::uint32_t factor, std::uint32_t addend)
    {
        std::uint64_t carry = addend;
        for (std::uint32_t& limb : limbs) {
            const std::uint64_t v = static_cast<std::uint64_t>(limb) * factor + carry;
            limb = static_cast<std::uint32_t>(v);
            carry = v >> 32;
        }
        if (carry)
            limbs.push_back(static_cast<std::uint32_t>(carry));
    }
    // The value as an int64 when it fits.
    std::optional<std::int64_t> small() const
    {
        std::size_t used = limbs.size();
        while (used && limbs[used - 1] == 0)
            --used;
        if (used > 2)
            return std::nullopt;
        const std::uint64_t magnitude
            = (used > 0 ? limbs[0] : 0) | (used > 1 ? static_cast<std::uint64_t>(limbs[1]) << 32 : 0);
        if (!negative && magnitude <= static_cast<std::uint64_t>(INT64_MAX))
            return static_cast<std::int64_t>(magnitude);
        if (negative && magnitude <= static_cast<std::uint64_t>(INT64_MAX) + 1)
            return static_cast<std::int64_t>(0 - magnitude);
        return std::nullopt;
    }
    // Little-endian two's complement, as LONG1/LONG4 write it (shortest form).
    std::string twosComplement() const
    {
        std::string bytes;
        for (std::uint32_t limb : limbs)
            for (int i = 0; i < 4; ++i)
                bytes += static_cast<char>((limb >> (8 * i)) & 0xFF);
        bytes += '\0'; // room for the sign bit
        if (negative) {
            unsigned carry = 1;
            for (char& c : bytes) {
                const unsigned v = static_cast<std::uint8_t>(~static_cast<std::uint8_t>(c)) + carry;
                c = static_cast<char>(v & 0xFF);
                carry = v >> 8;
            }
        }
        while (bytes.size() > 1) {
            const auto last = static_cast<std::uint8_t>(bytes[bytes.size() - 1]);
            const auto before = static_cast<std::uint8_t>(bytes[bytes.size() - 2]);
            if ((last == 0x00 && !(before & 0x80)) || (last == 0xFF && (before & 0x80)))
                bytes.pop_back();
            else
                break;
        }
        return bytes;
    }
    // Canonical decimal text (for memo keys too wide for 64 bits).
    std::string decimal() const
    {
        std::vector<std::uint32_t> rest = limbs;
        std::string digits;
        auto nonZero
            = [&] { return std::any_of(rest.begin(), rest.end(), [](std::uint32_t l) { return l; }); };
        while (nonZero()) {
            std::uint64_t remainder = 0;
            for (std::size_t i = rest.size(); i-- > 0;) {
                const std::uint64_t v = (remainder << 32) | rest[i];
                rest[i] = static_cast<std::uint32_t>(v / 10);
                remainder = v % 10;
            }
            digits += static_cast<char>('0' + remainder);
        }
        if (digits.empty())
            digits = "0";
        if (negative && digits != "0")
            digits += '-';
        return {digits.rbegin(), digits.rend()};
    }
};

// CPython's Py_ISSPACE (and C's isspace in the "C" locale): the bytes int() and strtol skip.
bool isPySpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int digitValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    return 99;
}

// CPython's default limit on decimal digits (sys.get_int_max_str_digits()): int() refuses more.
constexpr std::size_t kPythonMaxStrDigits = 4300;

enum class IntegerOutcome { Parsed, Invalid, TooManyDigits };

// Python's int(text, base) for base 0 or 10, the whole of `text` (bytes, so a NUL is invalid;
// PyLong_FromString on a C string is this applied to the text before the first NUL).
IntegerOutcome pythonInt(std::string_view text, int base, WideInteger& out)
{
    std::size_t i = 0;
    while (i < text.size() && isPySpace(text[i]))
        ++i;
    out = {};
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
        out.negative = text[i++] == '-';
    bool zeroOnly = false; // base 0: "0..." with no prefix is only valid when it is zero
    auto at = [&](std::size_t k) { return k < text.size() ? text[k] : '\0'; };
    if (base == 0) {
        if (at(i) != '0') {
            base = 10;
        } else {
            const char p = at(i + 1);
            base = (p == 'x' || p == 'X') ? 16 : (p == 'o' || p == 'O') ? 8 : (p == 'b' || p == 'B') ? 2 : 10;
            if (base != 10) {
                i += 2;
                if (at(i) == '_')
                    ++i; // one underscore may follow the prefix
            } else {
                zeroOnly = true;
            }
        }
    }
    if (at(i) == '_')
        return IntegerOutcome::Invalid;
    std::string digits;
    char previous = 0;
    for (; i < text.size() && (digitValue(text[i]) < base || text[i] == '_'); ++i) {
        if (text[i] == '_' && previous == '_')
            return IntegerOutcome::Invalid;
        if (text[i] != '_')
            digits += text[i];
        previous = text[i];
    }
    if (digits.empty() || previous == '_')
        return IntegerOutcome::Invalid;
    while (i < text.size() && isPySpace(text[i]))
        ++i;
    if (i != text.size())
        return IntegerOutcome::Invalid;
    if (base == 10 && digits.size() > kPythonMaxStrDigits)
        return IntegerOutcome::TooManyDigits;
    if (base == 10) {
        for (std::size_t k = 0; k < digits.size();) {
            const std::size_t n = std::min<std::size_t>(9, digits.size() - k);
            std::uint32_t chunk = 0, scale = 1;
            for (std::size_t m = 0; m < n; ++m, ++k) {
                chunk = chunk * 10 + static_cast<std::uint32_t>(digits[k] - '0');
                scale *= 10;
            }
            out.multiplyAdd(scale, chunk);
        }
    } else {
        const int bits = base == 16 ? 4 : base == 8 ? 3 : 1;
        std::size_t bit = 0;
        for (std::size_t k = digits.size(); k-- > 0; bit += static_cast<std::size_t>(bits)) {
            const auto value = static_cast<std::uint32_t>(digitValue(digits[k]));
            for (int b = 0; b < bits; ++b) {
                if (!(value >> b & 1))
                    continue;
                const std::size_t at = bit + static_cast<std::size_t>(b);
                if (out.limbs.size() <= at / 32)
                    out.limbs.resize(at / 32 + 1, 0);
                out.limbs[at / 32] |= std::uint32_t(1) << (at % 32);
            }
        }
    }
    if (zeroOnly && !out.isZero())
        return IntegerOutcome::Invalid;
    return IntegerOutcome::Parsed;
}

// glibc's strtol(text, &end, base) for base 0 or 10 over a C string: the value when it fits a
// long, and where it stopped (0 when it read no digits, as strtol returns the start then).
struct StrtolResult {
    std::int64_t value = 0;
    std::size_t end = 0;
    bool overflow = false;
};
StrtolResult cStrtol(std::string_view text, int base)
{
    StrtolResult result;
    std::size_t i = 0;
    auto at = [&](std::size_t k) { return k < text.size() ? text[k] : '\0'; };
    while (isPySpace(at(i)))
        ++i;
    bool negative = false;
    if (at(i) == '+' || at(i) == '-')
        negative = at(i++) == '-';
    if (base == 0) {
        if (at(i) == '0' && (at(i + 1) == 'x' || at(i + 1) == 'X') && digitValue(at(i + 2)) < 16) {
            base = 16;
            i += 2;
        } else {
            base = at(i) == '0' ? 8 : 10;
        }
    }
    const std::size_t first = i;
    std::uint64_t magnitude = 0;
    for (; digitValue(at(i)) < base; ++i) {
        const auto digit = static_cast<std::uint64_t>(digitValue(at(i)));
        if (magnitude > (UINT64_MAX - digit) / static_cast<std::uint64_t>(base))
            result.overflow = true; // strtol reads on to the end of the digits, then says ERANGE
        else
            magnitude = magnitude * static_cast<std::uint64_t>(base) + digit;
    }
    if (i == first)
        return result; // no digits: end stays at the start
    result.end = i;
    const std::uint64_t limit = negative ? static_cast<std::uint64_t>(INT64_MAX) + 1 : INT64_MAX;
    if (result.overflow || magnitude > limit) {
        result.overflow = true;
        return result;
    }
    result.value = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
    return result;
}

// The text before the first NUL: what the C parsers see.
std::string_view beforeNul(std::string_view text)
{
    const auto nul = text.find('\0');
    return nul == std::string_view::npos ? text : text.substr(0, nul);
}

struct TextInteger {
    WideInteger value;
    bool boolean = false; // INT's "00"/"01" (and _pickle's other two-byte 0 and 1): False/True
};

// INT: `line` is the line without its '\n'.
std::optional<TextInteger> parseIntOpcode(std::string_view line, bool& tooManyDigits)
{
    TextInteger result;
    if (line == "00" || line == "01") {
        result.value.limbs = {line == "01" ? 1u : 0u};
        result.boolean = true;
        return result;
    }
    if (line.empty())
        return std::nullopt; // _pickle: "pickle data was truncated"; pickle.py: int('')
    const std::string_view cText = beforeNul(line);
    for (const int base : {0, 10}) { // _pickle.c up to 3.13, then since 3.14
        const StrtolResult c = cStrtol(cText, base);
        if (!c.overflow && c.end == cText.size()) {
            result.value.negative = c.value < 0;
            const std::uint64_t magnitude
                = c.value < 0 ? 0 - static_cast<std::uint64_t>(c.value) : static_cast<std::uint64_t>(c.value);
            result.value.limbs
                = {static_cast<std::uint32_t>(magnitude), static_cast<std::uint32_t>(magnitude >> 32)};
            result.boolean = line.size() == 2 && (c.value == 0 || c.value == 1);
            return result;
        }
        const IntegerOutcome fallback = pythonInt(cText, base, result.value);
        if (fallback == IntegerOutcome::Parsed)
            return result;
        tooManyDigits |= fallback == IntegerOutcome::TooManyDigits;
    }
    for (const int base : {0, 10}) { // pickle.py 3.11, 3.14
        const IntegerOutcome outcome = pythonInt(line, base, result.value);
        if (outcome == IntegerOutcome::Parsed)
            return result;
        tooManyDigits |= outcome == IntegerOutcome::TooManyDigits;
    }
    return std::nullopt;
}

// LONG: one trailing 'L' is dropped (Python 2 wrote "12L"), then as INT without the booleans.
std::optional<WideInteger> parseLongOpcode(std::string_view line, bool& tooManyDigits)
{
    if (line.empty())
        return std::nullopt;
    if (line.back() == 'L')
        line.remove_suffix(1);
    WideInteger value;
    for (const std::string_view text : {beforeNul(line), line})
        for (const int base : {0, 10}) {
            const IntegerOutcome outcome = pythonInt(text, base, value);
            if (outcome == IntegerOutcome::Parsed)
                return value;
            tooManyDigits |= outcome == IntegerOutcome::TooManyDigits;
        }
    return std::nullopt;
}

// GET/PUT keys: int(text) in pickle.py, PyLong_FromString(text, 10) in _pickle.c.
std::optional<WideInteger> parseMemoKey(std::string_view line)
{
    if (line.empty())
        return std::nullopt;
    WideInteger key;
    for (const std::string_view text : {line, beforeNul(line)})
        if (pythonInt(text, 10, key) == IntegerOutcome::Parsed)
            return key;
    return std::nullopt;
}

class Runner {
public:
    Runner(ByteView data, PickleGraph& graph, const PickleLimits& limits, bool fileBuffer = false)
        : m_data(data)
        , m_graph(graph)
        , m_limits(limits)
        , m_fileBuffer(fileBuffer)
    { }

    PickleRun execute()
    {
        try {
            if (m_data.size() > m_limits.maxPickleBytes)
                throw Failure {"the pickle is " + formatThousands(m_data.size())
                        + " bytes long, above the reader's limit of "
                        + formatThousands(m_limits.maxPickleBytes) + " bytes",
                    true};
            loop();
        } catch (const Failure& failure) {
            m_run.error = failure.message;
            m_run.stoppedAtLimit = failure.limit;
            m_run.errorOffset = m_opcodeOffset;
            m_run.endOffset = m_pos;
            m_run.stackAtError = m_stack;
        } catch (const std::bad_alloc&) {
            m_run.error = "ran out of memory while reading the pickle";
            m_run.stoppedAtLimit = true;
            m_run.errorOffset = m_opcodeOffset;
            m_run.endOffset = m_pos;
        }
        return std::move(m_run);
    }

private:
    void loop()
    {
        for (;;) {
            if (m_pos >= m_data.size()) {
                m_opcodeOffset = m_pos;
                throw Failure {m_pos == 0 ? std::string("the pickle is empty")
                                          : "the pickle ends at byte " + formatThousands(m_pos)
                            + " before its STOP opcode: the data is truncated"};
            }
            m_opcodeOffset = m_pos;
            const std::uint8_t op = m_data[m_pos++];
            afterRead();
            m_run.opcodesSeen.set(op);
            if ((m_run.opcodeCount & 0xFFFF) == 0xFFFF && m_limits.progress
                && !m_limits.progress(m_pos, m_data.size()))
                throw Failure {"cancelled", true};
            if (++m_run.opcodeCount > m_limits.maxOpcodes)
                throw Failure {"the pickle has more than " + formatThousands(m_limits.maxOpcodes)
                        + " opcodes, above the reader's limit",
                    true};
            if (step(op)) {
                m_run.endOffset = m_pos;
                return;
            }
        }
    }

    // ---- input ----
    // _pickle 3.11 reading a file without peek() (bufferedframes.h): m_bufferEnd is where its last
    // read from the file ended; the bytes before it not yet used are its buffer. A read that needs
    // more than the buffer holds drops the rest and reads from the file, after the buffer.
    void beforeRead(std::uint64_t n)
    {
        if (m_fileBuffer && m_pos < m_bufferEnd && n > m_bufferEnd - m_pos)
            m_pos = m_bufferEnd;
    }
    void beforeLine()
    {
        if (m_fileBuffer && m_pos < m_bufferEnd
            && !std::memchr(m_data.data() + m_pos, '\n', static_cast<std::size_t>(m_bufferEnd - m_pos)))
            m_pos = m_bufferEnd; // no end of line in the buffer: file.readline() from after it
    }
    void afterRead()
    {
        if (m_fileBuffer && m_pos > m_bufferEnd)
            m_bufferEnd = m_pos;
    }
    // Most opcodes take a few bytes (3 million takes for 100,000 tensors): the message of a
    // truncated pickle is made out of line, so that what is left inlines where it is called.
    ByteView take(std::uint64_t n, const char* what)
    {
        beforeRead(n);
        if (n > m_data.size() - m_pos) [[unlikely]]
            failTruncated(n, what);
        ByteView view = m_data.subspan(m_pos, static_cast<std::size_t>(n));
        m_pos += n;
        afterRead();
        return view;
    }
    [[noreturn, gnu::cold, gnu::noinline]] void failTruncated(std::uint64_t n, const char* what) const
    {
        throw Failure {std::string("the pickle ends inside ") + what + " at byte " + formatThousands(m_pos)
            + " (needs " + formatThousands(n) + " more bytes, has " + formatThousands(m_data.size() - m_pos)
            + "): the data is truncated"};
    }
    template<class T> T readLE(const char* what)
    {
        const ByteView v = take(sizeof(T), what);
        T value;
        std::memcpy(&value, v.data(), sizeof(T)); // one load, not one per byte
        if constexpr (std::endian::native == std::endian::big) {
            value = 0;
            for (std::size_t i = 0; i < sizeof(T); ++i)
                value |= static_cast<T>(static_cast<T>(v[i]) << (8 * i));
        }
        return value;
    }
    // Lines of numbers and quoted strings: a trailing '\r' (a pickle that went through a text-mode
    // copy) is dropped, as Python's int() and float() ignore it.
    std::string_view readLine(const char* what)
    {
        std::string_view line = readRawLine(what);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        return line;
    }
    // Lines that name something (GLOBAL and INST): Python keeps every byte before the '\n'
    // (readline()[:-1]), so "torch\r" is a different module from "torch" and must stay one here,
    // or the verdict would judge, and the remap writer re-emit, a name the loader never sees.
    std::string_view readRawLine(const char* what)
    {
        beforeLine();
        const std::uint8_t* begin = m_data.data() + m_pos;
        const void* nl = std::memchr(begin, '\n', m_data.size() - m_pos);
        if (!nl)
            throw Failure {std::string("the pickle ends inside ") + what + " at byte "
                + formatThousands(m_pos) + " (no end of line): the data is truncated"};
        const std::size_t length = static_cast<const std::uint8_t*>(nl) - begin;
        m_pos += length + 1;
        afterRead();
        return std::string_view(reinterpret_cast<const char*>(begin), length);
    }

    // The name lines of GLOBAL and INST. At the end of the data pickle.py's readline() returns
    // what is left without a '\n', and [:-1] drops its last byte: it looks the truncated name up
    // (importing its module) before it stops, so the machine names what it looks up.
    std::string_view readNameLine(bool& truncated)
    {
        beforeLine();
        if (std::memchr(m_data.data() + m_pos, '\n', m_data.size() - m_pos))
            return readRawLine("a name");
        const std::size_t left = static_cast<std::size_t>(m_data.size() - m_pos);
        const std::string_view rest(
            reinterpret_cast<const char*>(m_data.data() + m_pos), left ? left - 1 : 0);
        m_pos = m_data.size();
        truncated = true;
        return rest;
    }

    // ---- stack ----
    void push(NodeId id)
    {
        if (m_stack.size() >= m_limits.maxStackDepth)
            throw Failure {"the pickle's stack grows past " + formatThousands(m_limits.maxStackDepth)
                    + " entries, above the reader's limit",
                true};
        m_stack.push_back(id);
    }
    NodeId pop(const char* opcode)
    {
        if (m_stack.empty() || (!m_marks.empty() && m_stack.size() <= m_marks.back()))
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " needs a value but the stack is empty: the pickle is malformed"};
        NodeId id = m_stack.back();
        m_stack.pop_back();
        return id;
    }
    NodeId top(const char* opcode)
    {
        if (m_stack.empty() || (!m_marks.empty() && m_stack.size() <= m_marks.back()))
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " needs a value but the stack is empty: the pickle is malformed"};
        return m_stack.back();
    }
    std::vector<NodeId> popMark(const char* opcode)
    {
        if (m_marks.empty())
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " needs a MARK but there is none: the pickle is malformed"};
        const std::size_t mark = m_marks.back();
        m_marks.pop_back();
        std::vector<NodeId> items(m_stack.begin() + static_cast<std::ptrdiff_t>(mark), m_stack.end());
        m_stack.resize(mark);
        return items;
    }
    // popMark() for the opcodes that only read the items (TUPLE, SETITEMS, APPENDS, ADDITEMS):
    // into one vector kept for the run, not a new one each time (two per tensor of a state dict).
    const std::vector<NodeId>& popMarkScratch(const char* opcode)
    {
        if (m_marks.empty())
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " needs a MARK but there is none: the pickle is malformed"};
        const std::size_t mark = m_marks.back();
        m_marks.pop_back();
        m_scratch.assign(m_stack.begin() + static_cast<std::ptrdiff_t>(mark), m_stack.end());
        m_stack.resize(mark);
        return m_scratch;
    }
    NodeId node(NodeId id)
    {
        if (m_graph.size() >= std::min<std::size_t>(m_limits.maxNodes, kMaxGraphNodes))
            throw Failure {"the pickle holds more than " + formatThousands(m_limits.maxNodes)
                    + " values, above the reader's limit",
                true};
        return id;
    }
    void checkNodeBudget()
    {
        if (m_graph.size() >= std::min<std::size_t>(m_limits.maxNodes, kMaxGraphNodes))
            throw Failure {"the pickle holds more than " + formatThousands(m_limits.maxNodes)
                    + " values, above the reader's limit",
                true};
    }

    // ---- memo ----
    void memoPut(std::uint64_t key, const char* opcode)
    {
        const NodeId value = top(opcode);
        NodeId* slot = memoSlot(key);
        if (slot && *slot != kNoNode) {
            *slot = value;
            return;
        }
        if (!m_sparseMemo.empty())
            if (auto it = m_sparseMemo.find(key); it != m_sparseMemo.end()) {
                it->second = value; // stored while it was far beyond the dense range
                return;
            }
        if (m_memoCount >= m_limits.maxMemoEntries)
            throw Failure {"the pickle's memo grows past " + formatThousands(m_limits.maxMemoEntries)
                    + " entries, above the reader's limit",
                true};
        ++m_memoCount;
        if (slot)
            *slot = value;
        else
            m_sparseMemo.emplace(key, value);
    }
    void memoGet(std::uint64_t key, const char* opcode)
    {
        NodeId value = kNoNode;
        if (key < m_denseMemo.size())
            value = m_denseMemo[key];
        if (value == kNoNode && !m_sparseMemo.empty())
            if (auto it = m_sparseMemo.find(key); it != m_sparseMemo.end())
                value = it->second;
        if (value == kNoNode)
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " refers to memo entry " + std::to_string(key)
                + ", which was never stored: the pickle is malformed"};
        push(value);
    }
    // Picklers number memo entries 0, 1, 2, ...: those live in a plain array indexed by key (a
    // hash map cost a sixth of reading a 200,000-storage file). A key far beyond the entries seen
    // so far (a hostile LONG_BINPUT 4000000000) goes to the map instead, so the array never grows
    // past twice the entries plus a page.
    NodeId* memoSlot(std::uint64_t key)
    {
        if (key < m_denseMemo.size())
            return &m_denseMemo[key];
        if (key > 2 * m_memoCount + 4096)
            return nullptr;
        m_denseMemo.resize(
            std::max<std::size_t>(static_cast<std::size_t>(key) + 1, m_denseMemo.size() * 2), kNoNode);
        return &m_denseMemo[key];
    }
    // PUT/GET: keys written as text, which may be wider than 64 bits (pickle.py's memo is a dict
    // and takes any int); those are kept by their decimal text.
    void memoPutText(std::string_view line, const char* opcode)
    {
        const WideInteger key = memoKey(line, opcode);
        if (key.negative && !key.isZero())
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " stores under a negative memo key: the pickle is malformed"};
        if (const auto small = key.small())
            return memoPut(static_cast<std::uint64_t>(*small), opcode);
        const NodeId value = top(opcode);
        auto [it, added] = m_wideMemo.try_emplace(key.decimal(), value);
        if (!added) {
            it->second = value;
            return;
        }
        if (m_memoCount >= m_limits.maxMemoEntries)
            throw Failure {"the pickle's memo grows past " + formatThousands(m_limits.maxMemoEntries)
                    + " entries, above the reader's limit",
                true};
        ++m_memoCount;
    }
    void memoGetText(std::string_view line, const char* opcode)
    {
        const WideInteger key = memoKey(line, opcode);
        const auto small = key.small();
        if (small && *small >= 0)
            return memoGet(static_cast<std::uint64_t>(*small), opcode);
        const auto it = key.negative ? m_wideMemo.end() : m_wideMemo.find(key.decimal());
        if (it == m_wideMemo.end())
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " refers to memo entry " + key.decimal().substr(0, 40)
                + ", which was never stored: the pickle is malformed"};
        push(it->second);
    }
    WideInteger memoKey(std::string_view line, const char* opcode)
    {
        std::optional<WideInteger> key = parseMemoKey(line);
        if (!key)
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " has a memo key that is not a number: the pickle is malformed"};
        return std::move(*key);
    }

    // ---- values ----
    void pushText(NodeKind kind, std::string_view text, std::uint8_t flags = FlagNone)
    {
        if ((flags & FlagStringFromBytes) && !m_run.undecodableStringOffset) {
            if (auto error = pythonUtf8DecodeError(text)) {
                m_run.undecodableStringOffset = m_opcodeOffset;
                m_run.undecodableStringError = std::move(*error);
            }
        }
        if (text.size() > 0xFFFFFFFFull)
            throw Failure {
                "a string of " + formatThousands(text.size()) + " bytes is above the reader's limit", true};
        checkNodeBudget();
        push(m_graph.addText(kind, text, flags));
    }
    void pushInt(std::int64_t value)
    {
        checkNodeBudget();
        push(m_graph.addScalar(NodeKind::Int, value));
    }
    void pushLittleEndianInteger(ByteView bytes)
    {
        if (bytes.size() > m_limits.maxIntegerBytes)
            throw Failure {"an integer " + formatThousands(bytes.size())
                    + " bytes wide is above the reader's limit of "
                    + formatThousands(m_limits.maxIntegerBytes) + " bytes",
                true};
        if (bytes.size() <= 8) {
            std::uint64_t value = 0;
            for (std::size_t i = 0; i < bytes.size(); ++i)
                value |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
            if (!bytes.empty() && bytes.size() < 8 && (bytes.back() & 0x80))
                value |= ~std::uint64_t(0) << (8 * bytes.size());
            pushInt(static_cast<std::int64_t>(value));
            return;
        }
        pushText(NodeKind::BigInt, asText(bytes));
    }
    void pushWideInteger(const WideInteger& value)
    {
        if (const auto small = value.small())
            return pushInt(*small);
        const std::string bytes = value.twosComplement();
        if (bytes.size() > m_limits.maxIntegerBytes)
            throw Failure {"an integer " + formatThousands(bytes.size())
                    + " bytes wide is above the reader's limit of "
                    + formatThousands(m_limits.maxIntegerBytes) + " bytes",
                true};
        pushText(NodeKind::BigInt, bytes);
    }
    [[noreturn]] void notAnInteger(std::string_view line, const char* opcode, bool tooManyDigits)
    {
        if (tooManyDigits)
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                    + " holds an integer of more than " + formatThousands(kPythonMaxStrDigits)
                    + " decimal digits, which CPython refuses by default (a process that raised "
                      "sys.set_int_max_str_digits would read on)",
                true};
        throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset) + " holds '"
            + printableText(line.substr(0, 40)) + "', which is not an integer"};
    }
    // Python 2 STRING: a quoted repr with backslash escapes.
    std::string decodeQuoted(std::string_view line)
    {
        if (line.size() < 2 || (line.front() != '\'' && line.front() != '"') || line.back() != line.front())
            throw Failure {"STRING at byte " + formatThousands(m_opcodeOffset) + " is not a quoted string"};
        std::string_view body = line.substr(1, line.size() - 2);
        std::string out;
        for (std::size_t i = 0; i < body.size(); ++i) {
            char c = body[i];
            if (c != '\\' || i + 1 >= body.size()) {
                out += c;
                continue;
            }
            char e = body[++i];
            switch (e) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case 'a':
                out += '\a';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'v':
                out += '\v';
                break;
            case '\\':
                out += '\\';
                break;
            case '\'':
                out += '\'';
                break;
            case '"':
                out += '"';
                break;
            case '\n':
                break;
            case 'x':
                if (i + 2 < body.size() + 0 && hexDigit(body[i + 1]) >= 0 && hexDigit(body[i + 2]) >= 0) {
                    out += static_cast<char>(hexDigit(body[i + 1]) * 16 + hexDigit(body[i + 2]));
                    i += 2;
                } else {
                    out += "\\x";
                }
                break;
            default:
                if (e >= '0' && e <= '7') {
                    int value = e - '0';
                    for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
                         ++k)
                        value = value * 8 + (body[++i] - '0');
                    out += static_cast<char>(value & 0xFF);
                } else {
                    out += '\\';
                    out += e;
                }
            }
        }
        return out;
    }
    // Protocol 0 UNICODE: raw-unicode-escape (\uXXXX, \UXXXXXXXX; other bytes are Latin-1).
    std::string decodeRawUnicodeEscape(std::string_view line)
    {
        std::string out;
        for (std::size_t i = 0; i < line.size(); ++i) {
            const unsigned char c = static_cast<unsigned char>(line[i]);
            if (c == '\\' && i + 1 < line.size() && (line[i + 1] == 'u' || line[i + 1] == 'U')) {
                const std::size_t digits = line[i + 1] == 'u' ? 4 : 8;
                if (i + 2 + digits <= line.size()) {
                    std::uint32_t cp = 0;
                    bool ok = true;
                    for (std::size_t k = 0; k < digits; ++k) {
                        const int h = hexDigit(line[i + 2 + k]);
                        if (h < 0) {
                            ok = false;
                            break;
                        }
                        cp = cp * 16 + static_cast<std::uint32_t>(h);
                    }
                    if (ok && cp <= 0x10FFFF) {
                        appendUtf8(out, cp);
                        i += 1 + digits;
                        continue;
                    }
                }
            }
            appendUtf8(out, c);
        }
        return out;
    }

    // What a GLOBAL, a call, a persistent id or an extension code yields is not known here, so
    // CPython may find any method on it (extend, __setitem__, add, __setstate__).
    static bool opaque(NodeKind k)
    {
        return k == NodeKind::Global || k == NodeKind::Call || k == NodeKind::NewObject
            || k == NodeKind::PersistentId || k == NodeKind::Extension || k == NodeKind::PickleBuffer;
    }
    static const char* kindName(NodeKind k)
    {
        switch (k) {
        case NodeKind::None:
            return "None";
        case NodeKind::Bool:
            return "bool";
        case NodeKind::Int:
        case NodeKind::BigInt:
            return "int";
        case NodeKind::Float:
            return "float";
        case NodeKind::String:
            return "str";
        case NodeKind::Bytes:
            return "bytes";
        case NodeKind::ByteArray:
            return "bytearray";
        case NodeKind::Tuple:
            return "tuple";
        case NodeKind::List:
            return "list";
        case NodeKind::Dict:
            return "dict";
        case NodeKind::Set:
            return "set";
        case NodeKind::FrozenSet:
            return "frozenset";
        default:
            return "object";
        }
    }
    // Python's truth value of a value the pickle built, when the machine can know it.
    std::optional<bool> truthy(NodeId id) const
    {
        const NodeKind k = m_graph.kind(id);
        const ContainerBody* body = m_graph.bodyOf(id);
        switch (k) {
        case NodeKind::None:
            return false;
        case NodeKind::Bool:
        case NodeKind::Int:
            return m_graph.intValue(id) != 0;
        case NodeKind::BigInt: {
            const std::string_view bytes = m_graph.text(id);
            return std::any_of(bytes.begin(), bytes.end(), [](char c) { return c != 0; });
        }
        case NodeKind::Float: {
            const double value = m_graph.floatValue(id);
            return value != 0.0 || value != value;
        }
        case NodeKind::String:
        case NodeKind::Bytes:
        case NodeKind::ByteArray:
            return !m_graph.text(id).empty() || (body && !body->items.empty());
        case NodeKind::Tuple:
            return m_graph.tupleSize(id) > 0;
        case NodeKind::List:
        case NodeKind::Set:
        case NodeKind::FrozenSet:
            return body && !body->items.empty();
        case NodeKind::Dict:
            return body && !body->dictItems.empty();
        default:
            return std::nullopt;
        }
    }

    enum class Mutation { Append, SetItem, AddItems };
    // The value APPEND(S)/SETITEM(S)/ADDITEMS change, when CPython can change it: a list (extend,
    // append), a dict, list or bytearray (__setitem__), a set (add), a bytearray (extend), or a
    // value whose type the machine cannot see. Others have no such method, and CPython stops.
    NodeId mutableTarget(NodeId target, const char* opcode, Mutation mutation)
    {
        const NodeKind k = m_graph.kind(target);
        const bool ok = opaque(k)
            || (mutation == Mutation::Append && (k == NodeKind::List || k == NodeKind::ByteArray))
            || (mutation == Mutation::SetItem
                && (k == NodeKind::Dict || k == NodeKind::List || k == NodeKind::ByteArray))
            || (mutation == Mutation::AddItems && k == NodeKind::Set);
        if (!ok)
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset) + " changes a "
                + kindName(k) + ", which has no "
                + (mutation == Mutation::Append         ? "append or extend"
                        : mutation == Mutation::SetItem ? "__setitem__"
                                                        : "add")
                + " method: the pickle is malformed"};
        noteGlobalMutation(target, opcode);
        return target;
    }
    void noteGlobalMutation(NodeId target, const char* opcode)
    {
        if (m_graph.kind(target) == NodeKind::Global)
            m_run.globalMutations.push_back({opcode, std::string(m_graph.module(target)),
                std::string(m_graph.name(target)), m_opcodeOffset});
    }

    void recordGlobal(std::string_view module, std::string_view name)
    {
        m_run.globals.push_back({std::string(module), std::string(name), m_opcodeOffset});
    }

    // Returns true at STOP.
    bool step(std::uint8_t op)
    {
        switch (op) {
        case MARK:
            if (m_marks.size() >= m_limits.maxMarkDepth)
                throw Failure {
                    "the pickle nests MARKs deeper than " + formatThousands(m_limits.maxMarkDepth), true};
            m_marks.push_back(m_stack.size());
            return false;
        case STOP:
            m_run.root = pop("STOP");
            return true;
        case POP:
            if (!m_stack.empty() && (m_marks.empty() || m_stack.size() > m_marks.back()))
                m_stack.pop_back();
            else if (!m_marks.empty())
                popMark("POP");
            else
                throw Failure {"POP at byte " + formatThousands(m_opcodeOffset) + " on an empty stack"};
            return false;
        case POP_MARK:
            popMark("POP_MARK");
            return false;
        case DUP:
            push(top("DUP"));
            return false;
        case FLOAT: {
            std::string text(readLine("FLOAT"));
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            if (end == text.c_str())
                throw Failure {"FLOAT at byte " + formatThousands(m_opcodeOffset) + " is not a number"};
            checkNodeBudget();
            push(m_graph.addFloat(value));
            return false;
        }
        case INT: {
            const std::string_view line = readRawLine("INT");
            bool tooManyDigits = false;
            const std::optional<TextInteger> value = parseIntOpcode(line, tooManyDigits);
            if (!value)
                notAnInteger(line, "INT", tooManyDigits);
            if (value->boolean) {
                checkNodeBudget();
                push(m_graph.addScalar(NodeKind::Bool, value->value.isZero() ? 0 : 1));
            } else {
                pushWideInteger(value->value);
            }
            return false;
        }
        case BININT:
            pushInt(static_cast<std::int32_t>(readLE<std::uint32_t>("BININT")));
            return false;
        case BININT1:
            pushInt(readLE<std::uint8_t>("BININT1"));
            return false;
        case BININT2:
            pushInt(readLE<std::uint16_t>("BININT2"));
            return false;
        case LONG: {
            const std::string_view line = readRawLine("LONG");
            bool tooManyDigits = false;
            const std::optional<WideInteger> value = parseLongOpcode(line, tooManyDigits);
            if (!value)
                notAnInteger(line, "LONG", tooManyDigits);
            pushWideInteger(*value);
            return false;
        }
        case LONG1: {
            const std::uint8_t n = readLE<std::uint8_t>("LONG1");
            pushLittleEndianInteger(take(n, "LONG1"));
            return false;
        }
        case LONG4: {
            const std::int32_t n = static_cast<std::int32_t>(readLE<std::uint32_t>("LONG4"));
            if (n < 0)
                throw Failure {"LONG4 at byte " + formatThousands(m_opcodeOffset) + " has a negative length"};
            // (Truncated data is a fault every loader stops at; only bytes that are there can be
            // above the width limit, which pushLittleEndianInteger checks.)
            pushLittleEndianInteger(take(static_cast<std::uint64_t>(n), "LONG4"));
            return false;
        }
        case NONE:
            checkNodeBudget();
            push(m_graph.addScalar(NodeKind::None, 0));
            return false;
        case NEWTRUE:
        case NEWFALSE:
            checkNodeBudget();
            push(m_graph.addScalar(NodeKind::Bool, op == NEWTRUE));
            return false;
        case BINFLOAT: {
            ByteView v = take(8, "BINFLOAT");
            std::uint64_t bits = 0;
            for (int i = 0; i < 8; ++i)
                bits = (bits << 8) | v[i]; // big-endian, unlike everything else in a pickle
            double value;
            std::memcpy(&value, &bits, sizeof value);
            checkNodeBudget();
            push(m_graph.addFloat(value));
            return false;
        }
        case PERSID: {
            std::string_view pid = readRawLine("PERSID"); // pickle.py keeps a '\r' in the id
            checkNodeBudget();
            const NodeId text = m_graph.addText(NodeKind::String, pid);
            m_run.persistentIdOffsets.push_back(m_opcodeOffset);
            push(node(m_graph.addPersistentId(text)));
            return false;
        }
        case BINPERSID: {
            const NodeId pid = pop("BINPERSID");
            checkNodeBudget();
            m_run.persistentIdOffsets.push_back(m_opcodeOffset);
            push(m_graph.addPersistentId(pid));
            return false;
        }
        case REDUCE: {
            const NodeId args = pop("REDUCE");
            const NodeId callable = pop("REDUCE");
            checkNodeBudget();
            push(m_graph.addCall(NodeKind::Call, callable, args));
            return false;
        }
        case STRING:
            pushText(NodeKind::String, decodeQuoted(readLine("STRING")), FlagStringFromBytes);
            return false;
        case BINSTRING: {
            const std::int32_t n = static_cast<std::int32_t>(readLE<std::uint32_t>("BINSTRING"));
            if (n < 0)
                throw Failure {
                    "BINSTRING at byte " + formatThousands(m_opcodeOffset) + " has a negative length"};
            pushText(NodeKind::String, asText(take(static_cast<std::uint64_t>(n), "BINSTRING")),
                FlagStringFromBytes);
            return false;
        }
        case SHORT_BINSTRING: {
            const std::uint8_t n = readLE<std::uint8_t>("SHORT_BINSTRING");
            pushText(NodeKind::String, asText(take(n, "SHORT_BINSTRING")), FlagStringFromBytes);
            return false;
        }
        case UNICODE:
            // readline()[:-1]: a '\r' before the '\n' belongs to the string.
            pushText(NodeKind::String, decodeRawUnicodeEscape(readRawLine("UNICODE")));
            return false;
        case BINUNICODE: {
            const std::uint32_t n = readLE<std::uint32_t>("BINUNICODE");
            pushText(NodeKind::String, asText(take(n, "BINUNICODE")));
            return false;
        }
        case SHORT_BINUNICODE: {
            const std::uint8_t n = readLE<std::uint8_t>("SHORT_BINUNICODE");
            pushText(NodeKind::String, asText(take(n, "SHORT_BINUNICODE")));
            return false;
        }
        case BINUNICODE8: {
            const std::uint64_t n = readLE<std::uint64_t>("BINUNICODE8");
            pushText(NodeKind::String, asText(take(n, "BINUNICODE8")));
            return false;
        }
        case BINBYTES: {
            const std::uint32_t n = readLE<std::uint32_t>("BINBYTES");
            pushText(NodeKind::Bytes, asText(take(n, "BINBYTES")));
            return false;
        }
        case SHORT_BINBYTES: {
            const std::uint8_t n = readLE<std::uint8_t>("SHORT_BINBYTES");
            pushText(NodeKind::Bytes, asText(take(n, "SHORT_BINBYTES")));
            return false;
        }
        case BINBYTES8: {
            const std::uint64_t n = readLE<std::uint64_t>("BINBYTES8");
            pushText(NodeKind::Bytes, asText(take(n, "BINBYTES8")));
            return false;
        }
        case BYTEARRAY8: {
            const std::uint64_t n = readLE<std::uint64_t>("BYTEARRAY8");
            pushText(NodeKind::ByteArray, asText(take(n, "BYTEARRAY8")));
            return false;
        }
        case NEXT_BUFFER:
            checkNodeBudget();
            push(m_graph.addScalar(NodeKind::PickleBuffer, 0));
            return false;
        case READONLY_BUFFER:
            m_graph.setFlags(top("READONLY_BUFFER"), FlagReadOnlyBuffer);
            return false;
        case APPEND: {
            const NodeId value = pop("APPEND");
            const NodeId list = mutableTarget(top("APPEND"), "APPEND", Mutation::Append);
            m_graph.ensureBody(list).items.push_back(value);
            return false;
        }
        case APPENDS: {
            const std::vector<NodeId>& items = popMarkScratch("APPENDS");
            const NodeId target = top("APPENDS");
            if (items.empty())
                return false; // _pickle returns before it looks at the target
            const NodeId list = mutableTarget(target, "APPENDS", Mutation::Append);
            auto& body = m_graph.ensureBody(list).items;
            body.insert(body.end(), items.begin(), items.end());
            return false;
        }
        case BUILD: {
            const NodeId state = pop("BUILD");
            const NodeId target = top("BUILD");
            const NodeKind k = m_graph.kind(target);
            if (opaque(k)) {
                noteGlobalMutation(target, "BUILD");
                m_graph.ensureBody(target).states.push_back(state);
                return false;
            }
            // A value of a built-in type has no __setstate__ and no __dict__: CPython accepts the
            // BUILD only when there is nothing to set, and then it changes nothing. pickle.py
            // skips a false state and a false slot state; _pickle wants a state of None and a slot
            // state of None or an empty dict.
            NodeId dictState = state;
            NodeId slotState = kNoNode;
            if (m_graph.kind(state) == NodeKind::Tuple && m_graph.tupleSize(state) == 2) {
                dictState = m_graph.tupleItem(state, 0);
                slotState = m_graph.tupleItem(state, 1);
            }
            const bool pythonAccepts = !truthy(dictState).value_or(false)
                && (slotState == kNoNode || !truthy(slotState).value_or(false));
            const NodeKind dictKind = m_graph.kind(dictState);
            const NodeKind slotKind = slotState == kNoNode ? NodeKind::None : m_graph.kind(slotState);
            const bool cAccepts = (dictKind == NodeKind::None || opaque(dictKind))
                && (slotKind == NodeKind::None || opaque(slotKind)
                    || (slotKind == NodeKind::Dict && !truthy(slotState).value_or(true)));
            if (!pythonAccepts && !cAccepts)
                throw Failure {"BUILD at byte " + formatThousands(m_opcodeOffset) + " sets the state of a "
                    + kindName(k) + ", which has no attributes: the pickle is malformed"};
            return false;
        }
        case GLOBAL: {
            bool truncated = false;
            std::string_view module = readNameLine(truncated);
            std::string_view name = readNameLine(truncated);
            recordGlobal(module, name);
            if (truncated)
                throw Failure {"the pickle ends inside GLOBAL at byte " + formatThousands(m_opcodeOffset)
                    + " (no end of line): the data is truncated, though pickle.py still looks up "
                    + printableText(module) + "." + printableText(name)};
            checkNodeBudget();
            push(m_graph.addGlobal(module, name));
            return false;
        }
        case STACK_GLOBAL: {
            const NodeId name = pop("STACK_GLOBAL");
            const NodeId module = pop("STACK_GLOBAL");
            if (!m_graph.isString(name) || !m_graph.isString(module))
                throw Failure {"STACK_GLOBAL at byte " + formatThousands(m_opcodeOffset)
                    + " needs two strings: the pickle is malformed"};
            recordGlobal(m_graph.text(module), m_graph.text(name));
            checkNodeBudget();
            push(m_graph.addGlobal(std::string(m_graph.text(module)), std::string(m_graph.text(name))));
            return false;
        }
        case INST: {
            bool truncated = false;
            std::string module(readNameLine(truncated));
            std::string name(readNameLine(truncated));
            recordGlobal(module, name);
            if (truncated)
                throw Failure {"the pickle ends inside INST at byte " + formatThousands(m_opcodeOffset)
                    + " (no end of line): the data is truncated, though pickle.py still looks up "
                    + printableText(module) + "." + printableText(name)};
            std::vector<NodeId> args = popMark("INST");
            checkNodeBudget();
            const NodeId cls = m_graph.addGlobal(module, name);
            const NodeId tuple = m_graph.addTuple(args.data(), args.size());
            const NodeId object = m_graph.addCall(NodeKind::NewObject, cls, tuple);
            m_graph.setFlags(object, FlagFromInst);
            push(object);
            return false;
        }
        case OBJ: {
            std::vector<NodeId> items = popMark("OBJ");
            if (items.empty())
                throw Failure {"OBJ at byte " + formatThousands(m_opcodeOffset)
                    + " has no class: the pickle is malformed"};
            checkNodeBudget();
            const NodeId tuple = m_graph.addTuple(items.data() + 1, items.size() - 1);
            const NodeId object = m_graph.addCall(NodeKind::NewObject, items.front(), tuple);
            m_graph.setFlags(object, FlagFromInst);
            push(object);
            return false;
        }
        case NEWOBJ: {
            const NodeId args = pop("NEWOBJ");
            const NodeId cls = pop("NEWOBJ");
            checkNodeBudget();
            push(m_graph.addCall(NodeKind::NewObject, cls, args));
            return false;
        }
        case NEWOBJ_EX: {
            const NodeId kwargs = pop("NEWOBJ_EX");
            const NodeId args = pop("NEWOBJ_EX");
            const NodeId cls = pop("NEWOBJ_EX");
            checkNodeBudget();
            const NodeId object = m_graph.addCall(NodeKind::NewObject, cls, args);
            m_graph.setFlags(object, FlagNewObjectEx);
            m_graph.ensureBody(object).keywordArgs = kwargs;
            push(object);
            return false;
        }
        case EXT1:
        case EXT2:
        case EXT4: {
            std::int64_t code = op == EXT1 ? readLE<std::uint8_t>("EXT1")
                : op == EXT2               ? readLE<std::uint16_t>("EXT2")
                                           : static_cast<std::int32_t>(readLE<std::uint32_t>("EXT4"));
            checkNodeBudget();
            push(m_graph.addScalar(NodeKind::Extension, code));
            return false;
        }
        case DICT: {
            std::vector<NodeId> items = popMark("DICT");
            if (items.size() % 2)
                throw Failure {
                    "DICT at byte " + formatThousands(m_opcodeOffset) + " has an odd number of items"};
            checkNodeBudget();
            const NodeId dict = m_graph.addContainer(NodeKind::Dict);
            m_graph.ensureBody(dict).dictItems = std::move(items);
            push(dict);
            return false;
        }
        case EMPTY_DICT:
            checkNodeBudget();
            push(m_graph.addContainer(NodeKind::Dict));
            return false;
        case LIST: {
            std::vector<NodeId> items = popMark("LIST");
            checkNodeBudget();
            const NodeId list = m_graph.addContainer(NodeKind::List);
            m_graph.ensureBody(list).items = std::move(items);
            push(list);
            return false;
        }
        case EMPTY_LIST:
            checkNodeBudget();
            push(m_graph.addContainer(NodeKind::List));
            return false;
        case EMPTY_SET:
            checkNodeBudget();
            push(m_graph.addContainer(NodeKind::Set));
            return false;
        case ADDITEMS: {
            const std::vector<NodeId>& items = popMarkScratch("ADDITEMS");
            const NodeId target = top("ADDITEMS");
            if (items.empty())
                return false; // _pickle returns before it looks at the target
            const NodeId set = mutableTarget(target, "ADDITEMS", Mutation::AddItems);
            auto& body = m_graph.ensureBody(set).items;
            body.insert(body.end(), items.begin(), items.end());
            return false;
        }
        case FROZENSET: {
            std::vector<NodeId> items = popMark("FROZENSET");
            checkNodeBudget();
            const NodeId set = m_graph.addContainer(NodeKind::FrozenSet);
            m_graph.ensureBody(set).items = std::move(items);
            push(set);
            return false;
        }
        case TUPLE: {
            const std::vector<NodeId>& items = popMarkScratch("TUPLE");
            checkNodeBudget();
            push(m_graph.addTuple(items.data(), items.size()));
            return false;
        }
        case EMPTY_TUPLE:
            checkNodeBudget();
            push(m_graph.addTuple(nullptr, 0));
            return false;
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
            const std::size_t n = static_cast<std::size_t>(op - TUPLE1 + 1);
            NodeId items[3];
            for (std::size_t i = n; i-- > 0;)
                items[i] = pop(pickleOpcodeName(op));
            checkNodeBudget();
            push(m_graph.addTuple(items, n));
            return false;
        }
        case SETITEM: {
            const NodeId value = pop("SETITEM");
            const NodeId key = pop("SETITEM");
            const NodeId dict = mutableTarget(top("SETITEM"), "SETITEM", Mutation::SetItem);
            auto& target = m_graph.ensureBody(dict).dictItems;
            target.push_back(key);
            target.push_back(value);
            return false;
        }
        case SETITEMS: {
            const std::vector<NodeId>& items = popMarkScratch("SETITEMS");
            const NodeId target = top("SETITEMS");
            if (items.empty())
                return false; // both loaders set nothing, whatever the target
            if (items.size() % 2)
                throw Failure {
                    "SETITEMS at byte " + formatThousands(m_opcodeOffset) + " has an odd number of items"};
            const NodeId dict = mutableTarget(target, "SETITEMS", Mutation::SetItem);
            auto& body = m_graph.ensureBody(dict).dictItems;
            body.insert(body.end(), items.begin(), items.end());
            return false;
        }
        case GET:
            memoGetText(readRawLine("GET"), "GET");
            return false;
        case BINGET:
            memoGet(readLE<std::uint8_t>("BINGET"), "BINGET");
            return false;
        case LONG_BINGET:
            memoGet(readLE<std::uint32_t>("LONG_BINGET"), "LONG_BINGET");
            return false;
        case PUT:
            memoPutText(readRawLine("PUT"), "PUT");
            return false;
        case BINPUT:
            memoPut(readLE<std::uint8_t>("BINPUT"), "BINPUT");
            return false;
        case LONG_BINPUT:
            memoPut(readLE<std::uint32_t>("LONG_BINPUT"), "LONG_BINPUT");
            return false;
        case MEMOIZE:
            memoPut(m_memoCount, "MEMOIZE");
            return false;
        case PROTO: {
            const std::uint8_t protocol = readLE<std::uint8_t>("PROTO");
            if (protocol > 5)
                throw Failure {"the pickle says it is protocol " + std::to_string(protocol)
                    + "; the reader knows protocols 0 to 5"};
            m_run.protocol = protocol;
            return false;
        }
        case FRAME: {
            const std::uint64_t length = readLE<std::uint64_t>("FRAME"); // frames only group bytes
            if (m_fileBuffer && length > m_bufferEnd - std::min(m_pos, m_bufferEnd)) {
                beforeRead(length); // _pickle reads the frame from the file into its buffer
                if (length > m_data.size() - m_pos)
                    throw Failure {"FRAME at byte " + formatThousands(m_opcodeOffset) + " says "
                        + formatThousands(length) + " bytes follow, but only "
                        + formatThousands(m_data.size() - m_pos) + " do: the data is truncated"};
                m_bufferEnd = m_pos + length;
            }
            return false;
        }
        default: {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", op);
            throw Failure {"byte " + formatThousands(m_opcodeOffset) + " holds " + hex
                + ", which is not a pickle opcode: the data is corrupt or not a pickle"};
        }
        }
    }

    ByteView m_data;
    PickleGraph& m_graph;
    const PickleLimits& m_limits;
    std::uint64_t m_pos = 0;
    std::uint64_t m_opcodeOffset = 0;
    std::vector<NodeId> m_stack;
    std::vector<NodeId> m_scratch; // popMarkScratch()
    std::vector<std::size_t> m_marks;
    std::vector<NodeId> m_denseMemo; // by key; kNoNode where nothing is stored
    std::unordered_map<std::uint64_t, NodeId> m_sparseMemo; // keys far beyond the dense range
    std::map<std::string, NodeId> m_wideMemo; // PUT keys wider than 64 bits, by their decimal text
    std::size_t m_memoCount = 0; // distinct keys stored, in both
    PickleRun m_run;
    bool m_fileBuffer = false;
    std::uint64_t m_bufferEnd = 0;
};

} // namespace

PickleRun PickleMachine::run(ByteView data, PickleGraph& graph) const
{
    return Runner(data, graph, m_limits).execute();
}

PickleRun runAsPython311FileBuffer(ByteView data, PickleGraph& graph, const PickleLimits& limits)
{
    return Runner(data, graph, limits, true).execute();
}

} // namespace ckpt
