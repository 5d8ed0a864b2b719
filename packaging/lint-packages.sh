#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the Debian packages in DIR as Debian would: lintian (any error fails; warnings are
# printed, see the README of packaging/ for the ones that stay and why), and the desktop entry and
# AppStream metainfo the main package ships, with desktop-file-validate and appstreamcli validate.
# Exits 77 (skip) when one of those tools is missing (packaging/install-deps.sh installs them).
#
#   lint-packages.sh DIR
set -euo pipefail
dir=${1:?DIR}
for tool in lintian desktop-file-validate appstreamcli; do
    command -v "$tool" >/dev/null || {
        echo "skip: $tool is not installed (packaging/install-deps.sh)"
        exit 77
    }
done
shopt -s nullglob
debs=("$dir"/*.deb)
((${#debs[@]})) || {
    echo "lint-packages: no .deb in $dir"
    exit 1
}

status=0
# lintian exits non-zero for errors only (--fail-on error); --no-tag-display-limit shows every one.
echo "== lintian ${debs[*]##*/}"
lintian --fail-on error --no-tag-display-limit --display-info "${debs[@]}" || status=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for deb in "${debs[@]}"; do
    dpkg-deb -x "$deb" "$work"
done
for desktop in "$work"/usr/share/applications/*.desktop; do
    echo "== desktop-file-validate ${desktop#"$work"}"
    desktop-file-validate "$desktop" || status=1
done
for metainfo in "$work"/usr/share/metainfo/*.xml; do
    echo "== appstreamcli validate ${metainfo#"$work"}"
    appstreamcli validate --no-net "$metainfo" || status=1
done
((status == 0)) && echo "lint-packages: no errors" || echo "lint-packages: FAILED"
exit $status
