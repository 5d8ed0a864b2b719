// SPDX-License-Identifier: MIT
#pragma once
// A remapped copy of a bundle (docs/bundles.md): a new archive of the same kind (tar, compressed
// tar through the same filters, zip, one compressed file) whose checkpoint members that the plan
// moves are rewritten by the remap writer (writeRemappedCopy: device tags only, storages byte for
// byte, each read back by the one verifier), every other member copied unchanged in the input's
// order. Written atomically next to the target, never over the input; read back before it takes
// its name: the same members in order, the copied ones byte for byte, the rewritten ones the
// verified files, each recording the planned devices.

#include "core/base/expected.h"
#include "core/write/remapwriter.h"
#include "core/write/shardedwriter.h"

#include <optional>
#include <string>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

// Why a bundle cannot be rewritten (damaged, no checkpoint member, none that records devices), or
// nothing when it can.
std::optional<std::string> whyBundleCannotBeRemapped(const Checkpoint& checkpoint);

// The result's `shards` are the rewritten members (outputPath "OUT!/member"), `filesCopied` the
// regular members copied unchanged, `outputFolder` the new bundle.
Expected<ShardedRemapResult> writeRemappedBundle(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const RemapOptions& options = {});

} // namespace ckpt
