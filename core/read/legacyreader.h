// SPDX-License-Identifier: MIT
#pragma once
// The legacy stream reader: torch.save(_use_new_zipfile_serialization=False) and everything before
// 1.6 (torch-format.md §4.1 the layout: magic number, protocol, sys_info, the main pickle, the key
// list, each storage's bytes; §4.2 its persistent ids). Called by readCheckpoint.

#include "core/read/checkpointreader.h"

namespace ckpt {

struct Checkpoint;

void readTorchLegacy(Checkpoint& checkpoint, const ReadOptions& options);

} // namespace ckpt
