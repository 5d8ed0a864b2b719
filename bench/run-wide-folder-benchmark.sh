#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (issue 28): a folder shaped like a large real model, DeepSeek-V3's layout: 160
# safetensors shards, 91,991 tensors, headers written by the real safetensors library
# (bench/make-wide-folder.py, through tests/tools/modern-python), tensor bytes punched out so the
# folder is small on disk. Prints, each next to its aim: `info` and `info --json` wall time (aim
# 100 ms), the core reader alone, and the desktop app from launch to a usable tree (aim 0.5 s),
# with a drop of one layer's tensors. Not a test: nothing fails on time.
#   usage: bench/run-wide-folder-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
out=$PWD/build/bench/wide-160
py=/usr/bin/python3
modern=${CKPT_MODERN_PYTHON:-$PWD/tests/tools/modern-python}
cli="$build/app/ckpt-inspect"
for target in ckpt-inspect bench_open_checkpoint bench_gui; do
    [ -x "$build/app/$target" ] || [ -x "$build/bench/$target" ] || cmake --build "$build" --target "$target" >/dev/null
done

if [ ! -f "$out/model.safetensors.index.json" ]; then
    "$modern" bench/make-wide-folder.py "$out"
    # Sparse tensor bytes: everything after each shard's header becomes a hole (reads as zeros).
    "$py" - "$out" <<'PY'
import glob, os, struct, subprocess, sys
for shard in sorted(glob.glob(os.path.join(sys.argv[1], "*.safetensors"))):
    with open(shard, "rb") as f:
        start = 8 + struct.unpack("<Q", f.read(8))[0]
    size = os.path.getsize(shard)
    if size > start:
        subprocess.run(["fallocate", "--punch-hole", "--keep-size", "--offset", str(start), "--length",
                        str(size - start), shard], check=True)
PY
fi
echo "input: $out: $(ls "$out"/*.safetensors | wc -l) shards, $(du -sh --apparent-size "$out" | cut -f1) in all," \
    "$(du -sh "$out" | cut -f1) on disk; warm cache"
cat "$out"/* > /dev/null

results=$(mktemp)
trap 'rm -f "$results"' EXIT
"$py" bench/measure.py --runs 5 --json "info" -- "$cli" info "$out" >> "$results"
"$py" bench/measure.py --runs 5 --json "info --json" -- "$cli" info --json "$out" >> "$results"
"$py" bench/measure.py --runs 5 --json "info (through one shard)" -- "$cli" info "$out/model-00080-of-00160.safetensors" >> "$results"
"$py" - "$results" <<'PY'
import json, sys
for r in map(json.loads, open(sys.argv[1])):
    print(f"ckpt-inspect {r['label']:28s} wall {r['wall'] * 1000:7.1f} ms  cpu {r['cpu'] * 1000:7.1f} ms  "
          f"peak {r['peak_mib']:6.1f} MiB   (aim 100 ms: x{r['wall'] / 0.1:.2f} by wall, x{r['cpu'] / 0.1:.2f} by CPU)")
PY
echo "== core reader alone (bench_open_checkpoint) =="
"$build/bench/bench_open_checkpoint" --repeat 5 "$out"
echo "== the desktop app (offscreen): launch to a usable tree (aim 500 ms), a drop of layer 30 =="
"$build/bench/bench_gui" "$out" model.layers.30 500
