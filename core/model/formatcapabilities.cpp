// SPDX-License-Identifier: MIT
// The format capability table (formatcapabilities.h).
#include "core/model/formatcapabilities.h"

#include <deque>
#include <vector>

namespace ckpt {

namespace {

constexpr std::string_view kSafetensorsNoDevice
    = "safetensors records no device: the device is chosen when it is loaded (safetensors' device "
      "argument, from_pretrained's device_map)";
constexpr std::string_view kDcpNoDevice
    = "a torch.distributed.checkpoint folder records no device: DCP saves CPU copies and loads into a "
      "state_dict whose tensors are already placed";

FormatCapabilities row(CheckpointFormat format, std::string_view title, std::string_view sections)
{
    FormatCapabilities capabilities;
    capabilities.format = format;
    capabilities.name = checkpointFormatName(format);
    capabilities.title = title;
    capabilities.sections = sections;
    return capabilities;
}

FormatCapabilities row(ShardLayout layout, std::optional<CheckpointFormat> format, std::string_view title,
    std::string_view sections)
{
    FormatCapabilities capabilities;
    capabilities.layout = layout;
    capabilities.format = format;
    capabilities.name = shardLayoutName(layout);
    capabilities.title = title;
    capabilities.sections = sections;
    return capabilities;
}

// One row per format and layout, appended in any order; the not-a-checkpoint row comes last (the
// answer for anything unknown). A deque: the references the rows are filled through stay valid.
std::vector<FormatCapabilities> makeTable()
{
    std::deque<FormatCapabilities> table;
    auto& zip = table.emplace_back(
        row(CheckpointFormat::TorchZip, "torch.save zip archive (torch 1.6 and later)", "§1, §2"));
    zip.readable = zip.recordsDevices = zip.pickled = zip.torchLoadSimulated = true;
    zip.weightsOnlyJudged = zip.unpicklerImportsClasses = true;
    zip.copyWithPlan = CopyWithPlan::Rewritten;
    zip.extractable = zip.exportsWeights = true;

    auto& legacy = table.emplace_back(row(CheckpointFormat::TorchLegacy,
        "torch.save legacy stream (_use_new_zipfile_serialization=False, before 1.6)", "§4.1, §4.2"));
    legacy.readable = legacy.recordsDevices = legacy.pickled = legacy.torchLoadSimulated = true;
    legacy.weightsOnlyJudged = legacy.unpicklerImportsClasses = true;
    legacy.copyWithPlan = CopyWithPlan::ConvertedToZip;
    legacy.extractable = legacy.exportsWeights = true;

    auto& tar = table.emplace_back(row(CheckpointFormat::TorchTar, "PyTorch 0.1.x tar", "§4.3"));
    tar.readable = tar.recordsDevices = tar.pickled = tar.torchLoadSimulated = true;
    tar.weightsOnlyJudged = tar.unpicklerImportsClasses = true;
    tar.copyWithPlan = CopyWithPlan::ConvertedToZip;
    tar.extractable = tar.exportsWeights = true;
    tar.caveat = "a tar file that keeps its tensors in a 'tensors' member is read, but not written";

    auto& script = table.emplace_back(
        row(CheckpointFormat::TorchScript, "TorchScript archive (torch.jit.save)", "§5"));
    script.readable = script.recordsDevices = script.pickled = script.torchLoadSimulated = true;
    script.weightsOnlyJudged = true; // torch 2.6+'s weights_only refuses it; jit imports no Python code
    script.copyWithPlan = CopyWithPlan::Rewritten;
    script.extractable = script.exportsWeights = true;

    auto& safetensors = table.emplace_back(row(CheckpointFormat::Safetensors, "safetensors file", "§8"));
    safetensors.readable = true;
    safetensors.torchLoadSimulated = true; // torch 2.x routes a .safetensors path to safetensors
    safetensors.extractable = safetensors.exportsWeights = safetensors.convertsToTorch = true;
    safetensors.noDeviceReason = kSafetensorsNoDevice;

    auto& bin = table.emplace_back(row(ShardLayout::HuggingFaceBin, CheckpointFormat::TorchZip,
        "Hugging Face .bin shards (pytorch_model.bin.index.json)", "§7.2"));
    bin.readable = bin.recordsDevices = bin.pickled = bin.torchLoadSimulated = true;
    bin.weightsOnlyJudged = bin.unpicklerImportsClasses = true;
    bin.copyWithPlan = CopyWithPlan::Rewritten; // a folder of remapped .bin shards and its index
    bin.exportsWeights = bin.convertsToTorch = true; // convert DIR -o OUT.pt: one state_dict

    auto& safetensorsSet
        = table.emplace_back(row(ShardLayout::HuggingFaceSafetensors, CheckpointFormat::Safetensors,
            "Hugging Face safetensors shards (model.safetensors.index.json)", "§7.2, §8"));
    safetensorsSet.readable = true;
    safetensorsSet.copyWithPlan = CopyWithPlan::PlanExported;
    safetensorsSet.exportsWeights = safetensorsSet.convertsToTorch = true;
    safetensorsSet.noDeviceReason = "safetensors shards record no device: the device is chosen when they are "
                                    "loaded (from_pretrained's device_map and max_memory)";

    auto& dcp = table.emplace_back(row(ShardLayout::Distributed, CheckpointFormat::Distributed,
        "torch.distributed.checkpoint folder (.metadata and .distcp files)", "§7.1"));
    dcp.readable = true;
    dcp.pickled = true; // .metadata, read with pickle.load, never torch.load
    dcp.copyWithPlan = CopyWithPlan::PlanExported;
    dcp.exportsWeights = dcp.convertsToTorch = true;
    dcp.noDeviceReason = kDcpNoDevice;

    auto& runFolder = table.emplace_back(row(ShardLayout::RunFolder, std::nullopt,
        "a training run's folder (Trainer checkpoint-N, OLMo, Lightning, DeepSpeed global_stepN)",
        "docs/runfolder.md"));
    runFolder.readable = runFolder.recordsDevices = runFolder.pickled = runFolder.torchLoadSimulated = true;
    runFolder.weightsOnlyJudged = runFolder.unpicklerImportsClasses = true;
    // A new folder: the files whose devices change rewritten, the rest copied byte for byte.
    runFolder.copyWithPlan = CopyWithPlan::Rewritten;
    runFolder.caveat = "each file is its own document: what torch.load does is judged file by file";

    // pickle.dump of tensors: each storage is a torch.save file inside bytes
    // (torch.storage._load_from_bytes); docs/formats.md, "Tensors saved inside bytes".
    auto& plain = table.emplace_back(row(CheckpointFormat::PlainPickle,
        "pickle.dump of tensors (storages as torch.save files inside bytes)", "formats.md"));
    plain.readable = plain.recordsDevices = plain.pickled = plain.torchLoadSimulated = true;
    plain.unpicklerImportsClasses = true;
    plain.copyWithPlan = CopyWithPlan::Rewritten; // the bytes of each moved storage rewritten
    plain.extractable = plain.exportsWeights = true;

    auto& scriptJson = table.emplace_back(row(CheckpointFormat::TorchScriptJson,
        "TorchScript model.json archive (torch.jit.save of PyTorch 1.0-1.3)",
        "formats.md: model.json TorchScript"));
    scriptJson.readable = scriptJson.recordsDevices = true; // every TensorDef records its device
    scriptJson.torchLoadSimulated = true; // torch.load fails on it: no data.pkl
    scriptJson.extractable = scriptJson.exportsWeights = true;
    scriptJson.pickled = true; // attributes.pkl (proto_version 2+), rated like every pickle
    // Rewritten: the copy's model.json gives every TensorDef its planned device, every other
    // record copied byte for byte (core/write/remapwriter.cpp, remappedModelJson).
    scriptJson.copyWithPlan = CopyWithPlan::Rewritten;
    scriptJson.caveat
        = "no torch here loads this layout (Debian's torch 1.13 and torch 2.x lack its importer): "
          "remapped copies are checked by this tool's reader, not by torch; proto_version 1 files "
          "(PyTorch 1.0) hold no attributes.pkl, so no pickle";

    auto& exported = table.emplace_back(row(CheckpointFormat::ExportArchive,
        "torch.export archive (.pt2: PT2 archive, or the torch 2.1-2.5 layout)", "formats-pt2.md"));
    exported.readable = exported.recordsDevices = exported.pickled = true;
    exported.extractable = exported.exportsWeights = true; // its weights, constants and sample inputs
    // Rewritten: the copy's weights and constants configs record the planned devices, nested
    // torch.save files whose devices change (use_pickle weights, the 2.1-2.5 layout's state dict
    // and constants) are rewritten by the zip remap writer, every other member copied byte for
    // byte (core/write/pt2writer.h).
    exported.copyWithPlan = CopyWithPlan::Rewritten;
    exported.caveat
        = "a copy is written for the PT2 archive and the torch 2.1-2.5 layout; sample inputs keep their "
          "devices, and an AOTInductor package's own weights are not moved (its compiled loader places them)";

    auto& bundle = table.emplace_back(row(ShardLayout::Bundle, std::nullopt,
        "an archive that carries checkpoint files (AllenNLP model.tar.gz, NeMo .nemo, a zip of checkpoints)",
        "docs/bundles.md"));
    bundle.readable = bundle.recordsDevices = bundle.pickled = true;
    bundle.weightsOnlyJudged = bundle.unpicklerImportsClasses = true;
    bundle.copyWithPlan = CopyWithPlan::Rewritten; // a new bundle of the same kind, members rewritten
    // extract: the one checkpoint member's state_dict (or the one --member names); convert: every
    // member's tensors to safetensors (docs/bundles.md).
    bundle.extractable = bundle.exportsWeights = true;
    bundle.caveat = "torch.load does not open the archive itself (its framework extracts the members "
                    "first), so no load is simulated; each checkpoint member is rated and remapped";

    table.push_back(
        row(CheckpointFormat::NotACheckpoint, "not a checkpoint (an LFS pointer, HTML, a PNG, ...)", ""));
    return {table.begin(), table.end()};
}

const std::vector<FormatCapabilities>& table()
{
    static const std::vector<FormatCapabilities> rows = makeTable();
    return rows;
}

} // namespace

const char* copyWithPlanName(CopyWithPlan copy)
{
    switch (copy) {
    case CopyWithPlan::None:
        return "none";
    case CopyWithPlan::Rewritten:
        return "rewritten";
    case CopyWithPlan::ConvertedToZip:
        return "converted-to-zip";
    case CopyWithPlan::PlanExported:
        return "plan-exported";
    }
    return "none";
}

std::span<const FormatCapabilities> formatCapabilityTable()
{
    return table();
}

const FormatCapabilities& formatCapabilities(CheckpointFormat format)
{
    for (const FormatCapabilities& capabilities : table())
        if (!capabilities.layout && capabilities.format == format)
            return capabilities;
    for (const FormatCapabilities& capabilities : table()) // a format only a folder has (DCP)
        if (capabilities.format == format)
            return capabilities;
    return table().back();
}

const FormatCapabilities& formatCapabilities(ShardLayout layout)
{
    for (const FormatCapabilities& capabilities : table())
        if (capabilities.layout == layout)
            return capabilities;
    return table().back();
}

const FormatCapabilities& formatCapabilities(const Checkpoint& checkpoint)
{
    if (checkpoint.format == CheckpointFormat::NotACheckpoint)
        return formatCapabilities(CheckpointFormat::NotACheckpoint);
    if (checkpoint.shardSet)
        return formatCapabilities(checkpoint.shardSet->layout);
    return formatCapabilities(checkpoint.format);
}

} // namespace ckpt
