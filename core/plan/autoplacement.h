// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

struct Checkpoint;
struct MachineInventory;

enum class PlacementStrategy {
    Sequential, // fill cuda:0, then cuda:1, ..., then the CPU (accelerate's "sequential")
    Balanced, // spread evenly over the GPUs, then the CPU (accelerate's "balanced")
};

struct AutoPlacementOptions {
    PlacementStrategy strategy = PlacementStrategy::Balanced;
    // Tensors are kept together by name prefix of this many dotted components (accelerate's
    // no_split idea: never split a transformer block). -1 chooses it: the prefix up to and
    // including the first numeric component ("model.layers.3"), else two components.
    int noSplitDepth = -1;
    LedgerAssumptions assumptions;
};

// A set of tensors placed together: one block, or several that share storages (tied weights).
struct PlacementGroup {
    std::vector<std::string> prefixes; // name prefixes (or whole names) it covers
    std::vector<std::uint32_t> storages; // each storage in exactly one group
    std::uint64_t bytes = 0;
    std::string device;
    std::string reason; // why it went where it went
};

struct AutoPlacement {
    std::vector<PlacementGroup> groups;
    std::vector<PlacementRule> rules; // apply to a PlacementPlan, in order
    std::vector<std::string> didNotFit; // groups that fit nowhere (left on the CPU), with sizes
    std::vector<std::string> summary; // budgets per device and other facts of the run
    // Hugging Face style device_map: prefix -> device (GPU ordinal as a number, "cpu", or a tag).
    std::map<std::string, std::string> deviceMap;
};

// Places every storage of the checkpoint on the machine's devices by the chosen strategy,
// keeping no-split groups and storage-sharing groups together and keeping each GPU's CUDA
// context and headroom free, and explains each decision.
Expected<AutoPlacement> placeAutomatically(
    const Checkpoint& checkpoint, const MachineInventory& machine, const AutoPlacementOptions& options = {});

// The name prefix a tensor is grouped by, for a no-split depth (-1: automatic).
std::string groupPrefix(std::string_view tensorName, int noSplitDepth);

} // namespace ckpt
