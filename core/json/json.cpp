// SPDX-License-Identifier: MIT
// The JSON value and its strict parser: errors that name the byte, limits that hold against hostile
// input (depth, size, duplicate keys kept for the safetensors checks). The writer is jsonwriter.cpp.
//
// Why one file of about 750 lines: the parser is one state machine (an explicit stack, so hostile
// nesting never reaches the C++ stack) whose error messages and limits are read together, and the
// value type it builds is the rest; neither half reads well without the other.
#include "core/json/json.h"
#include "core/base/ascii.h"
#include "core/base/printablerun.h"
#include "core/base/textformat.h"
#include "core/json/utf8sequence.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

namespace {

using jsondetail::utf8SequenceLength;

const JsonValue kNullValue;
const std::string kEmptyString;
const JsonValue::Array kEmptyArray;
const JsonValue::Object kEmptyObject;

// A byte as people should read it in a message: 'x' for printable ASCII, 0xC3 otherwise.
std::string describeByte(unsigned char byte)
{
    if (byte >= 0x20 && byte < 0x7F)
        return std::string("'") + static_cast<char>(byte) + "'";
    static const char* hex = "0123456789ABCDEF";
    return std::string("byte 0x") + hex[byte >> 4] + hex[byte & 0xF];
}

// A key quoted for a message, shortened so a hostile 10 MB key does not become a 10 MB message.
std::string quoteForMessage(std::string_view text)
{
    constexpr std::size_t kMax = 80;
    std::string out;
    if (text.size() <= kMax) {
        appendJsonString(out, text);
        return out;
    }
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    appendJsonString(out, text.substr(0, cut));
    out.insert(out.size() - 1, "...");
    return out;
}

class JsonParser {
public:
    JsonParser(std::string_view text, const JsonParseLimits& limits)
        : m_text(text)
        , m_limits(limits)
        , m_maxDepth(std::min(limits.maxDepth, kMaxJsonDepth))
    { }

    Expected<JsonValue> run();

private:
    struct Frame {
        JsonValue container;
        std::string key; // objects: key of the member whose value is being parsed
        std::unordered_map<std::string, std::size_t> keyOffsets; // only when duplicates are refused
    };

    ReadError error(std::size_t offset, std::string reason) const
    {
        const std::uint64_t where = m_limits.offsetBase + offset;
        return ReadError {
            "invalid JSON at byte " + formatThousands(where) + ": " + std::move(reason), where, {}};
    }
    std::string unexpectedHere(const char* expected) const
    {
        if (m_pos >= m_text.size())
            return std::string("unexpected end of input, expected ") + expected;
        return "unexpected " + describeByte(static_cast<unsigned char>(m_text[m_pos])) + ", expected "
            + expected;
    }
    void skipWhitespace()
    {
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
                break;
            ++m_pos;
        }
    }
    bool countValue()
    {
        if (++m_valueCount > m_limits.maxValues) {
            m_error = error(m_pos,
                "more than " + formatThousands(m_limits.maxValues) + " values, the limit for one document");
            return false;
        }
        return true;
    }
    bool parseString(std::string& out);
    bool parseEscape(std::string& out);
    bool parseNumber(JsonValue& out);
    bool parseLiteral(JsonValue& out);
    bool parseKey(Frame& frame);

    std::string_view m_text;
    const JsonParseLimits& m_limits;
    std::size_t m_maxDepth;
    std::size_t m_pos = 0;
    std::size_t m_valueCount = 0;
    std::optional<ReadError> m_error;
};

