#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A long fuzz campaign for one harness, with a corpus that persists between campaigns.
#
#   fuzz/run-campaign.sh HARNESS [SECONDS]       (HARNESS: reader pickle zip safetensors check;
#                                                SECONDS: default 600)
#
# Needs the `fuzz` build (cmake --preset fuzz && cmake --build --preset fuzz). The corpus grows in
# build/fuzz/campaign/<harness>/ (seeded from the repository's samples, and from
# ../shared/corpus/files when that folder exists); crashes land in build/fuzz/artifacts/<harness>/.
# Runs at nice 10, one process: start at most two at once on a shared 2-core machine. At the end it
# prints the executions, executions per second, coverage (cov: edges, ft: features) and corpus size.
#
# Environment: CKPT_FUZZ_JOBS (default 1) parallel workers; CKPT_FUZZ_EXTRA more sample folders
# (colon-separated); ASAN_OPTIONS and UBSAN_OPTIONS as usual.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

usage() {
    echo "usage: fuzz/run-campaign.sh HARNESS [SECONDS]  (HARNESS: reader pickle zip safetensors check)" >&2
    exit 64
}
(($# >= 1 && $# <= 2)) || usage
harness=$1
seconds=${2:-600}
case $harness in reader | pickle | zip | safetensors | check) ;; *) usage ;; esac
[[ $seconds =~ ^[0-9]+$ ]] || usage

build=$root/build/fuzz
binary=$build/fuzz/fuzz_$harness
if [[ ! -x $binary ]]; then
    echo "run-campaign: $binary is missing: cmake --preset fuzz && cmake --build --preset fuzz" >&2
    exit 1
fi

corpus=$build/campaign/$harness
seeds=$build/campaign/seeds
artifacts=$build/artifacts/$harness
logs=$build/campaign/logs
mkdir -p "$corpus" "$artifacts" "$logs"

extra=()
[[ -d $root/../shared/corpus/files ]] && extra+=(--extra "$root/../shared/corpus/files")
if [[ -n ${CKPT_FUZZ_EXTRA:-} ]]; then
    IFS=: read -r -a more <<<"$CKPT_FUZZ_EXTRA"
    for folder in "${more[@]}"; do [[ -n $folder ]] && extra+=(--extra "$folder"); done
fi
python3 fuzz/make-corpus.py "$seeds" "${extra[@]}" || exit 1

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Crash reports with files and lines (Debian's llvm-14 has the symbolizer under a versioned name).
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} && -x /usr/bin/llvm-symbolizer-14 ]]; then
    export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
fi

log=$logs/$harness-$(date -u +%Y%m%dT%H%M%SZ).log
jobs=${CKPT_FUZZ_JOBS:-1}
parallel=()
((jobs > 1)) && parallel=(-jobs="$jobs" -workers="$jobs")
echo "run-campaign: $harness for ${seconds}s, corpus $corpus, log $log"
started=$(date +%s)
nice -n 10 "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
    -dict="$seeds/$harness.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "${parallel[@]}" "$corpus" "$seeds/$harness" >"$log" 2>&1
status=$?
elapsed=$(($(date +%s) - started))

last=$(grep -E '^#[0-9]+' "$log" | tail -1)
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
files=$(find "$corpus" -type f | wc -l)
bytes=$(du -sb "$corpus" | cut -f1)
echo "run-campaign: $harness: ${runs:-?} executions in ${elapsed}s (${speed:-?} exec/s), cov ${cov:-?}," \
    "ft ${ft:-?}, corpus $files files ($bytes bytes), exit $status"
if ((status != 0)); then
    echo "run-campaign: $harness stopped on a crash; the input is in $artifacts/ (log $log):" >&2
    grep -E 'ERROR|SUMMARY|==[0-9]+==|^fuzz|: runtime error' "$log" | head -20 >&2
    exit 1
fi
