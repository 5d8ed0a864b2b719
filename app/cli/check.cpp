// SPDX-License-Identifier: MIT
// ckpt-inspect check: triage. Integrity (the CRC of every record, truncation and what can be
// salvaged), placement smells, what torch.load would do on the target, the weights_only verdict and,
// with --values, each tensor's value statistics (through the libtorch helper).
#include "command.h"
#include "terminal.h"

#include "core/devices/deviceinventory.h"
#include "core/io/process.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/report/safetyreport.h"
#include "core/report/triagereport.h"
#include "core/triage/triage.h"

#include <iomanip>
#include <iostream>
#include <memory>

namespace cli {

namespace {

struct CheckArguments {
    std::string file, target, mapLocationText, torchText = "both", importsText = "torch";
    bool json = false;
    ckpt::TriageOptions options;
};

// Runs ckpt-inspect-values (built next to this program when libtorch is available) and returns
// its JSON, or why there is none. --crc: it also lists the CRC of every storage record it read
// whole, computed in the same pass as the values (see recordCrcsOf).
ckpt::Expected<ckpt::JsonValue> computeValues(const std::string& file)
{
    const auto program = ckpt::programBesideThisOne("ckpt-inspect-values");
    if (!program)
        return ckpt::makeError("value statistics need ckpt-inspect-values, built only where libtorch is "
                               "installed (it is missing beside this program)");
    ckpt::ProcessRequest request;
    request.program = *program;
    request.arguments = {"--crc", file};
    const auto run = ckpt::runProcess(request);
    if (!run)
        return run.error();
    if (!run->succeeded())
        return ckpt::makeError("ckpt-inspect-values failed on " + file);
    ckpt::JsonParseLimits limits;
    limits.maxBytes = std::size_t(1) << 31;
    return ckpt::parseJson(run->output, limits);
}

// The record CRCs the value helper computed while it read the values: the integrity check takes
// them instead of reading those records a second time (a value scan reads every byte anyway).
std::vector<ckpt::KnownRecordCrc> recordCrcsOf(const ckpt::JsonValue& values)
{
    std::vector<ckpt::KnownRecordCrc> crcs;
    const ckpt::JsonValue* listed = values.find("crcs");
    if (!listed)
        return crcs;
    for (const ckpt::JsonValue& record : listed->items()) {
        const auto offset = record.member("offset").toUInt64();
        const auto length = record.member("length").toUInt64();
        const auto crc = record.member("crc").toUInt64();
        if (!offset || !length || !crc || *crc > 0xFFFFFFFFu)
            continue;
        crcs.push_back({record.member("record").toString(), *offset, *length, std::uint32_t(*crc)});
    }
    return crcs;
}

// NaN and infinities found by the value scan, as findings.
void addValueFindings(const ckpt::JsonValue& values, ckpt::TriageReport& report)
{
    for (const ckpt::JsonValue& tensor : values.member("tensors").items()) {
        const std::uint64_t nan = tensor.member("nan").toUInt64().value_or(0);
        const std::uint64_t posinf = tensor.member("posinf").toUInt64().value_or(0);
        const std::uint64_t neginf = tensor.member("neginf").toUInt64().value_or(0);
        if (nan + posinf + neginf == 0)
            continue;
        ckpt::Finding finding(ckpt::Severity::Warning, ckpt::FindingCode::ValuesNonfinite,
            "tensor '" + tensor.member("name").toString() + "' holds " + std::to_string(nan) + " NaN, "
                + std::to_string(posinf) + " +Inf and " + std::to_string(neginf) + " -Inf of its "
                + std::to_string(tensor.member("count").toUInt64().value_or(0)) + " values");
        finding.tensors.push_back(static_cast<std::uint32_t>(tensor.member("index").toUInt64().value_or(0)));
        finding.explanation
            = "A model with NaN or infinite weights produces NaN outputs: training diverged before this "
              "checkpoint was saved, or the values were damaged afterwards.";
        finding.fix = "Go back to an earlier checkpoint, or lower the learning rate and check the loss "
                      "scaling; a CRC "
                      "mismatch finding would mean the file itself was damaged.";
        report.findings.push_back(std::move(finding));
    }
}

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

