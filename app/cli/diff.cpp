// SPDX-License-Identifier: MIT
// ckpt-inspect diff: what changed between two checkpoints (files or folders, any formats), by
// content hashes first; for float tensors whose values changed, how far apart (through libtorch,
// in the ckpt-inspect-values helper, so this program never loads libtorch).
#include "command.h"

#include "core/compare/checkpointdiff.h"
#include "core/compare/valuedelta.h"
#include "core/io/process.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/report/diffreport.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

// Runs `ckpt-inspect-values --diff A B` with the pairs on its stdin; its JSON, or why none.
ckpt::Expected<ckpt::JsonValue> runValueHelper(
    const std::string& fileA, const std::string& fileB, const std::string& pairs)
{
    const auto program = ckpt::programBesideThisOne("ckpt-inspect-values");
    if (!program)
        return ckpt::makeError(
            "value differences need ckpt-inspect-values, built only where libtorch is installed");
    ckpt::ProcessRequest request;
    request.program = *program;
    request.arguments = {"--diff", fileA, fileB};
    request.input = pairs;
    const auto run = ckpt::runProcess(request);
    if (!run)
        return run.error();
    if (!run->succeeded())
        return ckpt::makeError("ckpt-inspect-values failed comparing " + fileA + " and " + fileB);
    ckpt::JsonParseLimits limits;
    limits.maxBytes = std::size_t(1) << 31;
    return ckpt::parseJson(run->output, limits);
}

// A file, a folder of shards, an index or a DCP folder, read as `info` reads it.
std::optional<std::string> openSide(const std::string& path, ckpt::DiffSide& side)
{
    auto checkpoint = std::make_shared<const ckpt::Checkpoint>(ckpt::readCheckpoint(path));
    if (checkpoint->format == ckpt::CheckpointFormat::NotACheckpoint)
        return path + ": " + checkpoint->container.description;
    side = ckpt::makeDiffSide(std::move(checkpoint));
    return std::nullopt;
}

struct DiffArguments {
    std::vector<std::string> paths {2};
    bool json = false;
    bool values = true;
    std::uint64_t threads = 0;
};

int runDiff(const DiffArguments& arguments)
{
    const std::vector<std::string>& paths = arguments.paths;
    const bool json = arguments.json;
    const bool values = arguments.values;
    const auto threads = static_cast<unsigned>(arguments.threads);
    ckpt::DiffSide a, b;
    for (auto [path, side] : {std::pair {&paths[0], &a}, std::pair {&paths[1], &b}})
        if (auto problem = openSide(*path, *side)) {
            std::cerr << "ckpt-inspect diff: " << *problem << "\n";
            return 2;
        }
    ckpt::DiffOptions options;
    options.threads = threads;
    const ckpt::CheckpointDiff diff = ckpt::diffCheckpoints(a.tensors, b.tensors, options);

    // Value differences for float tensors whose bytes changed, in one helper run; it opens A and B
    // as given and takes the tensors by their numbers there.
    ckpt::ValueDeltas deltas;
    std::string valuesProblem;
    const std::vector<std::size_t> changes = ckpt::changesToMeasure(diff);
    if (values && !changes.empty()) {
        auto result = runValueHelper(paths[0], paths[1], ckpt::valueHelperPairs(diff, changes));
        if (!result)
            valuesProblem = result.error().message;
        else
            deltas = ckpt::readValueDeltas(*result, changes, diff.changed.size());
    }

    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writeDiffJson(writer, paths[0], paths[1], diff, deltas, valuesProblem);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writeDiffText(std::cout, paths[0], paths[1], diff, deltas, valuesProblem);
    }
    return diff.identical() ? 0 : 1;
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
