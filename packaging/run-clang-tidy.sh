#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs clang-tidy 14 with the repository's .clang-tidy over the project sources of a build's
# compile_commands.json (generated files left out), each file once: a file that several targets
# compile (torchbridge/minifloat.cpp; fuzz/fuzzmain.cpp, once per harness) is checked with its first
# compile command only, not once per target.
#   packaging/run-clang-tidy.sh [BUILD_DIR [FOLDER|FILE...]]
#       BUILD_DIR  default build/ci (configure and build it first: the Qt suites need their moc files)
#       FOLDER     top-level folders to check; default every one (core ui app torchbridge tests bench fuzz)
#       FILE       or single files, by their path from the repository root (fuzz/fuzzmain.cpp)
# CKPT_TIDY_JOBS sets how many files run at once (default: every core). .clang-tidy makes every
# warning an error, so the exit status is non-zero when any file has a finding.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${1:-build/ci}
shift || true
folders=("$@")
((${#folders[@]})) || folders=(core ui app torchbridge tests bench fuzz)
# Left out: the two torchbridge files that include libtorch's headers (the module
# libckpt_torchkernels.so). clang 14 cannot parse
# Debian's libtorch 1.13 headers as C++20 with libstdc++ 12 (std::vector<c10::IValue> is
# instantiated while IValue is incomplete: "arithmetic on a pointer to an incomplete type"), and
# as C++17 the project's own headers (std::span) fail instead; GCC builds them, clang-tidy cannot.
unparsable="$root/torchbridge/libtorch(statistics|difference)\\.cpp\$"
# A folder matches every file under it, a file (a name with a dot) itself only.
alternatives=()
for folder in "${folders[@]}"; do
    if [[ $folder == *.* ]]; then
        alternatives+=("${folder//./\\.}\$")
    else
        alternatives+=("${folder%/}/")
    fi
done
pattern="^(?!$unparsable)$root/($(
    IFS='|'
    echo "${alternatives[*]}"
))"
jobs=${CKPT_TIDY_JOBS:-$(nproc)}

if [[ ! -f $build/compile_commands.json ]]; then
    echo "run-clang-tidy: $build/compile_commands.json is missing; configure the build first" >&2
    exit 2
fi
for tool in clang-tidy-14 run-clang-tidy-14; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "run-clang-tidy: $tool is not installed (packaging/install-deps.sh installs it)" >&2
        exit 2
    fi
done

# clang-tidy runs every compile command the database holds for a file: a copy of the database with
# the first command of each file only checks each file once.
db=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-tidy-db.XXXXXX") || exit 2
trap 'rm -rf "$db"' EXIT
python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY' || exit 2
import json, os, sys
seen, kept = set(), []
for entry in json.load(open(sys.argv[1])):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if path not in seen:
        seen.add(path)
        kept.append(entry)
json.dump(kept, open(sys.argv[2], "w"), indent=1)
PY

started=$(date +%s)
run-clang-tidy-14 -clang-tidy-binary clang-tidy-14 -p "$db" -j "$jobs" -quiet \
    "$pattern" 2>&1 |
    grep -v -E '^(Enabled checks:|    [a-z]|[0-9]+ warnings? (and [0-9]+ errors? )?generated\.|Suppressed [0-9]+ warnings|Use -header-filter|Error while processing )' |
    grep -v '^clang-tidy-14 -' | grep -v '^$'
status=${PIPESTATUS[0]}
echo "run-clang-tidy: ${folders[*]}: $(($(date +%s) - started)) s, exit $status"
exit "$status"
