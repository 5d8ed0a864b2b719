// SPDX-License-Identifier: MIT
// ckpt-inspect check: triage. Integrity (the CRC of every record, truncation and what can be
// salvaged), placement smells, what torch.load would do on the target, the weights_only verdict and,
// with --values, each tensor's value statistics (through the libtorch helper).
#include "command.h"
#include "progressbar.h"
#include "remoteinput.h"
#include "terminal.h"

#include "core/base/textformat.h"
#include "core/devices/deviceinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/report/safetyreport.h"
#include "core/report/triagereport.h"
#include "core/report/valuescanreport.h"
#include "core/tasks/valuescan.h"
#include "core/triage/triage.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

struct CheckArguments {
    std::string file, target, mapLocationText, torchText = "both", importsText = "torch";
    bool json = false;
    bool download = false;
    ckpt::TriageOptions options;
};

int runCheck(CheckArguments& arguments)
{
    ckpt::TriageOptions& options = arguments.options;
    if (!arguments.target.empty()) {
        ckpt::TargetProfiles profiles;
        if (auto problem = profiles.load())
            std::cerr << "note: saved targets could not be read: " << problem->message << "\n";
        auto machine = ckpt::resolveMachine(arguments.target, profiles);
        if (!machine) {
            std::cerr << "ckpt-inspect check: " << machine.error().message << "\n";
            return kUsageError;
        }
        options.target = *machine;
    }
    if (!arguments.mapLocationText.empty()) {
        auto mapLocation = ckpt::MapLocation::parse(arguments.mapLocationText);
        if (!mapLocation) {
            std::cerr << "ckpt-inspect check: --map-location: " << mapLocation.error().message << "\n";
            return kUsageError;
        }
        options.mapLocation = *mapLocation;
    }
    if (arguments.torchText == "1.13")
        options.torch = ckpt::TorchGeneration::Torch113;
    else if (arguments.torchText == "2.x")
        options.torch = ckpt::TorchGeneration::Torch26Plus;
    auto imports = ckpt::TorchImports::parse(arguments.importsText);
    if (!imports) {
        std::cerr << "ckpt-inspect check: --assume-imports: " << imports.error().message << "\n";
        return kUsageError;
    }
    options.imports = *imports;

    RemoteInput input(arguments.file); // an http(s) URL: only the bytes the readers touch
    input.download = arguments.download;
    // All that triage reads of the pickle graph is judged while the graph is whole: for a plain
    // state_dict before its records are built, the builder then giving the graph back as it goes
    // (ReadOptions::judgeGraph). The graph is released after, and the load simulation and the report
    // allocate beside the records alone (at 200,000 legacy storages the graph is 50 MB, the records 80).
    ckpt::ReadOptions readOptions = input.readOptions();
    readOptions.judgeGraph
        = [&options](const ckpt::Checkpoint& read) { ckpt::judgePickleGraphAhead(read, options); };
    ckpt::Checkpoint& checkpoint = keptUntilExit(ckpt::readCheckpoint(arguments.file, readOptions));
    checkpoint.graph.release();
    if (input.remote()) {
        // Every record's CRC would download every tensor byte: said as a finding, not done.
        options.checkRecordCrcs = false;
        if (options.values && checkpoint.format != ckpt::CheckpointFormat::NotACheckpoint) {
            if (!input.finish("check"))
                return 3;
            std::cerr << "ckpt-inspect check: --values reads every tensor byte: it would download "
                      << ckpt::formatBytes(input.bytesLeftToRead())
                      << " more of this URL; download the file and run check --values on it\n";
            return kUsageError;
        }
    }
    std::ostream& out = input.out();
    // Values before triage (core/tasks/valuescan, as the app's Scan Values): the helper's record
    // CRCs spare the integrity check a read of every byte. Their findings still come after
    // triage's, as before.
    std::optional<ckpt::ValueScanOutcome> values;
    if (options.values && checkpoint.format != ckpt::CheckpointFormat::NotACheckpoint) {
        ckpt::ValueScanRequest request;
        request.path = arguments.file;
        request.recordCrcs = true;
        ProgressBar bar("scanning values");
        request.progress = bar.callback();
        values = ckpt::scanValues(request);
        bar.finish();
        if (bar.cancelled()) { // Ctrl-C: the helper was stopped (or died of the same SIGINT)
            std::cerr << "ckpt-inspect check: cancelled\n";
            return kCancelledExit;
        }
        options.knownRecordCrcs = values->recordCrcs;
    }
    ckpt::TriageReport& report = keptUntilExit(ckpt::triage(checkpoint, options));
    if (values)
        report.findings.insert(report.findings.end(), values->findings.begin(), values->findings.end());
    const bool unreadable = checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint
        || (!checkpoint.file && !checkpoint.shardSet); // several files have no single map
    const int exitCode = report.safety.dangerous() ? 4 : unreadable ? 3 : report.exitCode();
    const std::string format = unreadable ? std::string(ckpt::containerKindName(checkpoint.container.kind))
                                          : std::string(ckpt::checkpointFormatName(checkpoint.format));

    if (arguments.json) {
        // Streamed as it is written, like info --json: the document is never held whole.
        // No control byte in it: past the terminal filter (terminal.h).
        std::ostream json(bypassTerminalFilter(out));
        ckpt::JsonWriter writer(json, ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("file", arguments.file);
        writer.member("format", format);
        writer.member("exit_code", exitCode);
        ckpt::writeTriageJsonMembers(writer, checkpoint, report);
        if (values)
            ckpt::writeValueScanJsonMembers(writer, *values);
        writer.endObject();
        writer.flush();
        out << "\n";
        return input.finish("check") ? exitCode : 3;
    }

    out << shown(arguments.file) << ": " << shown(format) << "\n" << ckpt::safetyText(report.safety);
    ckpt::writeTriageText(out, checkpoint, report, options);
    if (values)
        ckpt::writeValueScanText(out, *values);
    return input.finish("check") ? exitCode : 3;
}

} // namespace

