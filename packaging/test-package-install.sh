#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the ckpt-inspector package of DIR with apt into a clean Debian 12 root, as a user would
# (`apt-get install ./ckpt-inspector_*.deb`: dependencies resolved by apt from the archive), then
# runs both installed programs there: `ckpt-inspect info` on the installed demo checkpoint, and the
# app on the offscreen platform, which opens the demo, saves a screenshot and exits.
#
# The root (packaging/bookworm-root.sh, /var/cache/ckpt-inspector/bookworm-root) stays clean: all
# of this happens in a throw-away overlay on top of it, in a private mount namespace that dies with
# the test. Exits 77 (skip) when the root is not there or we are not root.
#
#   test-package-install.sh DIR        (the screenshot is left in DIR/installed-app.png)
#   CKPT_BOOKWORM_ROOT          the root (default /var/cache/ckpt-inspector/bookworm-root)
#   CKPT_PACKAGE_TEST_VALUES=1  also install ckpt-inspector-values (libtorch: 218 packages, 150 MB to fetch)
#                               and run `ckpt-inspect check --values` on the demo
set -euo pipefail
dir=$(cd "${1:?DIR}" && pwd -P)
ROOT="${CKPT_BOOKWORM_ROOT:-/var/cache/ckpt-inspector/bookworm-root}"
if [[ ! -f "$ROOT/.ckpt-bookworm.stamp" ]]; then
    echo "skip: no clean Debian 12 root at $ROOT (packaging/bookworm-root.sh makes it)"
    exit 77
fi
if (($(id -u) != 0)); then
    echo "skip: installing into the root needs root (mount namespace, overlay, chroot)"
    exit 77
