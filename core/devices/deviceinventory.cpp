#include "core/devices/deviceinventory.h"

#include "core/io/atomicoutputfile.h"
#include "core/json/json.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <utility>

#include <dlfcn.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt {

const DeviceInfo* MachineInventory::find(std::string_view tag) const
{
    for (const DeviceInfo& device : devices) {
        if (device.tag == tag)
            return &device;
    }
    return nullptr;
}

std::vector<const DeviceInfo*> MachineInventory::gpus() const
{
    std::vector<const DeviceInfo*> result;
    for (const DeviceInfo& device : devices) {
        if (device.tag == "cuda" || device.tag.rfind("cuda:", 0) == 0)
            result.push_back(&device);
    }
    return result;
}

namespace {

std::string_view trimmed(std::string_view text)
{
    const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!text.empty() && isSpace(text.front()))
        text.remove_prefix(1);
    while (!text.empty() && isSpace(text.back()))
        text.remove_suffix(1);
    return text;
}

std::string quoted(std::string_view text)
{
    return "\"" + std::string(text) + "\"";
}

bool startsWith(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

// dlsym hands out object pointers; POSIX guarantees they convert to function pointers.
template<class Function> Function resolveSymbol(void* library, const char* name)
{
    void* symbol = ::dlsym(library, name);
    Function function = nullptr;
    static_assert(sizeof(function) == sizeof(symbol));
    std::memcpy(&function, &symbol, sizeof(function));
    return function;
}

// ---------------------------------------------------------------------------------------------
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
    void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char* error = ::dlerror();
        const std::string detail = error ? error : "";
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
    void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
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

// ---------------------------------------------------------------------------------------------
// Detection

std::string readCpuModelName()
{
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) != 0)
            continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string_view name = trimmed(std::string_view(line).substr(colon + 1));
        if (!name.empty())
            return std::string(name);
    }
    return "CPU";
}

// "00000000:3B:00.0" as numbers, so that domains and buses compare by value whatever their case.
std::optional<std::array<unsigned long, 4>> pciBusNumbers(const std::string& busId)
{
    std::array<unsigned long, 4> numbers {};
    const char* cursor = busId.c_str();
    const char separators[] = {':', ':', '.', '\0'};
    for (int i = 0; i < 4; ++i) {
        char* end = nullptr;
        errno = 0;
        numbers[static_cast<std::size_t>(i)] = std::strtoul(cursor, &end, 16);
        if (end == cursor || errno != 0 || *end != separators[i])
            return std::nullopt;
        cursor = end + 1;
    }
    return numbers;
}

bool pciBusLess(const std::string& a, const std::string& b)
{
    const auto numbersA = pciBusNumbers(a);
    const auto numbersB = pciBusNumbers(b);
    if (numbersA && numbersB)
        return *numbersA < *numbersB;
    return a < b;
}

struct VisibleGpu {
    const PhysicalGpu* gpu = nullptr; // null: CUDA lists a device NVML did not report
    std::size_t physicalIndex = 0; // NVML's (and nvidia-smi's) number
    std::string uuid;
};

std::string describePhysical(const VisibleGpu& visible)
{
    if (!visible.gpu)
        return "a device NVML does not list (" + visible.uuid + ")";
    std::string text = "physical GPU " + std::to_string(visible.physicalIndex) + " (" + visible.gpu->name;
    if (!visible.gpu->pciBusId.empty())
        text += ", " + visible.gpu->pciBusId;
    return text + ")";
}

std::string describeMapping(const std::vector<VisibleGpu>& visible)
{
    std::string text;
    for (std::size_t i = 0; i < visible.size(); ++i) {
        if (i > 0)
            text += ", ";
        text += describePhysical(visible[i]) + " is cuda:" + std::to_string(i);
    }
    // Physical numbers are NVML's, which nvidia-smi shows: the ones people know their GPUs by.
    return text + " (physical numbers as nvidia-smi shows them)";
}

