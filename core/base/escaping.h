// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ckpt {

// One step of strict UTF-8 decoding, as Python's "utf-8" codec accepts it: no overlong forms, no
// surrogates (U+D800-U+DFFF), nothing above U+10FFFF. `length` is how many bytes were consumed
// (1 for an invalid byte, which is then reported with valid = false).
struct Utf8Step {
    std::uint32_t codePoint = 0;
    std::size_t length = 1;
    bool valid = false;
};
Utf8Step decodeUtf8At(std::string_view text, std::size_t position);
bool isValidUtf8(std::string_view text);

// A character that would act on a terminal or hide text rather than show itself: C0 controls
// (ESC, CR, LF, BEL, ...), DEL, C1 controls (U+0080-U+009F, where U+009B is a one-character CSI),
// and the invisible direction overrides and isolates that reorder what follows (U+202A-U+202E,
// U+2066-U+2069), the line and paragraph separators.
bool isControlCodePoint(std::uint32_t codePoint);

// `text` made safe to print on a terminal: every control character as a visible escape (\n, \r,
// \t, \x1b, \u202e) and every byte that is not UTF-8 as \xNN. Names, messages and paths taken
// from a checkpoint go through this before any text output (the JSON writer escapes on its own).
// Backslashes stay as they are: the escape only has to keep the terminal from acting on the text.
std::string printableText(std::string_view text);
// The same, appended to `out`: reports that write a line per tensor into one buffer use this, so a
// name of printable ASCII (almost every one) costs no string of its own.
void appendPrintableText(std::string& out, std::string_view text);
// `text` from `from` on made printable where it stands, as appendPrintableText would have appended
// it: a report builds a line straight into its buffer and then calls this, so a line of printable
// ASCII is scanned once and never copied.
void makePrintableFrom(std::string& text, std::size_t from);

// Multi-line text (a Python snippet, an add_safe_globals call) made printable line by line: each
// line as printableText makes it, the line breaks kept.
std::string printableLines(std::string_view text);

} // namespace ckpt
