#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: time to open a 100-shard Hugging Face index folder as one checkpoint with
# ckpt-inspect's reader (shards in parallel, memory-mapped, no tensor bytes read), next to the time
# real torch takes to torch.load every shard (weights_only=True, map_location='cpu'; also with
# mmap=True, which reads no tensor bytes either).
# The folder is written with real torch under build/bench/: 100 shards named
# pytorch_model-000NN-of-00100.bin, 24 tensors each (4 MiB per shard, 400 MiB in all), and the
# index, the way transformers 4's save_pretrained wrote them (huggingface_hub's splitter,
# torch.save per shard). Not a test: nothing fails on time.
#   usage: bench/run-sharded-benchmark.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
out=$PWD/build/bench/sharded-100
py=${CKPT_MODERN_PYTHON:-$PWD/tests/tools/modern-python}

if [ ! -x "$build/bench/bench_open_checkpoint" ]; then
    cmake --build "$build" --target bench_open_checkpoint
fi
mkdir -p "$(dirname "$out")"

if [ ! -f "$out/pytorch_model.bin.index.json" ]; then
    "$py" - "$out" <<'PY'
import json, os, sys, torch, huggingface_hub
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
# 100 blocks of 24 tensors of 4096 float32 x 10 ... about 4 MiB a block.
state = {f"model.layers.{b}.p{t}.weight": torch.randn(4096 + t, 10) for b in range(100) for t in range(24)}
block_bytes = sum(t.numel() * 4 for n, t in state.items() if n.startswith("model.layers.0."))
split = huggingface_hub.split_torch_state_dict_into_shards(
    state, filename_pattern="pytorch_model{suffix}.bin", max_shard_size=block_bytes + 1024)
assert len(split.filename_to_tensors) == 100, len(split.filename_to_tensors)
for name, tensors in split.filename_to_tensors.items():
    torch.save({t: state[t] for t in tensors}, os.path.join(out, name))
with open(os.path.join(out, "pytorch_model.bin.index.json"), "w") as f:
    f.write(json.dumps({"metadata": dict(split.metadata), "weight_map": split.tensor_to_filename}, indent=2, sort_keys=True) + "\n")
print("wrote", out, "with torch", torch.__version__)
PY
fi

echo "== ckpt-inspect core reader: the folder as one checkpoint (Release build of $build) =="
"$build/bench/bench_open_checkpoint" --repeat 5 "$out"
echo "== the same, opened through one shard =="
"$build/bench/bench_open_checkpoint" --repeat 5 "$out/pytorch_model-00042-of-00100.bin"

echo "== real torch: torch.load of every shard =="
"$py" - "$out" <<'PY'
import json, os, statistics, sys, time, torch
out = sys.argv[1]
shards = sorted(set(json.load(open(os.path.join(out, "pytorch_model.bin.index.json")))["weight_map"].values()))
for label, kwargs in (("torch.load(weights_only=True, map_location='cpu')", {}),
                      ("torch.load(..., mmap=True)", {"mmap": True})):
    times = []
    for _ in range(3):
        start = time.perf_counter()
        tensors = 0
        for shard in shards:
            tensors += len(torch.load(os.path.join(out, shard), map_location="cpu", weights_only=True, **kwargs))
        times.append((time.perf_counter() - start) * 1000)
    print(f"torch {torch.__version__:14s} {label:50s} {len(shards)} shards, {tensors} tensors: "
          f"best {min(times):9.2f} ms  median {statistics.median(times):9.2f} ms")
PY
