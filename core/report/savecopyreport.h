// SPDX-License-Identifier: MIT
#pragma once
// The outcome of the save-a-remapped-copy task (core/tasks/savecopy.h) in words, for both faces:
// the refusal of a dangerous file with both ways out, the reason a file cannot be remapped, and
// the plain statement that a copy written under the override is exactly as dangerous as its input
// and why (the callables). The faces differ only in how they name the two ways out.
#include <iosfwd>
#include <string>

namespace ckpt {

class JsonWriter;
struct Checkpoint;
struct SafetyVerdict;
struct SaveCopyOutcome;

// How a face names the two ways out of the refusal.
struct SaveCopyWording {
    std::string override; // "--allow-dangerous", or the app's button
    std::string weightsAlone; // "ckpt-inspect extract model.pt -o weights.pt", or the app's menu item
};

// What loading would run, as a short list: "os.system('touch x'), gpunets.blocks.GpuNet, and 3
// more"; the pickles that cannot be verified follow ("cannot verify: ...").
std::string unsafeCallablesText(const SafetyVerdict& safety, std::size_t most = 6);

// Refused (dangerous without the override), cannot remap, export only or failed: the message, in
// several lines, naming the ways out that exist for this input.
std::string saveCopyRefusalText(const SaveCopyOutcome& outcome, const SaveCopyWording& wording);

// Written from a dangerous input under the override: "still DANGEROUS: the copy is exactly as
// dangerous as the input ... it runs <callables>". Empty when the input was not dangerous.
std::string saveCopyDangerText(const SaveCopyOutcome& outcome);

// Written: the one-line summary (the remap's, then the danger text when there is one).
std::string saveCopySummary(const SaveCopyOutcome& outcome);

// `remap`'s output for a written copy (a file or a folder), text and JSON; the JSON of a copy of a
// dangerous input adds "as_dangerous_as_input": true and the copy's own "safety".
void writeSaveCopyText(std::ostream& out, const SaveCopyOutcome& outcome);
void writeSaveCopyJson(JsonWriter& writer, const Checkpoint& input, const SaveCopyOutcome& outcome);

} // namespace ckpt