bool JsonParser::parseString(std::string& out)
{
    const std::size_t start = m_pos;
    ++m_pos; // opening quote
    const auto* bytes = reinterpret_cast<const unsigned char*>(m_text.data());
    for (;;) {
        const std::size_t runStart = m_pos;
        // Runs of printable ASCII are copied whole; DEL, which a string may hold as it is, stops
        // the shared scan and is copied below like any other one-byte sequence.
        m_pos = printableRunEnd<'"', '\\'>(bytes, m_pos, m_text.size());
        out.append(m_text.data() + runStart, m_pos - runStart);
        if (m_pos >= m_text.size()) {
            m_error = error(m_pos,
                "unterminated string (it starts at byte " + formatThousands(m_limits.offsetBase + start)
                    + ")");
            return false;
        }
        const unsigned char c = bytes[m_pos];
        if (c == '"') {
            ++m_pos;
            return true;
        }
        if (c == '\\') {
            if (!parseEscape(out))
                return false;
            continue;
        }
        if (c < 0x20) {
            char name[8];
            std::snprintf(name, sizeof name, "%04X", static_cast<unsigned>(c));
            m_error = error(
                m_pos, std::string("control character U+") + name + " inside a string must be escaped");
            return false;
        }
        const std::size_t length = utf8SequenceLength(bytes + m_pos, m_text.size() - m_pos);
        if (length == 0) {
            m_error = error(m_pos, "invalid UTF-8 (" + describeByte(c) + ") inside a string");
            return false;
        }
        out.append(m_text.data() + m_pos, length);
        m_pos += length;
    }
}

