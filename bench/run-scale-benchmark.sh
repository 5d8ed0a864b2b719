#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: the CLI at scale, next to torch.load(weights_only=True) of the same file in the same
# run. `info --json`, `info` and `check` of a 100,000-tensor torch.save file, and `check` of a file
# of 200,000 storages (torch's legacy format, where every storage follows the pickle). Wall time,
# CPU time (user + system: the machine is shared, so wall time carries other people's load) and
# peak resident memory, each with its ratio to torch.load's. Inputs written by real torch under
# build/bench/. Not a test: nothing fails on time.
#   usage: bench/run-scale-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
out=build/bench
mkdir -p "$out"
py=/usr/bin/python3
cmake --build "$build" --target ckpt-inspect >/dev/null
cli="$build/app/ckpt-inspect"

many="$out/tensors-100k.pt"     # the same file run-ledger-benchmark.sh writes
storages="$out/storages-200k.pt"
if [ ! -f "$many" ]; then
    "$py" - "$many" <<'PY'
import sys, torch
state = {f"model.blocks.{b}.layer{l}.{p}": torch.zeros(4) for b in range(1000) for l in range(50) for p in ("weight", "bias")}
torch.save(state, sys.argv[1])
PY
fi
if [ ! -f "$storages" ]; then
    "$py" - "$storages" <<'PY'
import sys, torch
torch.save({f"s.{i}": torch.zeros(1) for i in range(200000)}, sys.argv[1], _use_new_zipfile_serialization=False)
PY
fi

results=$(mktemp)
trap 'rm -f "$results"' EXIT
m() { "$py" bench/measure.py --json "$@" >> "$results"; }
load='import sys, torch; torch.load(sys.argv[1], map_location="cpu", weights_only=True)'
m "torch.load 100k"          -- "$py" -c "$load" "$many"
m "info --json 100k"         -- "$cli" info --json "$many"
m "info 100k"                -- "$cli" info "$many"
m "check 100k"               -- "$cli" check "$many"
m "torch.load 200k storages" -- "$py" -c "$load" "$storages"
m "check 200k storages"      -- "$cli" check "$storages"
m "info --json 200k storages" -- "$cli" info --json "$storages"

"$py" - "$results" "$("$py" -c 'import torch; print(torch.__version__)')" <<'PY'
import json, sys
rows = {r["label"]: r for r in map(json.loads, open(sys.argv[1]))}
print(f"torch {sys.argv[2]}; medians of 3 runs; ratio = ckpt-inspect / torch.load on the same file")
print(f"{'':34s} {'wall s':>8s} {'cpu s':>8s} {'peak MiB':>9s}   {'wall':>7s} {'cpu':>7s} {'peak':>7s}")
for label, base in (("100k", "torch.load 100k"), ("200k storages", "torch.load 200k storages")):
    b = rows[base]
    for name, r in rows.items():
        if not name.endswith(label) or (label == "100k" and "storages" in name):
            continue
        ratio = "" if r is b else f"   {r['wall'] / b['wall']:6.3f}x {r['cpu'] / b['cpu']:6.3f}x {r['peak_mib'] / b['peak_mib']:6.3f}x"
        print(f"{name:34s} {r['wall']:8.2f} {r['cpu']:8.2f} {r['peak_mib']:9.1f}{ratio}")
PY
