// SPDX-License-Identifier: MIT
#pragma once
// The PyTorch 0.1.x tar reader (torch-format.md §4.3): the members sys_info, pickle, tensors and
// storages inside a POSIX tar. Called by readCheckpoint.

#include "core/read/checkpointreader.h"

namespace ckpt {

struct Checkpoint;

void readTorchTar(Checkpoint& checkpoint, const ReadOptions& options);

} // namespace ckpt