// CUDA documents FASTEST_FIRST only as "fastest to slowest using a simple heuristic" (CUDA
// Programming Guide, "CUDA Environment Variables"; older editions: the fastest device becomes
// device 0 and the order of the rest is unspecified). Without libcuda to ask, it is approximated
// the way it is commonly described and emulated (e.g. onnxruntime PR #28066: "CUDA orders devices
// by compute capability (descending), then by PCI bus ID"): highest compute capability first, then
// most multiprocessors (0 when unknown), then ascending PCI bus id. Identical GPUs therefore stay
// in PCI order, which is what CUDA does on such machines.
std::vector<std::size_t> emulatedOrder(const std::vector<PhysicalGpu>& gpus,
    const std::map<std::string, std::string>& environment, std::vector<std::string>& notes)
{
    std::vector<std::size_t> order(gpus.size());
    std::iota(order.begin(), order.end(), std::size_t {0});
    std::string setting;
    if (const auto it = environment.find("CUDA_DEVICE_ORDER"); it != environment.end())
        setting = std::string(trimmed(it->second));

    if (setting == "PCI_BUS_ID") {
        std::stable_sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return pciBusLess(gpus[a].pciBusId, gpus[b].pciBusId); });
        if (gpus.size() > 1)
            notes.push_back("device order emulated: CUDA_DEVICE_ORDER=PCI_BUS_ID, so GPUs are numbered by "
                            "ascending PCI bus id, as nvidia-smi lists them");
        return order;
    }
    if (!setting.empty() && setting != "FASTEST_FIRST")
        notes.push_back("CUDA_DEVICE_ORDER=" + setting
            + " is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID); FASTEST_FIRST assumed");
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const PhysicalGpu& x = gpus[a];
        const PhysicalGpu& y = gpus[b];
        if (std::pair(x.major, x.minor) != std::pair(y.major, y.minor))
            return std::pair(x.major, x.minor) > std::pair(y.major, y.minor);
        if (x.multiProcessorCount != y.multiProcessorCount)
            return x.multiProcessorCount > y.multiProcessorCount;
        return pciBusLess(x.pciBusId, y.pciBusId);
    });
    if (gpus.size() > 1)
        notes.push_back(std::string("device order emulated: CUDA_DEVICE_ORDER=FASTEST_FIRST")
            + (setting.empty() ? " (CUDA's default)" : "")
            + " approximated as highest compute capability first, then most multiprocessors, then "
              "ascending PCI bus id (CUDA documents only \"fastest first\", and CUDA's own order could not "
              "be read); set CUDA_DEVICE_ORDER=PCI_BUS_ID for a numbering that is certain");
    return order;
}

// A CUDA_VISIBLE_DEVICES entry read as CUDA reads it (PyTorch's model of it, torch.cuda.
// _parse_visible_devices): like strtoul, leading digits count and the rest is ignored ("1gpu2"
// is 1), a sign is allowed, and anything without digits or negative is invalid.
std::optional<unsigned long> visibleOrdinal(std::string_view entry)
{
    std::size_t position = 0;
    bool negative = false;
    if (position < entry.size() && (entry[position] == '+' || entry[position] == '-')) {
        negative = entry[position] == '-';
        ++position;
    }
    unsigned long value = 0;
    std::size_t digits = 0;
    while (position < entry.size() && entry[position] >= '0' && entry[position] <= '9') {
        if (value > (std::numeric_limits<unsigned long>::max() - 9) / 10)
            return std::numeric_limits<unsigned long>::max(); // out of range of any machine
        value = value * 10 + static_cast<unsigned long>(entry[position] - '0');
        ++position;
        ++digits;
    }
    if (digits == 0 || (negative && value != 0))
        return std::nullopt;
    return value;
}

std::vector<std::string_view> splitCommas(std::string_view text)
{
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const auto comma = text.find(',', start);
        parts.push_back(
            text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos)
            return parts;
        start = comma + 1;
    }
}

