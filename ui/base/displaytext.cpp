// SPDX-License-Identifier: MIT
#include "ui/base/displaytext.h"

#include "core/base/textformat.h"

namespace ckpt {

QString displayText(std::string_view text)
{
    QString out = QString::fromStdString(stripAnsiEscapes(text));
    for (QChar& c : out)
        if ((c.unicode() < 0x20 && c != QLatin1Char('\n') && c != QLatin1Char('\t')) || c.unicode() == 0x7f
            || (c.unicode() >= 0x80 && c.unicode() <= 0x9f))
            c = QChar(0xfffd);
    return out;
}

QString displayHtml(std::string_view text)
{
    return displayText(text).toHtmlEscaped();
}

} // namespace ckpt
