#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds Checkpoint Inspector the way CI does (the `ci` preset: warnings are errors, the programs
# the package ships), checks the formatting, runs clang-tidy over every source, runs every test
# suite once: under AddressSanitizer and UBSan (the `asan` preset) all but the few that run no
# sanitized code or need libtorch, which run in the ci tree; and gives each fuzz harness a few
# seconds (the `fuzz` preset, clang-14 with libFuzzer; fuzz/smoke.sh). Run
# packaging/install-deps.sh first.
#
# Every step runs even when an earlier independent one failed (a format slip does not hide a test
# failure); the last lines are a table of the steps (start, wall and CPU time of each) and say
# which failed; the exit status is non-zero if any did.
#
# On a bare 2-core machine the run is bound by CPU, with two long waits on the network (the two
# Debian roots). So the work is overlapped rather than queued: the roots are prepared in the
# background from the start while the ci tree compiles; clang-tidy, the asan tree and the fuzz
# harnesses are built in the background while the ci tests run, at lower priority (the tests come
# first, then the asan build that the asan tests wait for, clang-tidy last: nothing waits for it
# but the end); the fuzz smoke runs beside the asan tests. A background step's output is printed
# when it is waited for. CKPT_CI_SERIAL=1 runs every step in the foreground, one after the other
# (same steps, same order of results; for reading a failure without interleaving).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
root=$PWD
jobs=$(nproc)
serial=${CKPT_CI_SERIAL:-0}

# Per-step bookkeeping: name, status, start (seconds after the run began), wall and CPU seconds.
state=$root/build/ci-steps
rm -rf "$state"
mkdir -p "$state" || exit 1
run_started=$(date +%s)
failed=()
step_names=()
declare -A bg_pids=()

# CPU seconds (user+sys) of the children a (sub)shell has waited for, from bash's `times` (written
# to a file: in a pipeline or $(...) it would run in a fresh process, which has no children).
children_cpu() {
    times >"$1.times"
    tail -n 1 "$1.times" | awk '{
        t = 0
        for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] }
        printf "%.0f\n", t }' >"$1"
    rm -f "$1.times"
}

# Runs one step in a subshell, output to stdout, and writes its exit status, start, end and CPU
# time to $state/NAME.*. Used for foreground and background steps alike.
run_recorded() {
    local name=$1
    shift
    echo "$(($(date +%s) - run_started))" >"$state/$name.start"
    (
        "$@" </dev/null
        status=$?
        children_cpu "$state/$name.cpu"
        exit "$status"
    )
    local status=$?
    echo "$status" >"$state/$name.rc"
    echo "$(($(date +%s) - run_started))" >"$state/$name.end"
    return "$status"
}

record_result() {
    local name=$1 status=$2
    step_names+=("$name")
    if ((status == 0)); then
        echo "==> $name: ok ($(step_wall "$name") s)"
        return 0
    fi
    echo "==> $name: FAILED ($(step_wall "$name") s)" >&2
    failed+=("$name")
    return 1
}

step_wall() { echo $(($(cat "$state/$1.end" 2>/dev/null || echo 0) - $(cat "$state/$1.start" 2>/dev/null || echo 0))); }

step() {
    local name=$1
    shift
    echo
    echo "==> $name: $*"
    run_recorded "$name" "$@"
    record_result "$name" $?
}

# bg_step NAME NICENESS COMMAND...: starts a step in the background (its output to
# $state/NAME.log); wait_step NAME prints that output and records the result like step does.
# With bg_after=OTHER set, the step starts once the background step OTHER has ended.
bg_after=""
bg_step() {
    local name=$1 niceness=$2 after=$bg_after
    shift 2
    bg_after=""
    if ((serial)); then
        step "$name" nice -n "$niceness" "$@"
        echo "$?" >"$state/$name.waited"
        return 0
    fi
    echo
    echo "==> $name: started in the background (nice $niceness): $*"
    [[ -n $after && -n ${bg_pids[$after]:-} ]] && echo "    (once $after has ended)"
    (
        if [[ -n $after && -n ${bg_pids[$after]:-} ]]; then
            while [[ ! -f $state/$after.rc ]]; do sleep 2; done
        fi
        run_recorded "$name" nice -n "$niceness" "$@"
    ) >"$state/$name.log" 2>&1 &
    bg_pids[$name]=$!
}

wait_step() {
    local name=$1 status
    if [[ -f $state/$name.waited ]]; then
        return "$(cat "$state/$name.waited")"
    fi
    [[ -n ${bg_pids[$name]:-} ]] || return 1
    wait "${bg_pids[$name]}"
    status=$?
    unset "bg_pids[$name]"
    echo
    echo "==> $name: (background) $(grep -c '' "$state/$name.log") lines of output:"
    if [[ ${2:-} == tail && $status -eq 0 ]]; then
        tail -n 1 "$state/$name.log"
    else
        cat "$state/$name.log"
    fi
    record_result "$name" "$status"
}

