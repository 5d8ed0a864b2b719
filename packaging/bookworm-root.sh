#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Creates (if missing or incomplete) a clean Debian 12 (bookworm) root in which the package test
# (packaging/test-package-install.sh, ctest `package.install`) installs the .deb with apt, as a
# user's machine would. The root itself stays clean: the test installs into a throw-away overlay
# on top of it. What the root keeps besides a minbase system is apt's package lists and the .debs
# of the package's runtime dependencies (downloaded, not installed), so each test run installs
# without fetching Qt again.
#
#   CKPT_BOOKWORM_ROOT  where the root lives   (default /var/cache/ckpt-inspector/bookworm-root)
#   CKPT_DEBIAN_MIRROR  Debian archive URI     (default: this machine's bookworm mirror, else
#                                               http://deb.debian.org/debian)
#
# Idempotent: a root with the stamp and the current list of runtime packages is left alone (a
# fraction of a second). A root whose list changed gets the new .debs downloaded in place; anything
# else (an interrupted build, a broken root) is removed and built again. Needs root (debootstrap,
# chroot, mount namespaces).
set -euo pipefail

ROOT="${CKPT_BOOKWORM_ROOT:-/var/cache/ckpt-inspector/bookworm-root}"
ROOT="${ROOT%/}"
STAMP_NAME=".ckpt-bookworm.stamp"
# What dpkg-shlibdeps makes the ckpt-inspector package depend on (Qt 6, libarchive, xxHash and the
# C++ runtime), with what those pull in. Only downloaded here; the test's apt install chooses.
RUNTIME_PACKAGES=(libqt6core6 libqt6gui6 libqt6widgets6 libqt6charts6 libqt6concurrent6
    libqt6opengl6 libqt6openglwidgets6 libarchive13 libxxhash0 zlib1g libstdc++6 libgcc-s1)
APT_OPTS=(-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false
    -o APT::Install-Recommends=false -o Dpkg::Use-Pty=0 -o quiet=1)

log() { printf 'bookworm-root: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

[[ "$ROOT" == /* ]] || die "CKPT_BOOKWORM_ROOT must be an absolute path (got '$ROOT')"
[[ "$ROOT" != "/" ]] || die "CKPT_BOOKWORM_ROOT must not be /"

# Runs a command inside a root in a private mount namespace with /proc, /dev and /sys: the mounts
# die with the namespace, so nothing stays mounted even if we are killed.
in_root() {
    local root="$1"
    shift
    unshare --mount --propagation private -- bash -euc '
        root="$1"; shift
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount --rbind /sys "$root/sys"
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
            DEBIAN_FRONTEND=noninteractive chroot "$root" "$@"
    ' in_root "$root" "$@"
}

runtime_list() { printf '%s\n' "${RUNTIME_PACKAGES[@]}" | sort | tr '\n' ' '; }

# Ready: the stamp names the same runtime list, and apt works in the root.
check_root() {
    [[ -f "$ROOT/$STAMP_NAME" && -x "$ROOT/usr/bin/apt-get" ]] || return 1
    grep -qxF "runtime=$(runtime_list)" "$ROOT/$STAMP_NAME"
}

download_runtime() {
    local root="$1"
    in_root "$root" apt-get "${APT_OPTS[@]}" update >&2
    in_root "$root" apt-get "${APT_OPTS[@]}" install -y --download-only "${RUNTIME_PACKAGES[@]}" >&2
}

write_stamp() {
    printf 'built=%s\nmirror=%s\nruntime=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$2" "$(runtime_list)" \
        >"$1/$STAMP_NAME"
}

if check_root; then
    log "root ready at $ROOT"
    exit 0
fi
[[ $(id -u) -eq 0 ]] || die "building the root needs root (debootstrap/chroot); run as root"

mkdir -p "$(dirname "$ROOT")"
exec 9>"$ROOT.lock"
flock 9
if check_root; then # another run finished it while we waited for the lock
    log "root ready at $ROOT"
    exit 0
fi

# A complete root from an older list of runtime packages: download the new ones in place.
if [[ -f "$ROOT/$STAMP_NAME" && -x "$ROOT/usr/bin/apt-get" ]]; then
    log "runtime packages changed; downloading them into the cached root"
    if download_runtime "$ROOT"; then
        write_stamp "$ROOT" "$(sed -n 's/^mirror=//p' "$ROOT/$STAMP_NAME")"
        log "root ready at $ROOT"
        exit 0
    fi
    log "could not update the cached root; rebuilding it"
fi

if [[ -n "${CKPT_DEBIAN_MIRROR:-}" ]]; then
    MIRROR="${CKPT_DEBIAN_MIRROR%/}"
else
    # The first plain (not security) http(s) archive of this machine's apt sources, both styles.
    MIRROR=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
        2>/dev/null | sed -e 's/#.*//' | grep -oE 'https?://[^ ]+' | grep -v security | head -n1 || true)
    MIRROR="${MIRROR:-http://deb.debian.org/debian}"
    MIRROR="${MIRROR%/}"
fi
log "Debian mirror: $MIRROR"

# Never remove a tree while something is mounted under it.
safe_remove() {
    local dir="$1"
    [[ -e "$dir" ]] || return 0
    if awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        die "something is mounted under $dir; unmount it and retry"
    fi
    rm -rf --one-file-system -- "$dir"
}

if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2
fi

WORK="$ROOT.partial"
safe_remove "$ROOT"
safe_remove "$WORK"
mkdir -p "$WORK"

KEYRING_OPT=()
[[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] &&
    KEYRING_OPT=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)

log "debootstrap bookworm (minbase) into $WORK"
unshare --mount --propagation private -- \
    debootstrap --variant=minbase --components=main "${KEYRING_OPT[@]}" bookworm "$WORK" "$MIRROR" >&2

cat >"$WORK/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
EOF
# Keep downloaded .debs (the point of the cache); no recommends, as in a minimal install.
cat >"$WORK/etc/apt/apt.conf.d/90ckpt-inspector" <<'EOF'
Acquire::Check-Valid-Until "false";
Acquire::Check-Date "false";
APT::Install-Recommends "false";
Acquire::Languages "none";
APT::Keep-Downloaded-Packages "true";
Binary::apt::APT::Keep-Downloaded-Packages "true";
EOF
rm -f "$WORK/etc/apt/apt.conf.d/docker-clean"
cp /etc/resolv.conf "$WORK/etc/resolv.conf" 2>/dev/null || true

log "downloading the runtime packages: ${RUNTIME_PACKAGES[*]}"
download_runtime "$WORK"
write_stamp "$WORK" "$MIRROR"
mv -T "$WORK" "$ROOT"
log "root ready at $ROOT ($(du -sh --one-file-system "$ROOT" | cut -f1))"
