#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: `ckpt-inspect remap` of a >= 2 GiB checkpoint recorded on cuda:0/cuda:1, remapped to
# cpu, next to `cp` of the same file and to the Python round trip
# `torch.save(torch.load(f, map_location='cpu'), out)`; wall time and peak memory of each.
# Writes its input with real torch under build/bench/. Not a test: nothing fails on time.
#   usage: bench/run-remap-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
out=build/bench
mkdir -p "$out"
py=/usr/bin/python3
cmake --build "$build" --target ckpt-inspect >/dev/null

input="$out/gpu-2.1GiB.pt"
if [ ! -f "$input" ]; then
    "$py" - "$input" <<'PY'
import sys, torch
# 2.1 GiB of float32 in 34 blocks, recorded half on cuda:0 and half on cuda:1 (tags given by a
# registered tagger, as the fixtures do: this machine has no GPU).
blocks = {f"blocks.{i}.weight": torch.empty(4096, 4096).uniform_() for i in range(34)}
tags = {t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr():
        "cuda:0" if i < 17 else "cuda:1" for i, t in enumerate(blocks.values())}
torch.serialization.register_package(0, lambda s: tags.get(s.data_ptr()), lambda s, l: None)
torch.save(blocks, sys.argv[1])
PY
fi

measure() { # label output command... : median wall time and largest peak memory of 3 runs
    "$py" - "$@" <<'PY'
import os, resource, statistics, subprocess, sys, time
label, output, command = sys.argv[1], sys.argv[2], sys.argv[3:]
times, cpus, peaks = [], [], []
for _ in range(3):
    if os.path.exists(output):
        os.remove(output)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    times.append(time.perf_counter() - start)
    cpus.append(usage.ru_utime + usage.ru_stime)
    peaks.append(usage.ru_maxrss / 1024)
    if status != 0:
        sys.exit(f"{label}: command failed")
print(f"{label:44s} median {statistics.median(times):6.2f} s (runs {', '.join(f'{t:.2f}' for t in times)})   cpu {statistics.median(cpus):5.2f} s   peak memory {max(peaks):8.1f} MiB")
with open(os.environ["RESULTS"], "a") as results:
    results.write(f"{label}\t{statistics.median(times)}\t{max(peaks)}\t{statistics.median(cpus)}\n")
os.remove(output)
PY
}

export RESULTS
RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"' EXIT
size=$(stat -c %s "$input")
echo "input: $input ($((size / 1048576)) MiB), page cache warmed by a first read"
cat "$input" > /dev/null
sync
rm -f "$out/remapped.pt" "$out/copied.pt" "$out/python.pt"
measure "cp" "$out/copied.pt" cp "$input" "$out/copied.pt"
# The remap flushes its output to disk before renaming it (fsync): compare with a flushed cp too.
measure "cp + sync" "$out/copied.pt" sh -c 'cp "$1" "$2" && sync "$2"' sh "$input" "$out/copied.pt"
measure "ckpt-inspect remap --map *=cpu" "$out/remapped.pt" "$build/app/ckpt-inspect" remap "$input" -o "$out/remapped.pt" --map '*=cpu'
measure "ckpt-inspect remap --map *=cpu --no-verify" "$out/remapped.pt" "$build/app/ckpt-inspect" remap "$input" -o "$out/remapped.pt" --map '*=cpu' --no-verify
measure "python torch.load(map_location=cpu)+save" "$out/python.pt" "$py" -c \
    "import sys, torch; torch.save(torch.load(sys.argv[1], map_location='cpu'), sys.argv[2])" "$input" "$out/python.pt"
"$py" - "$RESULTS" <<'PY'
import sys
rows = {label: (float(t), float(m), float(c)) for label, t, m, c in (line.rstrip("\n").split("\t") for line in open(sys.argv[1]))}
base = rows["cp + sync"][0]
for label in ("ckpt-inspect remap --map *=cpu", "ckpt-inspect remap --map *=cpu --no-verify", "python torch.load(map_location=cpu)+save"):
    print(f"{label:44s} {rows[label][0] / base:5.2f}x the flushed cp's time, cpu {rows[label][2]:.2f} s (cp + sync: {rows['cp + sync'][2]:.2f} s), peak memory {rows[label][1]:.0f} MiB")
PY
