// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/base/internedstring.h"

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace ckpt {

struct JsonMember;

enum class JsonStyle {
    Compact, // {"a":[1,2]}
    Pretty, // two-space indent, one member or element per line, like Python's json.dumps(indent=2)
};

// One JSON value as read from a file or built for output. Objects keep their members in the order
// they were written and keep repeated keys: file formats (safetensors) forbid duplicates, and a
// reader can only report them if the parser does not silently drop them.
//
// Numbers written without fraction or exponent stay exact integers (int64, or uint64 above
// INT64_MAX); everything else is a double. `5` and `5.0` are therefore different values, as in
// Python and serde: a byte offset written as `5.0` is not an integer.
class JsonValue {
public:
    enum class Type { Null, Bool, Number, String, Array, Object };
    using Array = std::vector<JsonValue>;
    using Object = std::vector<JsonMember>;

    JsonValue() noexcept;
    JsonValue(std::nullptr_t) noexcept;
    JsonValue(bool value) noexcept;
    JsonValue(std::int64_t value) noexcept;
    JsonValue(std::uint64_t value) noexcept;
    template<std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, std::int64_t> && !std::same_as<T, std::uint64_t>)
        JsonValue(T value)
    noexcept
        : JsonValue(widen(value))
    { }
    JsonValue(double value) noexcept;
    JsonValue(std::string value);
    JsonValue(std::string_view value);
    JsonValue(const char* value);
    JsonValue(Array items);
    JsonValue(Object members);
    static JsonValue emptyArray();
    static JsonValue emptyObject();

    ~JsonValue();
    JsonValue(const JsonValue& other);
    JsonValue(JsonValue&& other) noexcept;
    JsonValue& operator=(const JsonValue& other);
    JsonValue& operator=(JsonValue&& other) noexcept;

    Type type() const;
    bool isNull() const { return type() == Type::Null; }
    bool isBool() const { return type() == Type::Bool; }
    bool isNumber() const { return type() == Type::Number; }
    bool isString() const { return type() == Type::String; }
    bool isArray() const { return type() == Type::Array; }
    bool isObject() const { return type() == Type::Object; }
    bool isInteger() const; // a number kept exactly (written without fraction or exponent)
    bool isDouble() const; // a number kept as a double

    bool toBool(bool defaultValue = false) const;
    std::optional<std::int64_t> toInt64() const; // exact integers that fit; never a double
    std::optional<std::uint64_t> toUInt64() const; // exact non-negative integers; never a double
    double toDouble(double defaultValue = 0.0) const; // any number (integers converted)
    const std::string& toString() const; // empty for anything but a string

    // Elements and members; empty for other types, so range-for works on any value.
    const Array& items() const;
    const Object& members() const;
    // Mutable access, or nullptr when the value is not of that type.
    Array* array();
    Object* object();
    std::size_t size() const; // elements or members, 0 for scalars

    // The first member named `key`, nullptr when absent or when this is not an object.
    const JsonValue* find(std::string_view key) const;
    JsonValue* find(std::string_view key);
    // Like find(), but a null value when absent, so lookups chain: v.member("a").member("b").
    const JsonValue& member(std::string_view key) const;
    // The element at `index`, a null value when out of range or not an array.
    const JsonValue& at(std::size_t index) const;

    // Building. append() turns a null value into an array first; insert() a null value into an
    // object. Both do nothing (and return false) on any other type.
    bool append(JsonValue item);
    bool insert(std::string key, JsonValue value); // adds a member, even if the key exists
    bool set(std::string key, JsonValue value); // replaces the first member named key, or adds it

    // Keys that occur more than once among this object's members (not recursive), each once, in
    // order of their second occurrence.
    std::vector<std::string> duplicateKeys() const;

    std::string toJson(JsonStyle style = JsonStyle::Compact) const;

    // Structural equality: same types, same numbers (int 1 and double 1.0 differ), same member
    // order. NaN equals nothing, as in IEEE.
    bool operator==(const JsonValue& other) const;

private:
    template<std::integral T> static auto widen(T value)
    {
        if constexpr (std::is_signed_v<T>)
            return static_cast<std::int64_t>(value);
        else
            return static_cast<std::uint64_t>(value);
    }

    std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, double, std::string, Array, Object>
        m_value;
};

struct JsonMember {
    std::string key;
    JsonValue value;
    bool operator==(const JsonMember& other) const = default;
};

