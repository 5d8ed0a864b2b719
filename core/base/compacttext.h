// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
// Not first: named before the others, <compare> stops moc (AutoMoc) with "Parse error at std" in
// <concepts>, and every test with Q_OBJECT that includes core/model/checkpoint.h would not build.
#include <compare>

namespace ckpt {

// A string of 16 bytes where std::string is 32: up to 15 characters in place (a storage key "0" to
// "140234567890123", a tree node's "encoder" or "weight"), longer text in one heap block of its
// own. Every storage and every tree node holds one, so at a million of each the 16 bytes are
// 32 MB. It reads like a const std::string (it converts to string_view, and explicitly to
// std::string) and is set by
// assigning text; it is always NUL-terminated.
//
// Layout (little-endian, as every target here): in place, the characters and after them zeros,
// with byte 15 holding 15 - size (so a text of 15 characters ends in the zero it needs); on the
// heap, a pointer and then the size in the low 56 bits of the second word, byte 15 being 0xFF.
class CompactText {
public:
    using size_type = std::size_t;
    using const_iterator = const char*;
    static constexpr size_type npos = std::string::npos;

    CompactText() noexcept { setInlineSize(0); }
    CompactText(std::string_view text) { assign(text); }
    CompactText(const std::string& text) { assign(text); }
    CompactText(const char* text) { assign(std::string_view(text)); }
    CompactText(const CompactText& other) { assign(other.view()); }
    CompactText(CompactText&& other) noexcept
    {
        std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
        other.setInlineSize(0);
    }
    ~CompactText() { release(); }

    CompactText& operator=(const CompactText& other)
    {
        if (this != &other)
            replace(other.view());
        return *this;
    }
    CompactText& operator=(CompactText&& other) noexcept
    {
        if (this != &other) {
            release();
            std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
            other.setInlineSize(0);
        }
        return *this;
    }
    CompactText& operator=(std::string_view text)
    {
        replace(text);
        return *this;
    }
    CompactText& operator=(const std::string& text) { return *this = std::string_view(text); }
    CompactText& operator=(const char* text) { return *this = std::string_view(text); }

    const char* data() const noexcept
    {
        return onHeap() ? heapPointer() : reinterpret_cast<const char*>(m_bytes);
    }
    const char* c_str() const noexcept { return data(); }
    size_type size() const noexcept { return onHeap() ? heapSize() : kInline - m_bytes[kInline]; }
    size_type length() const noexcept { return size(); }
    bool empty() const noexcept { return size() == 0; }
    const_iterator begin() const noexcept { return data(); }
    const_iterator end() const noexcept { return data() + size(); }
    char operator[](size_type i) const noexcept { return data()[i]; }
    char front() const noexcept { return data()[0]; }
    char back() const noexcept { return data()[size() - 1]; }

    std::string_view view() const noexcept { return {data(), size()}; }
    std::string str() const { return std::string(view()); }
    operator std::string_view() const noexcept { return view(); }
    // Explicit: with both conversions implicit, every call overloaded on string_view and std::string
    // (JsonWriter::value, InternedString) would be ambiguous; std::string(text) and assigning work.
    explicit operator std::string() const { return str(); }

    bool starts_with(std::string_view prefix) const noexcept { return view().starts_with(prefix); }
    bool starts_with(char c) const noexcept { return view().starts_with(c); }
    bool ends_with(std::string_view suffix) const noexcept { return view().ends_with(suffix); }
    bool ends_with(char c) const noexcept { return view().ends_with(c); }
    size_type find(std::string_view text, size_type from = 0) const noexcept
    {
        return view().find(text, from);
    }
    size_type find(char c, size_type from = 0) const noexcept { return view().find(c, from); }
    size_type rfind(std::string_view text, size_type from = npos) const noexcept
    {
        return view().rfind(text, from);
    }
    size_type rfind(char c, size_type from = npos) const noexcept { return view().rfind(c, from); }
    size_type find_first_of(std::string_view chars, size_type from = 0) const noexcept
    {
        return view().find_first_of(chars, from);
    }
    size_type find_first_not_of(std::string_view chars, size_type from = 0) const noexcept
    {
        return view().find_first_not_of(chars, from);
    }
    size_type find_last_of(std::string_view chars, size_type from = npos) const noexcept
    {
        return view().find_last_of(chars, from);
    }
    int compare(std::string_view other) const noexcept { return view().compare(other); }
    std::string substr(size_type from, size_type count = npos) const
    {
        return std::string(view().substr(from, count));
    }
    void clear() noexcept
    {
        release();
        setInlineSize(0);
    }

