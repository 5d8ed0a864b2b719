// SPDX-License-Identifier: MIT
// The libFuzzer entry point, compiled once per harness with CKPT_FUZZ_HARNESS naming it
// (fuzz_reader, fuzz_pickle, ...). libFuzzer supplies main().
#include "fuzz/fuzztargets.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static const ckpt::fuzz::Harness harness = [] {
        auto found = ckpt::fuzz::harnessByName(CKPT_FUZZ_HARNESS);
        if (!found) {
            std::fprintf(stderr, "no harness named %s\n", CKPT_FUZZ_HARNESS);
            std::abort();
        }
        return *found;
    }();
    const ckpt::fuzz::HarnessResult result = ckpt::fuzz::runHarness(harness, ckpt::ByteView(data, size));
    if (!result.problems.empty()) {
        // A broken promise is a crash to libFuzzer: it saves the input as crash-<sha1> for a
        // regression test.
        for (const std::string& problem : result.problems)
            std::fprintf(stderr, "%s: %s\n", CKPT_FUZZ_HARNESS, problem.c_str());
        std::abort();
    }
    return 0;
}
