// SPDX-License-Identifier: MIT
#pragma once
// The CUDA runtime as the trial placement and the trial load need it: contexts, memory figures,
// allocations and copies on each device, behind an interface so tests fake it (fits, out of
// memory midway, a corrupted read-back, no driver). The real one loads the driver API
// (libcuda.so.1) with dlopen at run time: the binary starts and works without a driver or a GPU,
// and needs no CUDA toolkit to build. Unlike GpuDriver it creates contexts: each costs memory on
// its GPU for as long as the runtime object lives.
#include "core/base/expected.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct MachineInventory;

using CudaDevicePointer = std::uint64_t; // CUdeviceptr

struct CudaMemoryInfo {
    std::uint64_t freeBytes = 0;
    std::uint64_t totalBytes = 0;
};

// A failed call: which, the driver's code, and whether it was out of memory (the one failure a
// trial placement expects).
struct CudaFailure {
    std::string message; // "cuMemAlloc(20.0 MiB) on cuda:1 failed with code 2 (out of memory)"
    int code = 0;
    bool outOfMemory = false;
};

class CudaRuntime {
public:
    virtual ~CudaRuntime() = default;
    // Empty when usable (the library loaded and cuInit succeeded); otherwise why not.
    virtual std::optional<std::string> unavailableReason() = 0;
    virtual int deviceCount() = 0; // CUDA's visible devices (CUDA_VISIBLE_DEVICES applied)
    virtual std::string deviceUuid(int ordinal) = 0; // "GPU-...", NVML's spelling; empty when unknown
    // Makes the device's primary context (torch's) current, retaining it the first time; it stays
    // retained until the runtime is destroyed. Every call below needs it first.
    virtual std::optional<CudaFailure> useDevice(int ordinal) = 0;
    virtual std::optional<CudaFailure> memoryInfo(int ordinal, CudaMemoryInfo& info) = 0;
    virtual std::optional<CudaFailure> allocate(int ordinal, std::uint64_t bytes, CudaDevicePointer& pointer)
        = 0;
    virtual void release(int ordinal, CudaDevicePointer pointer) = 0;
    virtual std::optional<CudaFailure> copyToDevice(
        int ordinal, CudaDevicePointer to, const void* from, std::uint64_t bytes)
        = 0;
    virtual std::optional<CudaFailure> copyToHost(
        int ordinal, void* to, CudaDevicePointer from, std::uint64_t bytes)
        = 0;
};

std::unique_ptr<CudaRuntime> makeSystemCudaRuntime();

// What one CUDA device measured once its context exists.
struct CudaDeviceMeasurement {
    std::string tag; // "cuda:0", CUDA's numbering
    std::string uuid;
    std::uint64_t freeBytes = 0; // cuMemGetInfo with the context made: what allocations can use
    std::uint64_t totalBytes = 0;
    // NVML's free memory before the context minus after it; absent when NVML could not say both.
    std::optional<std::uint64_t> contextBytes;
};

struct CudaMeasurement {
    std::optional<std::string> unavailable; // no runtime: nothing was measured, and why
    std::vector<CudaDeviceMeasurement> devices;
    std::vector<std::string> notes; // a device that could not be measured, a figure that is not
};

// Free memory of each GPU by UUID as NVML says it (NVML creates no context, so it sees the memory
// a context takes). The system one asks libnvidia-ml afresh on each call.
using NvmlFreeSnapshot = std::function<std::map<std::string, std::uint64_t>()>;
NvmlFreeSnapshot systemNvmlFreeSnapshot();

// Takes NVML's free figures, makes every visible device's primary context, takes them again and
// asks CUDA for the free memory left: the contexts stay (the trial runs in them).
CudaMeasurement measureCudaDevices(CudaRuntime& runtime, const NvmlFreeSnapshot& nvmlFree);

// The measured figures into a detected machine: where the context was measured, the device's
// measuredContextBytes, and its free memory becomes CUDA's free memory with the context made plus
// the context (the inventory's free memory is always the memory before this process's context;
// the ledger and the planner take the context off once). Adds the measurement's notes.
void applyMeasurement(MachineInventory& machine, const CudaMeasurement& measurement);

} // namespace ckpt
