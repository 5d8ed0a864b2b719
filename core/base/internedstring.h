// SPDX-License-Identifier: MIT
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ckpt {

// A string stored once per process, held by pointer. The model repeats a handful of names across
// every tensor and storage ("float32", "cpu", "FloatStorage", "torch._utils._rebuild_tensor_v2",
// class names): as std::string each was a heap block per tensor, and a million-tensor file spent
// more on them than on its shapes. An InternedString is one pointer; equal texts share it, so two
// compare by pointer. It reads like a const std::string (it converts to one and to string_view),
// so code that only reads these fields needs no change.
//
// The pool is process-wide (a checkpoint's records are copied between checkpoints, e.g. shards into
// their union, so a per-checkpoint pool would not do) and thread-safe (files are read in jobs), and
// it is never emptied: it holds each distinct text once, and the texts interned are names a file
// repeats, not per-tensor data (tensor names, keys and record names stay std::string).
class InternedString {
public:
    InternedString() noexcept
        : m_text(&emptyText())
    { }
    InternedString(std::string_view text)
        : m_text(text.empty() ? &emptyText() : &intern(text))
    { }
    InternedString(const char* text)
        : InternedString(std::string_view(text))
    { }
    InternedString(const std::string& text)
        : InternedString(std::string_view(text))
    { }

    const std::string& str() const noexcept { return *m_text; }
    operator const std::string&() const noexcept { return *m_text; }
    operator std::string_view() const noexcept { return *m_text; }

    const char* c_str() const noexcept { return m_text->c_str(); }
    const char* data() const noexcept { return m_text->data(); }
    std::size_t size() const noexcept { return m_text->size(); }
    std::size_t length() const noexcept { return m_text->size(); }
    bool empty() const noexcept { return m_text->empty(); }
    std::string::const_iterator begin() const noexcept { return m_text->begin(); }
    std::string::const_iterator end() const noexcept { return m_text->end(); }
    char operator[](std::size_t i) const noexcept { return (*m_text)[i]; }
    bool starts_with(std::string_view prefix) const noexcept { return m_text->starts_with(prefix); }
    bool ends_with(std::string_view suffix) const noexcept { return m_text->ends_with(suffix); }
    std::size_t find(std::string_view text, std::size_t from = 0) const noexcept
    {
        return m_text->find(text, from);
    }
    std::size_t find(char c, std::size_t from = 0) const noexcept { return m_text->find(c, from); }
    std::size_t rfind(char c, std::size_t from = std::string::npos) const noexcept
    {
        return m_text->rfind(c, from);
    }
    std::string substr(std::size_t from, std::size_t count = std::string::npos) const
    {
        return m_text->substr(from, count);
    }

    friend bool operator==(InternedString a, InternedString b) noexcept { return a.m_text == b.m_text; }
    friend bool operator==(InternedString a, std::string_view b) noexcept { return *a.m_text == b; }
    friend bool operator==(InternedString a, const std::string& b) noexcept { return *a.m_text == b; }
    friend bool operator==(InternedString a, const char* b) noexcept { return *a.m_text == b; }
    // Ordered as the texts are (as std::string was), not by pointer: sorted output stays the same.
    friend std::strong_ordering operator<=>(InternedString a, InternedString b) noexcept
    {
        return a.m_text == b.m_text ? std::strong_ordering::equal : a.m_text->compare(*b.m_text) <=> 0;
    }
    friend std::strong_ordering operator<=>(InternedString a, std::string_view b) noexcept
    {
        return std::string_view(*a.m_text).compare(b) <=> 0;
    }
    friend std::strong_ordering operator<=>(InternedString a, const std::string& b) noexcept
    {
        return a.m_text->compare(b) <=> 0;
    }
    friend std::strong_ordering operator<=>(InternedString a, const char* b) noexcept
    {
        return a.m_text->compare(b) <=> 0;
    }

    friend std::string operator+(const std::string& a, InternedString b) { return a + *b.m_text; }
    friend std::string operator+(std::string&& a, InternedString b) { return std::move(a) + *b.m_text; }
    friend std::string operator+(const char* a, InternedString b) { return a + *b.m_text; }
    friend std::string operator+(InternedString a, const std::string& b) { return *a.m_text + b; }
    friend std::string operator+(InternedString a, const char* b) { return *a.m_text + b; }
    friend std::string operator+(InternedString a, char b) { return *a.m_text + b; }

    friend std::ostream& operator<<(std::ostream& out, InternedString text);

private:
    friend class OptionalInternedString;
    struct NoText { };
    explicit InternedString(NoText) noexcept
        : m_text(nullptr)
    { }

    static const std::string& emptyText() noexcept;
    static const std::string& intern(std::string_view text);

    const std::string* m_text;
};

// A std::optional<InternedString> the size of one: "none" is a null pointer, which an
// InternedString never holds (its empty text is a string of its own), so "none" and "" stay apart.
// A device is optional in every record (formats without one record none): as std::optional it cost
// 8 bytes of flag and padding per tensor and per storage. It reads like that std::optional.
class OptionalInternedString {
public:
    using value_type = InternedString;

    OptionalInternedString() noexcept
        : m_value(InternedString::NoText {})
    { }
    OptionalInternedString(std::nullopt_t) noexcept
        : OptionalInternedString()
    { }
    OptionalInternedString(InternedString value) noexcept
        : m_value(value)
    { }
    OptionalInternedString(std::string_view text)
        : m_value(text)
    { }
    OptionalInternedString(const char* text)
        : m_value(text)
    { }
    OptionalInternedString(const std::string& text)
        : m_value(text)
    { }
    OptionalInternedString(const std::optional<InternedString>& value) noexcept
        : OptionalInternedString()
    {
        if (value)
            m_value = *value;
    }

    // From another optional text (std::optional<std::string>, <std::string_view>), as
    // std::optional<InternedString> converts from them.
    template<typename U>
    requires(!std::is_same_v<U, InternedString>) OptionalInternedString(const std::optional<U>& value)
        : OptionalInternedString()
    {
        if (value)
            m_value = InternedString(*value);
    }
    template<typename U>
    requires(!std::is_same_v<U, InternedString>) OptionalInternedString& operator=(
        const std::optional<U>& value)
    {
        if (value)
            m_value = InternedString(*value);
        else
            reset();
        return *this;
    }

    OptionalInternedString& operator=(std::nullopt_t) noexcept
    {
        reset();
        return *this;
    }

    bool has_value() const noexcept { return m_value.m_text != nullptr; }
    explicit operator bool() const noexcept { return has_value(); }
    const InternedString& operator*() const noexcept { return m_value; }
    InternedString& operator*() noexcept { return m_value; }
    const InternedString* operator->() const noexcept { return &m_value; }
    const InternedString& value() const
    {
        if (!has_value())
            throw std::bad_optional_access();
        return m_value;
    }
    template<typename U> InternedString value_or(U&& fallback) const
    {
        return has_value() ? m_value : InternedString(std::forward<U>(fallback));
    }
    void reset() noexcept { m_value = InternedString(InternedString::NoText {}); }
    template<typename... Args> InternedString& emplace(Args&&... args)
    {
        m_value = InternedString(std::forward<Args>(args)...);
        return m_value;
    }
    operator std::optional<InternedString>() const
    {
        return has_value() ? std::optional<InternedString>(m_value) : std::nullopt;
    }

    // Compared as std::optional compares: none equals none and orders before every text.
    friend bool operator==(const OptionalInternedString& a, const OptionalInternedString& b) noexcept
    {
        return a.text() == b.text();
    }
    friend bool operator==(const OptionalInternedString& a, std::nullopt_t) noexcept
    {
        return !a.has_value();
    }
    friend bool operator==(const OptionalInternedString& a, const std::optional<InternedString>& b) noexcept
    {
        return a == OptionalInternedString(b);
    }
    friend bool operator==(const OptionalInternedString& a, InternedString b) noexcept
    {
        return a.has_value() && a.m_value == b;
    }
    friend bool operator==(const OptionalInternedString& a, std::string_view b) noexcept
    {
        return a.has_value() && a.m_value == b;
    }
    friend bool operator==(const OptionalInternedString& a, const std::string& b) noexcept
    {
        return a.has_value() && a.m_value == b;
    }
    friend bool operator==(const OptionalInternedString& a, const char* b) noexcept
    {
        return a.has_value() && a.m_value == b;
    }
    friend std::strong_ordering operator<=>(
        const OptionalInternedString& a, const OptionalInternedString& b) noexcept
    {
        if (a.has_value() && b.has_value())
            return a.m_value <=> b.m_value;
        return a.has_value() <=> b.has_value();
    }

private:
    const std::string* text() const noexcept { return m_value.m_text; }

    InternedString m_value;
};

} // namespace ckpt

template<> struct std::hash<ckpt::InternedString> {
    std::size_t operator()(ckpt::InternedString text) const noexcept
    {
        return std::hash<std::string_view> {}(text);
    }
};