// CUDA_VISIBLE_DEVICES as the CUDA driver applies it (CUDA Programming Guide, "CUDA Environment
// Variables"; the details follow PyTorch's emulation and its tests in test_cuda_nvml_based_avail.py):
// unset, every GPU; empty, none; integer indices into the ordered list or "GPU-" UUIDs and
// unambiguous UUID prefixes, in the order given; the list stops before the first invalid entry;
// a GPU named twice makes CUDA expose none.
std::vector<std::size_t> applyVisibleDevices(const std::vector<PhysicalGpu>& gpus,
    const std::vector<std::size_t>& ordered, const std::map<std::string, std::string>& environment,
    std::vector<std::string>& notes)
{
    const auto it = environment.find("CUDA_VISIBLE_DEVICES");
    if (it == environment.end())
        return ordered;
    const std::string& value = it->second;
    const std::string setting = "CUDA_VISIBLE_DEVICES=" + value;
    if (trimmed(value).empty()) {
        notes.push_back("CUDA_VISIBLE_DEVICES is set but empty, so CUDA exposes no GPU");
        return {};
    }
    if (startsWith(trimmed(value), "MIG-")) {
        notes.push_back(setting + " names MIG instances, which this tool does not model: no GPU is listed");
        return {};
    }

    const bool byUuid = startsWith(trimmed(value), "GPU-");
    std::vector<std::size_t> visible;
    const std::vector<std::string_view> entries = splitCommas(value);
    for (std::size_t n = 0; n < entries.size(); ++n) {
        const std::string_view entry = trimmed(entries[n]);
        std::optional<std::size_t> chosen;
        std::string invalid;
        if (byUuid) {
            if (!startsWith(entry, "GPU-")) {
                invalid = "is not a GPU UUID (a list that starts with UUIDs takes only UUIDs)";
            } else {
                std::size_t matches = 0;
                for (const std::size_t index : ordered) {
                    if (startsWith(gpus[index].uuid, entry)) {
                        ++matches;
                        chosen = index;
                    }
                }
                if (matches == 0)
                    invalid = "matches no GPU's UUID";
                else if (matches > 1)
                    invalid = "is ambiguous: it starts the UUIDs of " + std::to_string(matches) + " GPUs";
            }
        } else if (const auto ordinal = visibleOrdinal(entry); !ordinal) {
            invalid = "is not a GPU index";
        } else if (*ordinal >= ordered.size()) {
            invalid = "is not a valid GPU index (this machine has " + std::to_string(ordered.size()) + " GPU"
                + (ordered.size() == 1 ? "" : "s") + ")";
        } else {
            chosen = ordered[*ordinal];
        }
        if (!invalid.empty()) {
            notes.push_back(setting + ": entry " + std::to_string(n + 1) + " " + quoted(entry) + " " + invalid
                + (visible.empty() ? ", so CUDA exposes no GPU"
                                   : ", so CUDA enumerates only the GPUs named before it"));
            break;
        }
        if (std::find(visible.begin(), visible.end(), *chosen) != visible.end()) {
            notes.push_back(setting + " names the same GPU twice (entry " + std::to_string(n + 1) + " "
                + quoted(entry) + "), and CUDA then exposes no GPU at all");
            return {};
        }
        visible.push_back(*chosen);
    }
    return visible;
}

} // namespace

