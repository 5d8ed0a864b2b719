// SPDX-License-Identifier: MIT
#pragma once
// Running a helper program to its end: the CLI and the app ask `ckpt-inspect-values` (the one
// program that loads libtorch) for tensor values this way, so neither loads libtorch itself.
#include "core/base/expected.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

struct ProcessRequest {
    std::string program; // a path; PATH is not searched
    std::vector<std::string> arguments; // after the program's name
    std::string input; // written to the program's standard input, which is then closed
    // Asked about every 50 ms while the program runs; false kills it (the outcome is `cancelled`).
    std::function<bool()> keepGoing;
    // Each line the program writes on standard error, as it comes (without the line break). When
    // set, or when captureErrors is true, standard error is read into the outcome; otherwise the
    // program writes to this process's standard error.
    std::function<void(std::string_view line)> onErrorLine;
    bool captureErrors = false;
    std::optional<std::chrono::milliseconds> timeout; // killed after this long (`timedOut`)
    // Killed once its standard output grows past this many bytes (`outputTooLarge`): a caller that
    // keeps the whole output says how much it is prepared to hold.
    std::optional<std::size_t> maxOutputBytes;
};

struct ProcessOutcome {
    std::string output; // standard output, whole
    std::string errors; // standard error, when captured
    bool exitedNormally = false; // not killed by a signal (nor by us)
    int exitCode = -1; // when exitedNormally
    bool cancelled = false;
    bool timedOut = false;
    bool outputTooLarge = false; // killed past ProcessRequest::maxOutputBytes
    bool succeeded() const { return exitedNormally && exitCode == 0; }
};

// Starts the program with its standard input, output and (when asked) error on pipes, feeds the
// input and reads both outputs at once (so that neither side blocks the other whatever their
// sizes), and waits for it. An error only when it could not be started at all.
Expected<ProcessOutcome> runProcess(const ProcessRequest& request);

// The folder of this process's own executable, with its trailing slash ("" if /proc cannot say).
std::string folderOfThisProgram();

// `name` in the folder of this process's own executable, when it is there and executable: the
// helper programs are installed next to the programs that run them.
std::optional<std::string> programBesideThisOne(std::string_view name);

} // namespace ckpt
