// SPDX-License-Identifier: MIT
#pragma once

#include "core/devices/gpudriver.h"
#include "core/devices/machineinventory.h"

#include <cstdint>
#include <map>
#include <string>

namespace ckpt {

struct CpuMemory {
    std::uint64_t totalBytes = 0;
    std::uint64_t availableBytes = 0;
};
CpuMemory readCpuMemory(); // /proc/meminfo MemTotal, MemAvailable

// Detects the machine's devices: CUDA GPUs numbered as torch numbers them (CUDA's own order when
// libcuda can tell, else emulated from CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES read from
// `environment`), then the CPU. Without a driver or GPU: the CPU alone, with a note why.
MachineInventory detectMachine(
    GpuDriver& driver, const std::map<std::string, std::string>& environment, const CpuMemory& cpu);
MachineInventory detectThisMachine(); // the system driver, the process environment, /proc/meminfo

} // namespace ckpt
