// SPDX-License-Identifier: MIT
#include "core/report/savecopyreport.h"

#include "core/base/escaping.h"
#include "core/json/json.h"
#include "core/report/remapreport.h"
#include "core/tasks/savecopy.h"

#include <ostream>

namespace ckpt {

std::string unsafeCallablesText(const SafetyVerdict& safety, std::size_t most)
{
    std::string text;
    std::size_t shown = 0;
    for (const UnsafeCallable& callable : safety.unsafe) {
        if (shown == most)
            break;
        text += (text.empty() ? "" : ", ")
            + printableText(callable.call.empty() ? callable.name : callable.call);
        ++shown;
    }
    if (safety.unsafe.size() > shown)
        text += ", and " + std::to_string(safety.unsafe.size() - shown) + " more";
    for (const std::string& problem : safety.cannotVerify)
        text += (text.empty() ? "" : "; ") + std::string("cannot verify: ") + printableText(problem);
    return text.empty() ? printableText(safety.headline) : text;
}

std::string saveCopyRefusalText(const SaveCopyOutcome& outcome, const SaveCopyWording& wording)
{
    const SaveCopyAssessment& assessment = outcome.assessment;
    const std::string input = printableText(outcome.input);
    std::string text;
    switch (outcome.status) {
    case SaveCopyStatus::RefusedDangerous:
        text = "refusing to write a copy of " + input + ": " + printableText(outcome.why) + "\n";
        text += "loading it with torch.load(weights_only=False) would run: "
            + unsafeCallablesText(assessment.gatingSafety()) + "\n";
        if (assessment.cannotRemap) {
            text += "it cannot be remapped in any case: " + printableText(*assessment.cannotRemap) + "\n";
            text += "the weights alone, without its code: " + wording.weightsAlone + "\n";
        } else {
            text += "a remapped copy would run the same code (a remap adds none and removes none). Two ways "
                    "out:\n";
            text += "  - if you trust this file: " + wording.override
                + " writes the remapped copy anyway, exactly as dangerous as this file\n";
            text += "  - the weights alone, without its code: " + wording.weightsAlone + "\n";
        }
        break;
    case SaveCopyStatus::CannotRemap:
        text = "cannot remap " + input + ": " + printableText(outcome.why) + "\n";
        if (assessment.inputSafety.dangerous())
            text += "(it is rated dangerous, and " + wording.override
                + " does not change what can be remapped); the weights alone, without its code: "
                + wording.weightsAlone + "\n";
        break;
    case SaveCopyStatus::ExportOnly:
        text = "nothing to rewrite in " + input + ": " + printableText(outcome.why) + "\n";
        break;
    case SaveCopyStatus::Failed:
        text = "could not write the remapped copy of " + input + ": " + printableText(outcome.why)
            + "; nothing was written\n";
        break;
    case SaveCopyStatus::Written:
        break;
    }
    return text;
}

std::string saveCopyDangerText(const SaveCopyOutcome& outcome)
{
    if (!outcome.carriesDanger())
        return {};
    const SafetyVerdict& copy = outcome.copySafety ? *outcome.copySafety : outcome.assessment.inputSafety;
    std::string copied;
    for (const std::string& name : outcome.assessment.dangerousCopiedUnchanged)
        copied += (copied.empty() ? "" : ", ") + printableText(name);
    return "still DANGEROUS: the copy is exactly as dangerous as the input (rated again before it was "
           "given its name: "
        + std::string(pickleSafetyName(copy.rating))
        + (copied.empty()
                ? std::string()
                : "; copied byte for byte, nothing of them run or rewritten, so no override was needed: "
                    + copied)
        + "); a remap adds no code and removes none, so loading it with torch.load(weights_only=False) runs "
          "what the input runs: "
        + unsafeCallablesText(copy);
}

std::string saveCopySummary(const SaveCopyOutcome& outcome)
{
    std::string text = outcome.file ? outcome.file->summary()
        : outcome.folder            ? outcome.folder->summary()
                                    : "";
    if (const std::string danger = saveCopyDangerText(outcome); !danger.empty())
        text += "; " + danger;
    return text;
}

void writeSaveCopyText(std::ostream& out, const SaveCopyOutcome& outcome)
{
    if (outcome.file)
        writeRemapText(out, outcome.outputPath, *outcome.file);
    else if (outcome.folder)
        writeShardedRemapText(out, *outcome.folder);
    if (const std::string danger = saveCopyDangerText(outcome); !danger.empty())
        out << danger << "\n";
}

void writeSaveCopyJson(JsonWriter& writer, const Checkpoint& input, const SaveCopyOutcome& outcome)
{
    const SafetyVerdict* copySafety
        = outcome.carriesDanger() && outcome.copySafety ? &*outcome.copySafety : nullptr;
    if (outcome.file)
        writeRemapJson(writer, outcome.input, input, *outcome.file, copySafety);
    else if (outcome.folder)
        writeShardedRemapJson(writer, input, *outcome.folder, copySafety);
}

} // namespace ckpt
