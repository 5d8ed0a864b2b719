// SPDX-License-Identifier: MIT
#pragma once
// The plan of a folder that records no device, exported (core/tasks/exportplan.h), in words and as
// JSON, for both faces: `ckpt-inspect remap DIR -o OUT` and `plan DIR --save OUT` print it, the
// app shows the same text after File > Save Remapped Copy….
#include <iosfwd>
#include <string>

namespace ckpt {

class JsonWriter;
struct ExportPlanOutcome;

// "nothing rewritten: <why>\nexported <device_map.json> and <load_with_device_map.py>\n", or the
// refusal ("refusing to export the plan of IN into OUT: the output folder is the input folder;
// ..."), or the failure; every name printable.
std::string exportPlanText(const ExportPlanOutcome& outcome);

// exportPlanText, then the loader script when exported (the command line's text output).
void writeExportPlanText(std::ostream& out, const ExportPlanOutcome& outcome);

// {"input", "output", "layout", "rewritten": false, "why", "exported": [paths], "device_map": {...}}.
void writeExportPlanJson(JsonWriter& writer, const ExportPlanOutcome& outcome);

} // namespace ckpt
