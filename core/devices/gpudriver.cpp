// SPDX-License-Identifier: MIT
// The real GpuDriver: NVML for every physical GPU (name, memory, PCI bus, UUID, compute
// capability) and libcuda for CUDA's own device order, both loaded with dlopen so that the binary
// runs on machines without a driver.
#include "core/devices/gpudriver.h"
#include "core/io/sharedlibrary.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <utility>

namespace ckpt {

namespace {

// dlsym hands out object pointers; POSIX guarantees they convert to function pointers.
template<class Function> Function resolveSymbol(void* library, const char* name)
{
    void* symbol = findLibrarySymbol(library, name);
    Function function = nullptr;
    static_assert(sizeof(function) == sizeof(symbol));
    std::memcpy(&function, &symbol, sizeof(function));
    return function;
}

// The few NVML and CUDA driver declarations this file needs, written out from their documented
// ABI: no NVML header is installed on build machines, and the build must not need the CUDA
// toolkit. Both libraries use the C calling convention on Linux and keep these entry points
// stable across driver versions (that is what the _v2/_v3 suffixes are for).

using NvmlReturn = int; // nvmlReturn_t, a C enum
struct NvmlDeviceRecord;
using NvmlDevice = NvmlDeviceRecord*;

constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlErrorNoPermission = 4;
constexpr NvmlReturn kNvmlErrorDriverNotLoaded = 9;
constexpr NvmlReturn kNvmlErrorLibRmVersionMismatch = 18;

constexpr unsigned kNvmlNameBufferSize = 96; // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kNvmlUuidBufferSize = 96; // NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct NvmlPciInfo { // nvmlPciInfo_t, the layout shared by nvmlDeviceGetPciInfo_v2 and _v3
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32]; // "00000000:3B:00.0", as nvidia-smi shows it
};

struct NvmlMemory { // nvmlMemory_t (version 1)
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};

using NvmlInitFunction = NvmlReturn (*)();
using NvmlShutdownFunction = NvmlReturn (*)();
using NvmlErrorStringFunction = const char* (*)(NvmlReturn);
using NvmlDeviceGetCountFunction = NvmlReturn (*)(unsigned int*);
using NvmlDeviceGetHandleByIndexFunction = NvmlReturn (*)(unsigned int, NvmlDevice*);
using NvmlDeviceGetTextFunction = NvmlReturn (*)(NvmlDevice, char*, unsigned int);
using NvmlDeviceGetPciInfoFunction = NvmlReturn (*)(NvmlDevice, NvmlPciInfo*);
using NvmlDeviceGetMemoryInfoFunction = NvmlReturn (*)(NvmlDevice, NvmlMemory*);
using NvmlDeviceGetCudaComputeCapabilityFunction = NvmlReturn (*)(NvmlDevice, int*, int*);

using CuResult = int; // CUresult
using CuDevice = int; // CUdevice
struct CuUuid { // CUuuid
    unsigned char bytes[16];
};
constexpr CuResult kCudaSuccess = 0;
constexpr CuResult kCudaErrorNoDevice = 100;
constexpr int kCuDeviceAttributeMultiprocessorCount = 16;

using CuInitFunction = CuResult (*)(unsigned int);
using CuDeviceGetCountFunction = CuResult (*)(int*);
using CuDeviceGetFunction = CuResult (*)(CuDevice*, int);
using CuDeviceGetUuidFunction = CuResult (*)(CuUuid*, CuDevice);
using CuDeviceGetAttributeFunction = CuResult (*)(int*, int, CuDevice);
using CuGetErrorStringFunction = CuResult (*)(CuResult, const char**);

// NVML's spelling: "GPU-" and the 16 bytes as lower-case hex in 8-4-4-4-12 groups.
std::string formatGpuUuid(const CuUuid& uuid)
{
    static const char* const digits = "0123456789abcdef";
    std::string text = "GPU-";
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text += '-';
        text += digits[uuid.bytes[i] >> 4];
        text += digits[uuid.bytes[i] & 0xf];
    }
    return text;
}

