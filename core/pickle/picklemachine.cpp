// SPDX-License-Identifier: MIT
// The pickle machine: runs a pickle's opcodes (protocols 0 to 5) symbolically into a PickleGraph.
// Nothing is imported or called: GLOBAL/STACK_GLOBAL become names, REDUCE/BUILD/NEWOBJ become
// call nodes, persistent ids become storage references, with limits on every resource.
//
// Why one file of about 820 lines: it is one dispatch loop over the opcodes (declared once in
// opcodes.h), and each case is a few lines that share the stack, memo and mark bookkeeping; split
// by opcode family, every part would need that machinery's internals.
#include "core/pickle/picklemachine.h"
#include "core/base/ascii.h"
#include "core/base/textformat.h"
#include "core/pickle/opcodes.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace ckpt {

namespace {

using namespace pickleop; // the machine's switch names opcodes bare: `case MARK:`

struct Failure {
    std::string message;
};

// Decimal text (optionally signed) to little-endian two's complement bytes, for integers wider
// than 64 bits written by protocol 0's LONG opcode.
std::string decimalToTwosComplement(std::string_view digits, bool negative)
{
    std::vector<std::uint8_t> magnitude; // little-endian
    for (char c : digits) {
        unsigned carry = static_cast<unsigned>(c - '0');
        for (std::uint8_t& byte : magnitude) {
            unsigned v = byte * 10u + carry;
            byte = static_cast<std::uint8_t>(v & 0xFF);
            carry = v >> 8;
        }
        while (carry) {
            magnitude.push_back(static_cast<std::uint8_t>(carry & 0xFF));
            carry >>= 8;
        }
    }
    magnitude.push_back(0); // room for the sign bit
    if (negative) {
        unsigned carry = 1;
        for (std::uint8_t& byte : magnitude) {
            unsigned v = static_cast<std::uint8_t>(~byte) + carry;
            byte = static_cast<std::uint8_t>(v & 0xFF);
            carry = v >> 8;
        }
    }
    return {magnitude.begin(), magnitude.end()};
}

class Runner {
public:
    Runner(ByteView data, PickleGraph& graph, const PickleLimits& limits)
        : m_data(data)
        , m_graph(graph)
        , m_limits(limits)
    { }

    PickleRun execute()
    {
        try {
            if (m_data.size() > m_limits.maxPickleBytes)
                throw Failure {"the pickle is " + formatThousands(m_data.size())
                    + " bytes long, above the reader's limit of " + formatThousands(m_limits.maxPickleBytes)
                    + " bytes"};
            loop();
        } catch (const Failure& failure) {
            m_run.error = failure.message;
            m_run.errorOffset = m_opcodeOffset;
            m_run.endOffset = m_pos;
            m_run.stackAtError = m_stack;
        } catch (const std::bad_alloc&) {
            m_run.error = "ran out of memory while reading the pickle";
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
            m_run.opcodesSeen.set(op);
            if ((m_run.opcodeCount & 0xFFFF) == 0xFFFF && m_limits.progress
                && !m_limits.progress(m_pos, m_data.size()))
                throw Failure {"cancelled"};
            if (++m_run.opcodeCount > m_limits.maxOpcodes)
                throw Failure {"the pickle has more than " + formatThousands(m_limits.maxOpcodes)
                    + " opcodes, above the reader's limit"};
            if (step(op)) {
                m_run.endOffset = m_pos;
                return;
            }
        }
    }

    // ---- input ----
    ByteView take(std::uint64_t n, const char* what)
    {
        if (n > m_data.size() - m_pos)
            throw Failure {std::string("the pickle ends inside ") + what + " at byte "
                + formatThousands(m_pos) + " (needs " + formatThousands(n) + " more bytes, has "
                + formatThousands(m_data.size() - m_pos) + "): the data is truncated"};
        ByteView view = m_data.subspan(m_pos, static_cast<std::size_t>(n));
        m_pos += n;
        return view;
    }
    template<class T> T readLE(const char* what)
    {
        ByteView v = take(sizeof(T), what);
        T value = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i)
            value |= static_cast<T>(static_cast<T>(v[i]) << (8 * i));
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
        const std::uint8_t* begin = m_data.data() + m_pos;
        const void* nl = std::memchr(begin, '\n', m_data.size() - m_pos);
        if (!nl)
            throw Failure {std::string("the pickle ends inside ") + what + " at byte "
                + formatThousands(m_pos) + " (no end of line): the data is truncated"};
        const std::size_t length = static_cast<const std::uint8_t*>(nl) - begin;
        m_pos += length + 1;
        return std::string_view(reinterpret_cast<const char*>(begin), length);
    }

