#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages of Checkpoint Inspector for this Debian release and checks them:
#
#   packaging/build-deb.sh [OUT_DIR]          (default build/deb/packages)
#
# Builds a tree of its own (build/deb: RelWithDebInfo with Debian's hardening flags from
# dpkg-buildflags, no tests or benchmarks), makes the packages with CPack (dependencies from
# dpkg-shlibdeps), then runs lintian, desktop-file-validate and appstreamcli validate on them
# (packaging/lint-packages.sh). Run packaging/install-deps.sh first. Two packages come out:
#   ckpt-inspector          both programs, the demo checkpoint, desktop integration, man pages
#   ckpt-inspector-values   the libtorch helper for value statistics (only where libtorch-dev is
#                           installed), suggested by ckpt-inspector
# Install them with: sudo apt install ./build/deb/packages/ckpt-inspector_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build="$root/build/deb"
out=$(realpath -m "${1:-$build/packages}")

for tool in cmake ninja cpack dpkg-buildflags help2man; do
    command -v "$tool" >/dev/null || {
        echo "build-deb: $tool is missing; run packaging/install-deps.sh" >&2
        exit 1
    }
done

# Debian's compiler and linker flags, all hardening on (fortify, stack protector, relro, bindnow).
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cxxflags="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCKPT_BUILD_TESTS=OFF -DCKPT_BUILD_BENCHMARKS=OFF -DCKPT_BUILD_FUZZERS=OFF \
    -DCMAKE_INSTALL_PREFIX=/usr "-DCMAKE_CXX_FLAGS=$cxxflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" \
    "${launcher[@]}"
cmake --build "$build" -j"$(nproc)"
packaging/make-packages.sh "$build" "$out"
packaging/lint-packages.sh "$out"
echo "build-deb: packages in $out"
ls -l "$out"/*.deb
