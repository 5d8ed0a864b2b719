// SPDX-License-Identifier: MIT
// The real CudaRuntime: the CUDA driver API from libcuda.so.1, loaded with dlopen (the same library
// torch's runtime sits on, so its primary context is the one torch would use), and the measurement
// of each device's context cost that feeds the memory ledger.
#include "core/devices/cudaruntime.h"

#include "core/base/textformat.h"
#include "core/devices/gpudriver.h"
#include "core/devices/machineinventory.h"
#include "core/io/sharedlibrary.h"

#include <algorithm>
#include <cstring>
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

// The driver API declarations this file needs, from its documented ABI (cuda.h, CUDA 12; the _v2
// entry points are the 64-bit ones every driver since CUDA 3.2 exports).
using CuResult = int;
using CuDevice = int;
struct CuContextRecord;
using CuContext = CuContextRecord*;
struct CuUuid {
    unsigned char bytes[16];
};
constexpr CuResult kCudaSuccess = 0;
constexpr CuResult kCudaErrorOutOfMemory = 2;
constexpr CuResult kCudaErrorNoDevice = 100;

using CuInitFunction = CuResult (*)(unsigned int);
using CuDeviceGetCountFunction = CuResult (*)(int*);
using CuDeviceGetFunction = CuResult (*)(CuDevice*, int);
using CuDeviceGetUuidFunction = CuResult (*)(CuUuid*, CuDevice);
using CuGetErrorStringFunction = CuResult (*)(CuResult, const char**);
using CuPrimaryCtxRetainFunction = CuResult (*)(CuContext*, CuDevice);
using CuPrimaryCtxReleaseFunction = CuResult (*)(CuDevice);
using CuCtxSetCurrentFunction = CuResult (*)(CuContext);
using CuMemGetInfoFunction = CuResult (*)(std::size_t*, std::size_t*);
using CuMemAllocFunction = CuResult (*)(unsigned long long*, std::size_t);
using CuMemFreeFunction = CuResult (*)(unsigned long long);
using CuMemcpyHtoDFunction = CuResult (*)(unsigned long long, const void*, std::size_t);
using CuMemcpyDtoHFunction = CuResult (*)(void*, unsigned long long, std::size_t);

std::string formatUuid(const CuUuid& uuid)
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

std::string tagOf(int ordinal)
{
    return "cuda:" + std::to_string(ordinal);
}

class SystemCudaRuntime final : public CudaRuntime {
public:
    ~SystemCudaRuntime() override
    {
        // The allocations are the caller's to free; the contexts this object retained go back.
        for (const auto& [ordinal, context] : m_contexts)
            if (context && m_release)
                m_release(ordinal);
    }

    std::optional<std::string> unavailableReason() override
    {
        load();
        return m_reason;
    }

    int deviceCount() override
    {
        load();
        return m_count;
    }

    std::string deviceUuid(int ordinal) override
    {
        if (load())
            return {};
        CuDevice device = 0;
        CuUuid uuid {};
        if (m_getDevice(&device, ordinal) != kCudaSuccess || m_getUuid(&uuid, device) != kCudaSuccess)
            return {};
        return formatUuid(uuid);
    }

    std::optional<CudaFailure> useDevice(int ordinal) override
    {
        if (load())
            return CudaFailure {"the CUDA runtime is unavailable: " + *m_reason, 0, false};
        if (ordinal < 0 || ordinal >= m_count)
            return CudaFailure {"there is no " + tagOf(ordinal), 0, false};
        CuContext& context = m_contexts[ordinal];
        if (!context) {
            CuDevice device = 0;
            if (const CuResult code = m_getDevice(&device, ordinal); code != kCudaSuccess)
                return failure("cuDeviceGet", ordinal, code);
            if (const CuResult code = m_retain(&context, device); code != kCudaSuccess) {
                context = nullptr;
                return failure("cuDevicePrimaryCtxRetain", ordinal, code);
            }
        }
        if (const CuResult code = m_setCurrent(context); code != kCudaSuccess)
            return failure("cuCtxSetCurrent", ordinal, code);
        return std::nullopt;
    }