    // ---- stack ----
    void push(NodeId id)
    {
        if (m_stack.size() >= m_limits.maxStackDepth)
            throw Failure {"the pickle's stack grows past " + formatThousands(m_limits.maxStackDepth)
                + " entries, above the reader's limit"};
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
    NodeId node(NodeId id)
    {
        if (m_graph.size() >= m_limits.maxNodes)
            throw Failure {"the pickle holds more than " + formatThousands(m_limits.maxNodes)
                + " values, above the reader's limit"};
        return id;
    }
    void checkNodeBudget()
    {
        if (m_graph.size() >= m_limits.maxNodes)
            throw Failure {"the pickle holds more than " + formatThousands(m_limits.maxNodes)
                + " values, above the reader's limit"};
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
        if (auto it = m_sparseMemo.find(key); !m_sparseMemo.empty() && it != m_sparseMemo.end()) {
            it->second = value; // stored while it was far beyond the dense range
            return;
        }
        if (m_memoCount >= m_limits.maxMemoEntries)
            throw Failure {"the pickle's memo grows past " + formatThousands(m_limits.maxMemoEntries)
                + " entries, above the reader's limit"};
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
    std::uint64_t parseDecimalKey(std::string_view line, const char* opcode)
    {
        std::uint64_t key = 0;
        auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), key);
        if (ec != std::errc() || ptr != line.data() + line.size())
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " has a memo key that is not a number: the pickle is malformed"};
        return key;
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
                "a string of " + formatThousands(text.size()) + " bytes is above the reader's limit"};
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
                + " bytes wide is above the reader's limit of " + formatThousands(m_limits.maxIntegerBytes)
                + " bytes"};
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
    void pushDecimalInteger(std::string_view text, const char* opcode)
    {
        if (!text.empty() && text.back() == 'L')
            text.remove_suffix(1);
        if (text.size() > m_limits.maxIntegerBytes * 3)
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " holds an integer too wide for the reader"};
        std::int64_t value = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && ptr == text.data() + text.size()) {
            pushInt(value);
            return;
        }
        bool negative = !text.empty() && text.front() == '-';
        std::string_view digits = text.substr(negative || (!text.empty() && text.front() == '+') ? 1 : 0);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset) + " holds '"
                + std::string(text.substr(0, 40)) + "', which is not an integer"};
        pushText(NodeKind::BigInt, decimalToTwosComplement(digits, negative));
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

    NodeId requireContainer(NodeId target, const char* opcode, bool dictLike)
    {
        const NodeKind k = m_graph.kind(target);
        const bool ok = dictLike ? (k == NodeKind::Dict || k == NodeKind::Call || k == NodeKind::NewObject)
                                 : (k == NodeKind::List || k == NodeKind::Call || k == NodeKind::NewObject);
        if (!ok)
            throw Failure {std::string(opcode) + " at byte " + formatThousands(m_opcodeOffset)
                + " adds to a value that is not a " + (dictLike ? "dict or object" : "list or object")
                + ": the pickle is malformed"};
        return target;
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
                    "the pickle nests MARKs deeper than " + formatThousands(m_limits.maxMarkDepth)};
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
            std::string_view text = readLine("INT");
            if (text == "00" || text == "01") {
                checkNodeBudget();
                push(m_graph.addScalar(NodeKind::Bool, text == "01"));
            } else {
                pushDecimalInteger(text, "INT");
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
        case LONG:
            pushDecimalInteger(readLine("LONG"), "LONG");
            return false;
        case LONG1: {
            const std::uint8_t n = readLE<std::uint8_t>("LONG1");
            pushLittleEndianInteger(take(n, "LONG1"));
            return false;
        }
        case LONG4: {
            const std::int32_t n = static_cast<std::int32_t>(readLE<std::uint32_t>("LONG4"));
            if (n < 0)
                throw Failure {"LONG4 at byte " + formatThousands(m_opcodeOffset) + " has a negative length"};
            if (static_cast<std::size_t>(n) > m_limits.maxIntegerBytes)
                throw Failure {"an integer " + formatThousands(static_cast<std::uint64_t>(n))
                    + " bytes wide is above the reader's limit of "
                    + formatThousands(m_limits.maxIntegerBytes) + " bytes"};
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
            std::string_view pid = readLine("PERSID");
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
            pushText(NodeKind::String, decodeRawUnicodeEscape(readLine("UNICODE")));
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
            const NodeId list = requireContainer(top("APPEND"), "APPEND", false);
            m_graph.ensureBody(list).items.push_back(value);
            return false;
        }
        case APPENDS: {
            std::vector<NodeId> items = popMark("APPENDS");
            const NodeId list = requireContainer(top("APPENDS"), "APPENDS", false);
            auto& target = m_graph.ensureBody(list).items;
            target.insert(target.end(), items.begin(), items.end());
            return false;
        }
        case BUILD: {
            const NodeId state = pop("BUILD");
            const NodeId target = top("BUILD");
            const NodeKind k = m_graph.kind(target);
            if (k != NodeKind::Call && k != NodeKind::NewObject && k != NodeKind::Dict && k != NodeKind::List)
                throw Failure {"BUILD at byte " + formatThousands(m_opcodeOffset)
                    + " sets the state of a value that is not an object: the pickle is malformed"};
            m_graph.ensureBody(target).states.push_back(state);
            return false;
        }
        case GLOBAL: {
            std::string_view module = readRawLine("GLOBAL");
            std::string_view name = readRawLine("GLOBAL");
            recordGlobal(module, name);
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
            std::string module(readRawLine("INST"));
            std::string name(readRawLine("INST"));
            recordGlobal(module, name);
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
            std::vector<NodeId> items = popMark("ADDITEMS");
            const NodeId set = top("ADDITEMS");
            if (m_graph.kind(set) != NodeKind::Set)
                throw Failure {"ADDITEMS at byte " + formatThousands(m_opcodeOffset)
                    + " adds to a value that is not a set"};
            auto& target = m_graph.ensureBody(set).items;
            target.insert(target.end(), items.begin(), items.end());
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
            std::vector<NodeId> items = popMark("TUPLE");
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
            const NodeId dict = requireContainer(top("SETITEM"), "SETITEM", true);
            auto& target = m_graph.ensureBody(dict).dictItems;
            target.push_back(key);
            target.push_back(value);
            return false;
        }
        case SETITEMS: {
            std::vector<NodeId> items = popMark("SETITEMS");
            if (items.size() % 2)
                throw Failure {
                    "SETITEMS at byte " + formatThousands(m_opcodeOffset) + " has an odd number of items"};
            const NodeId dict = requireContainer(top("SETITEMS"), "SETITEMS", true);
            auto& target = m_graph.ensureBody(dict).dictItems;
            target.insert(target.end(), items.begin(), items.end());
            return false;
        }
        case GET:
            memoGet(parseDecimalKey(readLine("GET"), "GET"), "GET");
            return false;
        case BINGET:
            memoGet(readLE<std::uint8_t>("BINGET"), "BINGET");
            return false;
        case LONG_BINGET:
            memoGet(readLE<std::uint32_t>("LONG_BINGET"), "LONG_BINGET");
            return false;
        case PUT:
            memoPut(parseDecimalKey(readLine("PUT"), "PUT"), "PUT");
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
        case FRAME:
            readLE<std::uint64_t>("FRAME"); // frames only group bytes for buffering
            return false;
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
    std::vector<std::size_t> m_marks;
    std::vector<NodeId> m_denseMemo; // by key; kNoNode where nothing is stored
    std::unordered_map<std::uint64_t, NodeId> m_sparseMemo; // keys far beyond the dense range
    std::size_t m_memoCount = 0; // distinct keys stored, in both
    PickleRun m_run;
};

} // namespace

PickleRun PickleMachine::run(ByteView data, PickleGraph& graph) const
{
    return Runner(data, graph, m_limits).execute();
}

} // namespace ckpt
