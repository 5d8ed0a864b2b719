// SPDX-License-Identifier: MIT
#pragma once
// What `extract` and `convert` wrote and what they left behind, as text and as JSON; the app's
// File > Export Weights… shows the same text (exportWeightsText).
#include <iosfwd>
#include <string>

namespace ckpt {

class JsonWriter;
struct Checkpoint;
struct ExtractResult;
struct ExportWeightsOutcome;

// The tensors and other values not written (the first few, --json lists all) and the globals the
// input named that the output does not carry.
void writeDroppedText(std::ostream& out, const ExtractResult& result);
// The output, its summary, the root taken and why, then what was dropped.
void writeExtractText(std::ostream& out, const ExtractResult& result);

// The members "dropped_tensors", "dropped_objects" and "globals_not_carried" of an open object.
void writeDroppedJson(JsonWriter& writer, const ExtractResult& result);
void writeExtractJson(
    JsonWriter& writer, const std::string& input, const Checkpoint& checkpoint, const ExtractResult& result);

// The outcome of the export task (core/tasks/exportweights.h), written: the output and its summary,
// then what each input left behind (a torch file from one file: writeExtractText).
void writeExportWeightsText(std::ostream& out, const ExportWeightsOutcome& outcome);
std::string exportWeightsText(const ExportWeightsOutcome& outcome);
void writeExportWeightsJson(JsonWriter& writer, const ExportWeightsOutcome& outcome);

} // namespace ckpt