Command addCheckCommand(CLI::App& program)
{
    auto arguments = std::make_shared<CheckArguments>();
    CLI::App* command = program.add_subcommand("check",
        "Triage: integrity (CRC of every record, truncation and what can be salvaged), placement smells, "
        "what "
        "torch.load would do on the target (torch 1.13 and 2.6+) and the weights_only verdict. Exit 0 clean, "
        "1 warnings, 2 errors, 3 could not read, 4 dangerous or cannot verify (loading it may run code).");
    addPathArgument(
        *command, "FILE", arguments->file, "a checkpoint file, a folder of shards, or an http(s) URL of one");
    command
        ->add_option("--target", arguments->target,
            "a machine: a saved target's name or a SPEC such as cuda:0=24GiB,cpu=64GiB (default: this "
            "machine)")
        ->type_name("SPEC|NAME");
    command
        ->add_option("--map-location", arguments->mapLocationText,
            "none, cpu, cuda:1, cuda:1=cuda:0,... or a Python dict literal")
        ->type_name("ML");
    command
        ->add_option("--torch", arguments->torchText,
            "the torch whose torch.load is simulated: 1.13, 2.x (2.6 and later; its weights_only lists as in "
            "the torch they were read from) or both (default: both simulated, weights_only judged as 2.x)")
        ->check(CLI::IsMember({"1.13", "2.x", "both"}).description(""))
        ->type_name("1.13|2.x|both");
    std::string growing;
    for (const std::string& module : ckpt::growingTorchImports())
        growing += ", " + module;
    command
        ->add_option("--assume-imports", arguments->importsText,
            "what the process calling torch.load has imported, comma-separated: torch 2.x's weights_only "
            "list grows with it. torch (always assumed, the default)"
                + growing + ", or all")
        ->type_name("MODULES");
    command
        ->add_option("--importable", arguments->options.importableModules,
            "a Python package (or __main__ for the saving script's classes) importable where torch.load runs "
            "(the standard library, torch and numpy are assumed); repeatable")
        ->type_name("MODULE");
    command->add_flag("--values", arguments->options.values,
        "add each tensor's NaN/Inf/zero counts, range, mean, std and histogram (through libtorch)");
    addJsonFlag(*command, arguments->json);
    addDownloadFlag(*command, arguments->download);
    return {command, [arguments] { return runCheck(*arguments); }};
}

} // namespace cli