    const ckpt::Checkpoint& checkpoint = keptUntilExit(ckpt::readCheckpoint(arguments.file));
    // Values before triage: the helper's record CRCs spare the integrity check a read of every
    // byte. Their findings still come after triage's, as before.
    std::optional<ckpt::JsonValue> values;
    std::string valuesProblem;
    if (options.values && checkpoint.format != ckpt::CheckpointFormat::NotACheckpoint) {
        auto computed = computeValues(arguments.file);
        if (computed) {
            values = *computed;
            options.knownRecordCrcs = recordCrcsOf(*values);
        } else {
            valuesProblem = computed.error().message;
        }
    }
    ckpt::TriageReport& report = keptUntilExit(ckpt::triage(checkpoint, options));
    if (values)
        addValueFindings(*values, report);
    const bool unreadable = checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint
        || (!checkpoint.file && !checkpoint.shardSet); // several files have no single map
    const int exitCode = report.safety.dangerous() ? 4 : unreadable ? 3 : report.exitCode();
    const std::string format = unreadable ? std::string(ckpt::containerKindName(checkpoint.container.kind))
                                          : std::string(ckpt::checkpointFormatName(checkpoint.format));

    if (arguments.json) {
        // Streamed as it is written, like info --json: the document is never held whole.
        ckpt::JsonWriter writer(std::cout, ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("file", arguments.file);
        writer.member("format", format);
        writer.member("exit_code", exitCode);
        ckpt::writeTriageJsonMembers(writer, checkpoint, report);
        if (values)
            writer.member("values", values->member("tensors"));
        else if (options.values)
            writer.member("values_error", valuesProblem);
        writer.endObject();
        writer.flush();
        std::cout << "\n";
        return exitCode;
    }

    std::cout << shown(arguments.file) << ": " << shown(format) << "\n" << ckpt::safetyText(report.safety);
    ckpt::writeTriageText(std::cout, checkpoint, report, options);
    if (values) {
        std::size_t computed = 0, nonFinite = 0;
        for (const ckpt::JsonValue& tensor : values->member("tensors").items()) {
            computed += tensor.find("error") ? 0 : 1;
            nonFinite += tensor.member("nan").toUInt64().value_or(0)
                    + tensor.member("posinf").toUInt64().value_or(0)
                    + tensor.member("neginf").toUInt64().value_or(0)
                ? 1
                : 0;
        }
        std::cout << "\nValues: " << computed << " tensors scanned, " << nonFinite
                  << " hold NaN or infinities\n";
        for (const ckpt::JsonValue& tensor : values->member("tensors").items()) {
            if (tensor.find("error")) {
                std::cout << "  " << shown(tensor.member("name").toString()) << ": "
                          << shown(tensor.member("error").toString()) << "\n";
                continue;
            }
            std::cout << "  " << std::left << std::setw(40) << shown(tensor.member("name").toString())
                      << std::right << " min " << tensor.member("min").toDouble() << "  max "
                      << tensor.member("max").toDouble() << "  mean " << tensor.member("mean").toDouble()
                      << "  std " << tensor.member("std").toDouble()
                      << (tensor.member("nan").toUInt64().value_or(0)
                                 ? "  NaN " + std::to_string(*tensor.member("nan").toUInt64())
                                 : "")
                      << "\n";
        }
    } else if (options.values) {
        std::cout << "\nValues: " << shown(valuesProblem) << "\n";
    }
    return exitCode;
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
    addPathArgument(*command, "FILE", arguments->file, "a checkpoint file, or a folder of shards");
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
    return {command, [arguments] { return runCheck(*arguments); }};
}

} // namespace cli
