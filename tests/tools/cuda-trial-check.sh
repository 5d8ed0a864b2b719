#!/bin/bash
# SPDX-License-Identifier: MIT
# The GPU trial against a real GPU and real torch: run on a machine with an NVIDIA GPU, a driver and
# a python with CUDA torch (never in CI: the suites test the trial with a fake runtime,
# tests/core/tst_cudatrial.cpp, tests/cli/tst_plan.cpp, tests/ui/tst_cudatrial.cpp).
#
#   tests/tools/cuda-trial-check.sh [CKPT_INSPECT] [PYTHON]
#
# 1. torch writes a checkpoint whose storages take every path of the caching allocator (under 512
#    bytes, small ones packed in 2 MiB segments, 1-10 MiB ones sharing 20 MiB segments, large ones
#    rounded to 2 MiB, one that leaves a split remainder another one reuses);
# 2. `ckpt-inspect plan --measure` measures each GPU's context (checked plausible against the
#    total) and `plan --trial-load --json` plans onto this machine, allocates and loads: it must fit
#    and read every byte back equal;
# 3. the plan is saved (`plan --save`) and real torch.load()s the copy in a fresh process, each
#    storage onto its planned GPU through the real caching allocator: torch.cuda.memory_reserved()
#    and memory_allocated() per GPU must equal the trial's reserved_bytes and allocated_bytes.
# Exit 0 when everything agrees; 77 when there is no GPU or no CUDA torch here.
set -euo pipefail
inspect=${1:-build/ci/app/ckpt-inspect}
python=${2:-python3}
work=$(mktemp -d /tmp/cuda-trial-check.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "SKIP: no CUDA torch or no GPU for $python"
    exit 77
fi

"$python" - "$work/model.pt" <<'PY'
import sys, torch
torch.manual_seed(0)
MiB = 1 << 20
sizes = [100, 300, 512, 513, 4000, 700 * 1024, MiB, MiB + 4,          # small pool
         3 * MiB // 2, 3 * MiB // 2, 5 * MiB, 9 * MiB, 3 * MiB // 2,    # 20 MiB segments, shared
         21 * MiB // 2, 6 * MiB // 5,                                   # a split remainder reused
         11 * MiB, 24 * MiB + 2, 40 * MiB]                              # rounded to 2 MiB
state = {f"t{i}": torch.randint(0, 255, (n,), dtype=torch.uint8) for i, n in enumerate(sizes)}
state["view"] = state["t9"][10:20]  # a second view: its storage once
torch.save(state, sys.argv[1])
PY

echo "== plan --measure"
"$inspect" plan "$work/model.pt" --measure | sed -n '/^Measured/,$p'

echo "== plan --trial-load --json"
set +e
"$inspect" plan "$work/model.pt" --trial-load --json --save "$work/planned.pt" >"$work/trial.json"
status=$?
set -e
if [ $status -ne 0 ]; then
    echo "FAIL: plan --trial-load exited $status"; cat "$work/trial.json"; exit 1
fi

echo "== torch.load of the planned copy against the trial's figures"
"$python" - "$work/planned.pt" "$work/trial.json" <<'PY'
import json, sys, torch
report = json.load(open(sys.argv[2]))
trial = report["trial"]
failures = []
if not trial["ran"] or not trial["fits"] or not trial["load"]["matched"]:
    failures.append(f"the trial did not pass: {json.dumps(trial, indent=1)}")
for device in trial["measured"]["devices"]:
    context = device["cuda_context_bytes"]
    print(f"{device['device']}: context {context} bytes measured, {device['free_bytes']} free of {device['total_bytes']}")
    if context is None or not (0 < context < device["total_bytes"] // 4):
        failures.append(f"{device['device']}: implausible context {context}")
for line in report["ledger"]:
    if line["device"].startswith("cuda") and line["storages"] and not line["cuda_context_measured"]:
        failures.append(f"{line['device']}: the ledger still assumes the context")
# A fresh process: its allocator has only what this load asks for.
state = torch.load(sys.argv[1], weights_only=True)
for device in trial["devices"]:
    index = int(device["device"].split(":")[1])
    reserved = torch.cuda.memory_reserved(index)
    allocated = torch.cuda.memory_allocated(index)
    print(f"{device['device']}: trial reserved {device['reserved_bytes']} allocated {device['allocated_bytes']}; "
          f"torch reserved {reserved} allocated {allocated}")
    if reserved != device["reserved_bytes"]:
        failures.append(f"{device['device']}: reserved {device['reserved_bytes']} by the trial, {reserved} by torch")
    if allocated != device["allocated_bytes"]:
        failures.append(f"{device['device']}: allocated {device['allocated_bytes']} by the trial, {allocated} by torch")
if not trial["devices"]:
    failures.append("the plan put nothing on a GPU")
for failure in failures:
    print("FAIL:", failure)
print("OK: the trial agrees with torch" if not failures else f"{len(failures)} disagreement(s)")
sys.exit(1 if failures else 0)
PY
