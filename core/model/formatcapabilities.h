// SPDX-License-Identifier: MIT
#pragma once
// What the tool can do with each format it knows, one row per format: read it, write a copy with a
// placement plan (or only export the plan), extract or convert its weights, and which judgements
// apply. Adding a format is one row here and one reader in core/read (docs/architecture.md, "Adding
// a format"); code that decides by format asks this table instead of switching on the enum, and
// tests/core/tst_formatcapabilities.cpp holds every row to what the code really does.

#include "core/model/checkpoint.h"
#include "core/model/shardset.h"

#include <optional>
#include <span>
#include <string_view>

namespace ckpt {

// What saving a copy with a placement plan writes.
enum class CopyWithPlan {
    None, // nothing: not a checkpoint, or a single file that records no device
    Rewritten, // a copy in the same format with the plan's device tags (zip records copied byte for byte)
    ConvertedToZip, // a copy in torch.save's zip format (the input's own format is not written)
    PlanExported, // the format records no device: the plan is exported (device_map, max_memory) instead
};
const char* copyWithPlanName(CopyWithPlan copy); // "none", "rewritten", "converted-to-zip", "plan-exported"

struct FormatCapabilities {
    // Which format the row is: a file format, or a layout of several files (then `format` is what
    // its merged checkpoint reads as, when that is one format).
    std::optional<CheckpointFormat> format;
    std::optional<ShardLayout> layout;
    std::string_view name; // checkpointFormatName / shardLayoutName: "torch-zip", "hf-bin-shards"
    std::string_view title; // for a person: "torch.save zip archive (torch 1.6 and later)"
    std::string_view sections; // where docs/torch-format.md describes it: "§1, §2"
    bool readable = false; // readCheckpoint gives its storages and tensors
    bool recordsDevices = false; // its storages carry a device tag, so a plan changes the file
    bool pickled = false; // holds pickles a loader would run: the safety verdict rates them
    bool torchLoadSimulated = false; // torch.load is how it is opened: the load simulation applies
    bool weightsOnlyJudged = false; // torch.load(weights_only=True)'s unpickler reads its pickles
    bool unpicklerImportsClasses = false; // weights_only=False imports its globals' Python modules
    CopyWithPlan copyWithPlan = CopyWithPlan::None;
    bool extractable = false; // `extract` writes its state_dict as a torch zip (one file)
    bool exportsWeights = false; // `convert OUT.safetensors` / Export Weights writes its tensors
    bool convertsToTorch = false; // `convert IN OUT.pt` writes a torch file from it
    // When it records no device: why, for a person (empty otherwise).
    std::string_view noDeviceReason;
    // A caveat on the row for some files of the format, for a person (empty when none).
    std::string_view caveat;
};

// Every row, file formats first, NotACheckpoint last.
std::span<const FormatCapabilities> formatCapabilityTable();
// The row of a file format (a format only a folder has, DCP, gives that folder's row).
const FormatCapabilities& formatCapabilities(CheckpointFormat format);
const FormatCapabilities& formatCapabilities(ShardLayout layout);
// The row for what was read: its shard layout when it is a checkpoint of several files, else its
// format (a folder that held no checkpoint is NotACheckpoint's row).
const FormatCapabilities& formatCapabilities(const Checkpoint& checkpoint);

} // namespace ckpt
