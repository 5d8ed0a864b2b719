// SPDX-License-Identifier: MIT
// ckpt-inspect convert: torch checkpoints to safetensors (one file or shards) and safetensors back
// to a torch.save file, without running any pickle.
#include "command.h"
#include "extractoptions.h"
#include "planoptions.h"

#include "core/devices/deviceinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/read/tensorlocator.h"
#include "core/report/extractreport.h"
#include "core/write/extractwriter.h"
#include "core/write/safetensorswriter.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

const char* kConvertUsage
    = "usage: ckpt-inspect convert FILE|DIR -o OUT.safetensors|OUTDIR [--max-shard-size SIZE] [--select "
      "PREFIX]...\n"
      "                            [--root PATH] [--json]\n"
      "       ckpt-inspect convert FILE.safetensors -o OUT.pt [--device DEV] [--map ...] [--tensor ...]\n"
      "                            [--module ...] [--select PREFIX]... [--json]\n";

bool endsWith(const std::string& text, const std::string& suffix)
{
    return text.size() >= suffix.size()
        && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int toTorch(const std::string& file, const std::string& output, const PlanOptions& planOptions,
    ckpt::ExtractOptions options, bool json)
{
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    if (checkpoint.format != ckpt::CheckpointFormat::Safetensors) {
        std::cerr << "ckpt-inspect convert: " << file
                  << " is not a safetensors file; to write a torch file from a torch checkpoint use extract, "
                     "to write safetensors name OUT.safetensors or give --max-shard-size\n";
        return 64;
    }
    if (checkpoint.hasErrors()) {
        for (const ckpt::Finding& finding : checkpoint.findings)
            if (finding.severity == ckpt::Severity::Error) {
                std::cerr << "ckpt-inspect convert: " << file << ": " << finding.message << "\n";
                return 2;
            }
    }
    ckpt::PlacementPlan plan(checkpoint);
    if (!planOptions.apply(checkpoint, plan, "convert"))
        return 2;
    options.root = "";
    auto result = ckpt::writeExtractedStateDict(checkpoint, plan, output, options);
    if (!result) {
        std::cerr << "ckpt-inspect convert: " << result.error().message << "\n";
        return 2;
    }
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writeExtractJson(writer, file, checkpoint, *result);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writeExtractText(std::cout, *result);
    }
    return 0;
}

// One file of the input and what of it is written: a single file, each shard of a folder, or
// (DCP) the folder's .metadata with its entries.
struct ConvertedInput {
    std::string file;
    ckpt::StateDictSelection selection;
};

bool underPrefix(const std::string& name, const std::string& prefix)
{
    return prefix.empty() || name == prefix || (name.starts_with(prefix) && name[prefix.size()] == '.');
}

// A DCP folder: every tensor entry, read from its chunk's torch.save archive inside the .distcp
// file; entries that hold pickled values (BytesStorageMetadata) are not tensors and are dropped
// unread. --root and --select apply to the fully qualified names as they do to a state_dict's.
ckpt::Expected<ConvertedInput> selectDcpTensors(const std::shared_ptr<const ckpt::Checkpoint>& checkpoint,
    const std::vector<ckpt::LocatedTensor>& located, const ckpt::ExtractOptions& options,
    std::vector<ckpt::SafetensorsSource>& sources)
{
    ConvertedInput input;
    input.file = checkpoint->shardSet->indexPath;
    const std::string root = options.root.value_or("");
    input.selection.root = root;
    auto relative
        = [&](const std::string& name) { return root.empty() ? name : name.substr(root.size() + 1); };
    auto selected = [&](const std::string& name) {
        if (!underPrefix(name, root) || name == root)
            return false;
        if (options.select.empty())
            return true;
        for (const std::string& prefix : options.select)
            if (underPrefix(relative(name), prefix))
                return true;
        return false;
    };
    for (const ckpt::DcpEntry& entry : checkpoint->shardSet->dcp->entries)
        if (entry.isBytes)
            input.selection.droppedObjects.push_back(
                {entry.fqn, "a pickled value (BytesStorageMetadata), not a tensor; not unpickled"});
    for (std::uint32_t t = 0; t < checkpoint->tensors.size(); ++t) {
        const std::string& name = checkpoint->tensors[t].name;
        if (!selected(name)) {
            input.selection.droppedTensors.push_back({name, "not selected"});
            continue;
        }
        if (!located[t].checkpoint)
            return ckpt::makeError("tensor '" + name + "': " + located[t].problem);
        sources.push_back({located[t].checkpoint.get(), located[t].tensor, relative(name)});
        input.selection.tensors.push_back({relative(name), t});
    }
    if (input.selection.tensors.empty())
        return ckpt::makeError("no tensor to write: nothing in the DCP folder matches the selection");
    return input;
}