MachineInventory detectMachine(
    GpuDriver& driver, const std::map<std::string, std::string>& environment, const CpuMemory& cpu)
{
    MachineInventory machine;
    machine.name = "this machine";
    const std::string cpuAlone = "; the inventory is the CPU alone";
    const auto visibleVariable = environment.find("CUDA_VISIBLE_DEVICES");

    if (const std::optional<std::string> reason = driver.unavailableReason()) {
        machine.notes.push_back("no GPU found: " + *reason + cpuAlone);
    } else {
        const std::vector<PhysicalGpu> gpus = driver.physicalGpus();
        std::vector<VisibleGpu> visible;
        if (gpus.empty()) {
            machine.notes.push_back("no GPU found: the NVIDIA driver reports none" + cpuAlone);
        } else if (const std::optional<std::vector<std::string>> cudaOrder = driver.cudaOrderUuids()) {
            for (const std::string& uuid : *cudaOrder) {
                VisibleGpu entry;
                entry.uuid = uuid;
                for (std::size_t i = 0; i < gpus.size(); ++i) {
                    if (gpus[i].uuid == uuid) {
                        entry.gpu = &gpus[i];
                        entry.physicalIndex = i;
                    }
                }
                visible.push_back(std::move(entry));
            }
            if (visible.empty()) {
                machine.notes.push_back(visibleVariable != environment.end()
                        ? "no GPU visible: CUDA_VISIBLE_DEVICES=" + visibleVariable->second + " hides all "
                            + std::to_string(gpus.size()) + " GPU(s) from CUDA" + cpuAlone
                        : "no GPU visible: CUDA reports none although the NVIDIA driver lists "
                            + std::to_string(gpus.size()) + cpuAlone);
            } else {
                std::string text = "device order from libcuda: CUDA's own numbering";
                if (visibleVariable != environment.end())
                    text += ", with CUDA_VISIBLE_DEVICES=" + visibleVariable->second + " applied by CUDA";
                machine.notes.push_back(text + ": " + describeMapping(visible));
            }
        } else {
            const std::vector<std::size_t> ordered = emulatedOrder(gpus, environment, machine.notes);
            const std::vector<std::size_t> chosen
                = applyVisibleDevices(gpus, ordered, environment, machine.notes);
            for (const std::size_t index : chosen)
                visible.push_back(VisibleGpu {&gpus[index], index, gpus[index].uuid});
            if (visible.empty()) {
                machine.notes.push_back("no GPU visible: CUDA_VISIBLE_DEVICES hides all "
                    + std::to_string(gpus.size()) + " GPU(s)" + cpuAlone);
            } else {
                bool identity = visible.size() == gpus.size();
                for (std::size_t i = 0; identity && i < visible.size(); ++i)
                    identity = visible[i].physicalIndex == i;
                if (visibleVariable != environment.end())
                    machine.notes.push_back("CUDA_VISIBLE_DEVICES=" + visibleVariable->second
                        + " applied: " + describeMapping(visible));
                else if (!identity)
                    machine.notes.push_back(
                        "numbering differs from nvidia-smi's: " + describeMapping(visible));
            }
        }

        for (std::size_t i = 0; i < visible.size(); ++i) {
            DeviceInfo device;
            device.tag = "cuda:" + std::to_string(i);
            device.uuid = visible[i].uuid;
            if (const PhysicalGpu* gpu = visible[i].gpu) {
                device.name = gpu->name;
                device.totalBytes = gpu->totalBytes;
                if (gpu->totalBytes > 0)
                    device.freeBytes = gpu->freeBytes;
                else
                    machine.notes.push_back("the memory of " + device.tag + " is unknown");
                if (gpu->major > 0)
                    device.computeCapability = std::pair(gpu->major, gpu->minor);
                device.pciBusId = gpu->pciBusId;
            } else {
                device.name = "unknown NVIDIA device";
                machine.notes.push_back(device.tag + " (" + visible[i].uuid
                    + ") is numbered by CUDA but not listed by NVML: its name and memory are unknown");
            }
            machine.devices.push_back(std::move(device));
        }
    }
    for (std::string& note : driver.notes())
        machine.notes.push_back(std::move(note));

    DeviceInfo processor;
    processor.tag = "cpu";
    processor.name = readCpuModelName();
    processor.totalBytes = cpu.totalBytes;
    if (cpu.totalBytes > 0)
        processor.freeBytes = cpu.availableBytes;
    else
        machine.notes.push_back("the CPU's memory is unknown (/proc/meminfo could not be read)");
    machine.devices.push_back(std::move(processor));
    return machine;
}

std::unique_ptr<GpuDriver> makeSystemGpuDriver()
{
    return std::make_unique<SystemGpuDriver>();
}

CpuMemory readCpuMemory()
{
    std::ifstream meminfo("/proc/meminfo");
    std::map<std::string, std::uint64_t> values;
    std::string line;
    while (std::getline(meminfo, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        std::istringstream rest(line.substr(colon + 1));
        std::uint64_t kibibytes = 0;
        if (rest >> kibibytes)
            values[line.substr(0, colon)] = kibibytes * 1024; // the kernel's "kB" are KiB
    }
    CpuMemory memory;
    memory.totalBytes = values["MemTotal"];
    if (const auto it = values.find("MemAvailable"); it != values.end())
        memory.availableBytes = it->second;
    else // kernels before 3.14: the estimate the kernel itself later adopted, roughly
        memory.availableBytes = values["MemFree"] + values["Buffers"] + values["Cached"];
    return memory;
}

MachineInventory detectThisMachine()
{
    std::map<std::string, std::string> environment;
    for (const char* name : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"}) {
        if (const char* value = std::getenv(name))
            environment[name] = value;
    }
    const std::unique_ptr<GpuDriver> driver = makeSystemGpuDriver();
    return detectMachine(*driver, environment, readCpuMemory());
}

// ---------------------------------------------------------------------------------------------
// Described machines

namespace {

struct SizeUnit {
    const char* name;
    std::uint64_t bytes;
};

// Largest first: formatMachineSpec() picks the first that divides a size exactly.
constexpr SizeUnit kSizeUnits[] = {
    {"TiB", 1ull << 40},
    {"TB", 1000ull * 1000 * 1000 * 1000},
    {"GiB", 1ull << 30},
    {"GB", 1000ull * 1000 * 1000},
    {"MiB", 1ull << 20},
    {"MB", 1000ull * 1000},
    {"KiB", 1ull << 10},
    {"KB", 1000ull},
};

bool equalsIgnoringCase(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i]))
            return false;
    }
    return true;
}

