#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: time to open checkpoints with ckpt-inspect's reader, next to the time
# `torch.load(f, map_location='cpu', weights_only=True)` takes for the same files.
# Writes its inputs with real torch under build/bench/ (a 2,000+ tensor state_dict and a >= 1 GiB
# one), then prints figures. Not a test: nothing fails on time.
#   usage: bench/run-open-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
out=build/bench
mkdir -p "$out"
py=/usr/bin/python3

if [ ! -x "$build/bench/bench_open_checkpoint" ]; then
    cmake --build "$build" --target bench_open_checkpoint
fi

"$py" - "$out" <<'PY'
import os, sys, torch
out = sys.argv[1]
torch.manual_seed(0)
many = os.path.join(out, "many-2500-tensors.pt")
if not os.path.exists(many):
    torch.save({f"layers.{i // 10}.p{i % 10}.weight": torch.randn(16, 16) for i in range(2500)}, many)
big = os.path.join(out, "large-1.1GiB.pt")
if not os.path.exists(big):
    # 72 blocks of 4 M float32 (16 MiB each) = 1.125 GiB of storages.
    torch.save({f"blocks.{i}.weight": torch.empty(4096, 1024).uniform_() for i in range(72)}, big)
PY

files=("$out/many-2500-tensors.pt" "$out/large-1.1GiB.pt")
echo "== ckpt-inspect core reader (Release build of $build) =="
"$build/bench/bench_open_checkpoint" --repeat 5 "${files[@]}"

time_torch() { # interpreter label file
    "$1" - "$3" "$2" <<'PY'
import sys, time, statistics, torch
path, label = sys.argv[1], sys.argv[2]
times = []
for _ in range(3):
    start = time.perf_counter()
    torch.load(path, map_location="cpu", weights_only=True)
    times.append((time.perf_counter() - start) * 1000)
print(f"{label:28s} {path.rsplit('/', 1)[-1]:28s} best {min(times):10.2f} ms  median {statistics.median(times):10.2f} ms")
PY
}
echo "== torch.load(f, map_location='cpu', weights_only=True) =="
for f in "${files[@]}"; do
    time_torch "$py" "torch $($py -c 'import torch; print(torch.__version__)')" "$f"
done
if [ -n "${CKPT_MODERN_PYTHON:-}" ] && [ -x "${CKPT_MODERN_PYTHON}" ]; then
    for f in "${files[@]}"; do
        time_torch "$CKPT_MODERN_PYTHON" "torch (modern)" "$f"
    done
fi