    std::optional<CudaFailure> memoryInfo(int ordinal, CudaMemoryInfo& info) override
    {
        if (auto problem = useDevice(ordinal))
            return problem;
        std::size_t freeBytes = 0, totalBytes = 0;
        if (const CuResult code = m_memGetInfo(&freeBytes, &totalBytes); code != kCudaSuccess)
            return failure("cuMemGetInfo", ordinal, code);
        info = {freeBytes, totalBytes};
        return std::nullopt;
    }

    std::optional<CudaFailure> allocate(int ordinal, std::uint64_t bytes, CudaDevicePointer& pointer) override
    {
        if (auto problem = useDevice(ordinal))
            return problem;
        if (bytes > SIZE_MAX)
            return CudaFailure {
                "cuMemAlloc(" + formatBytes(bytes) + ") is larger than this machine can address",
                kCudaErrorOutOfMemory, true};
        unsigned long long address = 0;
        if (const CuResult code = m_alloc(&address, static_cast<std::size_t>(bytes)); code != kCudaSuccess)
            return failure("cuMemAlloc(" + formatBytes(bytes) + ")", ordinal, code);
        pointer = address;
        return std::nullopt;
    }

    void release(int ordinal, CudaDevicePointer pointer) override
    {
        if (pointer && !useDevice(ordinal))
            m_free(pointer);
    }

    std::optional<CudaFailure> copyToDevice(
        int ordinal, CudaDevicePointer to, const void* from, std::uint64_t bytes) override
    {
        if (auto problem = useDevice(ordinal))
            return problem;
        if (const CuResult code = m_copyToDevice(to, from, static_cast<std::size_t>(bytes));
            code != kCudaSuccess)
            return failure("cuMemcpyHtoD(" + formatBytes(bytes) + ")", ordinal, code);
        return std::nullopt;
    }

    std::optional<CudaFailure> copyToHost(
        int ordinal, void* to, CudaDevicePointer from, std::uint64_t bytes) override
    {
        if (auto problem = useDevice(ordinal))
            return problem;
        if (const CuResult code = m_copyToHost(to, from, static_cast<std::size_t>(bytes));
            code != kCudaSuccess)
            return failure("cuMemcpyDtoH(" + formatBytes(bytes) + ")", ordinal, code);
        return std::nullopt;
    }

private:
    // Loads libcuda and runs cuInit once; returns true when the runtime is unusable.
    bool load()
    {
        if (m_loaded)
            return m_reason.has_value();
        m_loaded = true;
        // Never closed: dlclose of driver libraries is a known source of crashes at exit.
        std::string detail;
        void* library = openSharedLibrary("libcuda.so.1", &detail);
        if (!library) {
            m_reason = detail.empty() || detail.find("No such file") != std::string::npos
                ? "no NVIDIA driver is installed (libcuda.so.1 not found)"
                : "the CUDA driver library libcuda.so.1 could not be loaded: " + detail;
            return true;
        }
        const auto init = resolveSymbol<CuInitFunction>(library, "cuInit");
        const auto getCount = resolveSymbol<CuDeviceGetCountFunction>(library, "cuDeviceGetCount");
        m_getDevice = resolveSymbol<CuDeviceGetFunction>(library, "cuDeviceGet");
        m_getUuid = resolveSymbol<CuDeviceGetUuidFunction>(library, "cuDeviceGetUuid");
        m_errorString = resolveSymbol<CuGetErrorStringFunction>(library, "cuGetErrorString");
        m_retain = resolveSymbol<CuPrimaryCtxRetainFunction>(library, "cuDevicePrimaryCtxRetain");
        m_release = resolveSymbol<CuPrimaryCtxReleaseFunction>(library, "cuDevicePrimaryCtxRelease_v2");
        m_setCurrent = resolveSymbol<CuCtxSetCurrentFunction>(library, "cuCtxSetCurrent");
        m_memGetInfo = resolveSymbol<CuMemGetInfoFunction>(library, "cuMemGetInfo_v2");
        m_alloc = resolveSymbol<CuMemAllocFunction>(library, "cuMemAlloc_v2");
        m_free = resolveSymbol<CuMemFreeFunction>(library, "cuMemFree_v2");
        m_copyToDevice = resolveSymbol<CuMemcpyHtoDFunction>(library, "cuMemcpyHtoD_v2");
        m_copyToHost = resolveSymbol<CuMemcpyDtoHFunction>(library, "cuMemcpyDtoH_v2");
        const std::pair<const char*, bool> required[] = {{"cuInit", init != nullptr},
            {"cuDeviceGetCount", getCount != nullptr}, {"cuDeviceGet", m_getDevice != nullptr},
            {"cuDeviceGetUuid", m_getUuid != nullptr}, {"cuDevicePrimaryCtxRetain", m_retain != nullptr},
            {"cuDevicePrimaryCtxRelease_v2", m_release != nullptr},
            {"cuCtxSetCurrent", m_setCurrent != nullptr}, {"cuMemGetInfo_v2", m_memGetInfo != nullptr},
            {"cuMemAlloc_v2", m_alloc != nullptr}, {"cuMemFree_v2", m_free != nullptr},
            {"cuMemcpyHtoD_v2", m_copyToDevice != nullptr}, {"cuMemcpyDtoH_v2", m_copyToHost != nullptr}};
        for (const auto& [name, found] : required) {
            if (!found) {
                m_reason = std::string("the NVIDIA driver is too old: libcuda.so.1 has no ") + name;
                m_release = nullptr;
                return true;
            }
        }
        if (const CuResult code = init(0); code != kCudaSuccess) {
            m_reason = code == kCudaErrorNoDevice
                ? "CUDA sees no GPU (none is installed, or CUDA_VISIBLE_DEVICES hides them all)"
                : "cuInit failed with " + codeText(code);
            m_release = nullptr;
            return true;
        }
        if (const CuResult code = getCount(&m_count); code != kCudaSuccess || m_count <= 0) {
            m_reason = code != kCudaSuccess ? "cuDeviceGetCount failed with " + codeText(code)
                                            : std::string("CUDA sees no GPU");
            m_count = 0;
            m_release = nullptr;
            return true;
        }
        return false;
    }

