// SPDX-License-Identifier: MIT
#include "core/tasks/cudatrial.h"

#include "core/base/checkedarithmetic.h"
#include "core/base/textformat.h"
#include "core/model/checkpoint.h"
#include "core/plan/cachingallocator.h"
#include "core/plan/placementplan.h"
#include "core/read/storagebytes.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>

namespace ckpt {

namespace {

constexpr std::size_t kListedMismatches = 20; // per device; the count says the rest

// CUDA's ordinal of a planned tag: "cuda:N", or "cuda" alone (torch's current device, 0 in a fresh
// process). Nothing for other devices.
std::optional<int> cudaOrdinal(const std::string& tag)
{
    if (tag == "cuda")
        return 0;
    if (!tag.starts_with("cuda:"))
        return std::nullopt;
    int ordinal = -1;
    const char* first = tag.data() + 5;
    const char* last = tag.data() + tag.size();
    const auto [end, error] = std::from_chars(first, last, ordinal);
    if (error != std::errc() || end != last || first == last || ordinal < 0)
        return std::nullopt;
    return ordinal;
}

std::string storageName(const Checkpoint& checkpoint, std::uint32_t storage)
{
    const StorageRecord& record = checkpoint.storages[storage];
    std::string name;
    for (const std::uint32_t tensor : record.tensors) {
        if (tensor < checkpoint.tensors.size()) {
            name = checkpoint.treePath(checkpoint.tensors[tensor].treeNode);
            break;
        }
    }
    const std::string which = "storage " + record.key;
    return name.empty() ? which : name + " (" + which + ")";
}

struct DeviceWork {
    CudaTrialDevice result;
    int ordinal = 0;
    std::vector<std::uint32_t> storages; // in the checkpoint's order (torch.load's, roughly)
    std::vector<CachingAllocatorModel::Placement> placements;
    std::vector<CudaDevicePointer> segments;
};

} // namespace

bool CudaTrialOutcome::fits() const
{
    if (unavailable || cancelled)
        return false;
    return std::all_of(
        devices.begin(), devices.end(), [](const CudaTrialDevice& device) { return device.placed; });
}

bool CudaTrialOutcome::loadMatched() const
{
    return loadRequested && fits()
        && std::all_of(
            devices.begin(), devices.end(), [](const CudaTrialDevice& device) { return device.loaded; });
}

int CudaTrialOutcome::exitCode() const
{
    if (unavailable || cancelled)
        return 2;
    if (!fits())
        return 1;
    return !loadRequested || loadMatched() ? 0 : 1;
}

CudaTrialOutcome runCudaTrial(const CudaTrialRequest& request)
{
    CudaTrialOutcome outcome;
    outcome.loadRequested = request.load;
    const Checkpoint& checkpoint = *request.checkpoint;
    const PlacementPlan& plan = *request.plan;
    CudaRuntime& runtime = *request.runtime;
    const auto keepGoing = [&](const std::string& phase, std::uint64_t done, std::uint64_t total) {
        if (request.progress && !request.progress(phase, done, total))
            outcome.cancelled = true;
        return !outcome.cancelled;
    };

    outcome.measurement
        = request.measured ? *request.measured : measureCudaDevices(runtime, request.nvmlFree);
    if (outcome.measurement.unavailable) {
        outcome.unavailable = outcome.measurement.unavailable;
        return outcome;
    }
    const int count = runtime.deviceCount();

    // The planned CUDA devices and their storages (each once, those with bytes: torch allocates
    // nothing for an empty storage).
    std::map<int, DeviceWork> work;
    std::uint64_t totalStorages = 0, totalBytes = 0;
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        const std::optional<std::string> tag = plan.plannedDeviceOfStorage(s);
        const std::optional<int> ordinal = tag ? cudaOrdinal(*tag) : std::nullopt;
        if (!ordinal)
            continue;
        DeviceWork& device = work[*ordinal];
        device.ordinal = *ordinal;
        device.result.tag = "cuda:" + std::to_string(*ordinal);
        const std::uint64_t bytes = checkpoint.storages[s].nbytes;
        if (bytes == 0)
            continue;
        device.storages.push_back(s);
        ++device.result.storages;
        device.result.plannedBytes
            = saturatingAdd(device.result.plannedBytes, bytes); // a hostile file may claim 2^63
        ++totalStorages;
        totalBytes = saturatingAdd(totalBytes, bytes);
    }
    if (work.empty())
        outcome.notes.push_back("the plan puts nothing on a CUDA device: there is nothing to try");

