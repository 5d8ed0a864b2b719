// SPDX-License-Identifier: MIT
#include "core/report/triagereport.h"

#include "core/base/escaping.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/report/safetyreport.h"
#include "core/triage/triage.h"

#include <iomanip>
#include <map>
#include <ostream>

namespace ckpt {

namespace {

// The outcome most storages share, so that only the storages that differ are listed.
std::string commonOutcome(const LoadSimulation& simulation)
{
    std::map<std::string, std::size_t> counts;
    for (const StorageLoadOutcome& outcome : simulation.storages)
        ++counts[outcome.landsOn ? "lands on " + *outcome.landsOn : "fails: " + outcome.error];
    std::string best;
    std::size_t bestCount = 0;
    for (const auto& [text, count] : counts)
        if (count > bestCount) {
            best = text;
            bestCount = count;
        }
    return best;
}

void writeLoadSimulationJson(
    JsonWriter& writer, const Checkpoint& checkpoint, const LoadSimulation& simulation)
{
    writer.beginObject();
    writer.member("torch", torchGenerationName(simulation.generation));
    writer.member("simulated", simulatedTorchName(simulation.generation, simulation.imports));
    writer.member("assume_imports", simulation.imports.text());
    writer.member("weights_only", simulation.weightsOnly);
    writer.member("loads", simulation.loads);
    writer.memberOrNull("error", simulation.error);
    writer.memberOrNull("error_type", simulation.errorType);
    writer.key("storages").beginArray();
    for (const StorageLoadOutcome& outcome : simulation.storages) {
        writer.beginObject();
        writer.member("storage",
            outcome.storage < checkpoint.storages.size() ? checkpoint.storages[outcome.storage].key
                                                         : std::to_string(outcome.storage));
        writer.memberOrNull("lands_on", outcome.landsOn);
        writer.memberOrNull("error", outcome.error);
        writer.endObject();
    }
    writer.endArray();
    writer.endObject();
}

void writeWeightsOnlyJson(JsonWriter& writer, const WeightsOnlyVerdict& verdict)
{
    writer.beginObject();
    writer.member("rating", safetyRatingName(verdict.rating));
    writer.member("torch", torchGenerationName(verdict.generation));
    writer.member("simulated", simulatedTorchName(verdict.generation, verdict.imports));
    writer.member("assume_imports", verdict.imports.text());
    writer.key("globals").beginArray();
    for (const GlobalClassification& global : verdict.globals) {
        writer.beginObject();
        writer.member("name", global.name);
        writer.member("verdict", globalVerdictName(global.verdict));
        writer.member("safety_name", global.safetyName); // its name among the safety verdict's callables
        writer.member("reason", global.reason);
        writer.endObject();
    }
    writer.endArray();
    writer.member("rejected_opcodes", verdict.rejectedOpcodes);
    writer.memberOrNull("add_safe_globals", verdict.addSafeGlobalsCall);
    writer.member("call_chains", verdict.dangerousCallChains);
    writer.memberOrNull("torch_message", verdict.torchMessage);
    writer.endObject();
}

} // namespace

void writeFindingJson(JsonWriter& writer, const Checkpoint& checkpoint, const Finding& finding)
{
    writer.beginObject();
    writer.member("severity", severityName(finding.severity));
    writer.member("code", finding.codeId());
    writer.member("message", finding.message);
    writer.member("explanation", finding.explanation);
    writer.member("fix", finding.fix);
    writer.memberOrNull("record", finding.record);
    writer.memberOrNull("offset", finding.offset);
    writer.key("tensors").beginArray();
    for (std::uint32_t tensor : finding.tensors)
        if (tensor < checkpoint.tensors.size())
            writer.value(checkpoint.tensors[tensor].name);
    writer.endArray();
    writer.endObject();
}

void writeTriageJsonMembers(JsonWriter& writer, const Checkpoint& checkpoint, const TriageReport& report)
{
    writer.key("safety");
    writeSafetyJson(writer, report.safety);
    writer.key("findings").beginArray();
    for (const Finding& finding : report.findings)
        writeFindingJson(writer, checkpoint, finding);
    writer.endArray();
    writer.key("load_simulation").beginArray();
    for (const LoadSimulation& simulation : report.loadSimulations)
        writeLoadSimulationJson(writer, checkpoint, simulation);
    writer.endArray();
    writer.key("weights_only");
    writeWeightsOnlyJson(writer, report.weightsOnly);
}

void writeTriageText(
    std::ostream& out, const Checkpoint& checkpoint, const TriageReport& report, const TriageOptions& options)
{
    for (const Severity severity : {Severity::Error, Severity::Warning, Severity::Info}) {
        std::size_t count = 0;
        for (const Finding& finding : report.findings)
            count += finding.severity == severity;
        if (!count)
            continue;
        out << "\n"
            << (severity == Severity::Error            ? "Errors"
                       : severity == Severity::Warning ? "Warnings"
                                                       : "Notes")
            << " (" << count << "):\n";
        for (const Finding& finding : report.findings) {
            if (finding.severity != severity)
                continue;
            out << "  [" << finding.codeId() << "] " << printableText(finding.message) << "\n";
            if (!finding.explanation.empty())
                out << "      why: " << printableText(finding.explanation) << "\n";
            if (!finding.fix.empty())
                out << "      fix: " << printableText(finding.fix) << "\n";
        }
    }
    if (report.findings.empty())
        out << "\nNo findings.\n";
    if (!report.loadSimulations.empty()) {
        out << "\nLoad simulation"
            << (options.target ? " on " + printableText(options.target->name)
                               : std::string(" on this machine"))
            << ", map_location=" << printableText(options.mapLocation.python()) << ":\n";
        for (const LoadSimulation& simulation : report.loadSimulations) {
            out << "  " << simulatedTorchName(simulation.generation, simulation.imports)
                << (simulation.weightsOnly ? " (weights_only=True)" : " (weights_only=False)") << ": "
                << (simulation.loads ? "loads"
                                     : "fails: "
                               + printableText((simulation.errorType.empty() ? std::string()
                                                                             : simulation.errorType + ": ")
                                   + simulation.error))
                << "\n";
            const std::string common = commonOutcome(simulation);
            if (!common.empty())
                out << "    most storages: " << printableText(common) << "\n";
            for (const StorageLoadOutcome& outcome : simulation.storages) {
                const std::string text
                    = outcome.landsOn ? "lands on " + *outcome.landsOn : "fails: " + outcome.error;
                if (text != common && outcome.storage < checkpoint.storages.size())
                    out << "    storage " << printableText(checkpoint.storages[outcome.storage].key) << ": "
                        << printableText(text) << "\n";
            }
        }
    }
    const WeightsOnlyVerdict& verdict = report.weightsOnly;
    out << "\nweights_only verdict (" << simulatedTorchName(verdict.generation, verdict.imports)
        << "): " << safetyRatingName(verdict.rating) << "\n";
    for (const GlobalClassification& global : verdict.globals)
        out << "  " << std::left << std::setw(16) << globalVerdictName(global.verdict) << std::right << " "
            << printableText(global.name)
            << (global.reason.empty() ? std::string() : ": " + printableText(global.reason)) << "\n";
    if (!verdict.addSafeGlobalsCall.empty())
        out << "  allow with: " << printableLines(verdict.addSafeGlobalsCall) << "\n";
    for (const std::string& chain : verdict.dangerousCallChains)
        out << "  would run: " << printableText(chain) << "\n";
}

} // namespace ckpt
