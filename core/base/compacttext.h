// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/textviewfacade.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ckpt {

// A string of 16 bytes where std::string is 32: up to 15 characters in place (a storage key "0" to
// "140234567890123", a tree node's "encoder" or "weight"), longer text in one heap block of its
// own. Every storage and every tree node holds one, so at a million of each the 16 bytes are
// 32 MB. It reads like a const std::string (TextViewFacade: it converts to string_view, and
// explicitly to std::string) and is set by assigning text; it is always NUL-terminated.
//
// Layout (little-endian, as every target here): in place, the characters and after them zeros,
// with byte 15 holding 15 - size (so a text of 15 characters ends in the zero it needs); on the
// heap, a pointer and then the size in the low 56 bits of the second word, byte 15 being 0xFF.
class CompactText : public TextViewFacade<CompactText> {
public:
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
    void clear() noexcept
    {
        release();
        setInlineSize(0);
    }

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

template<> struct std::hash<ckpt::CompactText> : ckpt::TextViewHash<ckpt::CompactText> { };
