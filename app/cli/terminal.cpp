// SPDX-License-Identifier: MIT
#include "terminal.h"

#include "core/base/escaping.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace cli {

std::string shown(std::string_view text)
{
    return ckpt::printableText(text);
}

std::string shownLines(std::string_view text)
{
    return ckpt::printableLines(text);
}

TerminalSafeBuffer::int_type TerminalSafeBuffer::overflow(int_type c)
{
    if (traits_type::eq_int_type(c, traits_type::eof()))
        return m_target->pubsync() == 0 ? traits_type::not_eof(c) : traits_type::eof();
    return put(traits_type::to_char_type(c)) ? c : traits_type::eof();
}

namespace {
bool isSafe(unsigned char byte)
{
    return (byte >= 0x20 && byte != 0x7F) || byte == '\n' || byte == '\t';
}

// Eight bytes at a time: whether any of them is below 0x20 or is 0x7F (the exact test is then made
// byte by byte). `info --json` of a 100,000-tensor file prints 66 MB, all of it through here.
bool mayHoldUnsafe(const char* data)
{
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    std::uint64_t word;
    std::memcpy(&word, data, sizeof word);
    const std::uint64_t below0x20 = (word - 0x20 * ones) & ~word & highs;
    const std::uint64_t del = word ^ (0x7F * ones);
    const std::uint64_t is0x7F = (del - ones) & ~del & highs;
    return (below0x20 | is0x7F) != 0;
}

// Where the run of safe bytes that starts at `from` ends.
std::streamsize safeRunEnd(const char* data, std::streamsize from, std::streamsize count)
{
    std::streamsize at = from;
    for (;;) {
        while (count - at >= 8 && !mayHoldUnsafe(data + at))
            at += 8;
        // A word that may hold one (a line break, most often): byte by byte through it.
        const std::streamsize wordEnd = std::min(at + 8, count);
        while (at < wordEnd && isSafe(static_cast<unsigned char>(data[at])))
            ++at;
        if (at < wordEnd || at == count)
            return at;
    }
}
} // namespace

// Runs of safe bytes go to the target in one call: a character at a time through a stdio-synced
// stream cost a third of `info --json`'s time on a 100,000-tensor file.
std::streamsize TerminalSafeBuffer::xsputn(const char* data, std::streamsize count)
{
    std::streamsize done = 0;
    while (done < count) {
        const std::streamsize run = safeRunEnd(data, done, count);
        if (run > done) {
            const std::streamsize written = m_target->sputn(data + done, run - done);
            if (written != run - done)
                return done + written;
            done = run;
        }
        if (done < count) {
            if (!put(data[done]))
                return done;
            ++done;
        }
    }
    return count;
}

bool TerminalSafeBuffer::put(char c)
{
    const auto byte = static_cast<unsigned char>(c);
    if (isSafe(byte))
        return m_target->sputc(c) != traits_type::eof();
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
    return m_target->sputn(escaped, 4) == 4;
}

std::streambuf* bypassTerminalFilter(std::ostream& out)
{
    out.flush();
    if (auto* filter = dynamic_cast<TerminalSafeBuffer*>(out.rdbuf()))
        return filter->target();
    return out.rdbuf();
}

} // namespace cli
