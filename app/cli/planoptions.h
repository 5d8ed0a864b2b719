// SPDX-License-Identifier: MIT
#pragma once
// The placement options `remap` takes (--map, --tensor, --module), shared by every command that
// writes a torch file, so a plan is said the same way everywhere.
#include "core/plan/placementplan.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ckpt {
struct Checkpoint;
}

namespace cli {

struct PlanOptions {
    // In command-line order across the three options: later rules win, so
    // `--module enc=cuda:0 --tensor enc.w=cpu` differs from the same two the other way round.
    std::vector<ckpt::PlacementRule> rules;

    // Adds --map, --tensor and --module to `command`. CLI11 keeps each option's values apart, so
    // every value is turned into a rule as it is parsed (trigger_on_parse), which keeps the order
    // in which they were given; a malformed rule is a usage error naming the option.
    void addTo(CLI::App& command);

    // Applies the rules to `plan`, printing notes to stderr; false (after a message) when a tensor
    // or module rule names nothing.
    bool apply(
        const ckpt::Checkpoint& checkpoint, ckpt::PlacementPlan& plan, const std::string& command) const;
};

} // namespace cli
