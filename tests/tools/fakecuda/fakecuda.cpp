// SPDX-License-Identifier: MIT
// A stand-in for the NVIDIA driver's two libraries, libcuda.so.1 and libnvidia-ml.so.1, for the
// command-line and app tests of the GPU trial on machines without a GPU: the build links this one
// file as libfakecuda.so and names it twice (tests/CMakeLists.txt), and a test puts that folder on
// LD_LIBRARY_PATH. The program then runs its real dlopen code against it; both names are the same
// file, so the loader maps it once and NVML's figures see the contexts CUDA made.
//
// Only the entry points ckpt-inspect resolves, with their documented signatures. The GPUs come from
// FAKE_CUDA_GPUS ("TOTAL:CONTEXT[:OTHERS],...", MiB each: the device's memory, what its context
// costs, what other processes use); FAKE_CUDA_FAIL_ALLOCATION=N fails the Nth cuMemAlloc with an
// error that is not out of memory; FAKE_CUDA_CORRUPT=1 flips a byte of every cuMemcpyDtoH.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace {

struct Gpu {
    unsigned long long total = 0, context = 0, others = 0, allocated = 0;
    bool contextMade = false;
};

struct State {
    std::vector<Gpu> gpus;
    std::map<unsigned long long, std::pair<int, std::size_t>> allocations; // pointer: device, size
    int current = -1;
    int allocationCount = 0;
    int failAllocation = 0;
    bool corrupt = false;
};

State& state()
{
    static State* instance = [] {
        auto* s = new State; // never freed: the program may call in while exiting
        const char* gpus = std::getenv("FAKE_CUDA_GPUS");
        for (const char* p = gpus ? gpus : ""; *p;) {
            char* end = nullptr;
            Gpu gpu;
            gpu.total = std::strtoull(p, &end, 10) << 20;
            if (*end == ':')
                gpu.context = std::strtoull(end + 1, &end, 10) << 20;
            if (*end == ':')
                gpu.others = std::strtoull(end + 1, &end, 10) << 20;
            s->gpus.push_back(gpu);
            p = *end == ',' ? end + 1 : end;
            if (end == p && *p)
                break;
        }
        if (const char* n = std::getenv("FAKE_CUDA_FAIL_ALLOCATION"))
            s->failAllocation = std::atoi(n);
        s->corrupt = std::getenv("FAKE_CUDA_CORRUPT") != nullptr;
        return s;
    }();
    return *instance;
}

unsigned long long freeOf(const Gpu& gpu)
{
    const unsigned long long used = gpu.others + (gpu.contextMade ? gpu.context : 0) + gpu.allocated;
    return used > gpu.total ? 0 : gpu.total - used;
}

bool valid(int device)
{
    return device >= 0 && static_cast<std::size_t>(device) < state().gpus.size();
}

void uuidBytes(int device, unsigned char* bytes)
{
    std::memset(bytes, 0, 16);
    bytes[15] = static_cast<unsigned char>(device);
}

} // namespace

