// SPDX-License-Identifier: MIT
#include "core/base/findingcodes.h"

#include <array>

namespace ckpt {

namespace {

constexpr std::array kTable {
#define CKPT_FINDING_CODE(name, id, explanation, fix)                                                        \
    FindingCodeInfo {FindingCode::name, id, explanation, fix},
#include "core/base/findingcodes.inc"
#undef CKPT_FINDING_CODE
};

} // namespace

std::span<const FindingCodeInfo> findingCodes()
{
    return kTable;
}

const FindingCodeInfo& findingCodeInfo(FindingCode code)
{
    return kTable[static_cast<std::size_t>(code)]; // the enumerators are the table's indices
}

std::optional<FindingCode> findingCodeFromId(std::string_view id)
{
    for (const FindingCodeInfo& row : kTable)
        if (row.id == id)
            return row.code;
    return std::nullopt;
}

} // namespace ckpt
