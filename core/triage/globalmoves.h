// SPDX-License-Identifier: MIT
#pragma once
// Library moves of pickled globals: a class the pickle names where the saving library version kept
// it and another version no longer does (torch-format.md §2.1: the unpickler imports every GLOBAL's
// module under weights_only=False). Defined in globalmoves.cpp.

#include "core/base/finding.h"

#include <vector>

namespace ckpt {

struct Checkpoint;

// Globals under a module path that another library version keeps elsewhere (numpy._core vs
// numpy.core, pytorch_lightning vs lightning.pytorch), with the remap --rename-global that fixes it.
std::vector<Finding> checkKnownGlobalMoves(const Checkpoint& checkpoint);

} // namespace ckpt
