// SPDX-License-Identifier: MIT
// JsonWriter: JSON written as it is produced (into a string or streamed to an ostream in chunks),
// with the checks that keep its output parseable: one value at the top, keys only in objects,
// every string valid UTF-8 (invalid bytes become U+FFFD), non-finite numbers as null.
#include "core/json/json.h"
#include "core/json/utf8sequence.h"

#include <charconv>
#include <cmath>
#include <ostream>

namespace ckpt {

namespace {

using jsondetail::utf8SequenceLength;

void appendDouble(std::string& out, double number)
{
    if (!std::isfinite(number)) {
        out += "null";
        return;
    }
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, number);
    const std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
    out += text;
    if (text.find_first_of(".eE") == std::string_view::npos)
        out += ".0";
}

void appendInteger(std::string& out, auto number)
{
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, number);
    out.append(buffer, static_cast<std::size_t>(result.ptr - buffer));
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Writing

void appendJsonString(std::string& out, std::string_view text)
{
    static const char* hex = "0123456789abcdef";
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    out += '"';
    std::size_t i = 0;
    while (i < text.size()) {
        // Names and keys are almost always plain ASCII: copy each run of characters that need no
        // escape in one append (a per-character append was a tenth of `info --json`).
        std::size_t plain = i;
        while (plain < text.size() && bytes[plain] >= 0x20 && bytes[plain] < 0x80 && bytes[plain] != '"'
            && bytes[plain] != '\\')
            ++plain;
        if (plain > i) {
            out.append(text.data() + i, plain - i);
            i = plain;
            continue;
        }
        const unsigned char c = bytes[i];
        if (c >= 0x80) {
            const std::size_t length = utf8SequenceLength(bytes + i, text.size() - i);
            if (length == 0) {
                out += "\\ufffd";
                ++i;
            } else {
                out.append(text.data() + i, length);
                i += length;
            }
            continue;
        }
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20) {
                out += "\\u00";
                out += hex[c >> 4];
                out += hex[c & 0xF];
            } else {
                out += static_cast<char>(c);
            }
        }
        ++i;
    }
    out += '"';
}

JsonWriter::JsonWriter(JsonStyle style)
    : m_style(style)
{ }

JsonWriter::JsonWriter(std::ostream& out, JsonStyle style)
    : m_stream(&out)
    , m_style(style)
{ }

JsonWriter::~JsonWriter()
{
    flush();
}

std::string JsonWriter::takeText()
{
    std::string text = std::move(m_buffer);
    m_buffer.clear();
    return text;
}

void JsonWriter::flush()
{
    if (m_stream && !m_buffer.empty()) {
        m_stream->write(m_buffer.data(), static_cast<std::streamsize>(m_buffer.size()));
        m_buffer.clear();
    }
}

void JsonWriter::maybeFlush()
{
    constexpr std::size_t kChunk = std::size_t {64} << 10;
    if (m_stream && m_buffer.size() >= kChunk)
        flush();
}

bool JsonWriter::isComplete() const
{
    return m_topLevelDone && m_stack.empty();
}

void JsonWriter::fail(std::string message)
{
    if (m_error.empty())
        m_error = std::move(message);
}

void JsonWriter::newlineAndIndent()
{
    if (m_style != JsonStyle::Pretty)
        return;
    m_buffer += '\n';
    m_buffer.append(2 * m_stack.size(), ' ');
}

bool JsonWriter::beforeValue(const char* what)
{
    if (m_stack.empty()) {
        if (m_topLevelDone) {
            fail(std::string("JsonWriter: ") + what + " after the top-level value was complete");
            return false;
        }
        return true;
    }
    Frame& frame = m_stack.back();
    if (frame.isObject) {
        if (!frame.keyWritten) {
            fail(std::string("JsonWriter: ") + what + " inside an object without a key() first");
            return false;
        }
        return true;
    }
    if (frame.hasEntries)
        m_buffer += ',';
    newlineAndIndent();
    return true;
}