bool JsonParser::parseEscape(std::string& out)
{
    const std::size_t start = m_pos;
    if (m_pos + 1 >= m_text.size()) {
        m_error = error(m_text.size(), "unterminated escape sequence at the end of input");
        return false;
    }
    const char kind = m_text[m_pos + 1];
    m_pos += 2;
    switch (kind) {
    case '"':
        out += '"';
        return true;
    case '\\':
        out += '\\';
        return true;
    case '/':
        out += '/';
        return true;
    case 'b':
        out += '\b';
        return true;
    case 'f':
        out += '\f';
        return true;
    case 'n':
        out += '\n';
        return true;
    case 'r':
        out += '\r';
        return true;
    case 't':
        out += '\t';
        return true;
    case 'u':
        break;
    default:
        m_error = error(start,
            "invalid escape: a backslash followed by " + describeByte(static_cast<unsigned char>(kind))
                + " (valid escapes: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
        return false;
    }
    auto readHex4 = [&](std::size_t at, std::uint32_t& value) {
        if (at + 4 > m_text.size())
            return false;
        value = 0;
        for (std::size_t i = 0; i < 4; ++i) {
            const int digit = hexDigit(m_text[at + i]);
            if (digit < 0)
                return false;
            value = value * 16 + static_cast<std::uint32_t>(digit);
        }
        return true;
    };
    std::uint32_t unit = 0;
    if (!readHex4(m_pos, unit)) {
        m_error = error(start, "\\u must be followed by four hex digits");
        return false;
    }
    m_pos += 4;
    if (unit >= 0xDC00 && unit <= 0xDFFF) {
        m_error = error(start,
            "lone low surrogate \\u" + std::string(m_text.substr(start + 2, 4))
                + " (a low surrogate may only follow a high surrogate \\uD800-\\uDBFF)");
        return false;
    }
    if (unit >= 0xD800 && unit <= 0xDBFF) {
        std::uint32_t low = 0;
        if (m_pos + 1 >= m_text.size() || m_text[m_pos] != '\\' || m_text[m_pos + 1] != 'u'
            || !readHex4(m_pos + 2, low) || low < 0xDC00 || low > 0xDFFF) {
            m_error = error(start,
                "high surrogate \\u" + std::string(m_text.substr(start + 2, 4))
                    + " is not followed by a low surrogate \\uDC00-\\uDFFF; text with a lone surrogate has "
                      "no UTF-8 form");
            return false;
        }
        m_pos += 6;
        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    }
    appendUtf8(out, unit);
    return true;
}

bool JsonParser::parseNumber(JsonValue& out)
{
    const std::size_t start = m_pos;
    const bool negative = m_text[m_pos] == '-';
    if (negative)
        ++m_pos;
    if (m_pos >= m_text.size() || !isDigit(m_text[m_pos])) {
        m_error = error(m_pos, unexpectedHere("a digit after '-'"));
        return false;
    }
    const std::size_t integerStart = m_pos;
    if (m_text[m_pos] == '0') {
        ++m_pos;
        if (m_pos < m_text.size() && isDigit(m_text[m_pos])) {
            m_error = error(integerStart, "numbers must not have leading zeros");
            return false;
        }
    } else {
        while (m_pos < m_text.size() && isDigit(m_text[m_pos]))
            ++m_pos;
    }
    const std::size_t integerEnd = m_pos;
    bool integral = true;
    if (m_pos < m_text.size() && m_text[m_pos] == '.') {
        integral = false;
        ++m_pos;
        if (m_pos >= m_text.size() || !isDigit(m_text[m_pos])) {
            m_error = error(m_pos, unexpectedHere("a digit after the decimal point"));
            return false;
        }
        while (m_pos < m_text.size() && isDigit(m_text[m_pos]))
            ++m_pos;
    }
    std::int64_t exponent = 0;
    bool exponentNegative = false;
    if (m_pos < m_text.size() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
        integral = false;
        ++m_pos;
        if (m_pos < m_text.size() && (m_text[m_pos] == '+' || m_text[m_pos] == '-')) {
            exponentNegative = m_text[m_pos] == '-';
            ++m_pos;
        }
        if (m_pos >= m_text.size() || !isDigit(m_text[m_pos])) {
            m_error = error(m_pos, unexpectedHere("a digit in the exponent"));
            return false;
        }
        while (m_pos < m_text.size() && isDigit(m_text[m_pos])) {
            if (exponent < 1'000'000'000)
                exponent = exponent * 10 + (m_text[m_pos] - '0');
            ++m_pos;
        }
    }

    if (integral) {
        std::uint64_t magnitude = 0;
        bool overflow = false;
        for (std::size_t i = integerStart; i < integerEnd && !overflow; ++i) {
            const auto digit = static_cast<std::uint64_t>(m_text[i] - '0');
            overflow = magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10;
            magnitude = magnitude * 10 + digit;
        }
        if (!overflow) {
            constexpr std::uint64_t kMinMagnitude = std::uint64_t {1} << 63;
            if (!negative) {
                out = JsonValue(magnitude);
                return true;
            }
            if (magnitude < kMinMagnitude) {
                out = JsonValue(-static_cast<std::int64_t>(magnitude));
                return true;
            }
            if (magnitude == kMinMagnitude) {
                out = JsonValue(std::numeric_limits<std::int64_t>::min());
                return true;
            }
        }
        // Too large for 64 bits: kept as a double, like every other JSON reader that has no bignum.
    }

    double value = 0;
    const auto [end, ec] = std::from_chars(m_text.data() + start, m_text.data() + m_pos, value);
    if (ec == std::errc::result_out_of_range) {
        // Decide between underflow (the value rounds to zero, which is fine) and overflow.
        std::size_t firstNonZero = integerStart;
        while (firstNonZero < integerEnd && m_text[firstNonZero] == '0')
            ++firstNonZero;
        const auto integerDigits = static_cast<std::int64_t>(integerEnd - firstNonZero);
        const std::int64_t magnitude = integerDigits + (exponentNegative ? -exponent : exponent);
        if (magnitude <= 0) {
            out = JsonValue(negative ? -0.0 : 0.0);
            return true;
        }
        m_error = error(start,
            "number " + std::string(m_text.substr(start, std::min<std::size_t>(m_pos - start, 40)))
                + " is too large for a double");
        return false;
    }
    if (ec != std::errc() || end != m_text.data() + m_pos) {
        m_error = error(start, "malformed number");
        return false;
    }
    out = JsonValue(value);
    return true;
}

bool JsonParser::parseLiteral(JsonValue& out)
{
    struct Literal {
        std::string_view text;
        JsonValue value;
    };
    const Literal literals[]
        = {{"true", JsonValue(true)}, {"false", JsonValue(false)}, {"null", JsonValue()}};
    for (const Literal& literal : literals) {
        if (literal.text[0] != m_text[m_pos])
            continue;
        if (m_text.substr(m_pos, literal.text.size()) == literal.text) {
            m_pos += literal.text.size();
            out = literal.value;
            return true;
        }
        m_error = error(m_pos, "invalid literal, expected '" + std::string(literal.text) + "'");
        return false;
    }
    m_error = error(m_pos, unexpectedHere("a value"));
    return false;
}

bool JsonParser::parseKey(Frame& frame)
{
    skipWhitespace();
    if (m_pos >= m_text.size() || m_text[m_pos] != '"') {
        m_error = error(m_pos, unexpectedHere("a string as object key"));
        return false;
    }
    const std::size_t keyStart = m_pos;
    frame.key.clear();
    if (!parseString(frame.key))
        return false;
    if (!m_limits.allowDuplicateKeys) {
        const auto [it, inserted] = frame.keyOffsets.emplace(frame.key, keyStart);
        if (!inserted) {
            m_error = error(keyStart,
                "duplicate key " + quoteForMessage(frame.key) + " (first at byte "
                    + formatThousands(m_limits.offsetBase + it->second) + ")");
            return false;
        }
    }
    skipWhitespace();
    if (m_pos >= m_text.size() || m_text[m_pos] != ':') {
        m_error = error(m_pos, unexpectedHere("':' after object key"));
        return false;
    }
    ++m_pos;
    return true;
}

Expected<JsonValue> JsonParser::run()
{
    if (m_text.size() > m_limits.maxBytes)
        return error(m_limits.maxBytes,
            "the document is " + formatThousands(m_text.size()) + " bytes, more than the limit of "
                + formatThousands(m_limits.maxBytes));
    if (m_text.starts_with("\xEF\xBB\xBF"))
        return error(0, "a UTF-8 byte-order mark is not allowed before JSON text");

    std::vector<Frame> stack;
    JsonValue value;
    skipWhitespace();
    for (;;) {
        // Parse the start of one value. Containers push a frame and go on with their first entry.
        if (m_pos >= m_text.size()) {
            m_error = error(m_pos, unexpectedHere("a value"));
            return *m_error;
        }
        if (!countValue())
            return *m_error;
        const char c = m_text[m_pos];
        bool complete = true;
        if (c == '{' || c == '[') {
            if (stack.size() >= m_maxDepth) {
                m_error = error(m_pos, "nesting deeper than " + formatThousands(m_maxDepth) + " levels");
                return *m_error;
            }
            const bool isObject = c == '{';
            ++m_pos;
            stack.push_back(Frame {isObject ? JsonValue::emptyObject() : JsonValue::emptyArray(), {}, {}});
            skipWhitespace();
            if (m_pos < m_text.size() && m_text[m_pos] == (isObject ? '}' : ']')) {
                ++m_pos;
                value = std::move(stack.back().container);
                stack.pop_back();
            } else {
                complete = false;
                if (isObject && !parseKey(stack.back()))
                    return *m_error;
            }
        } else if (c == '"') {
            std::string text;
            if (!parseString(text))
                return *m_error;
            value = JsonValue(std::move(text));
        } else if (c == '-' || isDigit(c)) {
            if (!parseNumber(value))
                return *m_error;
        } else if (!parseLiteral(value)) {
            return *m_error;
        }

        // A value is complete: hand it to the enclosing containers, closing those that end here.
        while (complete) {
            if (stack.empty()) {
                skipWhitespace();
                if (m_pos != m_text.size())
                    return error(m_pos,
                        "unexpected " + describeByte(static_cast<unsigned char>(m_text[m_pos]))
                            + " after the end of the JSON value");
                // After a move into a container, value is always reassigned (the closed container or
                // the next parsed value) before control gets here again.
                return value; // NOLINT(bugprone-use-after-move)
            }
            Frame& frame = stack.back();
            const bool isObject = frame.container.isObject();
            if (isObject)
                frame.container.object()->push_back(JsonMember {std::move(frame.key), std::move(value)});
            else
                frame.container.array()->push_back(std::move(value));
            skipWhitespace();
            const char close = isObject ? '}' : ']';
            if (m_pos < m_text.size() && m_text[m_pos] == ',') {
                ++m_pos;
                skipWhitespace();
                if (m_pos < m_text.size() && m_text[m_pos] == close) {
                    m_error = error(m_pos, "trailing comma before '" + std::string(1, close) + "'");
                    return *m_error;
                }
                if (isObject && !parseKey(frame))
                    return *m_error;
                skipWhitespace();
                complete = false;
            } else if (m_pos < m_text.size() && m_text[m_pos] == close) {
                ++m_pos;
                value = std::move(frame.container);
                stack.pop_back();
            } else {
                m_error = error(m_pos,
                    unexpectedHere(isObject ? "',' or '}' after an object member"
                                            : "',' or ']' after an array element"));
                return *m_error;
            }
        }
        skipWhitespace();
    }
}

} // namespace

// ---------------------------------------------------------------------------------------------
// JsonValue

JsonValue::JsonValue() noexcept
    : m_value(nullptr)
{ }
JsonValue::JsonValue(std::nullptr_t) noexcept
    : m_value(nullptr)
{ }
JsonValue::JsonValue(bool value) noexcept
    : m_value(value)
{ }
JsonValue::JsonValue(std::int64_t value) noexcept
    : m_value(value)
{ }
// One representation per integer: only values above INT64_MAX use the uint64 alternative, so
// equality and toInt64() do not depend on how a value was built.
JsonValue::JsonValue(std::uint64_t value) noexcept
{
    if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        m_value = static_cast<std::int64_t>(value);
    else
        m_value = value;
}
JsonValue::JsonValue(double value) noexcept
    : m_value(value)
{ }
JsonValue::JsonValue(std::string value)
    : m_value(std::move(value))
{ }
JsonValue::JsonValue(std::string_view value)
    : m_value(std::string(value))
{ }
JsonValue::JsonValue(const char* value)
    : m_value(std::string(value ? value : ""))
{ }
JsonValue::JsonValue(Array items)
    : m_value(std::move(items))
{ }
JsonValue::JsonValue(Object members)
    : m_value(std::move(members))
{ }
JsonValue JsonValue::emptyArray()
{
    return JsonValue(Array {});
}
JsonValue JsonValue::emptyObject()
{
    return JsonValue(Object {});
}
JsonValue::~JsonValue() = default;
JsonValue::JsonValue(const JsonValue& other) = default;
JsonValue::JsonValue(JsonValue&& other) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue& other) = default;
JsonValue& JsonValue::operator=(JsonValue&& other) noexcept = default;