// A folder of shards (or an index, or one shard an index lists): each shard's state_dict, in the
// index's order; a shard that is missing or unreadable stops the conversion before anything is
// written, as converting the rest would lose weights without saying so.
ckpt::Expected<std::vector<ConvertedInput>> selectShardTensors(const ckpt::Checkpoint& checkpoint,
    const ckpt::ExtractOptions& options, std::vector<ckpt::SafetensorsSource>& sources)
{
    std::vector<ConvertedInput> inputs;
    for (const ckpt::ShardFile& shard : checkpoint.shardSet->shards) {
        if (!shard.problem.empty() || !shard.checkpoint)
            return ckpt::makeError(shard.name + " is not a usable shard: "
                + (shard.problem.empty() ? std::string("could not be read") : shard.problem));
        auto selection = ckpt::selectStateDict(*shard.checkpoint, options);
        if (!selection)
            return ckpt::makeError(shard.name + ": " + selection.error().message);
        for (const ckpt::SelectedTensor& tensor : selection->tensors)
            sources.push_back({shard.checkpoint.get(), tensor.tensor, tensor.name});
        inputs.push_back({shard.path, std::move(*selection)});
    }
    return inputs;
}

struct ConvertArguments {
    std::string input, output;
    bool json = false;
    std::uint64_t maxShardBytes = 0;
    PlanOptions planOptions;
    ckpt::ExtractOptions options;
    bool deviceGiven = false;
};

int runConvert(ConvertArguments& arguments)
{
    const std::string& input = arguments.input;
    const std::string& output = arguments.output;
    const bool json = arguments.json;
    const std::uint64_t maxShardBytes = arguments.maxShardBytes;
    const PlanOptions& planOptions = arguments.planOptions;
    ckpt::ExtractOptions& options = arguments.options;
    const bool deviceGiven = arguments.deviceGiven;
    const bool toSafetensors = endsWith(output, ".safetensors") || maxShardBytes != 0;
    // A file, a folder of shards, an index, one shard an index lists, or a DCP folder, read the way
    // `info` reads it.
    const auto checkpoint = std::make_shared<const ckpt::Checkpoint>(ckpt::readCheckpoint(input));
    if (checkpoint->format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect convert: " << input << ": " << checkpoint->container.description << "\n";
        return 2;
    }
    if (!toSafetensors) {
        if (checkpoint->shardSet) {
            std::cerr
                << "ckpt-inspect convert: a folder converts to safetensors only (name OUT.safetensors or "
                   "give --max-shard-size)\n";
            return 64;
        }
        return toTorch(input, output, planOptions, options, json);
    }
    if (deviceGiven || !planOptions.rules.empty()) {
        std::cerr
            << "ckpt-inspect convert: safetensors records no device; --device, --map, --tensor and --module "
               "apply only when writing a torch file\n";
        return 64;
    }

    std::vector<ckpt::SafetensorsSource> sources;
    std::vector<ConvertedInput> inputs;
    std::vector<ckpt::LocatedTensor> located; // DCP: the chunk archives the sources point into
    if (checkpoint->shardSet && checkpoint->shardSet->dcp) {
        located = ckpt::locateTensors(checkpoint);
        auto selected = selectDcpTensors(checkpoint, located, options, sources);
        if (!selected) {
            std::cerr << "ckpt-inspect convert: " << input << ": " << selected.error().message << "\n";
            return 2;
        }
        inputs.push_back(std::move(*selected));
    } else if (checkpoint->shardSet) {
        auto selected = selectShardTensors(*checkpoint, options, sources);
        if (!selected) {
            std::cerr << "ckpt-inspect convert: " << input << ": " << selected.error().message << "\n";
            return 2;
        }
        inputs = std::move(*selected);
    } else {
        auto selection = ckpt::selectStateDict(*checkpoint, options);
        if (!selection) {
            std::cerr << "ckpt-inspect convert: " << input << ": " << selection.error().message << "\n";
            return 2;
        }
        for (const ckpt::SelectedTensor& tensor : selection->tensors)
            sources.push_back({checkpoint.get(), tensor.tensor, tensor.name});
        inputs.push_back({input, std::move(*selection)});
    }
    addUnsafeNotCarried(*checkpoint, inputs.front().selection.globalsNotCarried);
    ckpt::SafetensorsOptions writeOptions;
    writeOptions.maxShardBytes = maxShardBytes;
    writeOptions.verifyAfterWriting = options.verifyAfterWriting;
    auto result = ckpt::writeSafetensors(sources, output, writeOptions);
    if (!result) {
        std::cerr << "ckpt-inspect convert: " << result.error().message << "\n";
        return 2;
    }
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("input", input);
        writer.member("output", output);
        writer.key("shards").beginArray();
        for (const ckpt::SafetensorsShard& shard : result->shards) {
            writer.beginObject();
            writer.member("path", shard.path);
            writer.member("tensor_bytes", shard.tensorBytes);
            writer.member("tensors", shard.names);
            writer.endObject();
        }
        writer.endArray();
        writer.memberOrNull("index", result->indexPath);
        writer.member("shared_written_as_copies", result->sharedWrittenAsCopies);
        writer.member("views_made_contiguous", result->viewsMadeContiguous);
        writer.key("inputs").beginArray();
        for (const ConvertedInput& converted : inputs) {
            writer.beginObject();
            writer.member("file", converted.file);
            writer.member("root", converted.selection.root);
            ckpt::ExtractResult dropped;
            dropped.droppedTensors = converted.selection.droppedTensors;
            dropped.droppedObjects = converted.selection.droppedObjects;
            dropped.globalsNotCarried = converted.selection.globalsNotCarried;
            ckpt::writeDroppedJson(writer, dropped);
            writer.endObject();
        }
        writer.endArray();
        writer.member("tensors_written", result->tensorsWritten);
        writer.member("bytes_written", result->bytesWritten);
        writer.member("verified", result->verified);
        writer.member("summary", result->summary());
        writer.endObject();
        std::cout << writer.takeText() << "\n";
        return 0;
    }
    std::cout << output << ": " << result->summary() << "\n";
    if (!result->sharedWrittenAsCopies.empty()) {
        std::cout
            << "  safetensors cannot express shared storage; written as separate copies (load_state_dict "
               "and from_pretrained tie them again where the model ties them):\n";
        for (std::size_t i = 0; i < result->sharedWrittenAsCopies.size() && i < 12; ++i)
            std::cout << "    " << result->sharedWrittenAsCopies[i] << "\n";
    }
    for (const ConvertedInput& converted : inputs) {
        if (inputs.size() > 1)
            std::cout << "  " << converted.file << ":\n";
        ckpt::ExtractResult dropped;
        dropped.droppedTensors = converted.selection.droppedTensors;
        dropped.droppedObjects = converted.selection.droppedObjects;
        dropped.globalsNotCarried = converted.selection.globalsNotCarried;
        ckpt::writeDroppedText(std::cout, dropped);
    }
    return 0;
}

} // namespace