std::string formatSize(std::uint64_t bytes)
{
    if (bytes == 0)
        return "0";
    for (const SizeUnit& unit : kSizeUnits) {
        if (bytes % unit.bytes == 0)
            return std::to_string(bytes / unit.bytes) + unit.name;
    }
    return std::to_string(bytes);
}

bool isLowerLetter(char c)
{
    return (c >= 'a' && c <= 'z') || c == '_';
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

constexpr std::uint64_t kMaxDeviceCount = 1024;

// Sizes are computed exactly ("1.5TiB" is 1,649,267,441,664 bytes, not a double's neighbour).
__extension__ typedef unsigned __int128 WideUnsigned;

struct ParsedTag {
    std::string backend;
    std::optional<std::uint64_t> index;
    std::uint64_t count = 0; // 0: no "Nx" prefix
};

// Device tags as torch parses them (c10::Device): lower-case letters and underscores, then an
// optional ":index" without leading zeros.
Expected<ParsedTag> parseTag(std::string_view text)
{
    ParsedTag tag;
    std::size_t position = 0;
    if (!text.empty() && isDigit(text[0])) {
        while (position < text.size() && isDigit(text[position]))
            ++position;
        if (position >= text.size() || text[position] != 'x')
            return makeError("a device tag starts with a letter, as in cuda:0 (a count is written 2xcuda)");
        const std::string digits(text.substr(0, position));
        if (digits.size() > 4 || std::stoull(digits) == 0 || std::stoull(digits) > kMaxDeviceCount)
            return makeError(
                "the count " + digits + " must be between 1 and " + std::to_string(kMaxDeviceCount));
        tag.count = std::stoull(digits);
        ++position;
    }
    const std::string_view rest = text.substr(position);
    const auto colon = rest.find(':');
    const std::string_view backend = rest.substr(0, colon);
    if (backend.empty())
        return makeError("the device tag is missing: write TAG=SIZE, as in cuda:0=24GiB");
    for (const char c : backend) {
        if (c >= 'A' && c <= 'Z')
            return makeError("device tags are lower case, as torch writes them (cuda:0, not CUDA:0)");
        if (!isLowerLetter(c))
            return makeError(quoted(backend) + " is not a device type: it may hold only letters and '_'");
    }
    tag.backend = std::string(backend);
    if (colon != std::string_view::npos) {
        const std::string_view index = rest.substr(colon + 1);
        if (index.empty() || !std::all_of(index.begin(), index.end(), isDigit))
            return makeError("the index after " + quoted(std::string(backend) + ":")
                + " must be a number, as in " + std::string(backend) + ":1");
        if (index.size() > 1 && index[0] == '0')
            return makeError(
                "the index " + quoted(index) + " has a leading zero, which torch does not accept");
        if (index.size() > 6)
            return makeError("the index " + quoted(index) + " is too large");
        tag.index = std::stoull(std::string(index));
        if (tag.count > 0)
            return makeError(
                "a count goes with a bare device type (2x" + tag.backend + "), not with an index");
    }
    if (tag.backend == "cpu" && tag.index)
        return makeError("the CPU is written cpu, without an index");
    if (tag.backend == "cpu" && tag.count > 0)
        return makeError("a machine has one cpu entry; give its whole memory, as in cpu=64GiB");
    return tag;
}

bool isCudaTag(const std::string& tag)
{
    return tag.rfind("cuda:", 0) == 0;
}

std::uint64_t tagIndex(const std::string& tag)
{
    return std::stoull(tag.substr(tag.find(':') + 1));
}

} // namespace