std::string textFromBuffer(const char* buffer, std::size_t size)
{
    return std::string(buffer, ::strnlen(buffer, size));
}

// The real driver layer. Each instance queries once, on first use: a fresh instance (as
// detectThisMachine() makes) sees fresh free-memory figures.
class SystemGpuDriver final : public GpuDriver {
public:
    std::optional<std::string> unavailableReason() override
    {
        ensureQueried();
        return m_reason;
    }
    std::vector<PhysicalGpu> physicalGpus() override
    {
        ensureQueried();
        return m_gpus;
    }
    std::optional<std::vector<std::string>> cudaOrderUuids() override
    {
        ensureQueried();
        return m_cudaOrder;
    }
    std::vector<std::string> notes() override
    {
        ensureQueried();
        return m_notes;
    }

private:
    void ensureQueried()
    {
        if (m_queried)
            return;
        m_queried = true;
        queryNvml();
        if (!m_reason)
            queryCuda();
    }

    void queryNvml();
    void queryCuda();

    bool m_queried = false;
    std::optional<std::string> m_reason;
    std::vector<PhysicalGpu> m_gpus;
    std::optional<std::vector<std::string>> m_cudaOrder;
    std::vector<std::string> m_notes;
};

std::string nvmlCodeText(NvmlReturn code, NvmlErrorStringFunction errorString)
{
    std::string text = "code " + std::to_string(code);
    if (errorString) {
        if (const char* description = errorString(code); description && *description)
            text += " (" + std::string(description) + ")";
    }
    return text;
}

