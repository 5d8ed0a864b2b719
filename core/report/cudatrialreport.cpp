// SPDX-License-Identifier: MIT
#include "core/report/cudatrialreport.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/json/json.h"
#include "core/tasks/cudatrial.h"

#include <algorithm>
#include <ostream>

namespace ckpt {

namespace {

void writeNotes(std::ostream& out, const std::vector<std::string>& notes)
{
    for (const std::string& note : notes)
        out << "  note: " << printableText(note) << "\n";
}

} // namespace

void writeCudaMeasurementText(std::ostream& out, const CudaMeasurement& measurement)
{
    if (measurement.unavailable) {
        out << "Measured on this machine's GPUs: nothing (" << printableText(*measurement.unavailable)
            << ")\n";
        return;
    }
    out << "Measured on this machine's GPUs (a bare CUDA context; torch's own kernels and libraries add to "
           "it "
           "when first used):\n";
    for (const CudaDeviceMeasurement& device : measurement.devices) {
        out << "  " << printableText(device.tag) << ": CUDA context "
            << (device.contextBytes ? formatBytes(*device.contextBytes) : std::string("not measured")) << ", "
            << formatBytes(device.freeBytes) << " free of " << formatBytes(device.totalBytes)
            << " with the context made\n";
    }
    writeNotes(out, measurement.notes);
}

void writeCudaMeasurementJson(JsonWriter& writer, const CudaMeasurement& measurement)
{
    writer.beginObject();
    writer.memberOrNull("unavailable", measurement.unavailable);
    writer.key("devices").beginArray();
    for (const CudaDeviceMeasurement& device : measurement.devices) {
        writer.beginObject();
        writer.member("device", device.tag);
        writer.memberOrNull("uuid", device.uuid);
        writer.memberOrNull("cuda_context_bytes", device.contextBytes);
        writer.member("free_bytes", device.freeBytes);
        writer.member("total_bytes", device.totalBytes);
        writer.endObject();
    }
    writer.endArray();
    writer.member("notes", measurement.notes);
    writer.endObject();
}

void writeCudaTrialJson(JsonWriter& writer, const CudaTrialOutcome& outcome)
{
    writer.beginObject();
    writer.member("ran", !outcome.unavailable.has_value());
    writer.memberOrNull("unavailable", outcome.unavailable);
    writer.key("measured");
    writeCudaMeasurementJson(writer, outcome.measurement);
    writer.key("devices").beginArray();
    for (const CudaTrialDevice& device : outcome.devices) {
        writer.beginObject();
        writer.member("device", device.tag);
        writer.member("present", device.present);
        writer.member("storages", device.storages);
        writer.member("planned_bytes", device.plannedBytes);
        writer.member("allocated_bytes", device.allocatedBytes);
        writer.member("reserved_bytes", device.reservedBytes);
        writer.member("segments", device.segments);
        writer.member("fits", device.placed);
        writer.memberOrNull("failed_at", device.failedAt);
        writer.memberOrNull("failure", device.failure);
        writer.member("out_of_memory", device.outOfMemory);
        if (device.failure.empty() || !device.present)
            writer.key("reserved_before_failure").null();
        else
            writer.member("reserved_before_failure", device.reservedBeforeFailure);
        if (outcome.loadRequested) {
            writer.key("load").beginObject();
            writer.member("matched", device.loaded);
            writer.member("storages_compared", device.storagesCompared);
            writer.member("bytes_compared", device.bytesCompared);
            writer.member("mismatched_storages", device.mismatchedStorages);
            writer.member("mismatches", device.mismatches);
            writer.member("unreadable", device.unreadable);
            writer.memberOrNull("failure", device.loadFailure);
            writer.endObject();
        }
        writer.endObject();
    }
    writer.endArray();
    writer.member("fits", outcome.fits());
    writer.key("load").beginObject();
    writer.member("requested", outcome.loadRequested);
    writer.member("matched", outcome.loadMatched());
    writer.endObject();
    writer.member("cancelled", outcome.cancelled);
    writer.member("notes", outcome.notes);
    writer.endObject();
}

void writeCudaTrialText(std::ostream& out, const CudaTrialOutcome& outcome)
{
    if (outcome.unavailable) {
        out << "Trial on this machine's GPUs: not run: " << printableText(*outcome.unavailable) << "\n";
        return;
    }
    writeCudaMeasurementText(out, outcome.measurement);
    out << "\nTrial placement (each storage allocated as PyTorch's caching allocator would: 512-byte "
           "rounding, 2 MiB segments for the small, 20 MiB or 2 MiB-rounded for the large):\n";
    for (const CudaTrialDevice& device : outcome.devices) {
        out << "  " << printableText(device.tag) << ": " << formatThousands(device.storages) << " storage"
            << (device.storages == 1 ? "" : "s") << ", " << formatBytes(device.plannedBytes) << " planned";
        if (!device.present) {
            out << ": DOES NOT FIT: " << printableText(device.failure) << "\n";
            continue;
        }
        if (device.placed) {
            out << ", " << formatBytes(device.reservedBytes) << " reserved in "
                << formatThousands(device.segments) << " segment" << (device.segments == 1 ? "" : "s")
                << ": fits";
            if (device.measured)
                out << " ("
                    << formatBytes(device.measured->freeBytes > device.reservedBytes
                               ? device.measured->freeBytes - device.reservedBytes
                               : 0)
                    << " left)";
            out << "\n";
        } else if (!device.failure.empty()) {
            out << ": " << (device.outOfMemory ? "DOES NOT FIT" : "FAILED") << ": at "
                << printableText(device.failedAt) << ", with " << formatBytes(device.reservedBeforeFailure)
                << " reserved: " << printableText(device.failure) << "\n";
        } else {
            out << ": not finished\n";
        }
    }
    if (outcome.loadRequested) {
        out << "\nTrial load (every planned storage copied from the file onto its device and read back):\n";
        if (!outcome.fits() && !outcome.cancelled)
            out << "  not run: the plan does not fit\n";
        for (const CudaTrialDevice& device : outcome.devices) {
            if (!outcome.fits())
                break;
            out << "  " << printableText(device.tag) << ": " << formatThousands(device.storagesCompared)
                << " of " << formatThousands(device.storages) << " storages, "
                << formatBytes(device.bytesCompared) << " compared: "
                << (device.loaded ? std::string("every byte read back equal")
                           : device.mismatchedStorages
                           ? formatThousands(device.mismatchedStorages) + " READ BACK DIFFERENT"
                           : !device.loadFailure.empty() ? "FAILED: " + printableText(device.loadFailure)
                           : !device.unreadable.empty()
                           ? formatThousands(device.unreadable.size()) + " could not be read from the file"
                           : std::string("not finished"))
                << "\n";
            for (const std::string& mismatch : device.mismatches)
                out << "    " << printableText(mismatch) << "\n";
            for (const std::string& unreadable : device.unreadable)
                out << "    " << printableText(unreadable) << "\n";
        }
    }
    if (outcome.cancelled)
        out << "\nThe trial was cancelled: everything it allocated is freed.\n";
    writeNotes(out, outcome.notes);
    const bool callFailed
        = std::any_of(outcome.devices.begin(), outcome.devices.end(), [](const CudaTrialDevice& device) {
              return device.present && !device.failure.empty() && !device.outOfMemory;
          });
    std::string verdict;
    if (outcome.cancelled)
        verdict = "Cancelled.";
    else if (callFailed)
        verdict = "The trial placement FAILED: a CUDA call failed (above), so whether the plan fits is not "
                  "known.";
    else if (!outcome.fits())
        verdict = "The plan does NOT fit on this machine's GPUs.";
    else if (outcome.loadRequested && !outcome.loadMatched())
        verdict = "The plan fits, but the trial load FAILED.";
    else if (outcome.loadRequested)
        verdict = "The plan fits, and every byte loaded came back equal.";
    else
        verdict = "The plan fits on this machine's GPUs.";
    out << "\n" << verdict << "\n";
}

} // namespace ckpt
