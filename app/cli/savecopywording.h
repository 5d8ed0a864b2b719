// SPDX-License-Identifier: MIT
#pragma once
// How the command line names the two ways out of the save task's refusal of a dangerous file
// (core/tasks/savecopy.h, rendered by core/report/savecopyreport.h): `remap` and `plan --save`.
#include "terminal.h"

#include "core/model/checkpoint.h"
#include "core/report/savecopyreport.h"

#include <string>

namespace cli {

inline ckpt::SaveCopyWording saveCopyWordingFor(
    const ckpt::Checkpoint& checkpoint, const std::string& file, const std::string& override)
{
    ckpt::SaveCopyWording wording;
    wording.override = override;
    wording.weightsAlone = checkpoint.shardSet ? "`ckpt-inspect convert " + shown(file)
            + " -o weights.safetensors` or `-o weights.pt` (tensors only, no code)"
                                               : "`ckpt-inspect extract " + shown(file)
            + " -o weights.pt` (tensors only: it loads with torch.load(weights_only=True))";
    return wording;
}

} // namespace cli
