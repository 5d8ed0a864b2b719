#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Creates (if missing or incomplete) a Debian sid root holding a modern torch
# (python3-torch 2.x), python3-numpy and the Hugging Face writers/readers of
# sharded and safetensors checkpoints (python3-transformers, -safetensors,
# -accelerate), for the tests that need files written or read by them.
# See packaging/README-modern-torch.md.
#
#   CKPT_MODERN_ROOT    where the root lives   (default /var/cache/ckpt-inspector/sid-root)
#   CKPT_DEBIAN_MIRROR  Debian archive URI     (default: taken from this machine's apt sources)
#
# Idempotent: when the root exists, carries the success stamp and imports torch,
# it only prints the version.  Anything else (an interrupted build, a broken
# root) is removed and built again from scratch.  Needs root (debootstrap,
# chroot, mount namespaces).
set -euo pipefail

ROOT="${CKPT_MODERN_ROOT:-/var/cache/ckpt-inspector/sid-root}"
ROOT="${ROOT%/}"
STAMP_NAME=".ckpt-modern-torch.stamp"
PACKAGES=(python3-torch python3-numpy python3-transformers python3-safetensors python3-accelerate)
APT_OPTS=(-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false
          -o APT::Install-Recommends=false -o Dpkg::Use-Pty=0 -o quiet=1)

