#pragma once
// The placement options `remap` takes (--map, --tensor, --module), shared by every command that
// writes a torch file, so a plan is said the same way everywhere.
#include "core/plan/placementplan.h"

#include <optional>
#include <string>
#include <vector>

namespace ckpt {
struct Checkpoint;
}

namespace cli {

struct PlanOptions {
    std::vector<ckpt::PlacementRule> rules;

    // Consumes args[i] (and its value) when it is a plan option. Returns true when consumed;
    // `error` is set when the option was malformed.
    bool consume(const std::vector<std::string>& args, std::size_t& i, const std::string& command,
        std::optional<std::string>& error);

    // Applies the rules to `plan`, printing notes to stderr; false (after a message) when a tensor
    // or module rule names nothing.
    bool apply(
        const ckpt::Checkpoint& checkpoint, ckpt::PlacementPlan& plan, const std::string& command) const;
};

} // namespace cli