    friend bool operator==(const CompactText& a, const CompactText& b) noexcept
    {
        return a.view() == b.view();
    }
    friend bool operator==(const CompactText& a, std::string_view b) noexcept { return a.view() == b; }
    friend bool operator==(const CompactText& a, const std::string& b) noexcept { return a.view() == b; }
    friend bool operator==(const CompactText& a, const char* b) noexcept { return a.view() == b; }
    friend std::strong_ordering operator<=>(const CompactText& a, const CompactText& b) noexcept
    {
        return a.view().compare(b.view()) <=> 0;
    }
    friend std::strong_ordering operator<=>(const CompactText& a, std::string_view b) noexcept
    {
        return a.view().compare(b) <=> 0;
    }
    friend std::strong_ordering operator<=>(const CompactText& a, const std::string& b) noexcept
    {
        return a.view().compare(b) <=> 0;
    }
    friend std::strong_ordering operator<=>(const CompactText& a, const char* b) noexcept
    {
        return a.view().compare(b) <=> 0;
    }

    friend std::string operator+(const std::string& a, const CompactText& b)
    {
        return a + std::string(b.view());
    }
    friend std::string operator+(std::string&& a, const CompactText& b)
    {
        return std::move(a.append(b.view()));
    }
    friend std::string operator+(const char* a, const CompactText& b)
    {
        return std::string(a).append(b.view());
    }
    friend std::string operator+(char a, const CompactText& b) { return std::string(1, a).append(b.view()); }
    friend std::string operator+(const CompactText& a, const std::string& b) { return a.str() + b; }
    friend std::string operator+(const CompactText& a, const char* b) { return a.str() + b; }
    friend std::string operator+(const CompactText& a, char b) { return a.str() + b; }
    friend std::string operator+(const CompactText& a, const CompactText& b)
    {
        return a.str().append(b.view());
    }
    friend std::string& operator+=(std::string& a, const CompactText& b) { return a.append(b.view()); }

    friend std::ostream& operator<<(std::ostream& out, const CompactText& text) { return out << text.view(); }

private:
    static constexpr std::size_t kInline = 15; // characters in place; byte 15 says how many fewer
    static constexpr unsigned char kHeapTag = 0xFF;
    static constexpr std::uint64_t kSizeMask = (std::uint64_t(1) << 56) - 1;

    bool onHeap() const noexcept { return m_bytes[kInline] == kHeapTag; }
    const char* heapPointer() const noexcept
    {
        const char* pointer = nullptr;
        std::memcpy(&pointer, m_bytes, sizeof pointer);
        return pointer;
    }
    std::size_t heapSize() const noexcept
    {
        std::uint64_t word = 0;
        std::memcpy(&word, m_bytes + 8, sizeof word);
        return static_cast<std::size_t>(word & kSizeMask);
    }
    void setInlineSize(std::size_t size) noexcept
    {
        std::memset(m_bytes + size, 0, kInline - size);
        m_bytes[kInline] = static_cast<unsigned char>(kInline - size);
    }
    void release() noexcept
    {
        if (onHeap())
            delete[] heapPointer();
    }
    // Fills an empty or released object.
    void assign(std::string_view text)
    {
        if (text.size() <= kInline) {
            if (!text.empty())
                std::memmove(m_bytes, text.data(), text.size());
            setInlineSize(text.size());
            return;
        }
        char* block = new char[text.size() + 1];
        std::memcpy(block, text.data(), text.size());
        block[text.size()] = '\0';
        const std::uint64_t word = static_cast<std::uint64_t>(text.size()) | (std::uint64_t(kHeapTag) << 56);
        std::memcpy(m_bytes, &block, sizeof block);
        std::memcpy(m_bytes + 8, &word, sizeof word);
    }
    // Text that may lie in this object's own block: copied before the block goes.
    void replace(std::string_view text)
    {
        if (onHeap() && text.data() >= heapPointer() && text.data() <= heapPointer() + heapSize()) {
            const std::string copy(text);
            release();
            assign(copy);
            return;
        }
        release();
        assign(text);
    }

    unsigned char m_bytes[16];
};

static_assert(sizeof(CompactText) == 16);

} // namespace ckpt

template<> struct std::hash<ckpt::CompactText> {
    std::size_t operator()(const ckpt::CompactText& text) const noexcept
    {
        return std::hash<std::string_view> {}(text.view());
    }
};
