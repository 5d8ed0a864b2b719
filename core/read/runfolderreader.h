// SPDX-License-Identifier: MIT
#pragma once
// A training run's folder read as one document (docs/runfolder.md): Hugging Face Trainer's
// checkpoint-N/, OLMo's model.pt/optim.pt/train.pt, Lightning's last.ckpt beside epoch=*.ckpt,
// DeepSpeed's global_stepN/ with the `latest` that names it. Each checkpoint file is a node below
// the root with its own format, findings and safety verdict; a sharded set inside the folder is
// one node; files that are no checkpoint are listed (and copied when the folder is saved).

#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

class JsonValue;

// Whether `folder` is a run folder rather than one model: it holds checkpoint files besides (or
// instead of) one set of model weights, or a DeepSpeed `latest` naming a step folder. A folder that
// is only a model (shards and their index, or model.safetensors / pytorch_model.bin alone) is not.
//
// To tell, it parses each index JSON of the folder; `parsedIndexes`, when given, receives those
// that parsed (by name relative to the folder, "model.safetensors.index.json"), so that the
// sharded reader does not read and parse the same index again (issue 28).
using ParsedIndexes = std::vector<std::pair<std::string, std::shared_ptr<const JsonValue>>>;
bool isRunFolder(const std::string& folder, ParsedIndexes* parsedIndexes = nullptr);

// Reads every file of the folder (and of the step folder `latest` names) and returns one
// checkpoint whose shardSet has the layout ShardLayout::RunFolder. A file that cannot be read is a
// finding naming it; the others are still shown.
Checkpoint readRunFolder(const std::string& folder, const ReadOptions& options = {});

} // namespace ckpt
