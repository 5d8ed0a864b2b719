// SPDX-License-Identifier: MIT
#pragma once
// The trial on this machine's GPUs, once for both faces (`ckpt-inspect plan --trial` and the app's
// Plan > Trial on This Machine's GPUs…): measure each CUDA device's context and free memory, then
// allocate the plan's storages per device as PyTorch's caching allocator would (its segments,
// cuMemAlloc'd for real: does the plan fit?), and, for a trial load, copy every planned storage from
// the mapped file onto its device and read it back to compare the bytes. Everything allocated is
// freed before it returns. The task never prints and never asks.
#include "core/devices/cudaruntime.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

// What the trial did so far, for a progress bar: `done` of `total` steps (storages placed, then
// bytes copied); returns false to cancel.
using CudaTrialProgress
    = std::function<bool(const std::string& phase, std::uint64_t done, std::uint64_t total)>;

struct CudaTrialRequest {
    const Checkpoint* checkpoint = nullptr;
    const PlacementPlan* plan = nullptr;
    CudaRuntime* runtime = nullptr; // the system one, or a fake
    NvmlFreeSnapshot nvmlFree; // for the context's size (systemNvmlFreeSnapshot(), or a fake)
    // Taken already with this runtime (the contexts exist: measuring again would find them free).
    std::optional<CudaMeasurement> measured;
    bool load = false; // also copy the bytes over and read them back
    std::uint64_t chunkBytes = 64ull << 20; // the largest copy at a time (and the host buffer)
    CudaTrialProgress progress;
};

struct CudaTrialDevice {
    std::string tag; // "cuda:0"
    bool present = true; // this machine has it (a plan may name cuda:3 on a two-GPU machine)
    std::optional<CudaDeviceMeasurement> measured;
    std::uint64_t storages = 0; // planned onto it with bytes
    std::uint64_t plannedBytes = 0; // their bytes, each storage once
    std::uint64_t allocatedBytes = 0; // as the allocator hands them out (torch.cuda.memory_allocated)
    std::uint64_t reservedBytes = 0; // its segments (torch.cuda.memory_reserved), when all were made
    std::uint64_t segments = 0;
    bool placed = false; // every segment was allocated
    // When a segment could not be allocated: the storage that asked for it, what was reserved by
    // then, and the driver's words.
    std::string failedAt;
    std::uint64_t reservedBeforeFailure = 0;
    std::string failure;
    bool outOfMemory = false;
    // The trial load.
    bool loaded = false; // every storage copied and read back equal
    std::uint64_t storagesCompared = 0;
    std::uint64_t bytesCompared = 0;
    std::uint64_t mismatchedStorages = 0; // read back different
    std::vector<std::string>
        mismatches; // the first 20 of them: "fc.weight (storage 3): ... from byte 4096 on"
    std::vector<std::string> unreadable; // storages the file could not give whole
    std::string loadFailure; // a copy the driver refused
};

struct CudaTrialOutcome {
    std::optional<std::string> unavailable; // no CUDA runtime: nothing was tried, and why
    CudaMeasurement measurement;
    std::vector<CudaTrialDevice> devices; // every planned CUDA device, in CUDA's order
    std::vector<std::string> notes;
    bool loadRequested = false;
    bool cancelled = false;
    bool fits() const; // every planned CUDA device placed
    bool loadMatched() const; // every storage read back equal (only when the load ran)
    // 0 when it fits (and, with the load, every byte came back equal), 1 when not, 2 when nothing
    // could be tried (no runtime) or the trial was cancelled.
    int exitCode() const;
};

CudaTrialOutcome runCudaTrial(const CudaTrialRequest& request);

} // namespace ckpt
