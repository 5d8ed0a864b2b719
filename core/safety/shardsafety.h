// SPDX-License-Identifier: MIT
#pragma once
// The safety verdict of a checkpoint of several files (torch-format.md §7): every usable shard, and
// DCP's .metadata, rated on its own bytes by ratePickleSafety (pickleverdict.h). Defined in
// shardsafety.cpp.

#include "core/safety/pickleverdict.h"

namespace ckpt {

struct Checkpoint;

// The pickle safety verdict of a checkpoint of several files: every usable shard (and DCP's
// .metadata) rated on its own bytes; the worst rating, with every shard's findings named by shard.
SafetyVerdict rateShardSafety(const Checkpoint& checkpoint);

} // namespace ckpt
