// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/finding.h"

#include <span>
#include <vector>

namespace ckpt {

struct Checkpoint;
struct TensorEntry;
enum class CheckpointFormat;

// One dtype-needs-newer-torch finding per dtype of the checkpoint's tensors that an older torch
// cannot load (docs/dtypes.md): from a torch.save file, the first release whose torch.load rebuilds
// it (dtypes without a legacy storage class need _rebuild_tensor_v3, torch 2.2); from safetensors,
// the first release that has the dtype (safetensors.torch maps its names to torch.<dtype>).
void addDtypeReleaseFindings(Checkpoint& checkpoint);
// The same for tensors read from one file of `format` (a shard read straight into its set).
void addDtypeReleaseFindings(
    CheckpointFormat format, std::span<const TensorEntry> tensors, std::vector<Finding>& findings);

} // namespace ckpt
