// SPDX-License-Identifier: MIT
#pragma once

namespace ckpt {

struct Checkpoint;

// One dtype-needs-newer-torch finding per dtype of the checkpoint's tensors that an older torch
// cannot load (docs/dtypes.md): from a torch.save file, the first release whose torch.load rebuilds
// it (dtypes without a legacy storage class need _rebuild_tensor_v3, torch 2.2); from safetensors,
// the first release that has the dtype (safetensors.torch maps its names to torch.<dtype>).
void addDtypeReleaseFindings(Checkpoint& checkpoint);

} // namespace ckpt
