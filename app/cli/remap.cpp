// SPDX-License-Identifier: MIT
// ckpt-inspect remap: a copy whose storages are recorded on the planned devices, so that plain
// torch.load puts them there; or the plan printed as a map_location.
#include "command.h"
#include "planoptions.h"
#include "remoteinput.h"
#include "savecopywording.h"
#include "terminal.h"

#include "core/devices/deviceinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/report/exportplanreport.h"
#include "core/report/savecopyreport.h"
#include "core/tasks/savecopy.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

struct RemapArguments {
    std::string file;
    std::string output;
    bool json = false;
    bool verify = true;
    bool printMapLocation = false;
    bool allowDangerous = false;
    PlanOptions planOptions;
    std::vector<ckpt::GlobalRename> renames;
};

int runRemap(const RemapArguments& arguments)
{
    if (arguments.output.empty() && !arguments.printMapLocation) {
        std::cerr << "ckpt-inspect remap: give FILE and -o OUT (or --print-map-location)\n";
        return kUsageError;
    }
    if (refusedRemote("remap", arguments.file, "a remapped copy"))
        return kUsageError;

    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(arguments.file);
    if (arguments.printMapLocation) { // prints a plan; writes nothing, so runs nothing either
        if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
            std::cerr << "ckpt-inspect remap: " << shown(arguments.file) << ": "
                      << shown(checkpoint.container.description) << "\n";
            return 2;
        }
        ckpt::PlacementPlan plan(checkpoint);
        if (!arguments.planOptions.apply(checkpoint, plan, "remap"))
            return 2;
        std::cout << shownLines(plan.asPython(arguments.file));
        return 0;
    }
    ckpt::PlacementPlan plan(checkpoint);
    if (!arguments.planOptions.apply(checkpoint, plan, "remap"))
        return 2;

    // The policy (what may be remapped, what is refused, what the override allows) is the task's.
    ckpt::SaveCopyRequest request;
    request.input = &checkpoint;
    request.plan = &plan;
    request.outputPath = arguments.output;
    request.allowDangerous = arguments.allowDangerous;
    request.verify = arguments.verify;
    request.renames = arguments.renames;
    std::optional<ckpt::MachineInventory> machine; // an exported plan's max_memory: this machine's
    if (ckpt::whyExportOnly(checkpoint))
        request.machine = &machine.emplace(ckpt::detectThisMachine());
    const ckpt::SaveCopyOutcome outcome = ckpt::saveRemappedCopy(request);

    if (outcome.exported) { // safetensors / DCP: the plan exported instead, or refused
        const ckpt::ExportPlanOutcome& exported = *outcome.exported;
        if (!exported.ok()) {
            std::cerr << "ckpt-inspect remap: " << ckpt::exportPlanText(exported);
        } else if (arguments.json) {
            ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
            ckpt::writeExportPlanJson(writer, exported);
            std::cout << writer.takeText() << "\n";
        } else {
            ckpt::writeExportPlanText(std::cout, exported);
        }
        return outcome.exitCode();
    }
    if (!outcome.written()) {
        std::cerr << "ckpt-inspect remap: "
                  << ckpt::saveCopyRefusalText(
                         outcome, saveCopyWordingFor(checkpoint, arguments.file, "--allow-dangerous"));
        return outcome.exitCode();
    }
    if (arguments.json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writeSaveCopyJson(writer, checkpoint, outcome);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writeSaveCopyText(std::cout, outcome);
    }
    if (outcome.carriesDanger())
        std::cerr << "warning: " << shown(arguments.output)
                  << (outcome.assessment.gatingSafety().dangerous()
                             ? std::string(
                                 " is a remapped copy of a file rated dangerous (--allow-dangerous)")
                             : std::string(" carries files rated dangerous, copied byte for byte"))
                  << ": loading it with weights_only=False runs what the input runs\n";
    return 0;
}

} // namespace

Command addRemapCommand(CLI::App& program)
{
    auto arguments = std::make_shared<RemapArguments>();
    CLI::App* command = program.add_subcommand("remap",
        "Writes a copy whose storages are recorded on the planned devices, so plain torch.load puts them "
        "there (a tensor moves with every tensor that shares its storage), or prints the plan as a "
        "map_location. Refuses a file rated dangerous or that cannot be verified (exit 4) unless "
        "--allow-dangerous.");
    addPathArgument(*command, "FILE", arguments->file, "a checkpoint file, or a folder of shards");
    command->add_option("-o,--output", arguments->output, "where to write the copy (a folder for shards)")
        ->type_name("OUT");
    arguments->planOptions.addTo(*command);
    command
        ->add_option_function<std::string>(
            "--rename-global",
            [arguments](const std::string& value) {
                auto rename = ckpt::GlobalRename::parse(value);
                if (!rename)
                    throw CLI::ValidationError("--rename-global", rename.error().message);
                arguments->renames.push_back(*rename);
            },
            "names a class or function (module.name) or a module path under its new name in the copy, e.g. "
            "numpy._core.multiarray.scalar=numpy.core.multiarray.scalar; repeatable")
        ->type_name("OLD=NEW");
    command->add_flag("--print-map-location", arguments->printMapLocation,
        "print the plan as a map_location dict (or a Python snippet) instead of writing a copy");
    command->add_flag("--allow-dangerous", arguments->allowDangerous,
        "I trust this file: write the remapped copy of a file rated dangerous or that cannot be verified "
        "(a whole pickled model) anyway; the copy runs exactly what the input runs, and is rated again "
        "before it is given its name");
    addNoVerifyFlag(*command, arguments->verify);
    addJsonFlag(*command, arguments->json);
    return {command, [arguments] { return runRemap(*arguments); }};
}

} // namespace cli
