#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: memory-ledger update time per move on a 100,000-tensor checkpoint written by real
# torch (a deep module tree: 1,000 blocks of 100 tensors). Not a test.
#   usage: bench/run-ledger-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
mkdir -p build/bench
file=build/bench/tensors-100k.pt
cmake --build "$build" --target bench_ledger_update >/dev/null
if [ ! -f "$file" ]; then
    /usr/bin/python3 - "$file" <<'PY'
import sys, torch
torch.manual_seed(0)
state = {f"model.blocks.{b}.layer{l}.{p}": torch.zeros(4) for b in range(1000) for l in range(50) for p in ("weight", "bias")}
torch.save(state, sys.argv[1])
PY
fi
"$build/bench/bench_ledger_update" "$file" 20000
