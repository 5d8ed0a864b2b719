// SPDX-License-Identifier: MIT
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

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
    static const std::string& emptyText() noexcept;
    static const std::string& intern(std::string_view text);

    const std::string* m_text;
};

} // namespace ckpt

template<> struct std::hash<ckpt::InternedString> {
    std::size_t operator()(ckpt::InternedString text) const noexcept
    {
        return std::hash<std::string_view> {}(text);
    }
};