    std::string codeText(CuResult code) const
    {
        std::string text = "code " + std::to_string(code);
        const char* description = nullptr;
        if (m_errorString && m_errorString(code, &description) == kCudaSuccess && description)
            text += " (" + std::string(description) + ")";
        return text;
    }

    CudaFailure failure(const std::string& call, int ordinal, CuResult code) const
    {
        return CudaFailure {call + " on " + tagOf(ordinal) + " failed with " + codeText(code), code,
            code == kCudaErrorOutOfMemory};
    }

    bool m_loaded = false;
    std::optional<std::string> m_reason;
    int m_count = 0;
    std::map<int, CuContext> m_contexts;
    CuDeviceGetFunction m_getDevice = nullptr;
    CuDeviceGetUuidFunction m_getUuid = nullptr;
    CuGetErrorStringFunction m_errorString = nullptr;
    CuPrimaryCtxRetainFunction m_retain = nullptr;
    CuPrimaryCtxReleaseFunction m_release = nullptr;
    CuCtxSetCurrentFunction m_setCurrent = nullptr;
    CuMemGetInfoFunction m_memGetInfo = nullptr;
    CuMemAllocFunction m_alloc = nullptr;
    CuMemFreeFunction m_free = nullptr;
    CuMemcpyHtoDFunction m_copyToDevice = nullptr;
    CuMemcpyDtoHFunction m_copyToHost = nullptr;
};

} // namespace

std::unique_ptr<CudaRuntime> makeSystemCudaRuntime()
{
    return std::make_unique<SystemCudaRuntime>();
}

NvmlFreeSnapshot systemNvmlFreeSnapshot()
{
    return [] {
        std::map<std::string, std::uint64_t> free;
        const std::unique_ptr<GpuDriver> driver = makeSystemGpuDriver(); // a fresh query each time
        if (driver->unavailableReason())
            return free;
        for (const PhysicalGpu& gpu : driver->physicalGpus())
            if (!gpu.uuid.empty() && gpu.totalBytes > 0)
                free[gpu.uuid] = gpu.freeBytes;
        return free;
    };
}

