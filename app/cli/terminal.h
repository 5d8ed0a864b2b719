// SPDX-License-Identifier: MIT
#pragma once
// What ckpt-inspect prints to a terminal: a checkpoint is untrusted, so no byte taken from one may
// reach the terminal as a control sequence.
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace cli {

// Text output shows what a checkpoint holds, and a checkpoint is untrusted: a tensor or global
// named "\x1b[30A\x1b[J..." would move the cursor and hide the lines above it (issue 9). Every
// value taken from a file or a message is printed through shown(); the JSON output escapes on
// its own.
std::string shown(std::string_view text);

// Multi-line text (a Python snippet, an add_safe_globals call): each line made printable, the
// line breaks kept.
std::string shownLines(std::string_view text);

// The last line of defence for anything printed without shown(): a stream buffer in front of
// stdout and stderr that writes C0 control characters other than line breaks and tabs, and DEL,
// as visible escapes, so no escape sequence reaches the terminal whatever the code path.
class TerminalSafeBuffer : public std::streambuf {
public:
    explicit TerminalSafeBuffer(std::streambuf* target)
        : m_target(target)
    { }

    std::streambuf* target() const { return m_target; }

protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* data, std::streamsize count) override;
    int sync() override { return m_target->pubsync(); }

private:
    bool put(char c);

    std::streambuf* m_target;
};

// Where text that can hold no control byte (JSON from ckpt::JsonWriter, which escapes them and
// DEL) may go to skip the filter's look at every byte: the filter's target when `out` writes
// through a TerminalSafeBuffer, else the stream's own buffer. `out` is flushed first.
std::streambuf* bypassTerminalFilter(std::ostream& out);

} // namespace cli