Expected<std::uint64_t> parseByteSize(std::string_view input)
{
    const std::string_view text = trimmed(input);
    const std::string hint = ": write a size such as 24GiB, 80GB or 1.5TiB";
    if (text.empty())
        return makeError("no size given" + hint);
    if (text[0] == '-')
        return makeError("the size " + quoted(text) + " is negative" + hint);
    if (!isDigit(text[0]))
        return makeError("the size " + quoted(text) + " does not start with a number" + hint);

    std::size_t position = 0;
    WideUnsigned whole = 0;
    while (position < text.size() && isDigit(text[position])) {
        whole = whole * 10 + static_cast<unsigned>(text[position] - '0');
        if (whole > std::numeric_limits<std::uint64_t>::max())
            return makeError("the size " + quoted(text) + " is too large (at most 16 EiB)");
        ++position;
    }
    WideUnsigned fraction = 0;
    WideUnsigned scale = 1; // 10^(fraction digits)
    if (position < text.size() && text[position] == '.') {
        ++position;
        std::size_t digits = 0;
        while (position < text.size() && isDigit(text[position])) {
            if (digits < 18) { // beyond that, digits cannot change a whole byte count
                fraction = fraction * 10 + static_cast<unsigned>(text[position] - '0');
                scale *= 10;
            }
            ++digits;
            ++position;
        }
        if (digits == 0)
            return makeError("the size " + quoted(text) + " has no digits after the '.'" + hint);
    }
    const std::string_view unitText = trimmed(text.substr(position));
    std::uint64_t multiplier = 1;
    if (!unitText.empty() && !equalsIgnoringCase(unitText, "B")) {
        const SizeUnit* unit = nullptr;
        for (const SizeUnit& candidate : kSizeUnits) {
            if (equalsIgnoringCase(unitText, candidate.name))
                unit = &candidate;
        }
        if (!unit) {
            if (unitText.size() == 1
                && std::string_view("kKmMgGtT").find(unitText[0]) != std::string_view::npos) {
                const char letter
                    = static_cast<char>(unitText[0] >= 'a' ? unitText[0] - 'a' + 'A' : unitText[0]);
                return makeError("the unit " + quoted(unitText) + " in " + quoted(text)
                    + " is ambiguous: write " + letter + "B (powers of 1000) or " + letter
                    + "iB (powers of 1024)");
            }
            return makeError("unknown unit " + quoted(unitText) + " in " + quoted(text)
                + ": use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)");
        }
        multiplier = unit->bytes;
    }

    const WideUnsigned numerator = (whole * scale + fraction) * multiplier;
    if (multiplier == 1 && numerator % scale != 0)
        return makeError("the size " + quoted(text) + " is not a whole number of bytes");
    const WideUnsigned bytes = (numerator + scale / 2) / scale; // nearest byte
    if (bytes > std::numeric_limits<std::uint64_t>::max())
        return makeError("the size " + quoted(text) + " is too large (at most 16 EiB)");
    return static_cast<std::uint64_t>(bytes);
}

