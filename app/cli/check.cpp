// SPDX-License-Identifier: MIT
// ckpt-inspect check: triage. Integrity (the CRC of every record, truncation and what can be
// salvaged), placement smells, what torch.load would do on the target, the weights_only verdict and,
// with --values, each tensor's value statistics (through the libtorch helper).
#include "command.h"
#include "report.h"
#include "terminal.h"

#include "core/devices/deviceinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"

#include <cerrno>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sys/wait.h>
#include <unistd.h>

namespace cli {

namespace {

struct CheckArguments {
    std::string file, target, mapLocationText;
    bool json = false;
    ckpt::TriageOptions options;
};

// The outcome most storages share, so that only the storages that differ are listed.
std::string commonOutcome(const ckpt::LoadSimulation& simulation)
{
    std::map<std::string, std::size_t> counts;
    for (const ckpt::StorageLoadOutcome& outcome : simulation.storages)
        ++counts[outcome.landsOn ? "lands on " + *outcome.landsOn : "fails: " + outcome.error];
    std::string best;
    std::size_t bestCount = 0;
    for (const auto& [text, count] : counts)
        if (count > bestCount) {
            best = text;
            bestCount = count;
        }
    return best;
}

// Runs ckpt-inspect-values (built next to this program when libtorch is available) and returns
// its JSON, or why there is none.
ckpt::Expected<ckpt::JsonValue> computeValues(const std::string& file)
{
    char self[4096];
    const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0)
        return ckpt::makeError("cannot find this program's folder to run ckpt-inspect-values");
    std::string program(self, static_cast<std::size_t>(length));
    program = program.substr(0, program.find_last_of('/') + 1) + "ckpt-inspect-values";
    if (::access(program.c_str(), X_OK) != 0)
        return ckpt::makeError(
            "value statistics need ckpt-inspect-values, built only where libtorch is installed (" + program
            + " is missing)");
    int pipeEnds[2];
    if (::pipe(pipeEnds) != 0)
        return ckpt::makeError(std::string("cannot run ckpt-inspect-values: ") + std::strerror(errno));
    const pid_t child = ::fork();
    if (child == 0) {
        ::dup2(pipeEnds[1], STDOUT_FILENO);
        ::close(pipeEnds[0]);
        ::close(pipeEnds[1]);
        ::execl(program.c_str(), program.c_str(), file.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(pipeEnds[1]);
    std::string output;
    char buffer[65536];
    for (ssize_t n; (n = ::read(pipeEnds[0], buffer, sizeof buffer)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        output.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(pipeEnds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (child < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ckpt::makeError("ckpt-inspect-values failed on " + file);
    ckpt::JsonParseLimits limits;
    limits.maxBytes = std::size_t(1) << 31;
    return ckpt::parseJson(output, limits);
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
        ckpt::Finding finding(ckpt::Severity::Warning, "values-nonfinite",
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

    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(arguments.file);
    ckpt::TriageReport report = ckpt::triage(checkpoint, options);
    std::optional<ckpt::JsonValue> values;
    std::string valuesProblem;
    if (options.values && checkpoint.format != ckpt::CheckpointFormat::NotACheckpoint) {
        auto computed = computeValues(arguments.file);
        if (computed) {
            values = *computed;
            addValueFindings(*values, report);
        } else {
            valuesProblem = computed.error().message;
        }
    }
    const bool unreadable = checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint
        || (!checkpoint.file && !checkpoint.shardSet); // several files have no single map
    const int exitCode = report.safety.dangerous() ? 4 : unreadable ? 3 : report.exitCode();
    const std::string format = unreadable ? std::string(ckpt::containerKindName(checkpoint.container.kind))
                                          : std::string(ckpt::checkpointFormatName(checkpoint.format));

    if (arguments.json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("file", arguments.file);
        writer.member("format", format);
        writer.member("exit_code", exitCode);
        writer.key("safety");
        writeSafetyJson(writer, report.safety);
        writer.key("findings").beginArray();
        for (const ckpt::Finding& finding : report.findings)
            writeFindingJson(writer, checkpoint, finding);
        writer.endArray();
        writer.key("load_simulation").beginArray();
        for (const ckpt::LoadSimulation& simulation : report.loadSimulations) {
            writer.beginObject();
            writer.member("torch", ckpt::torchGenerationName(simulation.generation));
            writer.member("weights_only", simulation.weightsOnly);
            writer.member("loads", simulation.loads);
            writer.key("error");
            simulation.error.empty() ? writer.null() : writer.value(simulation.error);
            writer.key("error_type");
            simulation.errorType.empty() ? writer.null() : writer.value(simulation.errorType);
            writer.key("storages").beginArray();
            for (const ckpt::StorageLoadOutcome& outcome : simulation.storages) {
                writer.beginObject();
                writer.member("storage",
                    outcome.storage < checkpoint.storages.size() ? checkpoint.storages[outcome.storage].key
                                                                 : std::to_string(outcome.storage));
                writer.key("lands_on");
                outcome.landsOn ? writer.value(*outcome.landsOn) : writer.null();
                writer.key("error");
                outcome.error.empty() ? writer.null() : writer.value(outcome.error);
                writer.endObject();
            }
            writer.endArray();
            writer.endObject();
        }
        writer.endArray();
        const ckpt::WeightsOnlyVerdict& verdict = report.weightsOnly;
        writer.key("weights_only").beginObject();
        writer.member("rating", ckpt::safetyRatingName(verdict.rating));
        writer.member("torch", ckpt::torchGenerationName(verdict.generation));
        writer.key("globals").beginArray();
        for (const ckpt::GlobalClassification& global : verdict.globals) {
            writer.beginObject();
            writer.member("name", global.name);
            writer.member("verdict", ckpt::globalVerdictName(global.verdict));
            writer.member("reason", global.reason);
            writer.endObject();
        }
        writer.endArray();
        writer.key("rejected_opcodes").beginArray();
        for (const std::string& opcode : verdict.rejectedOpcodes)
            writer.value(opcode);
        writer.endArray();
        writer.key("add_safe_globals");
        verdict.addSafeGlobalsCall.empty() ? writer.null() : writer.value(verdict.addSafeGlobalsCall);
        writer.key("call_chains").beginArray();
        for (const std::string& chain : verdict.dangerousCallChains)
            writer.value(chain);
        writer.endArray();
        writer.key("torch_message");
        verdict.torchMessage.empty() ? writer.null() : writer.value(verdict.torchMessage);
        writer.endObject();
        if (values)
            writer.member("values", values->member("tensors"));
        else if (options.values)
            writer.member("values_error", valuesProblem);
        writer.endObject();
        std::cout << writer.takeText() << "\n";
        return exitCode;
    }

    std::cout << shown(arguments.file) << ": " << shown(format) << "\n" << safetyText(report.safety);
    for (const ckpt::Severity severity :
        {ckpt::Severity::Error, ckpt::Severity::Warning, ckpt::Severity::Info}) {
        std::size_t count = 0;
        for (const ckpt::Finding& finding : report.findings)
            count += finding.severity == severity;
        if (!count)
            continue;
        std::cout << "\n"
                  << (severity == ckpt::Severity::Error            ? "Errors"
                             : severity == ckpt::Severity::Warning ? "Warnings"
                                                                   : "Notes")
                  << " (" << count << "):\n";
        for (const ckpt::Finding& finding : report.findings) {
            if (finding.severity != severity)
                continue;
            std::cout << "  [" << finding.code << "] " << shown(finding.message) << "\n";
            if (!finding.explanation.empty())
                std::cout << "      why: " << shown(finding.explanation) << "\n";
            if (!finding.fix.empty())
                std::cout << "      fix: " << shown(finding.fix) << "\n";
        }
    }
    if (report.findings.empty())
        std::cout << "\nNo findings.\n";
    if (!report.loadSimulations.empty()) {
        std::cout << "\nLoad simulation"
                  << (options.target ? " on " + shown(options.target->name) : std::string(" on this machine"))
                  << ", map_location=" << shown(options.mapLocation.python()) << ":\n";
        for (const ckpt::LoadSimulation& simulation : report.loadSimulations) {
            std::cout << "  " << ckpt::torchGenerationName(simulation.generation)
                      << (simulation.weightsOnly ? " (weights_only=True)" : " (weights_only=False)") << ": "
                      << (simulation.loads ? "loads"
                                           : "fails: "
                                     + shown((simulation.errorType.empty() ? std::string()
                                                                           : simulation.errorType + ": ")
                                         + simulation.error))
                      << "\n";
            const std::string common = commonOutcome(simulation);
            if (!common.empty())
                std::cout << "    most storages: " << shown(common) << "\n";
            for (const ckpt::StorageLoadOutcome& outcome : simulation.storages) {
                const std::string text
                    = outcome.landsOn ? "lands on " + *outcome.landsOn : "fails: " + outcome.error;
                if (text != common && outcome.storage < checkpoint.storages.size())
                    std::cout << "    storage " << shown(checkpoint.storages[outcome.storage].key) << ": "
                              << shown(text) << "\n";
            }
        }
    }
    const ckpt::WeightsOnlyVerdict& verdict = report.weightsOnly;
    std::cout << "\nweights_only verdict (" << ckpt::torchGenerationName(verdict.generation)
              << "): " << ckpt::safetyRatingName(verdict.rating) << "\n";
    for (const ckpt::GlobalClassification& global : verdict.globals)
        std::cout << "  " << std::left << std::setw(16) << ckpt::globalVerdictName(global.verdict)
                  << std::right << " " << shown(global.name)
                  << (global.reason.empty() ? std::string() : ": " + shown(global.reason)) << "\n";
    if (!verdict.addSafeGlobalsCall.empty())
        std::cout << "  allow with: " << shownLines(verdict.addSafeGlobalsCall) << "\n";
    for (const std::string& chain : verdict.dangerousCallChains)
        std::cout << "  would run: " << shown(chain) << "\n";
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
    command->add_option("FILE", arguments->file, "a checkpoint file, or a folder of shards")
        ->type_name("")
        ->required();
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
