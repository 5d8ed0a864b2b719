// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/findingcodes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

enum class Severity { Info, Warning, Error };

// A problem or remark about a checkpoint, with a message a person can act on. Readers never stop
// at the first problem: they record a Finding and go on with whatever can still be read.
struct Finding {
    Finding() = default;
    Finding(Severity severity, FindingCode code, std::string message, std::string record = {},
        std::optional<std::uint64_t> offset = std::nullopt)
        : severity(severity)
        , code(code)
        , message(std::move(message))
        , record(std::move(record))
        , offset(offset)
    { }

    Severity severity = Severity::Warning;
    FindingCode code = FindingCode::NotACheckpoint; // its row in core/base/findingcodes.inc
    std::string message; // full sentence for people
    std::string record; // zip record or member concerned, if any
    std::optional<std::uint64_t> offset; // byte offset in the file, if known
    // Triage (check) findings also say which tensors they concern, why it matters in plain words,
    // and what to do about it.
    std::vector<std::uint32_t> tensors; // indices into Checkpoint::tensors
    std::string explanation;
    std::string fix;

    // The code's stable string, as --json and the reports write it: "record-size-mismatch".
    std::string_view codeId() const { return findingCodeId(code); }
};

inline const char* severityName(Severity severity)
{
    switch (severity) {
    case Severity::Info:
        return "info";
    case Severity::Warning:
        return "warning";
    case Severity::Error:
        return "error";
    }
    return "error";
}

} // namespace ckpt
