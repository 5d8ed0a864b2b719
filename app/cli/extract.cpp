// SPDX-License-Identifier: MIT
// ckpt-inspect extract: a plain state_dict out of any readable checkpoint, without running it.
#include "command.h"
#include "extractoptions.h"
#include "planoptions.h"

#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/report/extractreport.h"
#include "core/write/extractwriter.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

struct ExtractArguments {
    std::string file, output;
    bool json = false;
    PlanOptions planOptions;
    ckpt::ExtractOptions options;
};

int runExtract(const ExtractArguments& arguments)
{
    const std::string& file = arguments.file;
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect extract: " << file << ": " << checkpoint.container.description << "\n";
        return 2;
    }
    // A folder of shards, an index or a DCP folder reads as one checkpoint (as `info` shows it), but
    // an extract is one torch.save file copied storage by storage from one input file.
    if (checkpoint.shardSet) {
        std::cerr << "ckpt-inspect extract: " << file << " is " << checkpoint.container.description
                  << "; extract writes one file from one file: extract each shard, or write safetensors "
                     "of the whole set with `ckpt-inspect convert "
                  << file << " -o OUT.safetensors`\n";
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    if (!arguments.planOptions.apply(checkpoint, plan, "extract"))
        return 2;
    auto result = ckpt::writeExtractedStateDict(checkpoint, plan, arguments.output, arguments.options);
    if (!result) {
        std::cerr << "ckpt-inspect extract: " << result.error().message << "\n";
        return 2;
    }
    addUnsafeNotCarried(checkpoint, result->globalsNotCarried);
    if (arguments.json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writeExtractJson(writer, file, checkpoint, *result);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writeExtractText(std::cout, *result);
    }
    return 0;
}

} // namespace

Command addExtractCommand(CLI::App& program)
{
    auto arguments = std::make_shared<ExtractArguments>();
    CLI::App* command = program.add_subcommand("extract",
        "Writes a plain state_dict (dotted name -> tensor) that torch.load(weights_only=True) opens, from "
        "any "
        "readable checkpoint (whole pickled modules, Lightning files, NumPy or argparse objects): storage "
        "bytes copied unchanged, nothing executed; says what was dropped.");
    addPathArgument(*command, "FILE", arguments->file, "a checkpoint file");
    command->add_option("-o,--output", arguments->output, "the state_dict file to write")
        ->required()
        ->type_name("OUT.pt");
    addSelectionOptions(*command, arguments->options);
    arguments->planOptions.addTo(*command);
    addNoVerifyFlag(*command, arguments->options.verifyAfterWriting);
    addJsonFlag(*command, arguments->json);
    return {command, [arguments] { return runExtract(*arguments); }};
}

} // namespace cli