Command addConvertCommand(CLI::App& program)
{
    auto arguments = std::make_shared<ConvertArguments>();
    CLI::App* command = program.add_subcommand("convert",
        "To safetensors (\"format\": \"pt\") from a torch checkpoint or a folder of them, one file or shards "
        "with "
        "model.safetensors.index.json (tensors that share a storage become separate copies, views contiguous "
        "copies); or from safetensors back to a torch.save file whose storages are recorded on --device.");
    command->footer(kConvertUsage);
    addPathArgument(*command, "INPUT", arguments->input, "a checkpoint file or a folder of them");
    command
        ->add_option("-o,--output", arguments->output,
            "OUT.safetensors, a folder for shards (with --max-shard-size), or OUT.pt from safetensors")
        ->required()
        ->type_name("OUT");
    addByteSizeOption(*command, "--max-shard-size", arguments->maxShardBytes,
        "write shards of at most SIZE each (e.g. 5GB) and an index", true);
    addSelectionOptions(*command, arguments->options);
    command
        ->add_option_function<std::string>(
            "--device",
            [arguments](const std::string& device) {
                if (!ckpt::isPlausibleDeviceTag(device))
                    throw CLI::ValidationError("--device", "'" + device + "' is not a device torch writes");
                arguments->options.defaultDevice = device;
                arguments->deviceGiven = true;
            },
            "safetensors to torch: the device the storages are recorded on (cpu)")
        ->type_name("DEV");
    arguments->planOptions.addTo(*command);
    addNoVerifyFlag(*command, arguments->options.verifyAfterWriting);
    addJsonFlag(*command, arguments->json);
    return {command, [arguments] { return runConvert(*arguments); }};
}

} // namespace cli