void SystemGpuDriver::queryNvml()
{
    // The library handle is never closed: dlclose of driver libraries is a known source of
    // crashes at exit, and dlopen of an already loaded library is only a reference count.
    std::string detail;
    void* library = openSharedLibrary("libnvidia-ml.so.1", &detail);
    if (!library) {
        if (detail.empty() || detail.find("No such file") != std::string::npos)
            m_reason = "no NVIDIA driver is installed (libnvidia-ml.so.1 not found)";
        else
            m_reason = "the NVIDIA management library libnvidia-ml.so.1 could not be loaded: " + detail;
        return;
    }

    const auto init = resolveSymbol<NvmlInitFunction>(library, "nvmlInit_v2");
    const auto shutdown = resolveSymbol<NvmlShutdownFunction>(library, "nvmlShutdown");
    const auto errorString = resolveSymbol<NvmlErrorStringFunction>(library, "nvmlErrorString");
    const auto getCount = resolveSymbol<NvmlDeviceGetCountFunction>(library, "nvmlDeviceGetCount_v2");
    const auto getHandle
        = resolveSymbol<NvmlDeviceGetHandleByIndexFunction>(library, "nvmlDeviceGetHandleByIndex_v2");
    const auto getName = resolveSymbol<NvmlDeviceGetTextFunction>(library, "nvmlDeviceGetName");
    const auto getUuid = resolveSymbol<NvmlDeviceGetTextFunction>(library, "nvmlDeviceGetUUID");
    auto getPciInfo = resolveSymbol<NvmlDeviceGetPciInfoFunction>(library, "nvmlDeviceGetPciInfo_v3");
    if (!getPciInfo)
        getPciInfo = resolveSymbol<NvmlDeviceGetPciInfoFunction>(library, "nvmlDeviceGetPciInfo_v2");
    const auto getMemory = resolveSymbol<NvmlDeviceGetMemoryInfoFunction>(library, "nvmlDeviceGetMemoryInfo");
    const auto getCapability = resolveSymbol<NvmlDeviceGetCudaComputeCapabilityFunction>(
        library, "nvmlDeviceGetCudaComputeCapability");

    const std::pair<const char*, bool> required[] = {{"nvmlInit_v2", init != nullptr},
        {"nvmlShutdown", shutdown != nullptr}, {"nvmlDeviceGetCount_v2", getCount != nullptr},
        {"nvmlDeviceGetHandleByIndex_v2", getHandle != nullptr}, {"nvmlDeviceGetName", getName != nullptr},
        {"nvmlDeviceGetUUID", getUuid != nullptr}, {"nvmlDeviceGetPciInfo_v3", getPciInfo != nullptr},
        {"nvmlDeviceGetMemoryInfo", getMemory != nullptr},
        {"nvmlDeviceGetCudaComputeCapability", getCapability != nullptr}};
    for (const auto& [name, found] : required) {
        if (!found) {
            m_reason = std::string("the NVIDIA driver is too old: libnvidia-ml.so.1 has no ") + name;
            return;
        }
    }

    if (const NvmlReturn code = init(); code != kNvmlSuccess) {
        std::string why;
        switch (code) {
        case kNvmlErrorDriverNotLoaded:
            why = "the NVIDIA kernel driver is not loaded (no NVIDIA GPU, or the driver is not running)";
            break;
        case kNvmlErrorLibRmVersionMismatch:
            why = "driver/library version mismatch: libnvidia-ml.so.1 and the loaded kernel module come from "
                  "different driver versions (a reboot after a driver update usually fixes it)";
            break;
        case kNvmlErrorNoPermission:
            why = "no permission to open the NVIDIA devices (/dev/nvidia*)";
            break;
        default:
            why = "driver/library mismatch or no GPU";
            break;
        }
        m_reason = "nvmlInit failed with " + nvmlCodeText(code, errorString) + ": " + why;
        return;
    }

    unsigned int count = 0;
    if (const NvmlReturn code = getCount(&count); code != kNvmlSuccess) {
        m_reason = "nvmlDeviceGetCount failed with " + nvmlCodeText(code, errorString);
        shutdown();
        return;
    }
    if (count == 0) {
        m_reason = "the NVIDIA driver is installed but reports 0 GPUs";
        shutdown();
        return;
    }

    for (unsigned int index = 0; index < count; ++index) {
        NvmlDevice device = nullptr;
        if (const NvmlReturn code = getHandle(index, &device); code != kNvmlSuccess) {
            // Typically a GPU this process may not use (a container's cgroup) or one that fell
            // off the bus; the others are still worth listing.
            m_notes.push_back("nvidia-smi's GPU " + std::to_string(index)
                + " is left out: nvmlDeviceGetHandleByIndex failed with " + nvmlCodeText(code, errorString));
            continue;
        }
        PhysicalGpu gpu;
        char text[kNvmlNameBufferSize > kNvmlUuidBufferSize ? kNvmlNameBufferSize : kNvmlUuidBufferSize] = {};
        if (getName(device, text, kNvmlNameBufferSize) == kNvmlSuccess)
            gpu.name = textFromBuffer(text, kNvmlNameBufferSize);
        else
            gpu.name = "NVIDIA GPU";
        std::memset(text, 0, sizeof text);
        if (getUuid(device, text, kNvmlUuidBufferSize) == kNvmlSuccess)
            gpu.uuid = textFromBuffer(text, kNvmlUuidBufferSize);
        NvmlPciInfo pci {};
        if (getPciInfo(device, &pci) == kNvmlSuccess)
            gpu.pciBusId = textFromBuffer(pci.busId, sizeof pci.busId);
        NvmlMemory memory {};
        if (const NvmlReturn code = getMemory(device, &memory); code == kNvmlSuccess) {
            gpu.totalBytes = memory.total;
            gpu.freeBytes = memory.free;
        } else {
            m_notes.push_back("the memory of nvidia-smi's GPU " + std::to_string(index) + " (" + gpu.name
                + ") is unknown: nvmlDeviceGetMemoryInfo failed with " + nvmlCodeText(code, errorString));
        }
        int major = 0;
        int minor = 0;
        if (getCapability(device, &major, &minor) == kNvmlSuccess) {
            gpu.major = major;
            gpu.minor = minor;
        }
        m_gpus.push_back(std::move(gpu));
    }
    shutdown();
    if (m_gpus.empty())
        m_reason = "the NVIDIA driver lists " + std::to_string(count) + " GPU(s) but none could be queried";
}

