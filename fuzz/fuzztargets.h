// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt::fuzz {

// The entry points the fuzzers drive. Each harness binary (fuzz_<name>) and the regression replay
// (ckpt-fuzz-replay, run by ctest in every build) call the same function, so a crash found by a
// campaign is replayed through exactly the code that crashed.
enum class Harness {
    Reader, // readCheckpoint on a whole file: sniffing, every container, the pickles, the builder
    Pickle, // the symbolic pickle machine on one stream (several stacked pickles, as legacy files hold)
    Zip, // the tolerant zip reader: directory, local-header recovery, inflate, CRC
    Safetensors, // the safetensors reader on a file that is taken to be one
    Check, // `ckpt-inspect check`: triage on whatever the reader produced
};

struct HarnessInfo {
    Harness harness;
    std::string_view name; // "reader": the binary is fuzz_reader, regressions live in .../reader/
};

std::span<const HarnessInfo> allHarnesses();
std::optional<Harness> harnessByName(std::string_view name);

struct HarnessResult {
    // Broken promises the code can check itself: a finding without a message, an index that points
    // nowhere, a pickle that neither finished nor said why. Memory errors and undefined behaviour
    // are the sanitizers' to find. Empty when every promise held.
    std::vector<std::string> problems;
    // What a person would be told ("code: message" of each finding, the machine's error), so a
    // regression test can also ask for a clear error, not only for the absence of a crash.
    std::vector<std::string> messages;
};

// Runs one input through a harness.
HarnessResult runHarness(Harness harness, ByteView input);

} // namespace ckpt::fuzz