CudaMeasurement measureCudaDevices(CudaRuntime& runtime, const NvmlFreeSnapshot& nvmlFree)
{
    CudaMeasurement measurement;
    if (auto reason = runtime.unavailableReason()) {
        measurement.unavailable = std::move(reason);
        return measurement;
    }
    const int count = runtime.deviceCount();
    // Every figure before any context of this process exists, then every context, then again:
    // a context made on one GPU would otherwise be counted in the next one's "before".
    const std::map<std::string, std::uint64_t> before
        = nvmlFree ? nvmlFree() : std::map<std::string, std::uint64_t> {};
    std::vector<bool> usable(static_cast<std::size_t>(count), false);
    for (int ordinal = 0; ordinal < count; ++ordinal) {
        if (auto problem = runtime.useDevice(ordinal))
            measurement.notes.push_back(tagOf(ordinal) + " could not be measured: " + problem->message);
        else
            usable[static_cast<std::size_t>(ordinal)] = true;
    }
    const std::map<std::string, std::uint64_t> after
        = nvmlFree ? nvmlFree() : std::map<std::string, std::uint64_t> {};
    for (int ordinal = 0; ordinal < count; ++ordinal) {
        if (!usable[static_cast<std::size_t>(ordinal)])
            continue;
        CudaDeviceMeasurement device;
        device.tag = tagOf(ordinal);
        device.uuid = runtime.deviceUuid(ordinal);
        CudaMemoryInfo info;
        if (auto problem = runtime.memoryInfo(ordinal, info)) {
            measurement.notes.push_back(device.tag + " could not be measured: " + problem->message);
            continue;
        }
        device.freeBytes = info.freeBytes;
        device.totalBytes = info.totalBytes;
        const auto was = before.find(device.uuid);
        const auto is = after.find(device.uuid);
        if (device.uuid.empty() || was == before.end() || is == after.end()) {
            measurement.notes.push_back(device.tag
                + ": the CUDA context's size is not measured (NVML could not say this GPU's free memory "
                  "before and after it was made); the assumption stays");
        } else if (was->second < is->second) {
            // Another process freed memory meanwhile: the difference means nothing.
            measurement.notes.push_back(device.tag
                + ": the CUDA context's size is not measured (the GPU's free memory grew while the context "
                  "was made: another process freed memory); the assumption stays");
        } else {
            device.contextBytes = was->second - is->second;
        }
        measurement.devices.push_back(std::move(device));
    }
    return measurement;
}

void applyMeasurement(MachineInventory& machine, const CudaMeasurement& measurement)
{
    for (const CudaDeviceMeasurement& measured : measurement.devices) {
        // By CUDA's numbering, as the plan names devices, whether or not the inventory lists it.
        if (measured.contextBytes)
            machine.measuredContextBytes[measured.tag] = *measured.contextBytes;
        for (DeviceInfo& device : machine.devices) {
            // The same GPU: by UUID when both know it, else by CUDA's numbering (both use it).
            const bool same = !measured.uuid.empty() && !device.uuid.empty() ? device.uuid == measured.uuid
                                                                             : device.tag == measured.tag;
            if (!same)
                continue;
            // The inventory's free memory is the memory before this process's context (as NVML
            // says it), from which the ledger and the planner take the context once: CUDA's figure
            // with the context made, plus the context.
            if (measured.contextBytes) {
                device.freeBytes = measured.freeBytes > UINT64_MAX - *measured.contextBytes
                    ? UINT64_MAX
                    : measured.freeBytes + *measured.contextBytes;
            }
            if (device.totalBytes == 0)
                device.totalBytes = measured.totalBytes;
        }
    }
    std::vector<std::string> notes = measurement.notes;
    if (measurement.unavailable)
        notes.insert(notes.begin(), "nothing measured: " + *measurement.unavailable);
    for (std::string& note : notes) // once each, however often the app measures again
        if (std::find(machine.notes.begin(), machine.notes.end(), note) == machine.notes.end())
            machine.notes.push_back(std::move(note));
}

} // namespace ckpt
