// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>

namespace ckpt {

// The one way this project writes values into Python source it prints (map_location dicts, the
// per-tensor move snippet, paths in torch.load calls). A tensor name or path comes from an
// untrusted file: it may hold quotes, backslashes, newlines, terminal escapes or bytes that are
// not UTF-8, and the snippet must still parse and mean exactly that value.

// A str literal ('...') for UTF-8 `text`: quotes, backslashes and every control character escaped
// (\n, \x1b, \u202e), other characters as they are. A byte that is not UTF-8 becomes \udcXX,
// Python's surrogateescape form, so a path with such bytes reaches open() unchanged.
std::string pythonStringLiteral(std::string_view text);

// A bytes literal (b'...'): printable ASCII as it is, everything else as \xNN.
std::string pythonBytesLiteral(std::string_view bytes);

} // namespace ckpt
