// SPDX-License-Identifier: MIT
// ckpt-inspect diff: what changed between two checkpoints (files or folders, any formats), by
// content hashes first; for float tensors whose values changed, how far apart (through libtorch,
// in the ckpt-inspect-values helper, so this program never loads libtorch).
#include "command.h"
#include "progressbar.h"
#include "remoteinput.h"

#include "core/json/json.h"
#include "core/report/diffreport.h"
#include "core/tasks/comparison.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

struct DiffArguments {
    std::vector<std::string> paths {2};
    bool json = false;
    bool values = true;
    std::uint64_t threads = 0;
};

int runDiff(const DiffArguments& arguments)
{
    for (const std::string& path : arguments.paths)
        if (refusedRemote("diff", path, "a comparison of content hashes"))
            return kUsageError;
    // core/tasks/comparison, as the app's Compare With: hashes, then the value differences of
    // changed float tensors from the helper, which opens A and B as given.
    ckpt::ComparisonRequest request;
    request.pathA = arguments.paths[0];
    request.pathB = arguments.paths[1];
    request.values = arguments.values;
    request.threads = static_cast<unsigned>(arguments.threads);
    ProgressBar bar("comparing");
    request.progress = bar.callback();
    const ckpt::ComparisonOutcome outcome = ckpt::compareCheckpoints(request);
    bar.finish();
    if (bar.cancelled()) { // Ctrl-C: hashing stopped, or the helper was stopped (or died of the SIGINT)
        std::cerr << "ckpt-inspect diff: cancelled\n";
        return kCancelledExit;
    }
    if (!outcome.error.empty()) {
        std::cerr << "ckpt-inspect diff: " << outcome.unreadablePath << ": " << outcome.error << "\n";
        return outcome.exitCode();
    }
    if (arguments.json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writeDiffJson(
            writer, outcome.pathA, outcome.pathB, outcome.diff, outcome.deltas, outcome.valuesProblem);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writeDiffText(
            std::cout, outcome.pathA, outcome.pathB, outcome.diff, outcome.deltas, outcome.valuesProblem);
    }
    return outcome.exitCode();
}

} // namespace

Command addDiffCommand(CLI::App& program)
{
    auto arguments = std::make_shared<DiffArguments>();
    CLI::App* command = program.add_subcommand("diff",
        "What changed between two checkpoints (files or folders, any formats): tensors added, removed, "
        "renamed "
        "(same bytes), changed in dtype, shape, stride, recorded device or value (content hashes, in "
        "parallel), and for float tensors the largest absolute and relative difference. Exit 0 identical, 1 "
        "different, 2 could not compare.");
    addPathArgument(*command, "A", arguments->paths[0], "a checkpoint file or folder");
    addPathArgument(*command, "B", arguments->paths[1], "the checkpoint to compare it with");
    addJsonFlag(*command, arguments->json);
    command->add_flag_callback(
        "--no-values", [arguments] { arguments->values = false; },
        "compare content hashes only (no libtorch helper)");
    addWholeNumberOption(
        *command, "--threads", arguments->threads, "hash with N threads (0: one per core)", 0, 1024);
    return {command, [arguments] { return runDiff(*arguments); }};
}

} // namespace cli
