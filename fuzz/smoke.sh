#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fuzz smoke test that packaging/build-and-test.sh runs: every harness of the `fuzz` build, a
# few seconds each (about a minute in all), from fresh seeds built out of the repository's samples.
# Any crash, sanitizer report, leak, timeout or broken promise fails it; the input that did it is
# kept under build/fuzz/artifacts/<harness>/ (turn it into a regression test: fuzz/README.md).
#
#   fuzz/smoke.sh [SECONDS_PER_HARNESS]     (default 12; the build must exist: cmake --preset fuzz)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
seconds=${1:-12}
build=$root/build/fuzz
harnesses=(reader pickle zip safetensors check)

for harness in "${harnesses[@]}"; do
    if [[ ! -x $build/fuzz/fuzz_$harness ]]; then
        echo "fuzz smoke: $build/fuzz/fuzz_$harness is missing: cmake --preset fuzz && cmake --build --preset fuzz" >&2
        exit 1
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-fuzz-smoke.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
python3 fuzz/make-corpus.py "$work/seeds" || exit 1

# leak detection stays on: the core frees everything it allocates (no Qt here).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Crash reports with files and lines (Debian's llvm-14 has the symbolizer under a versioned name).
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} && -x /usr/bin/llvm-symbolizer-14 ]]; then
    export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
fi

failed=()
for harness in "${harnesses[@]}"; do
    artifacts=$build/artifacts/$harness
    mkdir -p "$artifacts" "$work/new/$harness"
    log=$work/$harness.log
    # New inputs go to a scratch folder; the seeds stay as they were. -timeout: one input may take
    # at most 10 s (a hang is a bug too); -rss_limit_mb: a reader that allocates what a hostile
    # length field asks for is a bug, and 2 GiB is far above anything a small input needs.
    "$build/fuzz/fuzz_$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=262144 -dict="$work/seeds/$harness.dict" -artifact_prefix="$artifacts/" \
        -print_final_stats=1 "$work/new/$harness" "$work/seeds/$harness" >"$log" 2>&1
    status=$?
    stats=$(grep -E '^#[0-9]+' "$log" | tail -1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if ((status == 0)); then
        echo "fuzz smoke: $harness ok: ${runs:-?} runs in ${seconds}s; $stats"
    else
        echo "fuzz smoke: $harness FAILED (exit $status); the input is in $artifacts/" >&2
        tail -n 60 "$log" >&2
        failed+=("$harness")
    fi
done

if ((${#failed[@]})); then
    echo "fuzz smoke: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz smoke: all ${#harnesses[@]} harnesses ran ${seconds}s each without a crash"
