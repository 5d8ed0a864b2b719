#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: `check --values` throughput on a 2 GiB float32 checkpoint written by real torch, next
# to numpy's isfinite/min/max/sum over the same mapped bytes in one thread, in the same run; and
# the value scan alone (bench_value_scan) with the native kernels on 1 and on every thread and with
# libtorch's kernels. Writes its input under build/bench/. Not a test: nothing fails on time.
#   usage: bench/run-values-benchmark.sh [BUILD_DIR [BEFORE_DIR]]   (default build/dev)
# BEFORE_DIR: a folder holding an earlier build's ckpt-inspect, ckpt-inspect-values (and whatever
# they load) and, optionally, bench_value_scan: timed in the same run, for before/after figures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
before=${2:-}
out=build/bench
mkdir -p "$out"
py=/usr/bin/python3
cmake --build "$build" --target ckpt-inspect ckpt-inspect-values bench_value_scan >/dev/null

file="$out/values-2GiB.pt"
if [ ! -f "$file" ]; then
    "$py" - "$file" <<'PY'
import sys, torch
torch.manual_seed(0)
blocks = {f"blocks.{i}.weight": torch.randn(4096, 4096) for i in range(32)}
blocks["blocks.7.weight"][3, 5] = float("nan")
blocks["blocks.20.weight"][0, 0] = float("inf")
torch.save(blocks, sys.argv[1])
PY
fi
size=$(stat -L -c %s "$file")
echo "input: $file ($((size / 1048576)) MiB), page cache warmed by a first read; $(nproc) cores"
cat "$file" > /dev/null

results=$(mktemp)
trap 'rm -f "$results"' EXIT

echo "== numpy, one thread, over the mapped file (isfinite, min, max, sum per tensor) =="
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$py" - "$file" "$results" <<'PY'
import json, sys, time, zipfile, numpy as np
path = sys.argv[1]
# The storages of a torch zip are stored uncompressed: map each one where it lies.
z = zipfile.ZipFile(path)
mapped = np.memmap(path, dtype=np.uint8, mode="r")
views = []
for info in z.infolist():
    if "/data/" in info.filename:
        with open(path, "rb") as f:
            f.seek(info.header_offset + 26)
            name_len, extra_len = np.frombuffer(f.read(4), dtype="<u2")
        start = info.header_offset + 30 + int(name_len) + int(extra_len)
        views.append(mapped[start:start + info.file_size].view(np.float32))
best = best_cpu = None
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    for v in views:
        finite = np.isfinite(v)
        vals = v if int(finite.sum()) == v.size else v[finite]
        vals.min(); vals.max(); vals.sum(dtype=np.float64)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - c
    best = elapsed if best is None else min(best, elapsed)
    best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
nbytes = sum(v.nbytes for v in views)
print(f"numpy    1 thread               wall {best:6.2f} s {nbytes / best / 1e9:6.3f} GB/s  cpu {best_cpu:6.2f} s {nbytes / best_cpu / 1e9:6.3f} GB per cpu-s (best of 3)")
with open(sys.argv[2], "a") as out:
    out.write(json.dumps({"label": "numpy", "bytes": nbytes, "wall": best, "cpu": best_cpu}) + "\n")
PY

echo "== ckpt-inspect value scan (bench_value_scan) =="
"$build/bench/bench_value_scan" "$file"
if [ -n "$before" ] && [ -x "$before/bench_value_scan" ]; then
    echo "== the same, built before ($before) =="
    "$before/bench_value_scan" "$file"
fi

echo "== ckpt-inspect check --values (whole process: read, scan with histogram, report) =="
"$py" bench/measure.py --json "check --values" -- "$build/app/ckpt-inspect" check --values "$file" >> "$results"
if [ -n "$before" ]; then
    "$py" bench/measure.py --json "check --values, before" -- "$before/ckpt-inspect" check --values "$file" >> "$results"
fi

# Every figure against numpy's from this run: the machine is shared, so ratios and CPU time are
# what carries over; wall time is printed as measured, under whatever load there was.
"$py" - "$results" "$(nproc)" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
numpy = next(r for r in rows if r["label"] == "numpy")
check = next(r for r in rows if r["label"] == "check --values")
nbytes = numpy["bytes"]
numpy_cpu = nbytes / numpy["cpu"] / 1e9
check_cpu = nbytes / check["cpu"] / 1e9
print(f"numpy (1 thread, no histogram)        {numpy_cpu:6.3f} GB per cpu-s")
print(f"check --values (histogram, whole run) {check_cpu:6.3f} GB per cpu-s = {check_cpu / numpy_cpu:4.2f}x numpy; "
      f"wall {check['wall']:.2f} s = {nbytes / check['wall'] / 1e9:.2f} GB/s on {sys.argv[2]} shared cores "
      f"(cpu {check['cpu']:.2f} s, peak {check['peak_mib']:.0f} MiB)")
for before in (r for r in rows if r["label"] == "check --values, before"):
    before_cpu = nbytes / before["cpu"] / 1e9
    print(f"check --values, before                {before_cpu:6.3f} GB per cpu-s = {before_cpu / numpy_cpu:4.2f}x numpy; "
          f"wall {before['wall']:.2f} s (cpu {before['cpu']:.2f} s, peak {before['peak_mib']:.0f} MiB)")
PY
