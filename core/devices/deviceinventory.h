#pragma once

#include "core/base/expected.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

// One device a plan can put storages on.
struct DeviceInfo {
    std::string tag; // as torch writes it: "cpu", "cuda:0", "mps", "xpu:1"
    std::string name; // "NVIDIA H200", "CPU", or the described name
    std::uint64_t totalBytes = 0;
    std::optional<std::uint64_t> freeBytes; // known for detected devices
    std::optional<std::pair<int, int>> computeCapability; // CUDA devices
    std::string uuid; // CUDA devices ("GPU-...")
    std::string pciBusId; // CUDA devices ("00000000:3B:00.0")
    bool opaque = false; // a described tag the tool knows nothing about beyond its capacity
};

// The devices of one machine: this one as detected, or one a person described.
struct MachineInventory {
    std::string name; // "this machine" or a saved profile's name
    bool described = false; // from a spec, not detected
    std::vector<DeviceInfo> devices; // CUDA devices in torch's ordinal order, then others, the CPU last
    std::vector<std::string> notes; // why no GPU was found, which variables were applied, ...
    const DeviceInfo* find(std::string_view tag) const;
    std::vector<const DeviceInfo*> gpus() const; // devices whose tag starts with "cuda"
};

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

// A described machine: "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB", "2xcuda=80GiB,cpu=256GiB",
// "mps=32GB", "xpu:0=48GiB". Sizes: bytes, or with KB/MB/GB/TB (powers of 1000) or
// KiB/MiB/GiB/TiB (powers of 1024), fractions allowed ("1.5TiB"). Errors name the faulty part.
Expected<MachineInventory> parseMachineSpec(std::string_view spec, std::string name = "described machine");
std::string formatMachineSpec(const MachineInventory& machine); // back to the spec syntax
Expected<std::uint64_t> parseByteSize(std::string_view text);

// Described machines saved by name ("lab box"), in a JSON file:
// $XDG_CONFIG_HOME/ckpt-inspector/targets.json (default ~/.config/...). Shared by the CLI and the app.
class TargetProfiles {
public:
    explicit TargetProfiles(std::string path = defaultPath());
    static std::string defaultPath();

    Status load(); // a missing file is an empty list, not an error
    Status save() const; // atomically (temporary file + rename)
    Status set(const std::string& name, const std::string& spec); // validates the spec
    bool remove(const std::string& name);
    std::optional<std::string> find(const std::string& name) const;
    const std::map<std::string, std::string>& profiles() const { return m_profiles; }

private:
    std::string m_path;
    std::map<std::string, std::string> m_profiles;
};

// The machine a command means by SPEC: a saved profile's name, a spec, or (empty) this machine.
Expected<MachineInventory> resolveMachine(const std::string& nameOrSpec, const TargetProfiles& profiles);

} // namespace ckpt
