// SPDX-License-Identifier: MIT
#pragma once
// A CudaRuntime with no GPU behind it, for the trial's tests in every suite: devices of a given
// size whose contexts cost a given amount, allocations backed by host memory (so copies can be read
// back), and the failures a real trial meets: no driver, out of memory, a call that fails midway, a
// read-back that differs.
#include "core/devices/cudaruntime.h"

#include <cstring>
#include <map>
#include <vector>

namespace ckpt::test {

class FakeCudaRuntime final : public CudaRuntime {
public:
    struct Gpu {
        std::string uuid;
        std::uint64_t totalBytes = 0;
        std::uint64_t usedByOthers = 0; // other processes' memory
        std::uint64_t contextBytes = 0; // what making its context costs
        bool contextMade = false;
        std::uint64_t allocatedBytes = 0;
    };
    std::optional<std::string> reason; // set: the runtime is unavailable
    std::vector<Gpu> gpus;
    int failAllocation = 0; // the Nth allocation (from 1) fails with an error that is not out of memory
    bool corruptReadBack = false; // every copy to the host comes back with its first byte flipped
    bool failCopies = false; // every copy to a device fails
    int allocations = 0; // made so far
    std::map<CudaDevicePointer, std::vector<unsigned char>> live; // allocations not freed
    std::uint64_t bytesCopiedToDevice = 0;

    void addGpu(std::uint64_t total, std::uint64_t context, std::uint64_t others = 0)
    {
        gpus.push_back({"GPU-00000000-0000-0000-0000-00000000000" + std::to_string(gpus.size()), total,
            others, context, false, 0});
    }
    std::uint64_t freeBytes(int ordinal) const
    {
        const Gpu& gpu = gpus[static_cast<std::size_t>(ordinal)];
        const std::uint64_t used
            = gpu.usedByOthers + (gpu.contextMade ? gpu.contextBytes : 0) + gpu.allocatedBytes;
        return used > gpu.totalBytes ? 0 : gpu.totalBytes - used;
    }
    // NVML's view: the free memory of each GPU by UUID, contexts included.
    NvmlFreeSnapshot nvml()
    {
        return [this] {
            std::map<std::string, std::uint64_t> free;
            for (std::size_t i = 0; i < gpus.size(); ++i)
                free[gpus[i].uuid] = freeBytes(static_cast<int>(i));
            return free;
        };
    }

    std::optional<std::string> unavailableReason() override { return reason; }
    int deviceCount() override { return reason ? 0 : static_cast<int>(gpus.size()); }
    std::string deviceUuid(int ordinal) override { return gpus[static_cast<std::size_t>(ordinal)].uuid; }
    std::optional<CudaFailure> useDevice(int ordinal) override
    {
        if (reason || ordinal < 0 || ordinal >= deviceCount())
            return CudaFailure {"no such device", 101, false};
        gpus[static_cast<std::size_t>(ordinal)].contextMade = true;
        return std::nullopt;
    }
    std::optional<CudaFailure> memoryInfo(int ordinal, CudaMemoryInfo& info) override
    {
        if (auto problem = useDevice(ordinal))
            return problem;
        info = {freeBytes(ordinal), gpus[static_cast<std::size_t>(ordinal)].totalBytes};
        return std::nullopt;
    }
    std::optional<CudaFailure> allocate(int ordinal, std::uint64_t bytes, CudaDevicePointer& pointer) override
    {
        if (auto problem = useDevice(ordinal))
            return problem;
        ++allocations;
        if (allocations == failAllocation)
            return CudaFailure {
                "cuMemAlloc on cuda:" + std::to_string(ordinal) + " failed with code 999 (unknown error)",
                999, false};
        if (bytes > freeBytes(ordinal))
            return CudaFailure {
                "cuMemAlloc on cuda:" + std::to_string(ordinal) + " failed with code 2 (out of memory)", 2,
                true};
        gpus[static_cast<std::size_t>(ordinal)].allocatedBytes += bytes;
        // Host memory stands for the device's: only what the tests' small files need is touched.
        std::vector<unsigned char> memory(static_cast<std::size_t>(bytes), 0xcd);
        pointer = reinterpret_cast<CudaDevicePointer>(memory.data());
        owner[pointer] = ordinal;
        live.emplace(pointer, std::move(memory));
        return std::nullopt;
    }
    void release(int ordinal, CudaDevicePointer pointer) override
    {
        const auto it = live.find(pointer);
        if (it == live.end() || owner[pointer] != ordinal)
            throw std::logic_error("released twice or on the wrong device");
        gpus[static_cast<std::size_t>(ordinal)].allocatedBytes -= it->second.size();
        live.erase(it);
    }
    std::optional<CudaFailure> copyToDevice(
        int ordinal, CudaDevicePointer to, const void* from, std::uint64_t bytes) override
    {
        if (failCopies)
            return CudaFailure {
                "cuMemcpyHtoD on cuda:" + std::to_string(ordinal) + " failed with code 700", 700, false};
        unsigned char* target = at(ordinal, to, bytes);
        std::memcpy(target, from, static_cast<std::size_t>(bytes));
        bytesCopiedToDevice += bytes;
        return std::nullopt;
    }
    std::optional<CudaFailure> copyToHost(
        int ordinal, void* to, CudaDevicePointer from, std::uint64_t bytes) override
    {
        const unsigned char* source = at(ordinal, from, bytes);
        std::memcpy(to, source, static_cast<std::size_t>(bytes));
        if (corruptReadBack && bytes > 0)
            static_cast<unsigned char*>(to)[0] ^= 0x40;
        return std::nullopt;
    }

private:
    // The host bytes behind [pointer, pointer + bytes): inside one live allocation of that device,
    // or the test fails loudly (a trial that copies out of bounds is a bug the fake must show).
    unsigned char* at(int ordinal, CudaDevicePointer pointer, std::uint64_t bytes)
    {
        auto it = live.upper_bound(pointer);
        if (it == live.begin())
            throw std::logic_error("a copy outside every allocation");
        --it;
        const std::uint64_t offset = pointer - it->first;
        if (owner[it->first] != ordinal || offset + bytes > it->second.size())
            throw std::logic_error("a copy outside its allocation");
        return it->second.data() + offset;
    }
    std::map<CudaDevicePointer, int> owner;
};

} // namespace ckpt::test