Expected<MachineInventory> parseMachineSpec(std::string_view spec, std::string name)
{
    const std::string example = "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB";
    if (trimmed(spec).empty())
        return makeError("the machine spec is empty: describe the devices as in " + example);

    struct Entry {
        std::string tag;
        std::uint64_t bytes = 0;
        bool opaque = false;
        std::size_t part = 0;
        std::string partText;
    };
    std::vector<Entry> entries;
    std::map<std::string, std::uint64_t> nextIndex; // per device type: after the highest index given

    std::size_t offset = 0;
    std::size_t partNumber = 0;
    for (const std::string_view raw : splitCommas(spec)) {
        ++partNumber;
        const std::string_view part = trimmed(raw);
        const std::size_t partOffset = offset + static_cast<std::size_t>(part.data() - raw.data());
        offset += raw.size() + 1;
        const auto fail = [&](const std::string& why) -> ReadError {
            const std::string where = part.empty()
                ? "part " + std::to_string(partNumber)
                : "part " + std::to_string(partNumber) + " " + quoted(part);
            return makeError("in the machine spec " + quoted(spec) + ": " + where + " (at character "
                    + std::to_string(partOffset + 1) + "): " + why,
                partOffset);
        };
        if (part.empty())
            return fail("is empty; remove the extra comma");
        const auto equals = part.find('=');
        if (equals == std::string_view::npos)
            return fail("has no '=': write TAG=SIZE, as in cuda:0=24GiB");
        const auto tag = parseTag(trimmed(part.substr(0, equals)));
        if (!tag)
            return fail(tag.error().message);
        const auto bytes = parseByteSize(part.substr(equals + 1));
        if (!bytes)
            return fail(bytes.error().message);
        if (*bytes == 0)
            return fail("a device needs a capacity above 0 bytes");

        std::vector<std::string> tags;
        std::uint64_t& next = nextIndex[tag->backend];
        if (tag->index) {
            tags.push_back(tag->backend + ":" + std::to_string(*tag->index));
            next = std::max(next, *tag->index + 1);
        } else if (tag->count > 0 || tag->backend == "cuda") {
            // "2xcuda" and a bare "cuda" continue after any cuda:N given before them.
            const std::uint64_t count = std::max<std::uint64_t>(tag->count, 1);
            if (next + count > kMaxDeviceCount)
                return fail("more than " + std::to_string(kMaxDeviceCount) + " " + tag->backend + " devices");
            for (std::uint64_t i = 0; i < count; ++i)
                tags.push_back(tag->backend + ":" + std::to_string(next++));
        } else {
            tags.push_back(tag->backend); // "mps", "cpu": one device, named as torch names it
        }
        for (std::string& deviceTag : tags) {
            for (const Entry& earlier : entries) {
                if (earlier.tag == deviceTag) {
                    const bool samePart = earlier.part == partNumber;
                    return fail(deviceTag + " is described twice"
                        + (samePart ? std::string()
                                    : " (part " + std::to_string(earlier.part) + " "
                                    + quoted(earlier.partText) + " gives it too)"));
                }
            }
            const bool opaque = tag->backend != "cuda" && tag->backend != "cpu";
            entries.push_back(Entry {std::move(deviceTag), *bytes, opaque, partNumber, std::string(part)});
        }
    }

    // CUDA devices in ordinal order, then the others as given, the CPU last.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        const auto rank = [](const Entry& e) { return isCudaTag(e.tag) ? 0 : e.tag == "cpu" ? 2 : 1; };
        if (rank(a) != rank(b))
            return rank(a) < rank(b);
        if (rank(a) == 0)
            return tagIndex(a.tag) < tagIndex(b.tag);
        return false;
    });

    MachineInventory machine;
    machine.name = std::move(name);
    machine.described = true;
    std::vector<std::uint64_t> cudaIndices;
    for (Entry& entry : entries) {
        DeviceInfo device;
        device.tag = entry.tag;
        device.totalBytes = entry.bytes;
        device.opaque = entry.opaque;
        if (isCudaTag(entry.tag)) {
            device.name = "GPU";
            cudaIndices.push_back(tagIndex(entry.tag));
        } else if (entry.tag == "cpu") {
            device.name = "CPU";
        } else {
            device.name = entry.tag;
        }
        machine.devices.push_back(std::move(device));
    }
    for (std::uint64_t expected = 0; !cudaIndices.empty() && expected < cudaIndices.back(); ++expected) {
        if (std::find(cudaIndices.begin(), cudaIndices.end(), expected) == cudaIndices.end())
            machine.notes.push_back("cuda:" + std::to_string(expected)
                + " is not described, although a higher index is: torch numbers GPUs without gaps");
    }
    return machine;
}

std::string formatMachineSpec(const MachineInventory& machine)
{
    std::string spec;
    for (const DeviceInfo& device : machine.devices) {
        if (!spec.empty())
            spec += ',';
        spec += device.tag + "=" + formatSize(device.totalBytes);
    }
    return spec;
}

// ---------------------------------------------------------------------------------------------
// Saved profiles

namespace {

std::string homeFolder()
{
    if (const char* home = std::getenv("HOME"); home && *home)
        return home;
    if (const passwd* entry = ::getpwuid(::getuid()); entry && entry->pw_dir)
        return entry->pw_dir;
    return ".";
}

// mkdir -p; folders the tool creates for configuration are private (0700, as the XDG base
// directory specification asks for the folders it describes).
Status createFolders(const std::string& folder)
{
    if (folder.empty())
        return std::nullopt;
    std::size_t position = 0;
    while (position != std::string::npos) {
        position = folder.find('/', position + 1);
        const std::string prefix = folder.substr(0, position);
        if (prefix.empty())
            continue;
        if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
            return makeError("cannot create the folder " + prefix + ": " + std::strerror(errno));
    }
    struct stat info { };
    if (::stat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
        return makeError("cannot create the folder " + folder + ": something else has that name");
    return std::nullopt;
}

} // namespace

TargetProfiles::TargetProfiles(std::string path)
    : m_path(std::move(path))
{ }

std::string TargetProfiles::defaultPath()
{
    // XDG: a relative XDG_CONFIG_HOME is invalid and must be ignored.
    std::string base;
    if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && config[0] == '/')
        base = config;
    else
        base = homeFolder() + "/.config";
    return base + "/ckpt-inspector/targets.json";
}

