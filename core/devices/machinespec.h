// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/devices/machineinventory.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace ckpt {

// A described machine: "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB", "2xcuda=80GiB,cpu=256GiB",
// "mps=32GB", "xpu:0=48GiB". Sizes: bytes, or with KB/MB/GB/TB (powers of 1000) or
// KiB/MiB/GiB/TiB (powers of 1024), fractions allowed ("1.5TiB"). Errors name the faulty part.
Expected<MachineInventory> parseMachineSpec(std::string_view spec, std::string name = "described machine");
std::string formatMachineSpec(const MachineInventory& machine); // back to the spec syntax
Expected<std::uint64_t> parseByteSize(std::string_view text);

} // namespace ckpt
