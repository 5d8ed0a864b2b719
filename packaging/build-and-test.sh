#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds Checkpoint Inspector the way CI does (the `ci` preset: warnings are errors), checks the
# formatting and runs every test suite with clang-tidy over every source alongside; then runs the
# suites again under AddressSanitizer and UBSan (the `asan` preset) and gives each fuzz harness a
# few seconds (the `fuzz` preset, clang-14 with libFuzzer; fuzz/smoke.sh). Run
# packaging/install-deps.sh first.
#
# Every step runs even when an earlier independent one failed (a format slip does not hide a test
# failure); the last line says which steps failed, and the exit status is non-zero if any did.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
root=$PWD

failed=()
step() {
    local name=$1
    shift
    echo
    echo "==> $name: $*"
    if "$@" </dev/null; then
        echo "==> $name: ok"
        return 0
    fi
    echo "==> $name: FAILED" >&2
    failed+=("$name")
    return 1
}

finish() {
    echo
    if ((${#failed[@]} == 0)); then
        echo "build-and-test: PASSED (configure, build, format, tests, clang-tidy, asan, fuzz tidy and smoke)"
        exit 0
    fi
    echo "build-and-test: FAILED: ${failed[*]}"
    exit 1
}

# ccache, where installed (install-deps.sh installs it), keeps compiled objects between runs: a
# second run of this script, or a fresh clone in another folder (paths are taken relative to the
# clone, and the working directory is left out of the hash), recompiles only what changed. A bare
# machine fills the cache on its first run.
if command -v ccache >/dev/null 2>&1; then
    export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
    export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
fi

# The tests that compare against a modern torch run it through tests/tools/modern-python; the
# path reaches them through CMake (tests/CMakeLists.txt), empty meaning "skip those tests". It is
# set only when the modern root is ready, so a failed preparation fails this run once, as the
# modern-torch step, instead of once more in every test that would need it.
export CKPT_MODERN_PYTHON=""
if [[ -f packaging/modern-torch.sh ]]; then
    if step modern-torch bash packaging/modern-torch.sh && [[ -x tests/tools/modern-python ]]; then
        export CKPT_MODERN_PYTHON="$root/tests/tools/modern-python"
    fi
else
    echo "note: packaging/modern-torch.sh is not there yet; the tests that need a modern torch will skip"
fi
echo "CKPT_MODERN_PYTHON=${CKPT_MODERN_PYTHON:-(none)}"

# The clean Debian 12 root into which ctest package.install installs the .deb (cached between runs
# like the modern-torch root; about 3 minutes the first time, a moment after). Without it that
# test skips.
if [[ -f packaging/bookworm-root.sh ]]; then
    step bookworm-root bash packaging/bookworm-root.sh
fi

# -D as well as the environment: the cache keeps the first value it saw, and an existing build/ci
# must follow a modern interpreter that appeared (or went away) since.
step configure cmake --preset ci "-DCKPT_MODERN_PYTHON=$CKPT_MODERN_PYTHON" || finish
step build cmake --build --preset ci -j"$(nproc)" || finish
step format packaging/check-format.sh

# clang-tidy (.clang-tidy, every warning an error) with the ci build's compile_commands.json. It
# needs only the configured and built tree, so it runs in the background while the tests run and
# is waited for after them. Its output goes to build/ci/clang-tidy.log and is shown when it fails.
# Every folder of C++ the ci build compiles (fuzz/'s libFuzzer entry point, fuzzmain.cpp, is built
# by the fuzz preset only and so is not in build/ci's compile_commands.json: the fuzz steps below
# tidy fuzz/ again with the fuzz build's).
tidy_folders=(core ui app torchbridge tests bench fuzz)
tidy_log=$root/build/ci/clang-tidy.log
packaging/run-clang-tidy.sh build/ci "${tidy_folders[@]}" >"$tidy_log" 2>&1 </dev/null &
tidy_pid=$!

step tests env QT_QPA_PLATFORM=offscreen ctest --preset ci --output-on-failure -j2

tidy() {
    local status=0
    wait "$tidy_pid" || status=$?
    tail -n 1 "$tidy_log"
    ((status == 0)) || cat "$tidy_log"
    return "$status"
}
step clang-tidy tidy

# The same suites with AddressSanitizer and UBSan (no libtorch: its prebuilt libraries are not
# instrumented). Leak checking stays on, Qt tests included: with the offscreen platform Qt frees
# what it allocates, so a reported leak is ours (a parentless widget, say). UB stops the test.
# Qt Test's 5-minute limit per test function is too short for the truncation sweeps at -O0 with
# ASan on 2 busy cores (tst_ziparchive's corpusTruncation took 307 s); ctest's 900 s still applies.
asan_env=(env QT_QPA_PLATFORM=offscreen "ASAN_OPTIONS=detect_leaks=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1" QTEST_FUNCTION_TIMEOUT=900000)
step asan-configure cmake --preset asan "-DCKPT_MODERN_PYTHON=$CKPT_MODERN_PYTHON" &&
    step asan-build cmake --build --preset asan -j"$(nproc)" &&
    step asan-tests "${asan_env[@]}" ctest --preset asan --output-on-failure -j2

# Every fuzz harness for a few seconds from seeds made of the fixtures; a crash fails the step and
# leaves its input under build/fuzz/artifacts/ (fuzz/README.md: make it a regression test).
step fuzz-configure cmake --preset fuzz &&
    step fuzz-build cmake --build --preset fuzz -j"$(nproc)" &&
    step fuzz-tidy packaging/run-clang-tidy.sh build/fuzz fuzz &&
    step fuzz-smoke fuzz/smoke.sh 12
finish