void JsonWriter::afterValue()
{
    if (m_stack.empty()) {
        m_topLevelDone = true;
    } else {
        m_stack.back().hasEntries = true;
        m_stack.back().keyWritten = false;
    }
    maybeFlush();
}

JsonWriter& JsonWriter::beginObject()
{
    if (beforeValue("beginObject()")) {
        m_buffer += '{';
        m_stack.push_back(Frame {true, false, false});
    }
    return *this;
}

JsonWriter& JsonWriter::beginArray()
{
    if (beforeValue("beginArray()")) {
        m_buffer += '[';
        m_stack.push_back(Frame {false, false, false});
    }
    return *this;
}

JsonWriter& JsonWriter::endObject()
{
    if (m_stack.empty() || !m_stack.back().isObject || m_stack.back().keyWritten) {
        fail(m_stack.empty() || !m_stack.back().isObject
                ? "JsonWriter: endObject() without a matching beginObject()"
                : "JsonWriter: endObject() after a key() without its value");
        return *this;
    }
    const bool hadEntries = m_stack.back().hasEntries;
    m_stack.pop_back();
    if (hadEntries)
        newlineAndIndent();
    m_buffer += '}';
    afterValue();
    return *this;
}

JsonWriter& JsonWriter::endArray()
{
    if (m_stack.empty() || m_stack.back().isObject) {
        fail("JsonWriter: endArray() without a matching beginArray()");
        return *this;
    }
    const bool hadEntries = m_stack.back().hasEntries;
    m_stack.pop_back();
    if (hadEntries)
        newlineAndIndent();
    m_buffer += ']';
    afterValue();
    return *this;
}

JsonWriter& JsonWriter::key(std::string_view name)
{
    if (m_stack.empty() || !m_stack.back().isObject || m_stack.back().keyWritten) {
        fail(m_stack.empty() || !m_stack.back().isObject ? "JsonWriter: key() outside an object"
                                                         : "JsonWriter: key() twice without a value");
        return *this;
    }
    Frame& frame = m_stack.back();
    if (frame.hasEntries)
        m_buffer += ',';
    newlineAndIndent();
    appendJsonString(m_buffer, name);
    m_buffer += m_style == JsonStyle::Pretty ? ": " : ":";
    frame.keyWritten = true;
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view text)
{
    if (beforeValue("a string value")) {
        appendJsonString(m_buffer, text);
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::value(const char* text)
{
    return value(std::string_view(text ? text : ""));
}

JsonWriter& JsonWriter::value(const std::string& text)
{
    return value(std::string_view(text));
}

JsonWriter& JsonWriter::value(std::int64_t number)
{
    if (beforeValue("a number")) {
        appendInteger(m_buffer, number);
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number)
{
    if (beforeValue("a number")) {
        appendInteger(m_buffer, number);
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::value(double number)
{
    if (beforeValue("a number")) {
        appendDouble(m_buffer, number);
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::value(const std::vector<std::string>& texts)
{
    beginArray();
    for (const std::string& text : texts)
        value(text);
    return endArray();
}

JsonWriter& JsonWriter::value(bool flag)
{
    if (beforeValue("a boolean")) {
        m_buffer += flag ? "true" : "false";
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::null()
{
    if (beforeValue("null")) {
        m_buffer += "null";
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::value(const JsonValue& json)
{
    switch (json.type()) {
    case JsonValue::Type::Null:
        return null();
    case JsonValue::Type::Bool:
        return value(json.toBool());
    case JsonValue::Type::Number:
        if (const auto integer = json.toInt64())
            return value(*integer);
        if (const auto unsignedInteger = json.toUInt64())
            return value(*unsignedInteger);
        return value(json.toDouble());
    case JsonValue::Type::String:
        return value(std::string_view(json.toString()));
    case JsonValue::Type::Array:
        beginArray();
        for (const JsonValue& item : json.items())
            value(item);
        return endArray();
    case JsonValue::Type::Object:
        beginObject();
        for (const JsonMember& member : json.members()) {
            key(member.key);
            value(member.value);
        }
        return endObject();
    }
    return *this;
}

} // namespace ckpt
