#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: launch to a usable tree for a 1,000,000-tensor checkpoint, and a drop of a
# 100,000-tensor module and its undo, in the desktop app (offscreen). The checkpoint is written by
# real torch 1.13: ten modules part0..part9 of 100,000 tensors each (writing it takes minutes; it
# is kept under build/bench). Not a test.
#   usage: bench/run-gui-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
mkdir -p build/bench
file=build/bench/modules-10x100k.pt
cmake --build "$build" --target bench_gui >/dev/null
if [ ! -f "$file" ]; then
    /usr/bin/python3 - "$file" <<'PY'
import sys, torch
state = {f"part{p}.block{b}.layer{l}.weight": torch.zeros(8) for p in range(10) for b in range(1000) for l in range(100)}
torch.save(state, sys.argv[1])
PY
fi
"$build/bench/bench_gui" "$file" part3
