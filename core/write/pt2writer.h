// SPDX-License-Identifier: MIT
#pragma once
// The remapped copy of a torch.export PT2 archive (docs/formats-pt2.md): the weights and constants
// configs (`data/weights/<model>_weights_config.json`, `data/constants/<model>_constants_config.json`)
// are rewritten with each raw record's planned device in its names' tensor_meta.device; every
// other member (weights, constants, the program, sample inputs, nested torch.save files,
// AOTInductor code) is copied byte for byte, in the input's order, with torch's zip framing. The
// copy is read back by the read-back verifier before it takes its name. Reached through
// core/tasks/savecopy, never from the faces.

#include "core/base/expected.h"
#include "core/write/remapwriter.h"

#include <string>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

// Why this export archive cannot be remapped (the torch 2.1-2.5 layout, whose devices live in
// nested torch.save files), or nothing.
Status whyExportArchiveCannotBeRemapped(const Checkpoint& checkpoint);

// Writes the copy. Storages kept in nested torch.save files keep their recorded devices (their
// RemappedStorage says so: planned == recorded): sample inputs whatever the plan; a plan that moves
// a use_pickle or AOTInductor weight is refused, naming it.
Expected<RemapResult> writeRemappedExportArchive(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const RemapOptions& options = {});

} // namespace ckpt
