// SPDX-License-Identifier: MIT
// ckpt-inspect extract: a plain state_dict out of any readable checkpoint, without running it; the
// export task (core/tasks/exportweights.h) decides and writes, as for `convert` and the app.
#include "command.h"
#include "extractoptions.h"
#include "planoptions.h"
#include "remoteinput.h"

#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/tasks/exportweights.h"

#include <memory>

namespace cli {

namespace {

struct ExtractArguments {
    std::string file, output;
    bool json = false;
    PlanOptions planOptions;
    ckpt::ExtractOptions options;
    std::string member; // a bundle's checkpoint member
};

int runExtract(const ExtractArguments& arguments)
{
    if (refusedRemote("extract", arguments.file, "an extracted state_dict"))
        return kUsageError;
    ckpt::ExportWeightsRequest request;
    request.input = std::make_shared<const ckpt::Checkpoint>(ckpt::readCheckpoint(arguments.file));
    request.outputPath = arguments.output;
    request.format = ckpt::WeightsFormat::TorchStateDict;
    request.kind = ckpt::WeightsExportKind::Extract;
    request.options = arguments.options;
    request.member = arguments.member;
    if (auto refused = ckpt::refuseExportWeights(request))
        return printExportWeights("extract", *refused, arguments.json);
    ckpt::PlacementPlan plan(*request.input);
    if (!arguments.planOptions.apply(*request.input, plan, "extract"))
        return 2;
    request.plan = &plan;
    return printExportWeights("extract", ckpt::exportWeights(request), arguments.json);
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
    addValueOptions(*command, arguments->options);
    command
        ->add_option("--member", arguments->member,
            "a bundle (tar.gz, .nemo, zip) with several checkpoints: the member to extract")
        ->type_name("NAME");
    arguments->planOptions.addTo(*command);
    addNoVerifyFlag(*command, arguments->options.verifyAfterWriting);
    addJsonFlag(*command, arguments->json);
    return {command, [arguments] { return runExtract(*arguments); }};
}

} // namespace cli