JsonValue::Type JsonValue::type() const
{
    switch (m_value.index()) {
    case 0:
        return Type::Null;
    case 1:
        return Type::Bool;
    case 2:
    case 3:
    case 4:
        return Type::Number;
    case 5:
        return Type::String;
    case 6:
        return Type::Array;
    default:
        return Type::Object;
    }
}

bool JsonValue::isInteger() const
{
    return std::holds_alternative<std::int64_t>(m_value) || std::holds_alternative<std::uint64_t>(m_value);
}

bool JsonValue::isDouble() const
{
    return std::holds_alternative<double>(m_value);
}

bool JsonValue::toBool(bool defaultValue) const
{
    const bool* value = std::get_if<bool>(&m_value);
    return value ? *value : defaultValue;
}

std::optional<std::int64_t> JsonValue::toInt64() const
{
    if (const auto* value = std::get_if<std::int64_t>(&m_value))
        return *value;
    return std::nullopt;
}

std::optional<std::uint64_t> JsonValue::toUInt64() const
{
    if (const auto* value = std::get_if<std::int64_t>(&m_value); value && *value >= 0)
        return static_cast<std::uint64_t>(*value);
    if (const auto* value = std::get_if<std::uint64_t>(&m_value))
        return *value;
    return std::nullopt;
}

