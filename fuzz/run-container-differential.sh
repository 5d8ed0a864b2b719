#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A campaign of the container differential (tests/tools/container_differential.py): mutated torch
# zips, legacy streams, 0.1.x tars, .npy/.npz and look-alikes through the real readers (torch 1.13's
# and 2.x's PyTorchFileReader, Python's zipfile and tarfile, numpy's header reader), each one's
# bytes for an unpickler held against the pickles `ckpt-inspect check --json` rated.
#
#   fuzz/run-container-differential.sh MINUTES [SEED]
#
# Needs the ci build's ckpt-inspect (or CKPT_INSPECT=path), /usr/bin/python3 with torch 1.13 and,
# for torch 2.x and Python 3.14, CKPT_MODERN_PYTHON (default tests/tools/modern-python when its root
# exists). Runs at nice 10, one process. Disagreements are kept (file + what each reader said) in
# build/fuzz/container-differential/<seed>/; the last line gives executions, reader views checked
# and disagreements. Exit status 1 when there was a disagreement.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

usage() {
    echo "usage: fuzz/run-container-differential.sh MINUTES [SEED]" >&2
    exit 64
}
(($# >= 1 && $# <= 2)) || usage
minutes=$1
seed=${2:-$(date +%s)}
[[ $minutes =~ ^[0-9]+([.][0-9]+)?$ && $seed =~ ^[0-9]+$ ]] || usage

binary=${CKPT_INSPECT:-$root/build/ci/app/ckpt-inspect}
if [[ ! -x $binary ]]; then
    echo "run-container-differential: $binary is missing: cmake --build --preset ci --target ckpt-inspect" >&2
    exit 1
fi
modern=${CKPT_MODERN_PYTHON-}
if [[ -z $modern ]] && "$root/tests/tools/modern-python" -c 'import torch' >/dev/null 2>&1; then
    modern=$root/tests/tools/modern-python
fi
out=$root/build/fuzz/container-differential/$seed
mkdir -p "$out"
echo "container differential: $minutes min, seed $seed, modern: ${modern:-none}, disagreements to $out"
exec nice -n 10 /usr/bin/python3 "$root/tests/tools/container_differential.py" "$binary" \
    --seed "$seed" --minutes "$minutes" --out "$out" --modern "$modern"
