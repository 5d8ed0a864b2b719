// SPDX-License-Identifier: MIT
// ckpt-inspect plan: every storage placed automatically on a target machine, with the reasons and the
// memory per device; saved as a remapped copy or exported for Python.
#include "command.h"
#include "remoteinput.h"
#include "savecopywording.h"
#include "terminal.h"

#include "core/base/textformat.h"
#include "core/devices/cudaruntime.h"
#include "core/devices/deviceinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/autoplacement.h"
#include "core/plan/devicemap.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/report/cudatrialreport.h"
#include "core/report/exportplanreport.h"
#include "core/report/planreport.h"
#include "core/report/savecopyreport.h"
#include "core/tasks/cudatrial.h"
#include "core/tasks/savecopy.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

struct PlanArguments {
    std::string file, target, save, exportKind;
    bool json = false;
    bool measure = false, trial = false, trialLoad = false;
    bool download = false;
    std::uint64_t noSplitDepth = 0;
    ckpt::AutoPlacementOptions options;
};

int runPlan(PlanArguments& arguments)
{
    ckpt::AutoPlacementOptions& options = arguments.options;
    if (arguments.noSplitDepth > 0)
        options.noSplitDepth = static_cast<int>(arguments.noSplitDepth);
    ckpt::TargetProfiles profiles;
    if (auto problem = profiles.load())
        std::cerr << "note: saved targets could not be read: " << problem->message << "\n";
    auto machine = ckpt::resolveMachine(arguments.target, profiles);
    if (!machine) {
        std::cerr << "ckpt-inspect plan: " << machine.error().message << "\n";
        return kUsageError;
    }
    // --measure, --trial: this machine's CUDA runtime, its contexts made once and kept for the trial.
    const bool trial = arguments.trial || arguments.trialLoad;
    std::unique_ptr<ckpt::CudaRuntime> runtime;
    std::optional<ckpt::CudaMeasurement> measurement;
    if (arguments.measure || trial) {
        if (!arguments.target.empty() || machine->described) {
            std::cerr << "ckpt-inspect plan: --measure and --trial work on this machine's GPUs: leave out "
                         "--target\n";
            return kUsageError;
        }
        runtime = ckpt::makeSystemCudaRuntime();
        measurement = ckpt::measureCudaDevices(*runtime, ckpt::systemNvmlFreeSnapshot());
        ckpt::applyMeasurement(*machine, *measurement);
    }
    RemoteInput input(arguments.file); // an http(s) URL: only the bytes the readers touch
    input.download = arguments.download;
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(arguments.file, input.readOptions());
    if (input.remote() && !input.finish("plan"))
        return 3; // a fetch failed: its cause, nothing else
    if (input.remote() && !arguments.save.empty()
        && checkpoint.format != ckpt::CheckpointFormat::NotACheckpoint) {
        // A remapped copy is every tensor byte: said before anything is downloaded.
        std::cerr << "ckpt-inspect plan: --save copies every tensor byte: it would download "
                  << ckpt::formatBytes(input.bytesLeftToRead())
                  << " more of this URL; download the file and save its copy from there\n";
        return kUsageError;
    }
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect plan: " << shown(arguments.file) << ": "
                  << shown(checkpoint.container.description) << "\n";
        return 2;
    }
    auto placement = ckpt::placeAutomatically(checkpoint, *machine, options);
    if (!placement) {
        std::cerr << "ckpt-inspect plan: " << shown(placement.error().message) << "\n";
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    ckpt::MemoryLedger ledger(checkpoint, plan, *machine, options.assumptions);
    for (const ckpt::PlacementRule& rule : placement->rules)
        ledger.apply(plan.apply(rule));
    std::optional<ckpt::CudaTrialOutcome> trialOutcome;
    if (trial) {
        ckpt::CudaTrialRequest request;
        request.checkpoint = &checkpoint;
        request.plan = &plan;
        request.runtime = runtime.get();
        request.measured = measurement;
        request.load = arguments.trialLoad;
        trialOutcome = ckpt::runCudaTrial(request);
    }

    if (arguments.exportKind == "device-map") {
        std::cout << ckpt::deviceMapJson({placement->deviceMap.begin(), placement->deviceMap.end()}) << "\n";
    } else if (arguments.exportKind == "map-location") {
        std::cout << shownLines(plan.asPython(arguments.file));
    } else if (arguments.json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writePlacementJson(writer, arguments.file, *machine, options, *placement, ledger,
            measurement && !trialOutcome ? &*measurement : nullptr, trialOutcome ? &*trialOutcome : nullptr);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writePlacementText(std::cout, *machine, options, *placement, ledger);
        if (trialOutcome) {
            std::cout << "\n";
            ckpt::writeCudaTrialText(std::cout, *trialOutcome);
        } else if (measurement) {
            std::cout << "\n";
            ckpt::writeCudaMeasurementText(std::cout, *measurement);
        }
    }
    if (trialOutcome && trialOutcome->unavailable)
        std::cerr << "ckpt-inspect plan: the trial could not run: " << shown(*trialOutcome->unavailable)
                  << "\n";
    if (!arguments.save.empty()) { // the save task's policy, as `remap` (without its override)
        ckpt::SaveCopyRequest request;
        request.input = &checkpoint;
        request.plan = &plan;
        request.outputPath = arguments.save;
        request.machine = &*machine;
        const ckpt::SaveCopyOutcome outcome = ckpt::saveRemappedCopy(request);
        if (outcome.exported) { // safetensors / DCP: the plan exported instead, or refused
            if (!outcome.exported->ok()) {
                std::cerr << "ckpt-inspect plan: " << ckpt::exportPlanText(*outcome.exported);
                return outcome.exitCode();
            }
            ckpt::writeExportPlanText(std::cerr, *outcome.exported);
        } else if (!outcome.written()) {
            std::cerr << "ckpt-inspect plan: "
                      << ckpt::saveCopyRefusalText(outcome,
                             saveCopyWordingFor(checkpoint, arguments.file,
                                 "`ckpt-inspect remap " + shown(arguments.file) + " --allow-dangerous`"));
            return outcome.exitCode();
        } else {
            std::cerr << shown(arguments.save) << ": " << shown(ckpt::saveCopySummary(outcome)) << "\n";
        }
    }
    if (trialOutcome && trialOutcome->exitCode() != 0)
        return trialOutcome->exitCode();
    return placement->didNotFit.empty() ? 0 : 1;
}

} // namespace