double JsonValue::toDouble(double defaultValue) const
{
    if (const auto* value = std::get_if<double>(&m_value))
        return *value;
    if (const auto* value = std::get_if<std::int64_t>(&m_value))
        return static_cast<double>(*value);
    if (const auto* value = std::get_if<std::uint64_t>(&m_value))
        return static_cast<double>(*value);
    return defaultValue;
}

const std::string& JsonValue::toString() const
{
    const auto* value = std::get_if<std::string>(&m_value);
    return value ? *value : kEmptyString;
}

const JsonValue::Array& JsonValue::items() const
{
    const auto* value = std::get_if<Array>(&m_value);
    return value ? *value : kEmptyArray;
}

const JsonValue::Object& JsonValue::members() const
{
    const auto* value = std::get_if<Object>(&m_value);
    return value ? *value : kEmptyObject;
}

JsonValue::Array* JsonValue::array()
{
    return std::get_if<Array>(&m_value);
}

JsonValue::Object* JsonValue::object()
{
    return std::get_if<Object>(&m_value);
}

std::size_t JsonValue::size() const
{
    if (const auto* value = std::get_if<Array>(&m_value))
        return value->size();
    if (const auto* value = std::get_if<Object>(&m_value))
        return value->size();
    return 0;
}

const JsonValue* JsonValue::find(std::string_view key) const
{
    for (const JsonMember& member : members())
        if (member.key == key)
            return &member.value;
    return nullptr;
}

