// ckpt-inspect convert: torch checkpoints to safetensors (one file or shards) and safetensors back
// to a torch.save file, without running any pickle.
#include "command.h"
#include "extractreport.h"
#include "folderinput.h"
#include "planoptions.h"

#include "core/devices/deviceinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
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
        writeExtractJson(writer, file, checkpoint, *result);
        std::cout << writer.takeText() << "\n";
    } else {
        printExtractReport(std::cout, checkpoint, *result);
    }
    return 0;
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
    if (!toSafetensors) {
        if (isFolder(input)) {
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

    std::vector<std::string> files {input};
    if (isFolder(input)) {
        auto listed = checkpointFilesIn(input);
        if (!listed) {
            std::cerr << "ckpt-inspect convert: " << listed.error().message << "\n";
            return 2;
        }
        files = *listed;
    }
    std::vector<std::unique_ptr<ckpt::Checkpoint>> checkpoints;
    std::vector<ckpt::SafetensorsSource> sources;
    std::vector<ckpt::StateDictSelection> selections;
    for (const std::string& file : files) {
        checkpoints.push_back(std::make_unique<ckpt::Checkpoint>(ckpt::readCheckpoint(file)));
        const ckpt::Checkpoint& checkpoint = *checkpoints.back();
        if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
            std::cerr << "ckpt-inspect convert: " << file << ": " << checkpoint.container.description << "\n";
            return 2;
        }
        auto selection = ckpt::selectStateDict(checkpoint, options);
        if (!selection) {
            std::cerr << "ckpt-inspect convert: " << file << ": " << selection.error().message << "\n";
            return 2;
        }
        for (const ckpt::SelectedTensor& tensor : selection->tensors)
            sources.push_back({&checkpoint, tensor.tensor, tensor.name});
        selections.push_back(std::move(*selection));
    }
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
            writer.key("tensors").beginArray();
            for (const std::string& name : shard.names)
                writer.value(name);
            writer.endArray();
            writer.endObject();
        }
        writer.endArray();
        writer.key("index");
        result->indexPath.empty() ? writer.null() : writer.value(result->indexPath);
        writer.key("shared_written_as_copies").beginArray();
        for (const std::string& item : result->sharedWrittenAsCopies)
            writer.value(item);
        writer.endArray();
        writer.key("views_made_contiguous").beginArray();
        for (const std::string& item : result->viewsMadeContiguous)
            writer.value(item);
        writer.endArray();
        writer.key("inputs").beginArray();
        for (std::size_t f = 0; f < files.size(); ++f) {
            writer.beginObject();
            writer.member("file", files[f]);
            writer.member("root", selections[f].root);
            ckpt::ExtractResult dropped;
            dropped.droppedTensors = selections[f].droppedTensors;
            dropped.droppedObjects = selections[f].droppedObjects;
            dropped.globalsNotCarried = selections[f].globalsNotCarried;
            writeDroppedJson(writer, dropped);
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
    for (std::size_t f = 0; f < files.size(); ++f) {
        if (files.size() > 1)
            std::cout << "  " << files[f] << ":\n";
        ckpt::ExtractResult dropped;
        dropped.droppedTensors = selections[f].droppedTensors;
        dropped.droppedObjects = selections[f].droppedObjects;
        dropped.globalsNotCarried = selections[f].globalsNotCarried;
        printDropped(std::cout, dropped);
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
    command->add_option("INPUT", arguments->input, "a checkpoint file or a folder of them")
        ->type_name("")
        ->required();
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
