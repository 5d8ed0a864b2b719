// SPDX-License-Identifier: MIT
// JsonWriter: JSON written as it is produced (into a string or streamed to an ostream in chunks),
// with the checks that keep its output parseable: one value at the top, keys only in objects,
// every string valid UTF-8 (invalid bytes become U+FFFD), non-finite numbers as null.
#include "core/base/printablerun.h"
#include "core/json/json.h"
#include "core/json/utf8sequence.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>

namespace ckpt {

namespace {

using jsondetail::utf8SequenceLength;

// Where the run of bytes a JSON string holds as they are (printable ASCII other than '"' and '\\')
// that starts at `at` ends. DEL is valid raw in JSON, but a terminal filter would rewrite it,
// breaking the JSON: it is escaped like the controls.
std::size_t plainRunEnd(const unsigned char* bytes, std::size_t at, std::size_t size)
{
    return printableRunEnd<'"', '\\'>(bytes, at, size);
}

// `text` escaped for a JSON string (without its quotes), handed to `append(data, length)` in runs:
// control characters escaped, bytes that are not valid UTF-8 written as U+FFFD, so that the output
// always parses whatever bytes it is given.
template<class Append> void escapeJsonText(std::string_view text, Append&& append)
{
    static const char* hex = "0123456789abcdef";
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t plain = plainRunEnd(bytes, i, text.size());
        if (plain > i) {
            append(text.data() + i, plain - i);
            i = plain;
            continue;
        }
        const unsigned char c = bytes[i];
        if (c >= 0x80) {
            const std::size_t length = utf8SequenceLength(bytes + i, text.size() - i);
            if (length == 0) {
                append("\\ufffd", 6);
                ++i;
            } else {
                append(text.data() + i, length);
                i += length;
            }
            continue;
        }
        switch (c) {
        case '"':
            append("\\\"", 2);
            break;
        case '\\':
            append("\\\\", 2);
            break;
        case '\b':
            append("\\b", 2);
            break;
        case '\f':
            append("\\f", 2);
            break;
        case '\n':
            append("\\n", 2);
            break;
        case '\r':
            append("\\r", 2);
            break;
        case '\t':
            append("\\t", 2);
            break;
        default: { // the other control characters and DEL: nothing else stops a plain run. DEL is
                   // valid raw in JSON, but a terminal filter would rewrite it, breaking the JSON.
            const char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
            append(escaped, sizeof escaped);
        }
        }
        ++i;
    }
}

// `count` spaces at `out`, which has room for 16 more than that: sixteen at a time, without a
// call to memset for each indent of a pretty document.
char* putSpaces(char* out, std::size_t count)
{
    static constexpr char kSpaces[16]
        = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
    for (std::size_t i = 0; i < count; i += sizeof kSpaces)
        std::memcpy(out + i, kSpaces, sizeof kSpaces);
    return out + count;
}

// `size` bytes from `from` to `out` as a few overlapping moves, not a call to memcpy: the names and
// keys of a report are a few dozen bytes each, written millions of times.
char* copyText(char* out, const char* from, std::size_t size)
{
    if (size >= 16) {
        for (std::size_t i = 0; i + 16 < size; i += 16)
            std::memcpy(out + i, from + i, 16);
        std::memcpy(out + size - 16, from + size - 16, 16);
    } else if (size >= 8) {
        std::memcpy(out, from, 8);
        std::memcpy(out + size - 8, from + size - 8, 8);
    } else if (size >= 4) {
        std::memcpy(out, from, 4);
        std::memcpy(out + size - 4, from + size - 4, 4);
    } else if (size > 0) {
        out[0] = from[0];
        out[size / 2] = from[size / 2];
        out[size - 1] = from[size - 1];
    }
    return out + size;
}

// Shortest text that reads back as the same double, with a '.' or an exponent; null for NaN and
// the infinities, which JSON cannot write.
std::string_view doubleText(double number, char (&buffer)[64])
{
    if (!std::isfinite(number))
        return "null";
    const auto result = std::to_chars(buffer, buffer + sizeof buffer - 2, number);
    std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
    if (text.find_first_of(".eE") == std::string_view::npos) {
        std::memcpy(result.ptr, ".0", 2);
        text = std::string_view(buffer, text.size() + 2);
    }
    return text;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Writing

void appendJsonString(std::string& out, std::string_view text)
{
    out += '"';
    escapeJsonText(text, [&out](const char* data, std::size_t length) { out.append(data, length); });
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

const std::string& JsonWriter::text() const
{
    m_buffer.resize(m_length); // the room after the text goes; it comes back on the next write
    return m_buffer;
}

std::string JsonWriter::takeText()
{
    m_buffer.resize(m_length);
    std::string text = std::move(m_buffer);
    m_buffer.clear();
    m_length = 0;
    return text;
}

char* JsonWriter::grow(std::size_t bytes)
{
    // Doubling, so a string writer's text is copied O(1) times per byte; a stream writer's buffer
    // stops growing at about the flush size and is reused. resize() zero-fills the new room, once.
    const std::size_t needed = m_length + bytes;
    m_buffer.resize(std::max({needed, 2 * m_buffer.size(), std::size_t {256}}));
    return m_buffer.data() + m_length;
}

void JsonWriter::put(std::string_view text)
{
    if (text.empty())
        return;
    char* out = room(text.size());
    std::memcpy(out, text.data(), text.size());
    m_length += text.size();
}

void JsonWriter::putString(std::string_view text)
{
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    if (plainRunEnd(bytes, 0, text.size()) == text.size()) {
        char* out = room(text.size() + 2);
        *out++ = '"';
        out = copyText(out, text.data(), text.size());
        *out++ = '"';
        commit(out);
        return;
    }
    put('"');
    escapeJsonText(
        text, [this](const char* data, std::size_t length) { put(std::string_view(data, length)); });
    put('"');
}

void JsonWriter::flush()
{
    if (m_stream && m_length) {
        m_stream->write(m_buffer.data(), static_cast<std::streamsize>(m_length));
        m_length = 0;
    }
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
    const std::size_t indent = 2 * m_stack.size();
    char* out = room(indent + 1 + 16);
    *out++ = '\n';
    commit(putSpaces(out, indent));
}

bool JsonWriter::beforeOtherValue(const char* what)
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
        put(',');
    newlineAndIndent();
    return true;
}

JsonWriter& JsonWriter::beginObject()
{
    if (beforeValue("beginObject()")) {
        put('{');
        m_stack.push_back(Frame {true, false, false});
    }
    return *this;
}

JsonWriter& JsonWriter::beginArray()
{
    if (beforeValue("beginArray()")) {
        put('[');
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
    put('}');
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
    put(']');
    afterValue();
    return *this;
}

char* JsonWriter::beginKey(std::size_t keyBytes)
{
    if (m_stack.empty() || !m_stack.back().isObject || m_stack.back().keyWritten) {
        fail(m_stack.empty() || !m_stack.back().isObject ? "JsonWriter: key() outside an object"
                                                         : "JsonWriter: key() twice without a value");
        return nullptr;
    }
    Frame& frame = m_stack.back();
    frame.keyWritten = true;
    const bool pretty = m_style == JsonStyle::Pretty;
    const std::size_t indent = pretty ? 2 * m_stack.size() : 0;
    char* out = room(2 + indent + 16 + keyBytes);
    *out = ','; // kept only after an entry: written always, it spares a branch
    out += frame.hasEntries ? 1 : 0;
    if (pretty) {
        *out++ = '\n';
        out = putSpaces(out, indent);
    }
    return out;
}

JsonWriter& JsonWriter::key(std::string_view name)
{
    const auto* bytes = reinterpret_cast<const unsigned char*>(name.data());
    const bool pretty = m_style == JsonStyle::Pretty;
    if (plainRunEnd(bytes, 0, name.size()) == name.size()) { // the usual key, a plain name
        if (char* out = beginKey(name.size() + 4)) {
            *out++ = '"';
            out = copyText(out, name.data(), name.size());
            *out++ = '"';
            *out++ = ':';
            if (pretty)
                *out++ = ' ';
            commit(out);
        }
        return *this;
    }
    if (char* out = beginKey(0)) {
        commit(out);
        putString(name);
        put(pretty ? std::string_view(": ") : std::string_view(":"));
    }
    return *this;
}

JsonWriter& JsonWriter::key(JsonKey name)
{
    // The key as written, `"name": `, lies in whole blocks of sixteen: copied block by block, the
    // compact style's text without the space.
    const std::size_t written = name.text.size() + (m_style == JsonStyle::Pretty ? 4 : 3);
    if (char* out = beginKey(name.writtenBytes)) {
        for (std::size_t i = 0; i < name.writtenBytes; i += 16)
            std::memcpy(out + i, name.written + i, 16);
        commit(out + written);
    }
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view text)
{
    if (beforeValue("a string value")) {
        putString(text);
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
        char* out = room(24); // the longest int64 or uint64 is 20 characters
        commit(std::to_chars(out, out + 24, number).ptr);
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number)
{
    if (beforeValue("a number")) {
        char* out = room(24); // the longest int64 or uint64 is 20 characters
        commit(std::to_chars(out, out + 24, number).ptr);
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::value(double number)
{
    if (beforeValue("a number")) {
        char buffer[64];
        put(doubleText(number, buffer));
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
        put(flag ? std::string_view("true") : std::string_view("false"));
        afterValue();
    }
    return *this;
}

JsonWriter& JsonWriter::null()
{
    if (beforeValue("null")) {
        put(std::string_view("null"));
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
