// SPDX-License-Identifier: MIT
// ckpt-inspect diff: what changed between two checkpoints (files or folders, any formats), by
// content hashes first; for float tensors whose values changed, how far apart (through libtorch,
// in the ckpt-inspect-values helper, so this program never loads libtorch).
#include "command.h"

#include "core/compare/checkpointdiff.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <sys/wait.h>
#include <unistd.h>

namespace cli {

namespace {

struct ValueDelta {
    bool known = false;
    std::string error;
    std::uint64_t differing = 0, count = 0;
    double maxAbs = 0, maxRel = 0;
};

bool isFloat(const std::string& dtype)
{
    return dtype == "float64" || dtype == "float32" || dtype == "float16" || dtype == "bfloat16";
}

std::string helperProgram()
{
    char self[4096];
    const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0)
        return {};
    std::string program(self, static_cast<std::size_t>(length));
    return program.substr(0, program.find_last_of('/') + 1) + "ckpt-inspect-values";
}

// Runs `ckpt-inspect-values --diff A B` with the pairs on its stdin; its JSON, or why none.
ckpt::Expected<ckpt::JsonValue> runValueHelper(
    const std::string& fileA, const std::string& fileB, const std::string& pairs)
{
    const std::string program = helperProgram();
    if (program.empty() || ::access(program.c_str(), X_OK) != 0)
        return ckpt::makeError(
            "value differences need ckpt-inspect-values, built only where libtorch is installed");
    int input[2], output[2];
    if (::pipe(input) != 0 || ::pipe(output) != 0)
        return ckpt::makeError(std::string("cannot run ckpt-inspect-values: ") + std::strerror(errno));
    const pid_t child = ::fork();
    if (child == 0) {
        ::dup2(input[0], STDIN_FILENO);
        ::dup2(output[1], STDOUT_FILENO);
        ::close(input[0]);
        ::close(input[1]);
        ::close(output[0]);
        ::close(output[1]);
        ::execl(program.c_str(), program.c_str(), "--diff", fileA.c_str(), fileB.c_str(),
            static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(input[0]);
    ::close(output[1]);
    // The helper reads every pair before it writes, so writing all first cannot deadlock.
    for (std::size_t done = 0; done < pairs.size();) {
        const ssize_t n = ::write(input[1], pairs.data() + done, pairs.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += static_cast<std::size_t>(n);
    }
    ::close(input[1]);
    std::string text;
    char buffer[65536];
    for (ssize_t n; (n = ::read(output[0], buffer, sizeof buffer)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(output[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (child < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ckpt::makeError("ckpt-inspect-values failed comparing " + fileA + " and " + fileB);
    ckpt::JsonParseLimits limits;
    limits.maxBytes = std::size_t(1) << 31;
    return ckpt::parseJson(text, limits);
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

std::string joinShape(const std::vector<std::int64_t>& values)
{
    std::string text = "[";
    for (std::size_t i = 0; i < values.size(); ++i)
        text += (i ? ", " : "") + std::to_string(values[i]);
    return text + "]";
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
    std::map<std::size_t, ValueDelta> deltas; // index into diff.changed
    std::string valuesProblem;
    std::vector<std::size_t> members;
    for (std::size_t c = 0; c < diff.changed.size(); ++c) {
        const ckpt::TensorChange& change = diff.changed[c];
        if (change.valueChangeComparable() && isFloat(change.a.checkpoint->tensors[change.a.tensor].dtype))
            members.push_back(c);
    }
    if (values && !members.empty()) {
        std::string pairs;
        for (std::size_t c : members)
            pairs += std::to_string(diff.changed[c].a.sideIndex) + " "
                + std::to_string(diff.changed[c].b.sideIndex) + "\n";
        auto result = runValueHelper(paths[0], paths[1], pairs);
        if (!result) {
            valuesProblem = result.error().message;
        } else {
            const auto& items = result->member("pairs").items();
            for (std::size_t k = 0; k < members.size() && k < items.size(); ++k) {
                ValueDelta delta;
                if (const ckpt::JsonValue* error = items[k].find("error")) {
                    delta.error = error->toString();
                } else {
                    delta.known = true;
                    delta.count = items[k].member("count").toUInt64().value_or(0);
                    delta.differing = items[k].member("differing").toUInt64().value_or(0);
                    delta.maxAbs = items[k].member("max_abs").toDouble();
                    delta.maxRel = items[k].member("max_rel").toDouble();
                }
                deltas[members[k]] = delta;
            }
        }
    }

    auto entry = [](const ckpt::DiffTensor& t) -> const ckpt::TensorEntry& {
        return t.checkpoint->tensors[t.tensor];
    };
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("a", paths[0]);
        writer.member("b", paths[1]);
        writer.member("identical", diff.identical());
        auto names = [&](const char* key, const std::vector<std::string>& list) {
            writer.key(key).beginArray();
            for (const std::string& name : list)
                writer.value(name);
            writer.endArray();
        };
        names("added", diff.added);
        names("removed", diff.removed);
        writer.key("renamed").beginArray();
        for (const ckpt::RenamedTensor& renamed : diff.renamed)
            writer.beginObject().member("from", renamed.from).member("to", renamed.to).endObject();
        writer.endArray();
        writer.key("changed").beginArray();
        for (std::size_t c = 0; c < diff.changed.size(); ++c) {
            const ckpt::TensorChange& change = diff.changed[c];
            const ckpt::TensorEntry& x = entry(change.a);
            const ckpt::TensorEntry& y = entry(change.b);
            writer.beginObject();
            writer.member("name", change.name);
            if (change.dtypeChanged)
                writer.key("dtype").beginArray().value(x.dtype).value(y.dtype).endArray();
            if (change.shapeChanged)
                writer.key("shape")
                    .beginArray()
                    .value(joinShape(x.shape))
                    .value(joinShape(y.shape))
                    .endArray();
            if (change.strideChanged)
                writer.key("stride")
                    .beginArray()
                    .value(joinShape(*x.stride))
                    .value(joinShape(*y.stride))
                    .endArray();
            if (change.deviceChanged)
                writer.key("device").beginArray().value(*x.device).value(*y.device).endArray();
            writer.member("value_changed", change.valueChanged);
            if (auto it = deltas.find(c); it != deltas.end()) {
                if (it->second.known) {
                    writer.member("differing", it->second.differing);
                    writer.member("count", it->second.count);
                    writer.member("max_abs", it->second.maxAbs);
                    writer.member("max_rel", it->second.maxRel);
                } else {
                    writer.member("values_error", it->second.error);
                }
            }
            if (!change.valueNotCompared.empty())
                writer.member("value_not_compared", change.valueNotCompared);
            writer.endObject();
        }
        writer.endArray();
        writer.member("unchanged", diff.unchanged);
        writer.member("bytes_hashed", diff.bytesHashed);
        writer.member("hash_seconds", diff.hashSeconds);
        writer.member("threads", static_cast<std::uint64_t>(diff.threads));
        if (!valuesProblem.empty())
            writer.member("values_error", valuesProblem);
        writer.endObject();
        std::cout << writer.takeText() << "\n";
        return diff.identical() ? 0 : 1;
    }
    std::cout << "--- " << paths[0] << "\n+++ " << paths[1] << "\n";
    for (const std::string& name : diff.removed)
        std::cout << "removed  " << name << "\n";
    for (const std::string& name : diff.added)
        std::cout << "added    " << name << "\n";
    for (const ckpt::RenamedTensor& renamed : diff.renamed)
        std::cout << "renamed  " << renamed.from << " -> " << renamed.to << " (same bytes)\n";
    for (std::size_t c = 0; c < diff.changed.size(); ++c) {
        const ckpt::TensorChange& change = diff.changed[c];
        const ckpt::TensorEntry& x = entry(change.a);
        const ckpt::TensorEntry& y = entry(change.b);
        std::cout << "changed  " << change.name << ":";
        if (change.dtypeChanged)
            std::cout << " dtype " << x.dtype << " -> " << y.dtype;
        if (change.shapeChanged)
            std::cout << " shape " << joinShape(x.shape) << " -> " << joinShape(y.shape);
        if (change.strideChanged)
            std::cout << " stride " << joinShape(*x.stride) << " -> " << joinShape(*y.stride);
        if (change.deviceChanged)
            std::cout << " device " << *x.device << " -> " << *y.device;
        if (change.valueChanged) {
            std::cout << " values";
            if (auto it = deltas.find(c); it != deltas.end() && it->second.known) {
                char text[160];
                std::snprintf(text, sizeof text, " (%llu of %llu differ, max abs %.6g, max rel %.6g)",
                    static_cast<unsigned long long>(it->second.differing),
                    static_cast<unsigned long long>(it->second.count), it->second.maxAbs, it->second.maxRel);
                std::cout << text;
            }
        }
        std::cout << "\n";
    }
    char summary[200];
    std::snprintf(summary, sizeof summary,
        "%zu removed, %zu added, %zu renamed, %zu changed, %llu unchanged; %s hashed in %.2f s on %u "
        "threads\n",
        diff.removed.size(), diff.added.size(), diff.renamed.size(), diff.changed.size(),
        static_cast<unsigned long long>(diff.unchanged), ckpt::formatBytes(diff.bytesHashed).c_str(),
        diff.hashSeconds, diff.threads);
    std::cout << summary;
    if (!valuesProblem.empty())
        std::cout << "note: " << valuesProblem << "\n";
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
    command->add_option("A", arguments->paths[0], "a checkpoint file or folder")->type_name("")->required();
    command->add_option("B", arguments->paths[1], "the checkpoint to compare it with")
        ->type_name("")
        ->required();
    addJsonFlag(*command, arguments->json);
    command->add_flag_callback(
        "--no-values", [arguments] { arguments->values = false; },
        "compare content hashes only (no libtorch helper)");
    addWholeNumberOption(
        *command, "--threads", arguments->threads, "hash with N threads (0: one per core)", 0, 1024);
    return {command, [arguments] { return runDiff(*arguments); }};
}

} // namespace cli
