// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
// Not first: named before the others, <compare> stops moc (AutoMoc) with "Parse error at std" in
// <concepts>, and every test with Q_OBJECT that includes core/model/checkpoint.h would not build.
#include <compare>

namespace ckpt {

// The read-only surface of a const std::string, for the model's compact text classes (CompactText,
// SlimText): they differ only in how they store their characters, and each was a copy of the same
// seventy lines of searches, comparisons and concatenations. A class derives from
// TextViewFacade<itself> and provides `const char* data() const noexcept` and
// `size_type size() const noexcept`; everything here reads through those two, so the class keeps
// only its storage (construction, assignment, clear, and c_str() where it is NUL-terminated).
//
// It converts to string_view, and explicitly to std::string: with both conversions implicit, every
// call overloaded on string_view and std::string (JsonWriter::value, InternedString) would be
// ambiguous; std::string(text) and assigning work. Comparisons and ordering are std::string's.
template<typename Derived> class TextViewFacade {
public:
    using size_type = std::size_t;
    using const_iterator = const char*;
    static constexpr size_type npos = std::string::npos;

    size_type length() const noexcept { return self().size(); }
    bool empty() const noexcept { return self().size() == 0; }
    const_iterator begin() const noexcept { return self().data(); }
    const_iterator end() const noexcept { return self().data() + self().size(); }
    char operator[](size_type i) const noexcept { return self().data()[i]; }
    char front() const noexcept { return self().data()[0]; }
    char back() const noexcept { return self().data()[self().size() - 1]; }

    std::string_view view() const noexcept { return {self().data(), self().size()}; }
    std::string str() const { return std::string(view()); }
    operator std::string_view() const noexcept { return view(); }
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

    friend bool operator==(const Derived& a, const Derived& b) noexcept { return a.view() == b.view(); }
    friend bool operator==(const Derived& a, std::string_view b) noexcept { return a.view() == b; }
    friend bool operator==(const Derived& a, const std::string& b) noexcept { return a.view() == b; }
    friend bool operator==(const Derived& a, const char* b) noexcept { return a.view() == b; }
    friend std::strong_ordering operator<=>(const Derived& a, const Derived& b) noexcept
    {
        return a.view().compare(b.view()) <=> 0;
    }
    friend std::strong_ordering operator<=>(const Derived& a, std::string_view b) noexcept
    {
        return a.view().compare(b) <=> 0;
    }
    friend std::strong_ordering operator<=>(const Derived& a, const std::string& b) noexcept
    {
        return a.view().compare(b) <=> 0;
    }
    friend std::strong_ordering operator<=>(const Derived& a, const char* b) noexcept
    {
        return a.view().compare(b) <=> 0;
    }

    friend std::string operator+(const std::string& a, const Derived& b) { return a + std::string(b.view()); }
    friend std::string operator+(std::string&& a, const Derived& b) { return std::move(a.append(b.view())); }
    friend std::string operator+(const char* a, const Derived& b) { return std::string(a).append(b.view()); }
    friend std::string operator+(char a, const Derived& b) { return std::string(1, a).append(b.view()); }
    friend std::string operator+(const Derived& a, const std::string& b) { return a.str() + b; }
    friend std::string operator+(const Derived& a, const char* b) { return a.str() + b; }
    friend std::string operator+(const Derived& a, char b) { return a.str() + b; }
    friend std::string operator+(const Derived& a, const Derived& b) { return a.str().append(b.view()); }
    friend std::string& operator+=(std::string& a, const Derived& b) { return a.append(b.view()); }

    friend std::ostream& operator<<(std::ostream& out, const Derived& text) { return out << text.view(); }

protected:
    // Only a derived class is one: the facade alone has no characters to read.
    TextViewFacade() noexcept = default;

private:
    const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};

// std::hash for a class built on TextViewFacade: its characters hashed as std::string's are, so a
// text and the std::string of it land in the same bucket.
template<typename Text> struct TextViewHash {
    std::size_t operator()(const Text& text) const noexcept
    {
        return std::hash<std::string_view> {}(text.view());
    }
};

} // namespace ckpt
