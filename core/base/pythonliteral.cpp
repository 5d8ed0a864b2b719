// SPDX-License-Identifier: MIT
#include "core/base/pythonliteral.h"

#include "core/base/escaping.h"

#include <cstdio>

namespace ckpt {

std::string pythonStringLiteral(std::string_view text)
{
    std::string out = "'";
    char buffer[16];
    for (std::size_t i = 0; i < text.size();) {
        const Utf8Step step = decodeUtf8At(text, i);
        if (!step.valid) {
            std::snprintf(buffer, sizeof buffer, "\\udc%02x", static_cast<unsigned>(step.codePoint));
            out += buffer;
        } else if (step.codePoint == '\'' || step.codePoint == '\\') {
            out += '\\';
            out += static_cast<char>(step.codePoint);
        } else if (step.codePoint == '\n') {
            out += "\\n";
        } else if (step.codePoint == '\r') {
            out += "\\r";
        } else if (step.codePoint == '\t') {
            out += "\\t";
        } else if (isControlCodePoint(step.codePoint) || step.codePoint == 0xFEFF) {
            std::snprintf(buffer, sizeof buffer, step.codePoint <= 0xFF ? "\\x%02x" : "\\u%04x",
                static_cast<unsigned>(step.codePoint));
            out += buffer;
        } else {
            out.append(text.substr(i, step.length));
        }
        i += step.length;
    }
    return out + "'";
}

std::string pythonBytesLiteral(std::string_view bytes)
{
    std::string out = "b'";
    char buffer[8];
    for (char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte == '\'' || byte == '\\') {
            out += '\\';
            out += c;
        } else if (byte >= 0x20 && byte < 0x7F) {
            out += c;
        } else {
            std::snprintf(buffer, sizeof buffer, "\\x%02x", byte);
            out += buffer;
        }
    }
    return out + "'";
}

} // namespace ckpt