// CUDA's own numbering, from libcuda: cuInit and device attribute queries create no context (a
// context is what costs memory on the GPU); cuCtxCreate and cuDevicePrimaryCtxRetain, which do,
// are never called. CUDA applies CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER itself, as read from
// this process's environment when cuInit first runs.
void SystemGpuDriver::queryCuda()
{
    const std::string fallback = "; the device order is emulated instead";
    void* library = openSharedLibrary("libcuda.so.1");
    if (!library) {
        m_notes.push_back(
            "CUDA's own device order is unavailable: libcuda.so.1 could not be loaded" + fallback);
        return;
    }
    const auto init = resolveSymbol<CuInitFunction>(library, "cuInit");
    const auto getCount = resolveSymbol<CuDeviceGetCountFunction>(library, "cuDeviceGetCount");
    const auto getDevice = resolveSymbol<CuDeviceGetFunction>(library, "cuDeviceGet");
    // The first version: it names the physical GPU even for a MIG instance, so it matches NVML.
    const auto getUuid = resolveSymbol<CuDeviceGetUuidFunction>(library, "cuDeviceGetUuid");
    // The second: a MIG instance's own UUID, only used to notice MIG instances.
    const auto getUuidV2 = resolveSymbol<CuDeviceGetUuidFunction>(library, "cuDeviceGetUuid_v2");
    const auto getAttribute = resolveSymbol<CuDeviceGetAttributeFunction>(library, "cuDeviceGetAttribute");
    const auto errorString = resolveSymbol<CuGetErrorStringFunction>(library, "cuGetErrorString");
    if (!init || !getCount || !getDevice || !getUuid || !getAttribute) {
        m_notes.push_back(
            "CUDA's own device order is unavailable: libcuda.so.1 is too old (no cuDeviceGetUuid)"
            + fallback);
        return;
    }
    const auto codeText = [&](CuResult code) {
        std::string text = "code " + std::to_string(code);
        const char* description = nullptr;
        if (errorString && errorString(code, &description) == kCudaSuccess && description)
            text += " (" + std::string(description) + ")";
        return text;
    };

    if (const CuResult code = init(0); code != kCudaSuccess) {
        if (code == kCudaErrorNoDevice) {
            // CUDA sees none: CUDA_VISIBLE_DEVICES hides every GPU, or none is usable.
            m_cudaOrder = std::vector<std::string> {};
            return;
        }
        m_notes.push_back(
            "CUDA's own device order is unavailable: cuInit failed with " + codeText(code) + fallback);
        return;
    }
    int count = 0;
    if (const CuResult code = getCount(&count); code != kCudaSuccess) {
        m_notes.push_back("CUDA's own device order is unavailable: cuDeviceGetCount failed with "
            + codeText(code) + fallback);
        return;
    }
    std::vector<std::string> order;
    bool sawMig = false;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
        CuDevice device = 0;
        CuUuid uuid {};
        if (getDevice(&device, ordinal) != kCudaSuccess || getUuid(&uuid, device) != kCudaSuccess) {
            m_notes.push_back("CUDA's own device order is unavailable: libcuda could not describe its device "
                + std::to_string(ordinal) + fallback);
            return;
        }
        order.push_back(formatGpuUuid(uuid));
        CuUuid instanceUuid {};
        if (getUuidV2 && getUuidV2(&instanceUuid, device) == kCudaSuccess
            && std::memcmp(instanceUuid.bytes, uuid.bytes, sizeof uuid.bytes) != 0)
            sawMig = true;
        int multiProcessors = 0;
        if (getAttribute(&multiProcessors, kCuDeviceAttributeMultiprocessorCount, device) == kCudaSuccess) {
            for (PhysicalGpu& gpu : m_gpus) {
                if (gpu.uuid == order.back())
                    gpu.multiProcessorCount = multiProcessors;
            }
        }
    }
    if (sawMig)
        m_notes.push_back("some visible CUDA devices are MIG instances, which this tool does not model: "
                          "each is shown with its whole GPU's memory");
    m_cudaOrder = std::move(order);
}

} // namespace

std::unique_ptr<GpuDriver> makeSystemGpuDriver()
{
    return std::make_unique<SystemGpuDriver>();
}

} // namespace ckpt
