// SPDX-License-Identifier: MIT
// ckpt-inspect convert: torch checkpoints and folders of them to safetensors (one file or shards),
// and safetensors or a folder to a torch.save state_dict, without running any pickle.
#include "command.h"
#include "extractoptions.h"
#include "planoptions.h"
#include "remoteinput.h"

#include "core/devices/deviceinventory.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/tasks/exportweights.h"

#include <memory>

namespace cli {

namespace {

const char* kConvertUsage
    = "usage: ckpt-inspect convert FILE|DIR -o OUT.safetensors|OUTDIR [--max-shard-size SIZE] [--select "
      "PREFIX]...\n"
      "                            [--root PATH] [--dtype bfloat16|float16|float32] [--json]\n"
      "       ckpt-inspect convert FILE.safetensors|DIR -o OUT.pt [--device DEV] [--map ...] [--tensor ...]\n"
      "                            [--module ...] [--select PREFIX]... [--dtype DT] [--plain-values] "
      "[--json]\n";

struct ConvertArguments {
    std::string input, output;
    bool json = false;
    std::uint64_t maxShardBytes = 0;
    PlanOptions planOptions;
    ckpt::ExtractOptions options;
    bool deviceGiven = false;
    std::string member; // a bundle's checkpoint member
};

// A file, a folder of shards, an index, one shard an index lists, or a DCP folder, read the way
// `info` reads it; the export task (core/tasks/exportweights.h) decides and writes, as for
// `extract` and the app's File > Export Weights….
int runConvert(const ConvertArguments& arguments)
{
    if (refusedRemote("convert", arguments.input, "a converted copy"))
        return kUsageError;
    ckpt::ExportWeightsRequest request;
    request.input = std::make_shared<const ckpt::Checkpoint>(ckpt::readCheckpoint(arguments.input));
    request.outputPath = arguments.output;
    request.format = ckpt::weightsFormatFor(arguments.output, arguments.maxShardBytes);
    request.kind = ckpt::WeightsExportKind::Convert;
    request.maxShardBytes = arguments.maxShardBytes;
    request.devicesGiven = arguments.deviceGiven || !arguments.planOptions.rules.empty();
    request.options = arguments.options;
    request.member = arguments.member;
    if (auto refused = ckpt::refuseExportWeights(request))
        return printExportWeights("convert", *refused, arguments.json);
    ckpt::PlacementPlan plan(*request.input);
    if (!arguments.planOptions.apply(*request.input, plan, "convert"))
        return 2;
    request.plan = &plan;
    return printExportWeights("convert", ckpt::exportWeights(request), arguments.json);
}

} // namespace

Command addConvertCommand(CLI::App& program)
{
    auto arguments = std::make_shared<ConvertArguments>();
    CLI::App* command = program.add_subcommand("convert",
        "To safetensors (\"format\": \"pt\") from a torch checkpoint or a folder of them, one file or shards "
        "with "
        "model.safetensors.index.json (tensors that share a storage become separate copies, views contiguous "
        "copies); or from safetensors or a folder to a torch.save state_dict whose storages without a device "
        "are recorded on --device.");
    command->footer(kConvertUsage);
    addPathArgument(*command, "INPUT", arguments->input, "a checkpoint file or a folder of them");
    command
        ->add_option("-o,--output", arguments->output,
            "OUT.safetensors, a folder for shards (with --max-shard-size), or OUT.pt from safetensors or a "
            "folder")
        ->required()
        ->type_name("OUT");
    addByteSizeOption(*command, "--max-shard-size", arguments->maxShardBytes,
        "write shards of at most SIZE each (e.g. 5GB) and an index", true);
    addSelectionOptions(*command, arguments->options);
    addValueOptions(*command, arguments->options);
    command
        ->add_option("--member", arguments->member,
            "a bundle (tar.gz, .nemo, zip): convert only this checkpoint member (else every one)")
        ->type_name("NAME");
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
