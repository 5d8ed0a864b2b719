// SPDX-License-Identifier: MIT
#include "core/report/planreport.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/devices/machineinventory.h"
#include "core/json/json.h"
#include "core/plan/autoplacement.h"
#include "core/plan/memoryledger.h"
#include "core/report/cudatrialreport.h"
#include "core/report/machinereport.h"
#include "core/tasks/cudatrial.h"

#include <iomanip>
#include <ostream>

namespace ckpt {

namespace {

const char* strategyName(PlacementStrategy strategy)
{
    return strategy == PlacementStrategy::Balanced ? "balanced" : "sequential";
}

} // namespace

void writeLedgerJson(JsonWriter& writer, const MemoryLedger& ledger)
{
    writer.beginArray();
    for (const DeviceLedgerLine& line : ledger.lines()) {
        writer.beginObject();
        writer.member("device", line.tag);
        writer.member("in_target", line.inMachine);
        writer.member("records_no_device", line.recordsNoDevice);
        writer.member("recorded_bytes", line.recordedBytes);
        writer.member("planned_bytes", line.plannedBytes);
        writer.member("allocated_bytes", line.allocatedBytes);
        writer.member("storages", line.storageCount);
        writer.member("cuda_context_bytes", line.contextBytes);
        writer.member("cuda_context_measured", line.contextMeasured);
        writer.memberOrNull("free_bytes", line.freeNow);
        writer.member("reserved_bytes", line.reservedBytes);
        writer.memberOrNull("capacity_bytes", line.capacity);
        writer.member("headroom_bytes", line.headroom());
        writer.member("over_capacity", line.overCapacity());
        writer.endObject();
    }
    writer.endArray();
}

void writePlacementJson(JsonWriter& writer, const std::string& file, const MachineInventory& machine,
    const AutoPlacementOptions& options, const AutoPlacement& placement, const MemoryLedger& ledger,
    const CudaMeasurement* measured, const CudaTrialOutcome* trial)
{
    writer.beginObject();
    writer.member("file", file);
    writer.key("target");
    writeMachineJson(writer, machine);
    writer.member("strategy", std::string(strategyName(options.strategy)));
    writer.key("groups").beginArray();
    for (const PlacementGroup& group : placement.groups) {
        writer.beginObject();
        writer.member("prefixes", group.prefixes);
        writer.member("bytes", group.bytes);
        writer.member("device", group.device);
        writer.member("reason", group.reason);
        writer.endObject();
    }
    writer.endArray();
    writer.key("ledger");
    writeLedgerJson(writer, ledger);
    writer.member("cpu_staging_bytes", ledger.cpuStagingBytes());
    writer.member("did_not_fit", placement.didNotFit);
    if (measured) {
        writer.key("measured");
        writeCudaMeasurementJson(writer, *measured);
    }
    if (trial) {
        writer.key("trial");
        writeCudaTrialJson(writer, *trial);
    }
    writer.endObject();
}

void writePlacementText(std::ostream& out, const MachineInventory& machine,
    const AutoPlacementOptions& options, const AutoPlacement& placement, const MemoryLedger& ledger)
{
    writeMachineText(out, machine);
    out << "\nStrategy: " << strategyName(options.strategy) << "; blocks kept together by name prefix"
        << (options.noSplitDepth > 0 ? " of depth " + std::to_string(options.noSplitDepth)
                                     : std::string(" (automatic depth)"))
        << "\n";
    for (const std::string& line : placement.summary)
        out << "  " << printableText(line) << "\n";
    out << "\nPlacement:\n";
    for (const PlacementGroup& group : placement.groups)
        out << "  " << printableText(group.reason) << "\n";
    out << "\nMemory per device (each storage once):\n";
    out << "  " << std::left << std::setw(10) << "device" << std::right << std::setw(12) << "recorded"
        << std::setw(12) << "planned" << std::setw(14) << "CUDA context" << std::setw(12) << "capacity"
        << std::setw(12) << "headroom"
        << "\n";
    for (const DeviceLedgerLine& line : ledger.lines()) {
        const std::string headroom = line.headroom() < 0
            ? "-" + formatBytes(static_cast<std::uint64_t>(-line.headroom()))
            : formatBytes(static_cast<std::uint64_t>(line.headroom()));
        out << "  " << std::left << std::setw(10) << printableText(line.tag) << std::right << std::setw(12)
            << formatBytes(line.recordedBytes) << std::setw(12) << formatBytes(line.allocatedBytes)
            << std::setw(14)
            << (line.contextBytes ? formatBytes(line.contextBytes) + (line.contextMeasured ? "*" : "")
                                  : std::string("-"))
            << std::setw(12) << (line.capacity ? formatBytes(*line.capacity) : std::string("-"))
            << std::setw(12) << (line.capacity ? headroom : std::string("-"))
            << (line.overCapacity() ? "  OVER CAPACITY" : "")
            << (line.inMachine                ? ""
                       : line.recordsNoDevice ? "  (no device recorded: the loader places them)"
                                              : "  (not in the target)")
            << "\n";
    }
    std::string measuredContexts;
    for (const auto& [tag, bytes] : machine.measuredContextBytes)
        measuredContexts += " " + printableText(tag) + " " + formatBytes(bytes);
    if (!measuredContexts.empty()) {
        out << "  CUDA context measured on this machine (*):" << measuredContexts;
        out << "; on any other GPU in use " << formatBytes(options.assumptions.cudaContextBytes)
            << ", an assumption\n";
    } else {
        out << "  CUDA context: " << formatBytes(options.assumptions.cudaContextBytes)
            << " per GPU in use, an assumption (accelerate documents 1-2 GB); change it with --context, or "
               "measure it with --measure on a machine with GPUs\n";
    }
    out << "  A plain torch.load stages up to " << formatBytes(ledger.cpuStagingBytes())
        << " in CPU memory on the way (each storage is read into CPU memory before it moves)\n";
    if (!placement.didNotFit.empty()) {
        out << "\nDid not fit:\n";
        for (const std::string& item : placement.didNotFit)
            out << "  " << printableText(item) << "\n";
    }
}

} // namespace ckpt
