// SPDX-License-Identifier: MIT
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ckpt {

// A string that most of the objects holding one leave empty: a tree node's summary (values and
// aliases have one; the modules and tensors of a big state_dict, nearly every node, do not). One
// pointer, null while empty, where a std::string is 32 bytes in every node: at two million tree
// nodes that is 48 MB of empty strings. It reads like a const std::string (it converts to one) and
// is set by assigning text; assigning "" empties it.
class RareText {
public:
    RareText() noexcept = default;
    explicit RareText(std::string text) { assign(std::move(text)); }
    RareText(const RareText& other) { assign(other.str()); }
    RareText(RareText&&) noexcept = default;
    ~RareText() = default;
    RareText& operator=(const RareText& other)
    {
        if (this != &other)
            assign(other.str());
        return *this;
    }
    RareText& operator=(RareText&&) noexcept = default;
    RareText& operator=(std::string text)
    {
        assign(std::move(text));
        return *this;
    }
    RareText& operator=(std::string_view text) { return *this = std::string(text); }
    RareText& operator=(const char* text) { return *this = std::string(text); }

    const std::string& str() const noexcept { return m_text ? *m_text : emptyText(); }
    operator const std::string&() const noexcept { return str(); }
    operator std::string_view() const noexcept { return str(); }

    bool empty() const noexcept { return !m_text; }
    std::size_t size() const noexcept { return str().size(); }
    const char* c_str() const noexcept { return str().c_str(); }
    bool starts_with(std::string_view prefix) const noexcept { return str().starts_with(prefix); }
    bool ends_with(std::string_view suffix) const noexcept { return str().ends_with(suffix); }
    std::string substr(std::size_t from, std::size_t count = std::string::npos) const
    {
        return str().substr(from, count);
    }

    friend bool operator==(const RareText& a, const RareText& b) noexcept { return a.str() == b.str(); }
    friend bool operator==(const RareText& a, std::string_view b) noexcept { return a.str() == b; }
    friend bool operator==(const RareText& a, const std::string& b) noexcept { return a.str() == b; }
    friend bool operator==(const RareText& a, const char* b) noexcept { return a.str() == b; }

    friend std::string operator+(const std::string& a, const RareText& b) { return a + b.str(); }
    friend std::string operator+(std::string&& a, const RareText& b) { return std::move(a) + b.str(); }
    friend std::string operator+(const char* a, const RareText& b) { return a + b.str(); }
    friend std::string operator+(const RareText& a, const std::string& b) { return a.str() + b; }
    friend std::string operator+(const RareText& a, const char* b) { return a.str() + b; }

private:
    static const std::string& emptyText() noexcept
    {
        static const std::string empty;
        return empty;
    }
    void assign(std::string text)
    {
        if (text.empty())
            m_text.reset();
        else if (m_text)
            *m_text = std::move(text);
        else
            m_text = std::make_unique<std::string>(std::move(text));
    }

    std::unique_ptr<std::string> m_text;
};

} // namespace ckpt
