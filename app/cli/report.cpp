// SPDX-License-Identifier: MIT
#include "report.h"
#include "terminal.h"

#include "core/base/textformat.h"
#include "core/devices/deviceinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/triage/triage.h"
#include "core/write/remapwriter.h"

#include <iomanip>
#include <ostream>

namespace cli {

std::string safetyText(const ckpt::SafetyVerdict& safety)
{
    std::string text = "safety: " + std::string(ckpt::pickleSafetyName(safety.rating)) + ": "
        + shown(safety.headline) + "\n";
    for (const ckpt::UnsafeCallable& callable : safety.unsafe)
        text += std::string("  ") + (callable.knownDangerous ? "dangerous      " : "cannot verify  ")
            + shown(callable.name) + ": " + shown(callable.reason) + " (" + shown(callable.where) + ")"
            + (callable.call.empty() ? std::string() : "\n                 would run " + shown(callable.call))
            + "\n";
    for (const std::string& problem : safety.cannotVerify)
        text += "  cannot verify  " + shown(problem) + "\n";
    if (safety.rating != ckpt::PickleSafety::DangerousOrUnknown)
        for (const ckpt::AllowlistCandidate& candidate : safety.allowlist)
            text += "  vetted inert   " + shown(candidate.name) + ": " + shown(candidate.reason)
                + (candidate.torch2Default ? "" : "; not on torch 2.x's default list")
                + (candidate.torch113Default ? "" : "; not on torch 1.13's default list") + "\n";
    for (const std::string& note : safety.notes)
        text += "  note: " + shown(note) + "\n";
    if (!safety.addSafeGlobals2.empty())
        text += "  allow with (torch 2.x):\n    " + [&] {
            std::string indented = shownLines(safety.addSafeGlobals2);
            for (std::size_t at = 0; (at = indented.find('\n', at)) != std::string::npos; at += 5)
                indented.replace(at, 1, "\n    ");
            return indented;
        }() + "\n";
    return text;
}

void writeSafetyJson(ckpt::JsonWriter& writer, const ckpt::SafetyVerdict& safety)
{
    writer.beginObject();
    writer.member("rating", std::string(ckpt::pickleSafetyName(safety.rating)));
    writer.member("headline", safety.headline);
    writer.key("unsafe").beginArray();
    for (const ckpt::UnsafeCallable& callable : safety.unsafe) {
        writer.beginObject();
        writer.member("name", callable.name);
        writer.member("known_dangerous", callable.knownDangerous);
        writer.member("reason", callable.reason);
        writer.member("where", callable.where);
        writer.key("call");
        callable.call.empty() ? writer.null() : writer.value(callable.call);
        writer.endObject();
    }
    writer.endArray();
    writer.key("cannot_verify").beginArray();
    for (const std::string& problem : safety.cannotVerify)
        writer.value(problem);
    writer.endArray();
    writer.key("vetted_not_default").beginArray();
    for (const ckpt::AllowlistCandidate& candidate : safety.allowlist) {
        writer.beginObject();
        writer.member("name", candidate.name);
        writer.member("reason", candidate.reason);
        writer.member("torch_1_13_default", candidate.torch113Default);
        writer.member("torch_2_default", candidate.torch2Default);
        writer.endObject();
    }
    writer.endArray();
    writer.key("add_safe_globals_torch2");
    safety.addSafeGlobals2.empty() ? writer.null() : writer.value(safety.addSafeGlobals2);
    writer.key("add_safe_globals_torch113");
    safety.addSafeGlobals113.empty() ? writer.null() : writer.value(safety.addSafeGlobals113);
    writer.key("pickles").beginArray();
    for (const std::string& pickle : safety.pickles)
        writer.value(pickle);
    writer.endArray();
    writer.key("notes").beginArray();
    for (const std::string& note : safety.notes)
        writer.value(note);
    writer.endArray();
    writer.endObject();
}

int exitCodeFor(const ckpt::Checkpoint& checkpoint)
{
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint)
        return 3;
    if (checkpoint.hasErrors())
        return 2;
    for (const ckpt::Finding& finding : checkpoint.findings)
        if (finding.severity == ckpt::Severity::Warning)
            return 1;
    return 0;
}

void writeMachineJson(ckpt::JsonWriter& writer, const ckpt::MachineInventory& machine)
{
    writer.beginObject();
    writer.member("name", machine.name);
    writer.member("described", machine.described);
    writer.key("devices").beginArray();
    for (const ckpt::DeviceInfo& device : machine.devices) {
        writer.beginObject();
        writer.member("tag", device.tag);
        writer.member("name", device.name);
        writer.member("total_bytes", device.totalBytes);
        writer.key("free_bytes");
        device.freeBytes ? writer.value(*device.freeBytes) : writer.null();
        writer.key("compute_capability");
        if (device.computeCapability)
            writer.value(std::to_string(device.computeCapability->first) + "."
                + std::to_string(device.computeCapability->second));
        else
            writer.null();
        if (!device.uuid.empty())
            writer.member("uuid", device.uuid);
        if (!device.pciBusId.empty())
            writer.member("pci_bus_id", device.pciBusId);
        writer.endObject();
    }
    writer.endArray();
    writer.key("notes").beginArray();
    for (const std::string& note : machine.notes)
        writer.value(note);
    writer.endArray();
    writer.endObject();
}

void printMachine(std::ostream& out, const ckpt::MachineInventory& machine)
{
    out << shown(machine.name) << (machine.described ? " (described)" : " (detected)") << "\n";
    for (const ckpt::DeviceInfo& device : machine.devices) {
        out << "  " << std::left << std::setw(8) << shown(device.tag) << " " << std::setw(28)
            << shown(device.name) << " " << std::right << std::setw(10)
            << ckpt::formatBytes(device.totalBytes);
        if (device.freeBytes)
            out << "  (" << ckpt::formatBytes(*device.freeBytes) << " free)";
        if (device.computeCapability)
            out << "  compute capability " << device.computeCapability->first << "."
                << device.computeCapability->second;
        out << "\n";
    }
    for (const std::string& note : machine.notes)
        out << "  note: " << shown(note) << "\n";
}

void writeFindingJson(
    ckpt::JsonWriter& writer, const ckpt::Checkpoint& checkpoint, const ckpt::Finding& finding)
{
    writer.beginObject();
    writer.member("severity", ckpt::severityName(finding.severity));
    writer.member("code", finding.code);
    writer.member("message", finding.message);
    writer.member("explanation", finding.explanation);
    writer.member("fix", finding.fix);
    writer.key("record");
    finding.record.empty() ? writer.null() : writer.value(finding.record);
    writer.key("offset");
    finding.offset ? writer.value(*finding.offset) : writer.null();
    writer.key("tensors").beginArray();
    for (std::uint32_t tensor : finding.tensors)
        if (tensor < checkpoint.tensors.size())
            writer.value(checkpoint.tensors[tensor].name);
    writer.endArray();
    writer.endObject();
}

void writeRemappedStoragesJson(
    ckpt::JsonWriter& writer, const std::vector<ckpt::RemappedStorage>& storages, bool withOutputKey)
{
    writer.key("storages").beginArray();
    for (const ckpt::RemappedStorage& storage : storages) {
        writer.beginObject();
        writer.member("key", storage.key);
        if (withOutputKey)
            writer.member("output_key", storage.outputKey);
        writer.key("recorded");
        storage.recorded ? writer.value(*storage.recorded) : writer.null();
        writer.key("planned");
        storage.planned ? writer.value(*storage.planned) : writer.null();
        writer.endObject();
    }
    writer.endArray();
}

} // namespace cli
