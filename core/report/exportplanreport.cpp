// SPDX-License-Identifier: MIT
#include "core/report/exportplanreport.h"

#include "core/base/escaping.h"
#include "core/json/json.h"
#include "core/tasks/exportplan.h"

#include <ostream>

namespace ckpt {

std::string exportPlanText(const ExportPlanOutcome& outcome)
{
    const std::string input = printableText(outcome.input);
    switch (outcome.status) {
    case ExportPlanStatus::Exported: {
        std::string text = "nothing rewritten: " + printableText(outcome.why) + "\nexported";
        for (std::size_t i = 0; i < outcome.exported.size(); ++i)
            text += (i == 0 ? " " : " and ") + printableText(outcome.exported[i]);
        return text + "\n";
    }
    case ExportPlanStatus::RefusedIntoInput:
        return "refusing to export the plan of " + input + " into " + printableText(outcome.outputFolder)
            + ": " + printableText(outcome.refusal) + "\n";
    case ExportPlanStatus::NotExportOnly:
        return printableText(outcome.refusal) + "\n";
    case ExportPlanStatus::Failed:
        break;
    }
    return "could not export the plan of " + input + ": " + printableText(outcome.refusal) + "\n";
}

void writeExportPlanText(std::ostream& out, const ExportPlanOutcome& outcome)
{
    out << exportPlanText(outcome);
    if (outcome.ok())
        out << "\n" << printableLines(outcome.loaderScript);
}

void writeExportPlanJson(JsonWriter& writer, const ExportPlanOutcome& outcome)
{
    writer.beginObject();
    writer.member("input", outcome.input);
    writer.member("output", outcome.outputFolder);
    writer.member("layout", outcome.layout);
    writer.member("rewritten", false);
    writer.member("why", outcome.why);
    writer.key("exported").beginArray();
    for (const std::string& path : outcome.exported)
        writer.value(path);
    writer.endArray();
    auto deviceMap = parseJson(outcome.deviceMapJson);
    writer.key("device_map");
    if (deviceMap)
        writer.value(*deviceMap);
    else
        writer.null();
    writer.endObject();
}

} // namespace ckpt
