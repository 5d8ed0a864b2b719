#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The modern-python wrapper must see the host paths a test hands it, including ../shared when that
# is a symbolic link to a folder elsewhere (a clone made in /tmp beside a link to the real folder):
# inside the sid root such a link would otherwise point at nothing, and the corpus rows of the
# remap test fail with "No such file or directory".
#   usage: check-modern-python-shares.sh WRAPPER SCRATCH_OUTSIDE_TMP
# Exits 77 (skipped) when no modern torch root is ready.
set -euo pipefail
wrapper=$1
scratch=$2
root="${CKPT_MODERN_ROOT:-/var/cache/ckpt-inspector/sid-root}"
if [[ ! -f "$root/.ckpt-modern-torch.stamp" ]]; then
    echo "no modern torch root at $root: skipped"
    exit 77
fi
# The real shared folder lies outside /tmp and outside the fake clone's parent, so only the
# link's resolution can make it visible inside the root.
rm -rf "$scratch"
mkdir -p "$scratch/real-shared/corpus"
echo "corpus file" >"$scratch/real-shared/corpus/file.txt"
parent=$(mktemp -d /tmp/ckpt-modern-shares.XXXXXX)
trap 'rm -rf "$parent" "$scratch"' EXIT
mkdir -p "$parent/clone/tests/tools"
cp "$wrapper" "$parent/clone/tests/tools/modern-python"
ln -s "$scratch/real-shared" "$parent/shared"
cd "$parent"
got=$("$parent/clone/tests/tools/modern-python" -c \
    'import sys; print(open(sys.argv[1]).read().strip())' "$parent/clone/../shared/corpus/file.txt")
if [[ "$got" != "corpus file" ]]; then
    echo "modern-python read '$got' through the linked ../shared, expected 'corpus file'" >&2
    exit 1
fi
echo "ok: ../shared linked from $parent to $scratch/real-shared is readable inside the root"
