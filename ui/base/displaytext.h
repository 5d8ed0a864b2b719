// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

#include <string_view>

namespace ckpt {

// Text from the core (torch's messages as torch prints them, names from a file) as every pane shows
// it: without terminal codes (core/base/textformat's stripAnsiEscapes, the filter the CLI's reports
// go through: torch 2.6+ prints "\033[1m…\033[0m" for bold), and with any other control character
// (a hostile name's ESC, BEL, CR) shown as U+FFFD rather than reaching a label. Newlines and tabs
// stay.
QString displayText(std::string_view text);
// The same, escaped for a rich-text label.
QString displayHtml(std::string_view text);

} // namespace ckpt