Command addPlanCommand(CLI::App& program)
{
    auto arguments = std::make_shared<PlanArguments>();
    CLI::App* command = program.add_subcommand("plan",
        "Places every storage automatically on the target (this machine when no --target), shows why each "
        "block went where, and memory per device; --save writes the remapped copy, --export prints the plan "
        "for Python. Exit 1 when something did not fit.");
    addPathArgument(
        *command, "FILE", arguments->file, "a checkpoint file, a folder of shards, or an http(s) URL of one");
    command
        ->add_option("--target", arguments->target,
            "a machine: a saved target's name or a SPEC such as cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB")
        ->type_name("SPEC|NAME");
    command
        ->add_option_function<std::string>(
            "--strategy",
            [arguments](const std::string& strategy) {
                if (strategy == "balanced")
                    arguments->options.strategy = ckpt::PlacementStrategy::Balanced;
                else if (strategy == "sequential")
                    arguments->options.strategy = ckpt::PlacementStrategy::Sequential;
                else
                    throw CLI::ValidationError(
                        "--strategy", "is balanced or sequential, not '" + strategy + "'");
            },
            "balanced spreads the blocks over the GPUs, sequential fills cuda:0 first")
        ->type_name("balanced|sequential");
    addWholeNumberOption(*command, "--no-split-depth", arguments->noSplitDepth,
        "keep tensors together by name prefix of N dotted components (0: automatic)", 0, 1024);
    addByteSizeOption(*command, "--headroom", arguments->options.assumptions.headroomBytes,
        "memory to keep free on every device");
    addByteSizeOption(*command, "--context", arguments->options.assumptions.cudaContextBytes,
        "the CUDA context assumed per GPU in use (1.5GiB)");
    command->add_flag("--allocator-rounding", arguments->options.assumptions.allocatorRounding,
        "count each storage as PyTorch's caching allocator rounds it");
    command->add_flag("--measure", arguments->measure,
        "measure each GPU's CUDA context and free memory on this machine (creates the contexts for a moment) "
        "and plan with them instead of the assumed context");
    command->add_flag("--trial", arguments->trial,
        "measure, then allocate the plan's storages on this machine's GPUs as PyTorch's caching allocator "
        "would, and say whether it fits (exit 1 when not, 2 when no GPU can be used)");
    command->add_flag("--trial-load", arguments->trialLoad,
        "--trial, then copy every planned storage from the file onto its GPU and read it back to compare "
        "the bytes");
    command->add_option("--save,-o", arguments->save, "write the remapped copy (a folder for shards) to OUT")
        ->type_name("OUT");
    command->add_option("--export", arguments->exportKind, "print the plan for Python instead of the report")
        ->check(CLI::IsMember({"device-map", "map-location"}).description(""))
        ->type_name("device-map|map-location");
    addJsonFlag(*command, arguments->json);
    addDownloadFlag(*command, arguments->download);
    return {command, [arguments] { return runPlan(*arguments); }};
}

} // namespace cli
