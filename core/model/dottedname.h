// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <string_view>

namespace ckpt {

// Where the last component of a dotted state_dict name starts, as Checkpoint::modulePathFor splits
// it: an empty component ("a..b", a trailing dot) ends the split, so the rest is the leaf. 0 when
// the name has no module prefix. The readers that remember the last module path compare the
// prefix before it, dottedName.substr(0, start - 1).
inline std::size_t dottedLeafStart(std::string_view dottedName)
{
    std::size_t leafStart = 0;
    for (;;) {
        const std::size_t dot = dottedName.find('.', leafStart);
        if (dot == std::string_view::npos || dot == leafStart || dot + 1 == dottedName.size())
            return leafStart;
        leafStart = dot + 1;
    }
}

} // namespace ckpt