fi
shopt -s nullglob
main_deb=("$dir"/ckpt-inspector_*.deb)
values_deb=("$dir"/ckpt-inspector-values_*.deb)
((${#main_deb[@]} == 1)) || {
    echo "test-package-install: expected one ckpt-inspector_*.deb in $dir"
    exit 1
}
with_values=${CKPT_PACKAGE_TEST_VALUES:-0}
if [[ $with_values == 1 ]] && ((${#values_deb[@]} != 1)); then
    echo "test-package-install: CKPT_PACKAGE_TEST_VALUES=1 but no ckpt-inspector-values_*.deb in $dir"
    exit 1
fi

work=$(mktemp -d /var/tmp/ckpt-package-test.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
mkdir -p "$work/upper" "$work/work" "$work/merged"
rm -f "$dir/installed-app.png"

# Everything below runs in the root's overlay; the script is given on stdin of bash inside.
inside=$(
    cat <<'INSIDE'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt_install() { # lists may be older than the archive: refresh them once if an install fails
    apt-get -o Dpkg::Use-Pty=0 -q install -y "$@" || { apt-get -q update && apt-get -o Dpkg::Use-Pty=0 -q install -y "$@"; }
}
start=$(date +%s)
echo "== apt-get install ./$(basename /debs/ckpt-inspector_*.deb)"
apt_install /debs/ckpt-inspector_*.deb
echo "== installed in $(($(date +%s) - start)) s: $(dpkg-query -W -f='${Package} ${Version}\n' ckpt-inspector)"
for path in /usr/bin/ckpt-inspect /usr/bin/ckpt-inspector /usr/share/ckpt-inspector/demo-checkpoint.pt \
    /usr/share/applications/io.github.ckpt_inspector.CheckpointInspector.desktop \
    /usr/share/metainfo/io.github.ckpt_inspector.CheckpointInspector.metainfo.xml \
    /usr/share/mime/packages/ckpt-inspector.xml /usr/share/icons/hicolor/scalable/apps/ckpt-inspector.svg \
    /usr/share/icons/hicolor/48x48/apps/ckpt-inspector.png /usr/share/man/man1/ckpt-inspect.1.gz \
    /usr/share/man/man1/ckpt-inspector.1.gz /usr/share/doc/ckpt-inspector/copyright; do
    [[ -e $path ]] || { echo "FAIL: the package did not install $path"; exit 1; }
done
! dpkg-query -W libtorch1.13 >/dev/null 2>&1 || { echo "FAIL: the main package pulled in libtorch"; exit 1; }

echo "== ckpt-inspect info /usr/share/ckpt-inspector/demo-checkpoint.pt"
cd /tmp
ckpt-inspect info /usr/share/ckpt-inspector/demo-checkpoint.pt | tee info.txt
for device in cuda:0 cuda:1 cpu; do
    grep -q "$device" info.txt || { echo "FAIL: ckpt-inspect info names no $device storage"; exit 1; }
done
ckpt-inspect info --json /usr/share/ckpt-inspector/demo-checkpoint.pt >info.json
grep -q '"tensors"' info.json || { echo "FAIL: ckpt-inspect info --json wrote no tensors"; exit 1; }

# libarchive and libcurl are opened at run time (dlopen), so the package names them itself:
# a gzip wrapper must unpack and a URL must get as far as connecting.
gzip -c /usr/share/ckpt-inspector/demo-checkpoint.pt >demo.pt.gz
ckpt-inspect info demo.pt.gz >bundle.txt 2>&1 || true
grep -q "zip bundle" bundle.txt || { cat bundle.txt; echo "FAIL: libarchive is not usable in the package"; exit 1; }
ckpt-inspect info http://127.0.0.1:9/demo.pt >remote.txt 2>&1 || true
grep -q "connect" remote.txt || { cat remote.txt; echo "FAIL: libcurl is not usable in the package"; exit 1; }

# Without ckpt-inspector-values, value statistics are missing with a reason, not a crash.
ckpt-inspect check --values /usr/share/ckpt-inspector/demo-checkpoint.pt >check.txt 2>&1 || true
grep -q "Values: value statistics need ckpt-inspect-values" check.txt ||
    { cat check.txt; echo "FAIL: check --values without the helper does not say what is missing"; exit 1; }

echo "== QT_QPA_PLATFORM=offscreen ckpt-inspector --screenshot (no FILE: the installed demo)"
QT_QPA_PLATFORM=offscreen timeout 120 ckpt-inspector --screenshot /out/installed-app.png
[[ -s /out/installed-app.png ]] || { echo "FAIL: the app wrote no screenshot"; exit 1; }
if [[ ${WITH_VALUES:-0} == 1 ]]; then
    start=$(date +%s)
    echo "== apt-get install ./$(basename /debs/ckpt-inspector-values_*.deb)"
    apt_install /debs/ckpt-inspector-values_*.deb
    echo "== installed in $(($(date +%s) - start)) s"
    echo "== ckpt-inspect check --values"
    ckpt-inspect check --values /usr/share/ckpt-inspector/demo-checkpoint.pt >check.txt || true
    grep -A3 "^Values:" check.txt
    grep -qE "^Values: [0-9]+ tensors scanned" check.txt && grep -qE "^ +model\.embed\.weight +min " check.txt ||
        { cat check.txt; echo "FAIL: check --values printed no value statistics"; exit 1; }
fi
echo "test-package-install: both programs ran in the installed package"
INSIDE
)

unshare --mount --propagation private -- bash -euc '
    root="$1" work="$2" debs="$3" with_values="$4" script="$5"
    m="$work/merged"
    mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/work" "$m"
    mount -t proc proc "$m/proc"
    mount --rbind /dev "$m/dev"
    mount --rbind /sys "$m/sys"
    mkdir -p "$m/debs" "$m/out"
    mount --bind -o ro "$debs" "$m/debs"
    mount --bind "$debs" "$m/out"
    cp /etc/resolv.conf "$m/etc/resolv.conf" 2>/dev/null || true
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 WITH_VALUES="$with_values" \
        chroot "$m" /bin/bash -c "$script"
' test-package-install "$ROOT" "$work" "$dir" "$with_values" "$inside"