extern "C" {

// ---- libnvidia-ml.so.1 ----
int nvmlInit_v2()
{
    return state().gpus.empty() ? 9 : 0; // NVML_ERROR_DRIVER_NOT_LOADED
}
int nvmlShutdown()
{
    return 0;
}
const char* nvmlErrorString(int)
{
    return "fake NVML error";
}
int nvmlDeviceGetCount_v2(unsigned int* count)
{
    *count = static_cast<unsigned int>(state().gpus.size());
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** handle)
{
    if (index >= state().gpus.size())
        return 2;
    *handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(index) + 1);
    return 0;
}
int nvmlDeviceGetName(void* handle, char* name, unsigned int length)
{
    std::snprintf(
        name, length, "Fake GPU %d", static_cast<int>(reinterpret_cast<std::uintptr_t>(handle) - 1));
    return 0;
}
int nvmlDeviceGetUUID(void* handle, char* uuid, unsigned int length)
{
    std::snprintf(uuid, length, "GPU-00000000-0000-0000-0000-0000000000%02x",
        static_cast<int>(reinterpret_cast<std::uintptr_t>(handle) - 1));
    return 0;
}
struct PciInfo {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};
int nvmlDeviceGetPciInfo_v3(void* handle, PciInfo* pci)
{
    std::memset(pci, 0, sizeof *pci);
    std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0",
        static_cast<int>(reinterpret_cast<std::uintptr_t>(handle)));
    return 0;
}
struct Memory {
    unsigned long long total, free, used;
};
int nvmlDeviceGetMemoryInfo(void* handle, Memory* memory)
{
    const Gpu& gpu = state().gpus[reinterpret_cast<std::uintptr_t>(handle) - 1];
    memory->total = gpu.total;
    memory->free = freeOf(gpu);
    memory->used = gpu.total - memory->free;
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(void*, int* major, int* minor)
{
    *major = 9;
    *minor = 0;
    return 0;
}

// ---- libcuda.so.1 ----
int cuInit(unsigned int)
{
    return state().gpus.empty() ? 100 : 0; // CUDA_ERROR_NO_DEVICE
}
int cuDeviceGetCount(int* count)
{
    *count = static_cast<int>(state().gpus.size());
    return 0;
}
int cuDeviceGet(int* device, int ordinal)
{
    if (!valid(ordinal))
        return 101; // CUDA_ERROR_INVALID_DEVICE
    *device = ordinal;
    return 0;
}
int cuDeviceGetUuid(unsigned char* uuid, int device)
{
    if (!valid(device))
        return 101;
    uuidBytes(device, uuid);
    return 0;
}
int cuDeviceGetUuid_v2(unsigned char* uuid, int device)
{
    return cuDeviceGetUuid(uuid, device);
}
int cuDeviceGetAttribute(int* value, int, int device)
{
    *value = 132;
    return valid(device) ? 0 : 101;
}
int cuGetErrorString(int code, const char** text)
{
    *text = code == 2 ? "out of memory" : "fake CUDA error";
    return 0;
}
int cuDevicePrimaryCtxRetain(void** context, int device)
{
    if (!valid(device))
        return 101;
    state().gpus[static_cast<std::size_t>(device)].contextMade = true;
    *context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(device) + 1);
    return 0;
}
int cuDevicePrimaryCtxRelease_v2(int device)
{
    if (!valid(device))
        return 101;
    state().gpus[static_cast<std::size_t>(device)].contextMade = false;
    return 0;
}
int cuCtxSetCurrent(void* context)
{
    state().current = static_cast<int>(reinterpret_cast<std::uintptr_t>(context)) - 1;
    return 0;
}
int cuMemGetInfo_v2(std::size_t* free, std::size_t* total)
{
    if (!valid(state().current))
        return 201; // CUDA_ERROR_INVALID_CONTEXT
    const Gpu& gpu = state().gpus[static_cast<std::size_t>(state().current)];
    *free = freeOf(gpu);
    *total = gpu.total;
    return 0;
}
int cuMemAlloc_v2(unsigned long long* pointer, std::size_t bytes)
{
    State& s = state();
    if (!valid(s.current))
        return 201;
    if (++s.allocationCount == s.failAllocation)
        return 999; // CUDA_ERROR_UNKNOWN
    Gpu& gpu = s.gpus[static_cast<std::size_t>(s.current)];
    if (bytes > freeOf(gpu))
        return 2; // CUDA_ERROR_OUT_OF_MEMORY
    void* memory = std::malloc(bytes);
    if (!memory)
        return 2;
    gpu.allocated += bytes;
    *pointer = reinterpret_cast<std::uintptr_t>(memory);
    s.allocations[*pointer] = {s.current, bytes};
    return 0;
}
int cuMemFree_v2(unsigned long long pointer)
{
    State& s = state();
    const auto it = s.allocations.find(pointer);
    if (it == s.allocations.end())
        return 1; // CUDA_ERROR_INVALID_VALUE
    s.gpus[static_cast<std::size_t>(it->second.first)].allocated -= it->second.second;
    std::free(reinterpret_cast<void*>(static_cast<std::uintptr_t>(pointer)));
    s.allocations.erase(it);
    return 0;
}
int cuMemcpyHtoD_v2(unsigned long long to, const void* from, std::size_t bytes)
{
    std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(to)), from, bytes);
    return 0;
}
int cuMemcpyDtoH_v2(void* to, unsigned long long from, std::size_t bytes)
{
    std::memcpy(to, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(from)), bytes);
    if (state().corrupt && bytes > 0)
        static_cast<unsigned char*>(to)[0] ^= 0x40;
    return 0;
}

} // extern "C"
