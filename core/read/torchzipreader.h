// SPDX-License-Identifier: MIT
#pragma once
// The zip reader: torch.save's zip format since 1.6 (torch-format.md §1 the container, §2 the
// pickle and its persistent ids) and TorchScript archives written by torch.jit.save (§5), whose
// constants.pkl and code are read beside data.pkl. Called by readCheckpoint once the sniffer has
// found a torch zip; fills the checkpoint's storages, tensors, tree and findings.

#include "core/read/checkpointreader.h"

namespace ckpt {

struct Checkpoint;

void readTorchZip(Checkpoint& checkpoint, const ReadOptions& options);

} // namespace ckpt
