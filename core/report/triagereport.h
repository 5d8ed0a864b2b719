// SPDX-License-Identifier: MIT
#pragma once
// A triage report (`check`): the findings, what torch.load would do per torch generation and the
// weights_only verdict, as text and as JSON members.
#include <iosfwd>

namespace ckpt {

class JsonWriter;
struct Checkpoint;
struct Finding;
struct TriageOptions;
struct TriageReport;

// One finding as a JSON object; its tensors by name (numbers out of range are left out).
void writeFindingJson(JsonWriter& writer, const Checkpoint& checkpoint, const Finding& finding);

// The members "safety", "findings", "load_simulation" and "weights_only" of an open JSON object.
void writeTriageJsonMembers(JsonWriter& writer, const Checkpoint& checkpoint, const TriageReport& report);

// The findings by severity (with why and fix), the load simulation on the target of `options`
// (the outcome most storages share, then the storages that differ) and the weights_only verdict.
// The safety verdict, which leads, is safetyText's.
void writeTriageText(std::ostream& out, const Checkpoint& checkpoint, const TriageReport& report,
    const TriageOptions& options);

} // namespace ckpt
