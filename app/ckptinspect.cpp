// ckpt-inspect: the command-line twin of the desktop app, for scripts, servers and tests.
#include "checkpointjson.h"
#include "checkpointreader.h"

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
    if (command == "info")
        return runInfo(args);
    std::cerr << "ckpt-inspect: unknown command '" << command << "'\n" << kUsage;
    return 64;
}
