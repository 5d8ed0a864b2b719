// SPDX-License-Identifier: MIT
// This machine's devices as torch would number them: the driver's GPUs put in CUDA's order (asked
// of libcuda, or emulated from CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES), then the CPU with
// /proc/meminfo's memory.
#include "core/devices/detectmachine.h"
#include "core/devices/devicetext.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

namespace ckpt {

namespace {

using devicetext::quoted;
using devicetext::splitCommas;
using devicetext::trimmed;

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
    if (trimmed(value).starts_with("MIG-")) {
        notes.push_back(setting + " names MIG instances, which this tool does not model: no GPU is listed");
        return {};
    }

    const bool byUuid = trimmed(value).starts_with("GPU-");
    std::vector<std::size_t> visible;
    const std::vector<std::string_view> entries = splitCommas(value);
    for (std::size_t n = 0; n < entries.size(); ++n) {
        const std::string_view entry = trimmed(entries[n]);
        std::optional<std::size_t> chosen;
        std::string invalid;
        if (byUuid) {
            if (!entry.starts_with("GPU-")) {
                invalid = "is not a GPU UUID (a list that starts with UUIDs takes only UUIDs)";
            } else {
                std::size_t matches = 0;
                for (const std::size_t index : ordered) {
                    if (std::string_view(gpus[index].uuid).starts_with(entry)) {
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

} // namespace ckpt
