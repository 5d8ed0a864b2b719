// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
    // The CUDA context measured on this machine's devices, by tag (core/devices/cudaruntime.h:
    // plan --measure, the app's trial): the ledger and the planner use it instead of the assumed
    // context, and say so.
    std::map<std::string, std::uint64_t> measuredContextBytes;
    std::optional<std::uint64_t> measuredContextOf(std::string_view tag) const
    {
        const auto it = measuredContextBytes.find(std::string(tag));
        return it == measuredContextBytes.end() ? std::nullopt : std::optional(it->second);
    }
    const DeviceInfo* find(std::string_view tag) const;
    std::vector<const DeviceInfo*> gpus() const; // devices whose tag starts with "cuda"
};

} // namespace ckpt