    // The trial placement: every device's segments, made as the allocator would make them.
    std::uint64_t placedStorages = 0;
    for (auto& [ordinal, device] : work) {
        CudaTrialDevice& result = device.result;
        for (const CudaDeviceMeasurement& measured : outcome.measurement.devices)
            if (measured.tag == result.tag)
                result.measured = measured;
        if (ordinal >= count) {
            result.present = false;
            result.failure = "this machine has no " + result.tag + " (CUDA sees " + std::to_string(count)
                + " device" + (count == 1 ? "" : "s") + ")";
            continue;
        }
        CachingAllocatorModel model;
        bool failed = false;
        for (const std::uint32_t s : device.storages) {
            if (!keepGoing("placing", placedStorages, totalStorages))
                break;
            const std::uint64_t reservedBefore = model.reservedBytes();
            const CachingAllocatorModel::Placement placement = model.allocate(checkpoint.storages[s].nbytes);
            if (placement.newSegment) {
                CudaDevicePointer pointer = 0;
                if (auto problem = runtime.allocate(ordinal, model.segments()[placement.segment], pointer)) {
                    result.failedAt = storageName(checkpoint, s);
                    result.reservedBeforeFailure = reservedBefore;
                    result.failure = problem->message;
                    result.outOfMemory = problem->outOfMemory;
                    failed = true;
                    break;
                }
                device.segments.push_back(pointer);
            }
            device.placements.push_back(placement);
            ++placedStorages;
        }
        if (outcome.cancelled)
            break;
        result.segments = model.segments().size();
        result.allocatedBytes = model.allocatedBytes();
        result.reservedBytes = model.reservedBytes();
        result.placed = !failed;
    }

    // The trial load: each storage's bytes onto its place in its segment, read back, compared.
    const bool everyDevicePlaced
        = std::all_of(work.begin(), work.end(), [](const auto& entry) { return entry.second.result.placed; });
    if (request.load && !outcome.cancelled && everyDevicePlaced) {
        const std::uint64_t chunk = std::max<std::uint64_t>(request.chunkBytes, 1);
        ByteBuffer readBack(static_cast<std::size_t>(std::min<std::uint64_t>(chunk, totalBytes)));
        std::uint64_t copied = 0;
        for (auto& [ordinal, device] : work) {
            CudaTrialDevice& result = device.result;
            const int deviceOrdinal = ordinal;
            for (std::size_t i = 0; i < device.storages.size() && result.loadFailure.empty(); ++i) {
                const std::uint32_t s = device.storages[i];
                const StorageRecord& storage = checkpoint.storages[s];
                const CachingAllocatorModel::Placement& placement = device.placements[i];
                const CudaDevicePointer base = device.segments[placement.segment] + placement.offset;
                std::uint64_t position = 0;
                std::optional<std::uint64_t> differsAt;
                std::optional<std::string> driverProblem;
                const Status status = forEachStorageByteChunk(
                    checkpoint, storage, storage.nbytes, [&](ByteView bytes) -> Status {
                        for (std::uint64_t at = 0; at < bytes.size();) {
                            if (!keepGoing("loading", copied, totalBytes))
                                return makeError("cancelled");
                            const std::uint64_t piece = std::min<std::uint64_t>(chunk, bytes.size() - at);
                            const CudaDevicePointer target = base + position;
                            auto problem
                                = runtime.copyToDevice(deviceOrdinal, target, bytes.data() + at, piece);
                            if (!problem)
                                problem = runtime.copyToHost(deviceOrdinal, readBack.data(), target, piece);
                            if (problem) {
                                driverProblem = problem->message;
                                return makeError(problem->message);
                            }
                            if (!differsAt && std::memcmp(readBack.data(), bytes.data() + at, piece) != 0) {
                                const auto mismatch = std::mismatch(readBack.begin(),
                                    readBack.begin() + static_cast<std::ptrdiff_t>(piece),
                                    bytes.begin() + static_cast<std::ptrdiff_t>(at));
                                differsAt = position
                                    + static_cast<std::uint64_t>(mismatch.first - readBack.begin());
                            }
                            at += piece;
                            position += piece;
                            copied += piece;
                        }
                        return std::nullopt;
                    });
                if (outcome.cancelled)
                    break;
                if (driverProblem) {
                    result.loadFailure = *driverProblem;
                    break;
                }
                if (status) {
                    // The file could not give the bytes (cut short, a corrupt deflate stream).
                    result.unreadable.push_back(storageName(checkpoint, s) + ": " + status->message);
                    copied = saturatingAdd(copied, storage.nbytes - position);
                    continue;
                }
                ++result.storagesCompared;
                result.bytesCompared += storage.nbytes;
                if (differsAt && ++result.mismatchedStorages <= kListedMismatches)
                    result.mismatches.push_back(storageName(checkpoint, s)
                        + ": the bytes read back differ from byte " + std::to_string(*differsAt) + " on");
            }
            result.loaded = !outcome.cancelled && result.loadFailure.empty() && result.mismatchedStorages == 0
                && result.unreadable.empty() && result.storagesCompared == device.storages.size();
            if (outcome.cancelled)
                break;
        }
    }

    for (auto& [ordinal, device] : work) {
        for (const CudaDevicePointer pointer : device.segments)
            runtime.release(ordinal, pointer);
        outcome.devices.push_back(std::move(device.result));
    }
    return outcome;
}

} // namespace ckpt
