// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <compare>
#include <string>
#include <string_view>

namespace ckpt {

// A text kept as two pieces, read as their concatenation without building it: a storage's record
// name is a stem its pickle's storages share ("archive/data/") and its own key ("123456"). It
// compares, byte for byte, as the joined std::string would, so sorting and searching by it need no
// string per item.
struct JoinedText {
    std::string_view head;
    std::string_view tail;

    std::size_t size() const noexcept { return head.size() + tail.size(); }
    bool empty() const noexcept { return head.empty() && tail.empty(); }
    std::string str() const
    {
        std::string text;
        text.reserve(size());
        text.append(head).append(tail);
        return text;
    }

    friend std::strong_ordering operator<=>(JoinedText a, JoinedText b) noexcept
    {
        return compare(a, b) <=> 0;
    }
    friend std::strong_ordering operator<=>(JoinedText a, std::string_view b) noexcept
    {
        return compare(a, JoinedText {b, {}}) <=> 0;
    }
    friend bool operator==(JoinedText a, JoinedText b) noexcept { return compare(a, b) == 0; }
    friend bool operator==(JoinedText a, std::string_view b) noexcept
    {
        return a.size() == b.size() && b.starts_with(a.head) && b.substr(a.head.size()) == a.tail;
    }

private:
    // std::string's order: char by char as unsigned char (char_traits<char>::compare), then length.
    static int compare(JoinedText a, JoinedText b) noexcept
    {
        std::string_view left[2] = {a.head, a.tail};
        std::string_view right[2] = {b.head, b.tail};
        int l = 0, r = 0;
        while (true) {
            while (l < 2 && left[l].empty())
                ++l;
            while (r < 2 && right[r].empty())
                ++r;
            if (l == 2 || r == 2)
                return (l == 2 ? 0 : 1) - (r == 2 ? 0 : 1);
            const std::size_t n = std::min(left[l].size(), right[r].size());
            if (const int c = left[l].substr(0, n).compare(right[r].substr(0, n)); c != 0)
                return c;
            left[l].remove_prefix(n);
            right[r].remove_prefix(n);
        }
    }
};

} // namespace ckpt
