// SPDX-License-Identifier: MIT
// ckpt-fuzz-replay: runs saved inputs through the fuzz harnesses' entry points, in any build (no
// libFuzzer needed), so every crash a campaign ever found stays a test.
//
//   ckpt-fuzz-replay DIR                  every file in DIR/<harness>/ through that harness
//   ckpt-fuzz-replay HARNESS PATH...      the given files (folders: every file below) through one
//   ckpt-fuzz-replay all PATH...          ... through every harness (the fixtures, as a sanitizer test)
//
// A file may come with FILE.expect: each non-empty line of it must appear in one of the messages
// the input produced (a finding's "code: message", the pickle machine's error), so a regression
// also pins down the clear error it now gets. Exit status 1 when any promise broke or any expected
// message is missing; a crash is a crash.
#include "fuzz/fuzztargets.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace {

namespace fs = std::filesystem;
using ckpt::fuzz::Harness;

std::optional<ckpt::ByteBuffer> readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    return ckpt::ByteBuffer(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> expectedMessages(const fs::path& input)
{
    std::vector<std::string> expected;
    std::ifstream in(input.string() + ".expect");
    for (std::string line; std::getline(in, line);)
        if (!line.empty())
            expected.push_back(line);
    return expected;
}

bool isSideFile(const fs::path& path)
{
    const std::string extension = path.extension().string();
    return extension == ".expect" || extension == ".md";
}

// Replays one input; prints what went wrong and returns false when anything did.
// `withExpectations`: FILE.expect is about the harness whose folder holds FILE; a run through every
// harness (`all`) checks only that nothing crashes and every promise holds.
bool replay(Harness harness, std::string_view harnessName, const fs::path& path, bool withExpectations = true)
{
    auto bytes = readFile(path);
    if (!bytes) {
        std::cerr << "FAIL " << harnessName << " " << path.string() << ": cannot read the file\n";
        return false;
    }
    const ckpt::fuzz::HarnessResult result = ckpt::fuzz::runHarness(harness, *bytes);
    bool ok = result.problems.empty();
    for (const std::string& problem : result.problems)
        std::cerr << "FAIL " << harnessName << " " << path.string() << ": " << problem << "\n";
    const std::vector<std::string> wantedMessages
        = withExpectations ? expectedMessages(path) : std::vector<std::string> {};
    for (const std::string& wanted : wantedMessages) {
        const bool found = std::any_of(result.messages.begin(), result.messages.end(),
            [&](const std::string& message) { return message.find(wanted) != std::string::npos; });
        if (!found) {
            ok = false;
            std::cerr << "FAIL " << harnessName << " " << path.string() << ": no message says \"" << wanted
                      << "\"; the messages were:\n";
            for (const std::string& message : result.messages)
                std::cerr << "    " << message << "\n";
        }
    }
    std::cout << (ok ? "ok   " : "FAIL ") << harnessName << " " << path.filename().string() << " ("
              << bytes->size() << " bytes, " << result.messages.size() << " messages)\n";
    return ok;
}

// The files directly in `directory`, or (recursive) every file below it; a file is itself.
std::vector<fs::path> inputsIn(const fs::path& path, bool recursive)
{
    std::vector<fs::path> inputs;
    std::error_code error;
    if (fs::is_regular_file(path, error)) {
        inputs.push_back(path);
    } else if (recursive) {
        for (const fs::directory_entry& entry : fs::recursive_directory_iterator(path, error))
            if (entry.is_regular_file() && !isSideFile(entry.path()))
                inputs.push_back(entry.path());
    } else {
        for (const fs::directory_entry& entry : fs::directory_iterator(path, error))
            if (entry.is_regular_file() && !isSideFile(entry.path()))
                inputs.push_back(entry.path());
    }
    std::sort(inputs.begin(), inputs.end()); // a stable order, so logs compare across runs
    return inputs;
}

} // namespace

int main(int argc, char** argv)
{
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::cerr << "usage: ckpt-fuzz-replay DIR | ckpt-fuzz-replay HARNESS|all PATH...\n";
        return 64;
    }
    int failures = 0;
    int replayed = 0;
    const bool every = args[0] == "all";
    if (every || ckpt::fuzz::harnessByName(args[0])) {
        for (std::size_t i = 1; i < args.size(); ++i) {
            if (!fs::exists(args[i])) {
                std::cerr << "FAIL " << args[i] << ": no such file or folder\n";
                ++failures;
                continue;
            }
            for (const fs::path& input : inputsIn(args[i], true))
                for (const ckpt::fuzz::HarnessInfo& info : ckpt::fuzz::allHarnesses()) {
                    if (!every && info.name != args[0])
                        continue;
                    failures += replay(info.harness, info.name, input, !every) ? 0 : 1;
                    ++replayed;
                }
        }
    } else {
        const fs::path root = args[0];
        if (!fs::is_directory(root)) {
            std::cerr << "ckpt-fuzz-replay: " << args[0] << " is neither a harness nor a directory\n";
            return 64;
        }
        for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
            if (entry.is_directory() && !ckpt::fuzz::harnessByName(entry.path().filename().string())) {
                std::cerr << "ckpt-fuzz-replay: " << entry.path().string() << " is named after no harness\n";
                ++failures;
            }
        }
        for (const ckpt::fuzz::HarnessInfo& info : ckpt::fuzz::allHarnesses())
            for (const fs::path& input : inputsIn(root / info.name, false)) {
                failures += replay(info.harness, info.name, input) ? 0 : 1;
                ++replayed;
            }
    }
    std::cout << replayed << " inputs replayed, " << failures << " failed\n";
    return failures == 0 ? 0 : 1;
}
