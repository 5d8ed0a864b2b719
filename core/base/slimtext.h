// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/textviewfacade.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ckpt {

// A string of 8 bytes where std::string is 32: up to 7 characters in place ("weight", "s.12345",
// "0"), longer text in one heap block of its own holding the size and then the characters. For text
// that is nearly always longer than CompactText's 15 characters in place, where CompactText would
// spend its 16 bytes on a pointer and a size anyway: a tensor's dotted name
// ("model.layers.12.mlp.up_proj.weight"), one per tensor, so at a million tensors the 24 bytes saved
// are 24 MB. Its block is exactly the size of the text (std::string's grows by doubling while a name
// is put together). Each object owns its block, so a copy (a tensor entry copied between
// checkpoints, a plan's snapshot) stays valid whatever happens to the original; a view of text in
// place, as of std::string's, lasts while the object stays where it is. It reads like a const
// std::string (TextViewFacade, as CompactText) and is set by assigning text, as CompactText is.
// Unlike theirs, its data() is not NUL-terminated: it has no c_str().
//
// Layout (little-endian, as every target here): a heap pointer (aligned, so its lowest bit is 0),
// null while empty; or, in place, byte 0 holding size * 2 + 1 and the characters from byte 1.
class SlimText : public TextViewFacade<SlimText> {
public:
    SlimText() noexcept = default;
    SlimText(std::string_view text) { assign(text); }
    SlimText(const std::string& text) { assign(text); }
    SlimText(const char* text) { assign(std::string_view(text)); }
    SlimText(const SlimText& other) { assign(other.view()); }
    SlimText(SlimText&& other) noexcept
    {
        std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
        std::memset(other.m_bytes, 0, sizeof other.m_bytes);
    }
    ~SlimText() { release(); }

    SlimText& operator=(const SlimText& other)
    {
        if (this != &other)
            replace(other.view());
        return *this;
    }
    SlimText& operator=(SlimText&& other) noexcept
    {
        if (this != &other) {
            release();
            std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
            std::memset(other.m_bytes, 0, sizeof other.m_bytes);
        }
        return *this;
    }
    SlimText& operator=(std::string_view text)
    {
        replace(text);
        return *this;
    }
    SlimText& operator=(const std::string& text) { return *this = std::string_view(text); }
    SlimText& operator=(const char* text) { return *this = std::string_view(text); }

    const char* data() const noexcept
    {
        if (inPlace())
            return reinterpret_cast<const char*>(m_bytes + 1);
        const char* block = heapBlock();
        return block ? block + kHeader : "";
    }
    size_type size() const noexcept
    {
        if (inPlace())
            return m_bytes[0] >> 1;
        const char* block = heapBlock();
        if (!block)
            return 0;
        std::size_t size = 0;
        std::memcpy(&size, block, sizeof size);
        return size;
    }
    void clear() noexcept { release(); }

private:
    static constexpr std::size_t kHeader = sizeof(std::size_t); // the size, before the characters

    static constexpr std::size_t kInPlace = sizeof(void*) - 1; // characters in place

    bool inPlace() const noexcept { return (m_bytes[0] & 1) != 0; }
    char* heapBlock() const noexcept
    {
        char* block = nullptr;
        std::memcpy(&block, m_bytes, sizeof block);
        return block;
    }
    void release() noexcept
    {
        if (!inPlace())
            delete[] heapBlock();
        std::memset(m_bytes, 0, sizeof m_bytes);
    }
    // Fills an empty or released object (all zero).
    void assign(std::string_view text)
    {
        if (text.empty())
            return;
        if (text.size() <= kInPlace) {
            std::memcpy(m_bytes + 1, text.data(), text.size());
            m_bytes[0] = static_cast<unsigned char>(text.size() * 2 + 1);
            return;
        }
        char* block = new char[kHeader + text.size()];
        static_assert(alignof(std::max_align_t) > 1); // a block's address leaves bit 0 clear
        const std::size_t size = text.size();
        std::memcpy(block, &size, sizeof size);
        std::memcpy(block + kHeader, text.data(), text.size());
        std::memcpy(m_bytes, &block, sizeof block);
    }
    // Text that may lie in this object (in place or in its block): copied before it goes.
    void replace(std::string_view text)
    {
        const char* begin = data();
        if (!text.empty() && text.data() >= begin && text.data() <= begin + size()) {
            const std::string copy(text);
            release();
            assign(copy);
            return;
        }
        release();
        assign(text);
    }

    alignas(void*) unsigned char m_bytes[sizeof(void*)] {}; // all zero: empty
};

static_assert(sizeof(SlimText) == sizeof(void*));

} // namespace ckpt

template<> struct std::hash<ckpt::SlimText> : ckpt::TextViewHash<ckpt::SlimText> { };