// Limits that keep a hostile document from exhausting the stack or memory. The parser itself is
// iterative; the depth limit also protects the recursive destructor and writer of the result.
struct JsonParseLimits {
    std::size_t maxBytes = std::size_t {64} << 20;
    std::size_t maxDepth = 512; // nested arrays/objects; values above kMaxJsonDepth are clamped
    std::size_t maxValues = 10'000'000; // values of any kind, containers included
    bool allowDuplicateKeys = true; // false: a repeated key in one object is a parse error
    // Added to every byte offset in errors, so a document embedded in a file reports file offsets.
    std::uint64_t offsetBase = 0;
};
inline constexpr std::size_t kMaxJsonDepth = 10'000;

// Strict RFC 8259 parsing of one JSON text: UTF-8 only (no byte-order mark, no overlong forms, no
// encoded surrogates), \u escapes with surrogate pairs (a lone surrogate is an error: it has no
// UTF-8 form), no comments, no trailing commas, no NaN/Infinity, nothing but whitespace after the
// value. Numbers too large for a double are errors; numbers too small become 0.
// Errors read "invalid JSON at byte 1,234: expected ':' after object key", with
// ReadError::offset set to the same byte offset.
Expected<JsonValue> parseJson(std::string_view text, const JsonParseLimits& limits = {});

// An object key known when the program is compiled to need no escape: printable ASCII without '"'
// or '\\'. Written "name"_key (using ckpt::literals::operator""_key); a key that does not qualify
// does not compile. It carries the key as the writer puts it, so that the writer copies it in
// blocks instead of quoting it (2.4 million keys in `info --json` of 100,000 tensors).
struct JsonKey {
    std::string_view text;
    const char* written = nullptr; // `"text": `, then zeros to a whole number of 16-byte blocks
    std::size_t writtenBytes = 0; // at `written`: a multiple of 16
};

namespace jsondetail {

// A string literal as a template argument, so that each key's written form is made once, when the
// program is compiled.
template<std::size_t N> struct KeyLiteral {
    char text[N] {};
    consteval KeyLiteral(const char (&literal)[N])
    {
        for (std::size_t i = 0; i < N; ++i)
            text[i] = literal[i];
    }
};

template<KeyLiteral Name>
inline constexpr auto kWrittenKey = [] {
    constexpr std::size_t nameSize = sizeof(Name.text) - 1;
    std::array<char, (nameSize + 4 + 15) / 16 * 16> written {};
    written[0] = '"';
    for (std::size_t i = 0; i < nameSize; ++i)
        written[1 + i] = Name.text[i];
    written[nameSize + 1] = '"';
    written[nameSize + 2] = ':';
    written[nameSize + 3] = ' ';
    return written;
}();

} // namespace jsondetail

namespace literals {
template<jsondetail::KeyLiteral Name> consteval JsonKey operator""_key()
{
    constexpr std::size_t size = sizeof(Name.text) - 1;
    for (std::size_t i = 0; i < size; ++i) {
        const auto byte = static_cast<unsigned char>(Name.text[i]);
        if (byte < 0x20 || byte >= 0x7f || byte == '"' || byte == '\\')
            throw "a _key is printable ASCII without a quote or a backslash";
    }
    constexpr const auto& written = jsondetail::kWrittenKey<Name>;
    return JsonKey {std::string_view(Name.text, size), written.data(), written.size()};
}
} // namespace literals

// Streaming writer. Every string it writes is valid JSON whatever bytes it is given: control
// characters are escaped, and bytes that are not valid UTF-8 become U+FFFD, so the output always
// parses. Misuse (a value where a key is due, an unbalanced end) is recorded in error() and the
// offending call is ignored; it never throws.
class JsonWriter {
public:
    explicit JsonWriter(JsonStyle style = JsonStyle::Compact);
    // Writes to `out` in chunks; call flush() (or destroy the writer) before using the stream.
    explicit JsonWriter(std::ostream& out, JsonStyle style = JsonStyle::Compact);
    ~JsonWriter();
    JsonWriter(const JsonWriter&) = delete;
    JsonWriter& operator=(const JsonWriter&) = delete;

