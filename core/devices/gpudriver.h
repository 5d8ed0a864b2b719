// SPDX-License-Identifier: MIT
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

// What the NVIDIA driver says about one physical GPU (NVML's view: every GPU of the machine,
// whatever CUDA_VISIBLE_DEVICES says).
struct PhysicalGpu {
    std::string name;
    std::string uuid; // "GPU-8f6c..."
    std::string pciBusId; // "00000000:3B:00.0"
    std::uint64_t totalBytes = 0;
    std::uint64_t freeBytes = 0;
    int major = 0, minor = 0; // compute capability
    int multiProcessorCount = 0;
};

// The driver layer, behind an interface so tests can fake it (no driver, 0/1/4 GPUs, ...).
// The real one loads libnvidia-ml.so.1 (and libcuda.so.1 for CUDA's own device order) with
// dlopen at run time: the binary starts and works on machines without a driver or a GPU. Neither
// creates a CUDA context (which would cost hundreds of MiB on every GPU).
class GpuDriver {
public:
    virtual ~GpuDriver() = default;
    // Empty when usable; otherwise why not ("libnvidia-ml.so.1 not found: no NVIDIA driver is installed").
    virtual std::optional<std::string> unavailableReason() = 0;
    virtual std::vector<PhysicalGpu> physicalGpus() = 0;
    // UUIDs in the order CUDA (and so torch) numbers the visible devices, when libcuda is there
    // to say it; it applies CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER itself. Nothing otherwise.
    virtual std::optional<std::vector<std::string>> cudaOrderUuids() = 0;
    // What the driver layer could not do although the driver is usable (libcuda missing, a GPU
    // NVML could not query): detectMachine() adds these to the inventory's notes.
    virtual std::vector<std::string> notes() { return {}; }
};

std::unique_ptr<GpuDriver> makeSystemGpuDriver();

} // namespace ckpt
