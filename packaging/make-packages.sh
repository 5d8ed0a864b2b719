#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the Debian packages of an existing build tree with CPack into OUT_DIR (emptied first), and
# lists them. Used by packaging/build-deb.sh and by ctest's package.build (on the ci build).
# Exits 77 (skip) when dpkg-deb or dpkg-shlibdeps is missing: not a Debian system.
#
#   make-packages.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=${1:?BUILD_DIR}
out=${2:?OUT_DIR}
for tool in dpkg-deb dpkg-shlibdeps; do
    command -v "$tool" >/dev/null || {
        echo "skip: $tool is not installed (Debian package dpkg-dev)"
        exit 77
    }
done
rm -rf "$out"
mkdir -p "$out"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1 || {
    cat "$out/cpack.log"
    exit 1
}
rm -rf "$out/_CPack_Packages"
shopt -s nullglob
debs=("$out"/*.deb)
((${#debs[@]})) || {
    cat "$out/cpack.log"
    echo "make-packages: cpack made no .deb"
    exit 1
}
for deb in "${debs[@]}"; do
    echo "== $(basename "$deb") ($(du -h "$deb" | cut -f1))"
    dpkg-deb --field "$deb" Package Version Section Installed-Size Depends Suggests
done
