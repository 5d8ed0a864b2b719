#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: `ckpt-inspect diff` of two ~2 GiB checkpoints written by real torch (a training step
# apart: most blocks equal, a few changed), with 1 thread and with every thread, next to `cat` of
# both files (the disk/page-cache speed the hashing should reach) and to the Python way
# (torch.load both, torch.equal per tensor). Hashing throughput is the bytes hashed over the hash
# time the diff reports. Writes its inputs under build/bench/. Not a test: nothing fails on time.
#   usage: bench/run-diff-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
out=build/bench
mkdir -p "$out"
py=/usr/bin/python3
cmake --build "$build" --target ckpt-inspect >/dev/null

a="$out/diff-a-2GiB.pt"
b="$out/diff-b-2GiB.pt"
if [ ! -f "$a" ] || [ ! -f "$b" ]; then
    "$py" - "$a" "$b" <<'PY'
import sys, torch
torch.manual_seed(0)
blocks = {f"blocks.{i}.weight": torch.empty(4096, 4096).uniform_() for i in range(32)}
torch.save(blocks, sys.argv[1])
for i in (3, 17, 30):  # a training step that touched three blocks
    blocks[f"blocks.{i}.weight"].add_(1e-3)
torch.save(blocks, sys.argv[2])
PY
fi

time_it() { # label command...: median wall time of 3 runs
    "$py" - "$@" <<'PY'
import statistics, subprocess, sys, time
label, command = sys.argv[1], sys.argv[2:]
times = []
for _ in range(3):
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    times.append(time.perf_counter() - start)
print(f"{label:48s} median {statistics.median(times):6.2f} s (runs {', '.join(f'{t:.2f}' for t in times)})")
PY
}

size=$(( $(stat -c %s "$a") + $(stat -c %s "$b") ))
echo "inputs: $a, $b ($((size / 1048576)) MiB together), page cache warmed by a first read"
cat "$a" "$b" > /dev/null
time_it "cat both > /dev/null" sh -c 'cat "$1" "$2" > /dev/null' sh "$a" "$b"
time_it "ckpt-inspect diff --no-values --threads 1" "$build/app/ckpt-inspect" diff "$a" "$b" --no-values --threads 1
time_it "ckpt-inspect diff --no-values" "$build/app/ckpt-inspect" diff "$a" "$b" --no-values
time_it "ckpt-inspect diff (with value differences)" "$build/app/ckpt-inspect" diff "$a" "$b"
# diff exits 1 when the files differ, as diff(1) does.
{ "$build/app/ckpt-inspect" diff "$a" "$b" --no-values --json || true; } | "$py" -c '
import json, sys
d = json.load(sys.stdin)
print("hashing: %.0f MiB in %.2f s on %d threads = %.0f MiB/s; %d changed, %d unchanged" % (
    d["bytes_hashed"] / 2**20, d["hash_seconds"], d["threads"],
    d["bytes_hashed"] / 2**20 / max(d["hash_seconds"], 1e-9), len(d["changed"]), d["unchanged"]))'
time_it "python torch.load both + torch.equal" "$py" -c \
    "import sys, torch; a = torch.load(sys.argv[1]); b = torch.load(sys.argv[2]); [torch.equal(a[k], b[k]) for k in a]" "$a" "$b"