Status TargetProfiles::load()
{
    std::ifstream file(m_path, std::ios::binary);
    if (!file) {
        if (errno == ENOENT) {
            m_profiles.clear();
            return std::nullopt;
        }
        return makeError("cannot read the saved targets " + m_path + ": " + std::strerror(errno));
    }
    std::ostringstream content;
    content << file.rdbuf();
    const std::string text = content.str();
    const auto document = parseJson(text);
    if (!document)
        return makeError("the saved targets " + m_path + " are not valid: " + document.error().message,
            document.error().offset);
    const JsonValue* profiles = document->find("profiles");
    if (!document->isObject() || (profiles && !profiles->isObject()))
        return makeError("the saved targets " + m_path
            + " are not valid: expected {\"profiles\": {\"NAME\": \"SPEC\", ...}}");

    std::map<std::string, std::string> loaded;
    if (profiles) {
        for (const JsonMember& member : profiles->members()) {
            if (!member.value.isString())
                return makeError("the saved targets " + m_path + " are not valid: the profile "
                    + quoted(member.key) + " is not a spec string such as "
                    + quoted("cuda:0=24GiB,cpu=64GiB"));
            // Specs are checked when used, not here: one hand-edited mistake must not hide the rest.
            loaded[member.key] = member.value.toString();
        }
    }
    m_profiles = std::move(loaded);
    return std::nullopt;
}

Status TargetProfiles::save() const
{
    const auto slash = m_path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
        if (Status created = createFolders(m_path.substr(0, slash)))
            return created;
    }
    JsonWriter writer(JsonStyle::Pretty);
    writer.beginObject().key("profiles").beginObject();
    for (const auto& [name, spec] : m_profiles)
        writer.member(name, spec);
    writer.endObject().endObject();
    const std::string text = writer.takeText() + "\n";

    auto output = AtomicOutputFile::create(m_path, {}, text.size());
    if (!output)
        return makeError("cannot save the targets: " + output.error().message);
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write((*output)->fd(), text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return makeError("cannot write " + m_path + ": " + std::strerror(errno));
        written += static_cast<std::size_t>(n);
    }
    if (Status committed = (*output)->commit())
        return makeError("cannot save the targets: " + committed->message);
    return std::nullopt;
}

Status TargetProfiles::set(const std::string& name, const std::string& spec)
{
    if (trimmed(name).empty())
        return makeError("a saved target needs a name, such as \"lab box\"");
    if (trimmed(name) != name)
        return makeError("the target name " + quoted(name) + " starts or ends with spaces");
    if (name.find('=') != std::string::npos)
        return makeError(
            "the target name " + quoted(name) + " contains '=', which would read as a machine spec");
    const auto parsed = parseMachineSpec(spec, name);
    if (!parsed)
        return parsed.error();
    m_profiles[name] = std::string(trimmed(spec));
    return std::nullopt;
}

bool TargetProfiles::remove(const std::string& name)
{
    return m_profiles.erase(name) > 0;
}

std::optional<std::string> TargetProfiles::find(const std::string& name) const
{
    const auto it = m_profiles.find(name);
    if (it == m_profiles.end())
        return std::nullopt;
    return it->second;
}

Expected<MachineInventory> resolveMachine(const std::string& nameOrSpec, const TargetProfiles& profiles)
{
    const std::string text(trimmed(nameOrSpec));
    if (text.empty())
        return detectThisMachine();
    if (const std::optional<std::string> spec = profiles.find(text)) {
        auto machine = parseMachineSpec(*spec, text);
        if (!machine)
            return makeError(
                "the saved target " + quoted(text) + " holds an invalid spec: " + machine.error().message);
        return machine;
    }
    auto machine = parseMachineSpec(text);
    if (machine)
        return machine;

    std::string saved;
    for (const auto& [name, spec] : profiles.profiles())
        saved += (saved.empty() ? "" : ", ") + quoted(name);
    const std::string names = saved.empty() ? "there are no saved targets" : "saved targets: " + saved;
    if (text.find('=') == std::string::npos)
        return makeError(quoted(text) + " is neither a saved target (" + names
            + ") nor a machine spec such as cuda:0=24GiB,cpu=64GiB");
    return makeError(quoted(text) + " is not a saved target (" + names
        + "), and as a machine spec it fails: " + machine.error().message);
}

} // namespace ckpt
