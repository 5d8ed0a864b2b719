#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks every C++ source of the repository (tracked, or untracked and not ignored) against the
# repository's .clang-format with clang-format 14, the version that file is written for.
#   packaging/check-format.sh         list the files that need formatting; non-zero exit if any
#   packaging/check-format.sh --fix   rewrite those files in place
set -euo pipefail

fix=false
case "${1:-}" in
    "") ;;
    --fix) fix=true ;;
    -h | --help)
        sed -n '2,5s/^# \{0,1\}//p' "$0"
        exit 0
        ;;
    *)
        echo "check-format: unknown option '$1' (use --fix or nothing)" >&2
        exit 2
        ;;
esac

cd "$(dirname "$0")/.."

clang_format=""
for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null 2>&1; then
        clang_format=$candidate
        break
    fi
done
if [[ -z $clang_format ]]; then
    echo "check-format: clang-format 14 not found (packaging/install-deps.sh installs it)" >&2
    exit 2
fi
version=$("$clang_format" --version)
if [[ $version != *" version 14."* ]]; then
    # Other versions format some constructs differently; say so rather than fail on their opinion.
    echo "check-format: warning: expected clang-format 14, found: $version" >&2
fi

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    while IFS= read -r -d '' file; do
        # --cached also lists files deleted from the working tree but not yet from the index.
        [[ -f $file ]] && files+=("$file")
    done < <(git ls-files -z --cached --others --exclude-standard -- '*.cpp' '*.h')
else
    # A source tarball: everything outside build folders.
    while IFS= read -r -d '' file; do
        files+=("${file#./}")
    done < <(find . \( -path ./build -o -path ./.git \) -prune -o -type f \( -name '*.cpp' -o -name '*.h' \) -print0)
fi

offenders=()
for file in "${files[@]}"; do
    if ! output=$("$clang_format" --dry-run --Werror "$file" 2>&1); then
        if [[ $output != *clang-format-violations* ]]; then
            # Not a formatting difference: a broken .clang-format or an unreadable file.
            printf 'check-format: clang-format failed on %s:\n%s\n' "$file" "$output" >&2
            exit 2
        fi
        offenders+=("$file")
    fi
done

if ((${#offenders[@]} == 0)); then
    echo "check-format: ${#files[@]} files checked, all formatted"
    exit 0
fi

if $fix; then
    "$clang_format" -i "${offenders[@]}"
    printf 'check-format: reformatted %s\n' "${offenders[@]}"
    exit 0
fi

printf 'check-format: needs formatting: %s\n' "${offenders[@]}"
echo "check-format: ${#offenders[@]} of ${#files[@]} files need formatting; run packaging/check-format.sh --fix" >&2
exit 1
