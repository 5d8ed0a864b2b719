// SPDX-License-Identifier: MIT
#pragma once
// The commands of ckpt-inspect, one file each (KeePassXC's src/cli shape): every file adds its
// subcommand to the program's CLI11 parser, binds the options to its own state and returns the
// function that runs once the whole command line has parsed.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace cli {

// sysexits.h's EX_USAGE: the command line itself was wrong (unknown option, missing or invalid
// value); nothing was read or written.
inline constexpr int kUsageError = 64;

struct Command {
    CLI::App* parser = nullptr;
    std::function<int()> run; // the exit status
};

Command addInfoCommand(CLI::App& program);
Command addRemapCommand(CLI::App& program);
Command addCheckCommand(CLI::App& program);
Command addDevicesCommand(CLI::App& program);
Command addPlanCommand(CLI::App& program);
Command addTargetsCommand(CLI::App& program);
Command addExtractCommand(CLI::App& program);
Command addConvertCommand(CLI::App& program);
Command addDiffCommand(CLI::App& program);

// Options whose values are numbers are parsed here, whole, and refused with a message naming the
// option (exit 64) when they are not what they say: never std::atoi's silent 0.

// A whole number from minimum to maximum ("abc", "-3", "2.5" and "7x" are refused).
CLI::Option* addWholeNumberOption(CLI::App& command, const std::string& name, std::uint64_t& target,
    const std::string& description, std::uint64_t minimum = 0, std::uint64_t maximum = UINT64_MAX);

// A byte size as machine specs write it (512MiB, 24GiB, 5GB, 1000000); a size of 0 is refused
// when `positive`.
CLI::Option* addByteSizeOption(CLI::App& command, const std::string& name, std::uint64_t& target,
    const std::string& description, bool positive = false);

// A required positional argument naming a file or folder (FILE, INPUT, A, B): shown in --help by
// its name alone, without CLI11's TEXT type.
CLI::Option* addPathArgument(
    CLI::App& command, const std::string& name, std::string& target, const std::string& description);

// --json, which every command that reports takes.
void addJsonFlag(CLI::App& command, bool& json);

// A command's model (a 100,000-tensor checkpoint is some 200,000 heap blocks) is about to be freed
// by the exit that follows the command: freeing it block by block cost a tenth of `info --json`'s
// time, for nothing. Like clang's -disable-free, a command hands it over here instead and the
// process's exit returns the memory. It stays reachable from a global list, so LeakSanitizer does
// not call it a leak. For what lives until the command returns only (never in a loop).
void keepUntilExit(const void* object);
template<typename T> T& keptUntilExit(T&& value)
{
    T* kept = new T(std::forward<T>(value));
    keepUntilExit(kept);
    return *kept;
}

// --no-verify: skip reading what was written back (`verify` becomes false).
void addNoVerifyFlag(CLI::App& command, bool& verify);

} // namespace cli