    JsonWriter& beginObject();
    JsonWriter& endObject();
    JsonWriter& beginArray();
    JsonWriter& endArray();
    JsonWriter& key(std::string_view name);
    // A key spelled in the source as "dtype"_key: checked when it is compiled, written without a
    // scan, as the blocks it carries.
    JsonWriter& key(JsonKey name);
    JsonWriter& value(std::string_view text);
    JsonWriter& value(const char* text); // without it, a string literal would pick value(bool)
    JsonWriter& value(const std::string& text);
    JsonWriter& value(InternedString text) { return value(std::string_view(text)); }
    JsonWriter& value(std::int64_t number);
    JsonWriter& value(std::uint64_t number);
    template<std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, std::int64_t> && !std::same_as<T, std::uint64_t>)
        JsonWriter& value(T number)
    {
        if constexpr (std::is_signed_v<T>)
            return value(static_cast<std::int64_t>(number));
        else
            return value(static_cast<std::uint64_t>(number));
    }
    // Shortest text that reads back as the same double, always with a '.' or exponent so that it
    // reads back as a double; NaN and infinities have no JSON form and are written as null.
    JsonWriter& value(double number);
    JsonWriter& value(bool flag);
    JsonWriter& value(const JsonValue& json); // a whole value, members in their order
    JsonWriter& value(const std::vector<std::string>& texts); // an array of strings
    JsonWriter& null();
    // key(name) followed by value(v).
    template<class T> JsonWriter& member(std::string_view name, const T& v)
    {
        key(name);
        return value(v);
    }
    template<class T> JsonWriter& member(JsonKey name, const T& v)
    {
        key(name);
        return value(v);
    }
    // key(name) followed by the value, or by null when there is none. The reports write "not
    // known" (an empty optional) and "none" (an empty text or list) as JSON null, never as "" or [].
    template<class T> JsonWriter& memberOrNull(std::string_view name, const std::optional<T>& v)
    {
        key(name);
        return v ? value(*v) : null();
    }
    template<class T>
    requires requires(const T& v) { v.empty(); }
    JsonWriter& memberOrNull(std::string_view name, const T& v)
    {
        key(name);
        return v.empty() ? null() : value(v);
    }

    // Text written so far (writers without a stream), and taking it out.
    const std::string& text() const;
    std::string takeText();
    void flush(); // stream writers: hands buffered text to the stream
    bool isComplete() const; // one whole top-level value written, every container closed
    bool ok() const { return m_error.empty(); }
    const std::string& error() const { return m_error; }

private:
    struct Frame {
        bool isObject = false;
        bool hasEntries = false; // a ',' is due before the next entry
        bool keyWritten = false; // objects: a key was written, its value is due
    };
    // Before a value: the value due after an object's key, almost every value of a report, is
    // told here; an array's element, the top-level value and a misuse go the longer way.
    bool beforeValue(const char* what)
    {
        if (!m_stack.empty() && m_stack.back().isObject && m_stack.back().keyWritten) [[likely]]
            return true;
        return beforeOtherValue(what);
    }
    bool beforeOtherValue(const char* what);
    void afterValue()
    {
        if (m_stack.empty()) {
            m_topLevelDone = true;
        } else {
            m_stack.back().hasEntries = true;
            m_stack.back().keyWritten = false;
        }
        maybeFlush();
    }
    // The separator and indent of a key whose text takes `keyBytes`, with room for that text
    // after them (written through the pointer and kept with commit()); nullptr where no key is due.
    char* beginKey(std::size_t keyBytes);
    void newlineAndIndent();
    void fail(std::string message);
    void maybeFlush()
    {
        constexpr std::size_t kChunk = std::size_t {64} << 10; // a stream writer's text, flushed
        if (m_stream && m_length >= kChunk)
            flush();
    }
    // Room for `bytes` more characters at the end of the text, written through the pointer and
    // kept with commit(). 66 MB of `info --json` are written a few bytes at a time: appends to a
    // std::string (a capacity check and a call each) were a fifth of the command.
    char* room(std::size_t bytes)
    {
        return m_buffer.size() - m_length >= bytes ? m_buffer.data() + m_length : grow(bytes);
    }
    void commit(const char* end) { m_length = static_cast<std::size_t>(end - m_buffer.data()); }
    char* grow(std::size_t bytes);
    void put(char c)
    {
        *room(1) = c;
        ++m_length;
    }
    void put(std::string_view text);
    void putString(std::string_view text); // quoted and escaped

    // The first m_length characters are the text; the rest is room already allocated (text()
    // trims it, so it is mutable).
    mutable std::string m_buffer;
    std::size_t m_length = 0;
    std::ostream* m_stream = nullptr;
    JsonStyle m_style;
    std::vector<Frame> m_stack;
    bool m_topLevelDone = false;
    std::string m_error;
};

// Appends `text` to `out` as a quoted JSON string (same escaping as JsonWriter).
void appendJsonString(std::string& out, std::string_view text);

} // namespace ckpt
