// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ckpt {

// Every kind of finding, from the one table in findingcodes.inc: emitters write an enumerator
// (FindingCode::CrcMismatch) and matchers compare enumerators, so a code the table does not have
// cannot be emitted or matched. To add one, add its row there.
enum class FindingCode : std::uint16_t {
#define CKPT_FINDING_CODE(name, id, explanation, fix) name,
#include "core/base/findingcodes.inc"
#undef CKPT_FINDING_CODE
};

// A row of the table.
struct FindingCodeInfo {
    FindingCode code;
    std::string_view id; // the stable string of --json output and the reports: "crc-mismatch"
    std::string_view explanation; // one paragraph for people, what the code means
    std::string_view fix; // what to do, where it is the same for every finding of the code; else empty
};

// The table, in enumerator order.
std::span<const FindingCodeInfo> findingCodes();
const FindingCodeInfo& findingCodeInfo(FindingCode code);
inline std::string_view findingCodeId(FindingCode code)
{
    return findingCodeInfo(code).id;
}
// The code whose stable string is `id`, for input that names codes (nothing when none does).
std::optional<FindingCode> findingCodeFromId(std::string_view id);

} // namespace ckpt
