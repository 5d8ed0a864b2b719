#pragma once
// The files of a checkpoint folder, for `convert DIR` — a minimal stand-in until the core reads
// multi-file checkpoints itself (then this file goes, and convert asks the core).
#include "core/base/expected.h"

#include <string>
#include <vector>

namespace cli {

// The checkpoint files of `folder`: those a *.index.json's weight_map names (the
// model.safetensors / pytorch_model.bin index transformers writes), otherwise every *.safetensors,
// *.bin, *.pt, *.pth and *.ckpt file in it, sorted by name.
ckpt::Expected<std::vector<std::string>> checkpointFilesIn(const std::string& folder);

bool isFolder(const std::string& path);

} // namespace cli
