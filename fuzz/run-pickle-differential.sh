#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A pickle differential campaign: tests/tools/pickle_differential.py for MINUTES minutes with a
# random seed, through CPython 3.11 (both unpicklers) and, when CKPT_MODERN_PYTHON names it (or the
# sid root is there), the sid root's Python, against the pickle machine of the `ci` build.
#
#   fuzz/run-pickle-differential.sh MINUTES [BUILD_DIR]     (BUILD_DIR: default build/ci)
#
# Needs the pickle-probe target (cmake --build --preset ci --target pickle-probe). Disagreements
# are saved as NAME.pkl + NAME.json under build/fuzz/pickle-differential/<date>-<seed>/ (what each
# CPython run reached, what the machine and the verdict said); the last line of the log gives the
# pickles run and the disagreements found. Runs at nice 10, one process at a time.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

usage() {
    echo "usage: fuzz/run-pickle-differential.sh MINUTES [BUILD_DIR]" >&2
    exit 64
}
(($# >= 1 && $# <= 2)) || usage
minutes=$1
[[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] || usage
build=${2:-$root/build/ci}
probe=$build/tests/pickle-probe
# packaging/build-and-test.sh builds the suites (the probe among them) in the asan tree only, so a
# ci tree it made lacks the probe: build it there (a few seconds once the core is built).
if [[ ! -x $probe && -f $build/build.ninja ]]; then
    cmake --build "$build" --target pickle-probe >&2 || exit 1
fi
if [[ ! -x $probe ]]; then
    echo "run-pickle-differential: $probe is missing: cmake --build --preset ci --target pickle-probe" >&2
    exit 1
fi

pythons=(--python /usr/bin/python3)
modern=${CKPT_MODERN_PYTHON:-}
if [[ -z $modern && -f /var/cache/ckpt-inspector/sid-root/.ckpt-modern-torch.stamp ]]; then
    modern=$root/tests/tools/modern-python
fi
[[ -n $modern ]] && pythons+=(--python "$modern")

seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
out=$root/build/fuzz/pickle-differential/$(date -u +%Y%m%dT%H%M%S)-$seed
mkdir -p "$out"
echo "run-pickle-differential: $minutes min, seed $seed, saving to $out"
nice -n 10 /usr/bin/python3 "$root/tests/tools/pickle_differential.py" --probe "$probe" "${pythons[@]}" \
    --seed "$seed" --minutes "$minutes" --batch 400 --save "$out" \
    --corpus "$root/tests/fixtures" --hostile-generator "$root/tests/hostile/make_hostile.py" \
    ${CKPT_DIFFERENTIAL_CORPUS:+--corpus "$CKPT_DIFFERENTIAL_CORPUS"} 2>&1 | tee "$out/log.txt"
exit "${PIPESTATUS[0]}"