JsonValue* JsonValue::find(std::string_view key)
{
    return const_cast<JsonValue*>(static_cast<const JsonValue*>(this)->find(key));
}

const JsonValue& JsonValue::member(std::string_view key) const
{
    const JsonValue* value = find(key);
    return value ? *value : kNullValue;
}

const JsonValue& JsonValue::at(std::size_t index) const
{
    const Array& elements = items();
    return index < elements.size() ? elements[index] : kNullValue;
}

bool JsonValue::append(JsonValue item)
{
    if (isNull())
        m_value = Array {};
    Array* elements = array();
    if (!elements)
        return false;
    elements->push_back(std::move(item));
    return true;
}

bool JsonValue::insert(std::string key, JsonValue value)
{
    if (isNull())
        m_value = Object {};
    Object* entries = object();
    if (!entries)
        return false;
    entries->push_back(JsonMember {std::move(key), std::move(value)});
    return true;
}

bool JsonValue::set(std::string key, JsonValue value)
{
    if (JsonValue* existing = isObject() ? find(key) : nullptr) {
        *existing = std::move(value);
        return true;
    }
    return insert(std::move(key), std::move(value));
}

std::vector<std::string> JsonValue::duplicateKeys() const
{
    std::vector<std::string> duplicates;
    std::unordered_set<std::string_view> seen;
    std::unordered_set<std::string_view> reported;
    for (const JsonMember& member : members()) {
        if (!seen.insert(member.key).second && reported.insert(member.key).second)
            duplicates.push_back(member.key);
    }
    return duplicates;
}

std::string JsonValue::toJson(JsonStyle style) const
{
    JsonWriter writer(style);
    writer.value(*this);
    return writer.takeText();
}

bool JsonValue::operator==(const JsonValue& other) const
{
    if (m_value.index() != other.m_value.index())
        return false;
    return std::visit(
        [&](const auto& mine) {
            using T = std::decay_t<decltype(mine)>;
            return mine == std::get<T>(other.m_value);
        },
        m_value);
}

Expected<JsonValue> parseJson(std::string_view text, const JsonParseLimits& limits)
{
    return JsonParser(text, limits).run();
}

} // namespace ckpt