finish() {
    local name
    # A background step still running (the roots, when the build failed early) is waited for,
    # so that nothing outlives the run and a root being prepared is completed for the next one.
    for name in "${!bg_pids[@]}"; do
        wait_step "$name"
    done
    echo
    echo "step                 start      wall       CPU  result"
    local total_cpu=0 cpu status
    # In the order the steps started.
    for name in "${step_names[@]}"; do
        echo "$(cat "$state/$name.start") $name"
    done | sort -n -s -k1,1 >"$state/order"
    while read -r _ name; do
        cpu=$(cat "$state/$name.cpu" 2>/dev/null || echo 0)
        status=$(cat "$state/$name.rc" 2>/dev/null || echo 1)
        total_cpu=$((total_cpu + cpu))
        printf '%-18s %5d:%02d %6d:%02d %6d:%02d  %s\n' "$name" \
            $(($(cat "$state/$name.start") / 60)) $(($(cat "$state/$name.start") % 60)) \
            $(($(step_wall "$name") / 60)) $(($(step_wall "$name") % 60)) \
            $((cpu / 60)) $((cpu % 60)) "$( ((status == 0)) && echo ok || echo FAILED)"
    done <"$state/order"
    local wall=$(($(date +%s) - run_started))
    printf '%-18s %8s %6d:%02d %6d:%02d  (min:s; CPU is user+sys of each step, %d cores)\n' total "" \
        $((wall / 60)) $((wall % 60)) $((total_cpu / 60)) $((total_cpu % 60)) "$jobs"
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

# The two cached Debian roots (network and dpkg bound, minutes each the first time, a moment
# after) are prepared in the background while the ci tree is configured and compiled. The modern
# torch root (packaging/modern-torch.sh) runs the tests that compare against torch 2.x through
# tests/tools/modern-python; the bookworm root is where ctest package.install installs the .deb
# (without it that test skips).
have_modern=0
if [[ -f packaging/modern-torch.sh ]]; then
    have_modern=1
    bg_step modern-torch 0 bash packaging/modern-torch.sh
else
    echo "note: packaging/modern-torch.sh is not there yet; the tests that need a modern torch will skip"
fi
if [[ -f packaging/bookworm-root.sh ]]; then
    bg_step bookworm-root 0 bash packaging/bookworm-root.sh
fi

# The modern interpreter's path reaches the tests through CMake (tests/CMakeLists.txt), empty
# meaning "skip those tests". The ci tree is configured with it before the root is ready; if the
# root's preparation fails, the tree is configured again without it (the tests that need it then
# skip), so a failed preparation fails this run once, as the modern-torch step, instead of once
# more in every test that would need it. -D as well as the environment: the cache keeps the first
# value it saw.
export CKPT_MODERN_PYTHON=""
# (A preparation that already failed, as it has in a CKPT_CI_SERIAL run, leaves it empty at once.)
if ((have_modern)) && [[ -x tests/tools/modern-python && $(cat "$state/modern-torch.rc" 2>/dev/null || echo 0) == 0 ]]; then
    export CKPT_MODERN_PYTHON="$root/tests/tools/modern-python"
fi
step configure cmake --preset ci "-DCKPT_MODERN_PYTHON=$CKPT_MODERN_PYTHON" || finish

# Each suite runs once. The asan tree runs every suite it builds (all but the libtorch suites,
# with the ci tree's values helper linked in: a process of its own), under AddressSanitizer and
# UBSan, which check everything a plain run checks and more; the ci tree runs only the tests the
# asan tree leaves out (the libtorch suites, and the checks of the package, the house rules and
# torch's lists, which run no sanitized code; the asan test preset names them). So the ci tree
# builds the programs, the libtorch module, the benchmarks and the suites' moc files for
# clang-tidy (the ckpt_programs target, CMakeLists.txt), and the executables of its own tests only.
# If the asan tree cannot be configured, the ci tree builds and runs everything.
ci_only_tests=()
ci_targets=()
test_names() { ctest --preset "$1" -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p'; }
if step asan-configure cmake --preset asan "-DCKPT_MODERN_PYTHON=$CKPT_MODERN_PYTHON" \
    "-DCKPT_VALUES_HELPER_FROM=$root/build/ci/app/ckpt-inspect-values"; then
    declare -A in_asan=()
    while read -r name; do in_asan[$name]=1; done < <(test_names asan)
    ci_targets=(ckpt_programs)
    while read -r name; do
        [[ -n ${in_asan[$name]:-} ]] && continue
        ci_only_tests+=("$name")
        # A Qt suite's test suite.tst_x runs the executable suite_tst_x.
        ninja -C build/ci -t query "${name/./_}" >/dev/null 2>&1 && ci_targets+=("${name/./_}")
    done < <(test_names ci)
    echo "the ci tree runs ${#ci_only_tests[@]} tests the asan tree leaves out: ${ci_only_tests[*]}"
fi
if ((${#ci_targets[@]})); then
    step build cmake --build --preset ci -j"$jobs" --target "${ci_targets[@]}" || finish
else
    step build cmake --build --preset ci -j"$jobs" || finish
fi
step format packaging/check-format.sh

# clang-tidy (.clang-tidy, every warning an error) with the ci build's compile_commands.json: every
# folder of C++ the ci build compiles, each file once. It needs only the configured and built
# tree, so it starts now, at the lowest priority: it takes whatever CPU the tests and the asan
# build leave, and is waited for at the end. fuzz/fuzzmain.cpp, the one file only the fuzz preset
# compiles, is tidied with the fuzz build's compile_commands.json below.
tidy_folders=(core ui app torchbridge tests bench fuzz)
bg_step clang-tidy 19 packaging/run-clang-tidy.sh build/ci "${tidy_folders[@]}"

# The asan and fuzz trees compile from now on, while the roots are finished and the ci tests run
# (a test suite waits on Python, torch and the disk much of the time), below the tests' priority
# and above clang-tidy's. The asan tree: the suites with AddressSanitizer and UBSan (no libtorch:
# its prebuilt libraries are not instrumented; the values helper is the ci tree's); its test preset
# leaves out the tests that run none of the sanitized code (the include and share checks, building,
# linting and installing the .deb, the desktop files, the allowlist table read from real torch):
# the ci tree runs those. The fuzz build preset builds the harnesses only;
# it starts when the asan build has ended (two compilers less at a time: memory), and is needed
# only by the fuzz smoke at the end.
[[ $(cat "$state/asan-configure.rc" 2>/dev/null) == 0 ]] &&
    bg_step asan-build 5 cmake --build --preset asan -j"$jobs"
step fuzz-configure cmake --preset fuzz &&
    bg_after=asan-build bg_step fuzz-build 10 cmake --build --preset fuzz -j"$jobs"

modern_failed=0
if ((have_modern)); then
    wait_step modern-torch
    if [[ $(cat "$state/modern-torch.rc") != 0 && -n $CKPT_MODERN_PYTHON ]]; then
        modern_failed=1
        export CKPT_MODERN_PYTHON=""
        echo "CKPT_MODERN_PYTHON=(none): the tests that need a modern torch will skip"
        step reconfigure cmake --preset ci "-DCKPT_MODERN_PYTHON=" || finish
        step rebuild cmake --build --preset ci -j"$jobs" ${ci_targets[@]:+--target "${ci_targets[@]}"} || finish
    fi
fi
echo "CKPT_MODERN_PYTHON=${CKPT_MODERN_PYTHON:-(none)}"
[[ -n ${bg_pids[bookworm-root]:-} ]] && wait_step bookworm-root

# The tests only the ci tree runs (all of them when the asan tree is missing).
ci_filter=()
if ((${#ci_only_tests[@]})); then
    ci_filter=(-R "^($(printf '%s\n' "${ci_only_tests[@]}" | sed 's/[.]/\\./g' | paste -sd'|'))\$")
fi
step tests env QT_QPA_PLATFORM=offscreen ctest --preset ci --output-on-failure -j2 "${ci_filter[@]}"

# Every fuzz harness for a few seconds from seeds made of the fixtures, beside the asan tests (it
# runs one harness at a time); a crash fails the step and leaves its input under
# build/fuzz/artifacts/ (fuzz/README.md: make it a regression test).
[[ -n ${bg_pids[fuzz-build]:-} || -f $state/fuzz-build.waited ]] && wait_step fuzz-build &&
    bg_step fuzz-smoke 0 fuzz/smoke.sh 12

# The same suites with AddressSanitizer and UBSan. Leak checking stays on, Qt tests included: with
# the offscreen platform Qt frees what it allocates, so a reported leak is ours (a parentless
# widget, say). UB stops the test. Qt Test's 5-minute limit per test function is too short for the
# truncation sweeps at -Og with ASan on 2 busy cores (tst_ziparchive's corpusTruncation took
# 307 s); ctest's 900 s still applies.
asan_env=(env QT_QPA_PLATFORM=offscreen "ASAN_OPTIONS=detect_leaks=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1" QTEST_FUNCTION_TIMEOUT=900000)
if [[ -n ${bg_pids[asan-build]:-} || -f $state/asan-build.waited ]] && wait_step asan-build; then
    # The asan tree was configured before the modern root failed: it follows, as the ci tree did.
    if ((modern_failed)); then
        step asan-reconfigure cmake --preset asan "-DCKPT_MODERN_PYTHON=" &&
            step asan-rebuild cmake --build --preset asan -j"$jobs"
    fi &&
    step asan-tests "${asan_env[@]}" ctest --preset asan --output-on-failure -j2
fi

[[ -n ${bg_pids[fuzz-smoke]:-} || -f $state/fuzz-smoke.waited ]] && wait_step fuzz-smoke
[[ $(cat "$state/fuzz-configure.rc" 2>/dev/null) == 0 ]] &&
    step fuzz-tidy packaging/run-clang-tidy.sh build/fuzz fuzz/fuzzmain.cpp
wait_step clang-tidy tail
finish