log() { printf 'modern-torch: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$ROOT" == /* ]] || die "CKPT_MODERN_ROOT must be an absolute path (got '$ROOT')"
[[ "$ROOT" != "/" ]] || die "CKPT_MODERN_ROOT must not be /"

# ---------------------------------------------------------------------------
# Run a command inside a root, in a private mount namespace, with /proc (and
# /dev, /sys) mounted there.  The namespace dies with the command, so nothing
# can stay mounted even if we are killed; the trap unmounts explicitly too.
# ---------------------------------------------------------------------------
in_root() {
    local root="$1"; shift
    unshare --mount --propagation private -- bash -euc '
        root="$1"; shift
        cleanup() { umount -l "$root/sys" "$root/dev" "$root/proc" 2>/dev/null || true; }
        trap cleanup EXIT
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount --rbind /sys "$root/sys"
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
            DEBIAN_FRONTEND=noninteractive chroot "$root" "$@"
    ' in_root "$root" "$@"
}

# Prints the versions the root holds; fails if torch or numpy do not import.
# One python process only: importing torch is most of the cached run's time.
print_version() {
    in_root "$1" /usr/bin/python3 -c \
        'import sys, torch, numpy, safetensors, transformers, accelerate; print("modern torch", torch.__version__, "| numpy", numpy.__version__, "| transformers", transformers.__version__, "| safetensors", safetensors.__version__, "| accelerate", accelerate.__version__, "| python", sys.version.split()[0])'
}

# Packages of PACKAGES the root lacks (a root cached before a package was added to the list).
missing_packages() {
    local root="$1" package
    for package in "${PACKAGES[@]}"; do
        [[ "$(chroot "$root" dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" == installed ]] ||
            printf '%s\n' "$package"
    done
}

# A root is usable when it carries the stamp (written only after a complete
# build) and torch imports in it.  On success prints the version line.
check_root() {
    local root="$1" out
    [[ -f "$root/$STAMP_NAME" && -x "$root/usr/bin/python3" ]] || return 1
    out=$(print_version "$root" 2>/dev/null) || return 1
    printf '%s\n' "$out"
}

# A complete root cached before packages were added to PACKAGES gets them added in place (a minute)
# rather than being rebuilt from scratch.
if [[ -f "$ROOT/$STAMP_NAME" && -x "$ROOT/usr/bin/python3" ]]; then
    mapfile -t missing < <(missing_packages "$ROOT")
    if ((${#missing[@]})); then
        [[ $(id -u) -eq 0 ]] || die "adding ${missing[*]} to the root needs root; run as root"
        exec 9>"$ROOT.lock"
        flock 9
        log "adding ${missing[*]} to the cached root"
        if in_root "$ROOT" apt-get "${APT_OPTS[@]}" update >&2 &&
            in_root "$ROOT" apt-get "${APT_OPTS[@]}" install -y "${missing[@]}" >&2; then
            in_root "$ROOT" apt-get "${APT_OPTS[@]}" clean >&2 || true
            rm -rf "$ROOT/var/lib/apt/lists/"* 2>/dev/null || true
            {
                printf 'built=%s\nmirror=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "extended"
                in_root "$ROOT" dpkg-query -W -f='${Package}=${Version}\n' "${PACKAGES[@]}"
            } >"$ROOT/$STAMP_NAME"
        else
            log "could not add ${missing[*]}; rebuilding the root"
            rm -f "$ROOT/$STAMP_NAME"
        fi
        exec 9>&-
    fi
fi

# Fast path: nothing to do (no lock, no apt).
if check_root "$ROOT"; then
    log "root ready at $ROOT"
    exit 0
fi

[[ $(id -u) -eq 0 ]] || die "building the root needs root (debootstrap/chroot); run as root"

# ---------------------------------------------------------------------------
# Debian mirror: from CKPT_DEBIAN_MIRROR, else from this machine's apt sources.
# ---------------------------------------------------------------------------
# Prints "URI SUITE" for each enabled binary (deb) source on this machine.
list_apt_sources() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$f" ]] || continue
        # one-line style: deb [options] URI SUITE COMPONENTS...
        sed -e 's/#.*//' "$f" | awk '
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if (i + 1 <= NF) print $i, $(i + 1)
            }'
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$f" ]] || continue
        # deb822 style: paragraphs of Types/URIs/Suites/Enabled fields
        awk '
            function flush(   nu, ns, u, s, U, S) {
                if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
                    nu = split(uris, U, " "); ns = split(suites, S, " ")
                    for (u = 1; u <= nu; u++) for (s = 1; s <= ns; s++) print U[u], S[s]
                }
                types = uris = suites = enabled = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            {
                line = $0; key = tolower(line); sub(/:.*/, "", key)
                val = line; sub(/^[^:]*:[ \t]*/, "", val); gsub(/[ \t]+/, " ", val)
                if (key == "types") types = val
                else if (key == "uris") uris = val
                else if (key == "suites") suites = val
                else if (key == "enabled") enabled = val
            }
            END { flush() }' "$f"
    done
}

detect_mirror() {
    local codename="" uri suite base best="" fallback=""
    if [[ -r /etc/os-release ]]; then
        codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
    fi
    while read -r uri suite; do
        [[ -n "$uri" && -n "$suite" ]] || continue
        [[ "$uri" =~ ^(https?|file):// ]] || continue      # usable by debootstrap
        [[ "$uri" == *security* || "$suite" == *-security* ]] && continue
        base="${suite%%-*}"                                  # bookworm-updates -> bookworm
        if [[ -n "$codename" && "$base" == "$codename" ]] ||
           [[ "$base" =~ ^(stable|oldstable|testing|unstable|sid|experimental)$ ]]; then
            [[ -z "$best" ]] && best="$uri"
        fi
        if [[ "${uri%/}" == */debian && -z "$fallback" ]]; then
            fallback="$uri"
        fi
    done < <(list_apt_sources)
    best="${best:-$fallback}"
    [[ -n "$best" ]] || return 1
    printf '%s\n' "${best%/}"
}

if [[ -n "${CKPT_DEBIAN_MIRROR:-}" ]]; then
    MIRROR="${CKPT_DEBIAN_MIRROR%/}"
else
    MIRROR=$(detect_mirror) ||
        die "no Debian archive found in /etc/apt/sources.list{,.d/}; set CKPT_DEBIAN_MIRROR"
fi
log "Debian mirror: $MIRROR"

# ---------------------------------------------------------------------------
# Build (serialised by a lock; the root is built beside its final place and
# renamed into it only once complete).
# ---------------------------------------------------------------------------
PARENT=$(dirname "$ROOT")
mkdir -p "$PARENT"
exec 9>"$ROOT.lock"
flock 9

# Another run may have finished the root while we waited for the lock.
if check_root "$ROOT"; then
    log "root ready at $ROOT"
    exit 0
fi

# Remove a directory tree safely: never while anything is mounted under it.
safe_remove() {
    local dir="$1" m
    [[ -e "$dir" ]] || return 0
    # Unmount leftovers (deepest first) from a run that predates namespaces.
    while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done < <(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r)
    if awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        die "something is still mounted under $dir; unmount it and retry"
    fi
    rm -rf --one-file-system -- "$dir"
}

if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q debootstrap >&2 ||
        { apt-get update -q >&2 && apt-get install -y -q debootstrap >&2; }
fi

WORK="$ROOT.partial"
if [[ -e "$ROOT" ]]; then
    log "existing root at $ROOT is incomplete or broken; rebuilding"
    safe_remove "$ROOT"
fi
safe_remove "$WORK"
mkdir -p "$WORK"

KEYRING_OPT=()
if [[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
    KEYRING_OPT=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
fi

log "debootstrap sid (minbase) into $WORK"
# Private mount namespace: debootstrap's own /proc and /sys mounts die with it.
unshare --mount --propagation private -- \
    debootstrap --variant=minbase --components=main "${KEYRING_OPT[@]}" \
    sid "$WORK" "$MIRROR" >&2

cat >"$WORK/etc/apt/sources.list" <<EOF
deb $MIRROR sid main
EOF
cat >"$WORK/etc/apt/apt.conf.d/90ckpt-inspector" <<'EOF'
Acquire::Check-Valid-Until "false";
Acquire::Check-Date "false";
APT::Install-Recommends "false";
Acquire::Languages "none";
EOF
cp /etc/resolv.conf "$WORK/etc/resolv.conf" 2>/dev/null || true

log "installing ${PACKAGES[*]} in the root (about 2 GB)"
in_root "$WORK" apt-get "${APT_OPTS[@]}" update >&2
in_root "$WORK" apt-get "${APT_OPTS[@]}" install -y "${PACKAGES[@]}" >&2
in_root "$WORK" apt-get "${APT_OPTS[@]}" clean >&2
rm -rf "$WORK/var/lib/apt/lists/"* 2>/dev/null || true

print_version "$WORK" >/dev/null || die "torch does not import in the new root"

{
    printf 'built=%s\nmirror=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$MIRROR"
    in_root "$WORK" dpkg-query -W -f='${Package}=${Version}\n' "${PACKAGES[@]}"
} >"$WORK/$STAMP_NAME"

mv -T "$WORK" "$ROOT"
log "root ready at $ROOT"
print_version "$ROOT"
