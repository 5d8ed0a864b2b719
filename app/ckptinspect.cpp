// ckpt-inspect: the command-line twin of the desktop app, for scripts, servers and tests.
#include "checkpoint.h"
#include "checkpointjson.h"
#include "checkpointreader.h"
#include "json.h"
#include "placementplan.h"
#include "remapwriter.h"

#include <csignal>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

const char* kUsage = R"(usage: ckpt-inspect COMMAND [options]

Opens PyTorch checkpoints without running any of their pickle code.

commands:
  info FILE [--json]   the tree of tensors with dtype, shape, size and the device each
                       storage was recorded on; totals per device; findings
  remap FILE -o OUT [--map FROM=TO]... [--tensor NAME=DEV]... [--module PREFIX=DEV]...
        [--json] [--no-verify]
                       writes a copy whose storages are recorded on the planned devices, so
                       plain torch.load puts them there (FROM may be *; later rules win; a
                       tensor moves with every tensor that shares its storage)
  remap FILE --print-map-location [--map ...] [--tensor ...] [--module ...]
                       prints the plan as a map_location dict, or as a Python snippet when
                       it cannot be said as one, instead of writing a copy
  help                 this text

exit status: 0 read, 1 read with warnings, 2 read with errors, 3 could not read
)";

int exitCodeFor(const ckpt::Checkpoint& checkpoint)
{
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint)
        return 3;
    if (checkpoint.hasErrors())
        return 2;
    for (const ckpt::Finding& finding : checkpoint.findings)
        if (finding.severity == ckpt::Severity::Warning)
            return 1;
    return 0;
}

int runInfo(const std::vector<std::string>& args)
{
    bool json = false;
    std::string file;
    for (const std::string& arg : args) {
        if (arg == "--json")
            json = true;
        else if (arg.starts_with("-")) {
            std::cerr << "ckpt-inspect info: unknown option " << arg << "\n" << kUsage;
            return 64;
        } else if (file.empty())
            file = arg;
        else {
            std::cerr << "ckpt-inspect info: give one FILE\n";
            return 64;
        }
    }
    if (file.empty()) {
        std::cerr << "ckpt-inspect info: missing FILE\n" << kUsage;
        return 64;
    }
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    std::cout << (json ? ckpt::checkpointToJson(checkpoint, true) : ckpt::checkpointToText(checkpoint));
    return exitCodeFor(checkpoint);
}

int runRemap(const std::vector<std::string>& args)
{
    std::string file;
    std::string output;
    bool json = false;
    bool verify = true;
    bool printMapLocation = false;
    std::vector<ckpt::PlacementRule> rules;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&](const char* flag) -> std::optional<std::string> {
            if (i + 1 >= args.size()) {
                std::cerr << "ckpt-inspect remap: " << flag << " needs a value\n";
                return std::nullopt;
            }
            return args[++i];
        };
        using Kind = ckpt::PlacementRule::Kind;
        std::optional<Kind> ruleKind;
        if (arg == "-o" || arg == "--output") {
            auto v = value("-o");
            if (!v)
                return 64;
            output = *v;
        } else if (arg == "--map") {
            ruleKind = Kind::MapTag;
        } else if (arg == "--tensor") {
            ruleKind = Kind::MoveTensor;
        } else if (arg == "--module") {
            ruleKind = Kind::MoveModule;
        } else if (arg == "--json") {
            json = true;
        } else if (arg == "--no-verify") {
            verify = false;
        } else if (arg == "--print-map-location") {
            printMapLocation = true;
        } else if (arg.starts_with("-")) {
            std::cerr << "ckpt-inspect remap: unknown option " << arg << "\n" << kUsage;
            return 64;
        } else if (file.empty()) {
            file = arg;
        } else {
            std::cerr << "ckpt-inspect remap: give one FILE\n";
            return 64;
        }
        if (ruleKind) {
            auto v = value(arg.c_str());
            if (!v)
                return 64;
            auto rule = ckpt::PlacementRule::parse(*ruleKind, *v);
            if (!rule) {
                std::cerr << "ckpt-inspect remap: " << arg << " " << rule.error().message << "\n";
                return 64;
            }
            rules.push_back(*rule);
        }
    }
    if (file.empty() || (output.empty() && !printMapLocation)) {
        std::cerr << "ckpt-inspect remap: give FILE and -o OUT (or --print-map-location)\n" << kUsage;
        return 64;
    }

    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect remap: " << file << ": " << checkpoint.container.description << "\n";
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    for (const ckpt::PlacementRule& rule : rules) {
        const ckpt::PlacementChange change = plan.apply(rule);
        if (rule.kind != ckpt::PlacementRule::Kind::MapTag && change.tensorsNamed.empty()) {
            std::cerr << "ckpt-inspect remap: " << rule.describe() << ": the checkpoint has no tensor "
                      << (rule.kind == ckpt::PlacementRule::Kind::MoveTensor ? "named '" : "under '")
                      << rule.subject << "'\n";
            return 2;
        }
        for (const std::string& note : change.notes)
            std::cerr << "note: " << rule.describe() << ": " << note << "\n";
        if (!change.tensorsDraggedAlong.empty()) {
            std::cerr << "note: " << rule.describe() << " also moves " << change.tensorsDraggedAlong.size()
                      << " tensor(s) that share a storage with it:";
            for (std::size_t k = 0; k < change.tensorsDraggedAlong.size() && k < 5; ++k)
                std::cerr << " " << checkpoint.tensors[change.tensorsDraggedAlong[k]].name;
            std::cerr << (change.tensorsDraggedAlong.size() > 5 ? " ...\n" : "\n");
        }
    }
    if (printMapLocation) {
        std::cout << plan.asPython(file);
        return 0;
    }

    auto result = ckpt::writeRemappedCopy(checkpoint, plan, output, {{}, verify});
    if (!result) {
        std::cerr << "ckpt-inspect remap: " << result.error().message << "\n";
        return 2;
    }
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("input", file);
        writer.member("output", result->outputPath);
        writer.member("format", std::string(ckpt::checkpointFormatName(checkpoint.format)));
        writer.key("storages").beginArray();
        for (const ckpt::RemappedStorage& storage : result->storages) {
            writer.beginObject();
            writer.member("key", storage.key);
            writer.member("output_key", storage.outputKey);
            writer.key("recorded");
            storage.recorded ? writer.value(*storage.recorded) : writer.null();
            writer.key("planned");
            storage.planned ? writer.value(*storage.planned) : writer.null();
            writer.endObject();
        }
        writer.endArray();
        writer.member("records_copied", result->recordsCopied);
        writer.member("records_rewritten", result->recordsRewritten);
        writer.member("bytes_written", result->bytesWritten);
        writer.member("seconds", result->seconds);
        writer.member("verified", result->verified);
        writer.member("summary", result->summary());
        writer.endObject();
        std::cout << writer.takeText() << "\n";
    } else {
        std::cout << output << ": " << result->summary() << "\n";
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
        std::cout << kUsage;
        return args.empty() ? 64 : 0;
    }
    const std::string command = args[0];
    args.erase(args.begin());
    // A file-size limit must fail the write with a message, not kill the process mid-file.
    std::signal(SIGXFSZ, SIG_IGN);
    if (command == "info")
        return runInfo(args);
    if (command == "remap")
        return runRemap(args);
    std::cerr << "ckpt-inspect: unknown command '" << command << "'\n" << kUsage;
    return 64;
}
