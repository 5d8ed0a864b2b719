#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian 12 (bookworm) package that building, running and testing Checkpoint
# Inspector needs, CI included. Runs as root, or through sudo otherwise. Packages that are already
# installed are skipped without touching apt, so a second run takes a fraction of a second.
set -euo pipefail

packages=(
    # Build
    build-essential g++ cmake ninja-build pkg-config git
    # Compiled objects kept between test runs (packaging/build-and-test.sh)
    ccache
    # Qt 6 (Widgets, Charts, Concurrent, Test). Qt6Gui's CMake package looks for the OpenGL headers;
    # Qt6Charts' needs Qt6OpenGLWidgets, which qt6-charts-dev does not pull in.
    qt6-base-dev qt6-base-dev-tools qt6-charts-dev libqt6opengl6-dev libgl-dev
    # The core's libraries: zlib (zip records, CRC) and xxHash (diff's content hashes)
    zlib1g-dev libxxhash-dev
    # Remote checkpoints: http(s) URLs read through range requests (core/io/remotefile)
    libcurl4-openssl-dev
    # The safety verdict unpacks gzip/bzip2/xz/zstd/7z-wrapped pickles through libarchive
    libarchive-dev libbz2-dev liblzma-dev libzstd-dev
    # ckpt-inspect's command line (CLI11, header-only: the CLI stays free of Qt)
    libcli11-dev
    # The libtorch target and the fixture generators (Debian 12's torch 1.13)
    libtorch-dev python3-torch python3-numpy
    # The modern torch interpreter: a Debian sid root (packaging/modern-torch.sh)
    debootstrap debian-archive-keyring ca-certificates xz-utils
    # The format check (the repository's .clang-format is written for clang-format 14)
    clang-format clang-format-14
    # The lint step (.clang-tidy, run by packaging/run-clang-tidy.sh)
    clang-tidy-14
    # The fuzz harnesses (the `fuzz` preset): clang with libFuzzer and the sanitizer runtimes, and
    # llvm-symbolizer so that a crash report names files and lines
    clang-14 libclang-rt-14-dev llvm-14
    # A real window: Qt's xcb platform plugin and its libraries, a virtual X server, fonts that
    # the offscreen and xcb platforms can render with.
    qt6-qpa-plugins libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
    libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1
    xvfb xauth fonts-dejavu-core fontconfig
    # The Debian package (packaging/build-deb.sh, ctest package.*): man pages from --help, the
    # checkers of packages, desktop entries and AppStream metainfo, and MIME sniffing through GIO
    help2man dpkg-dev lintian desktop-file-utils appstream shared-mime-info libglib2.0-bin
)

missing=()
# One dpkg-query for all names: unknown packages print to stderr and are simply missing.
declare -A state=()
while read -r name status; do
    state[$name]=$status
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null || true)
for package in "${packages[@]}"; do
    [[ ${state[$package]:-} == installed ]] || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#packages[@]} packages are already installed"
    exit 0
fi

if ((EUID == 0)); then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install-deps: needs root or sudo to install: ${missing[*]}" >&2
    exit 1
fi

echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# `env` carries the variable through sudo whatever its env_reset policy says.
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef \
    -o Dpkg::Options::=--force-confold "${missing[@]}" </dev/null
echo "install-deps: done"
