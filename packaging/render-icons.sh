#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Renders data/icons/ckpt-inspector.svg to the PNG sizes installed under share/icons/hicolor.
# The PNGs are committed (so a build needs no SVG renderer); run this after editing the SVG.
# Needs rsvg-convert (Debian package librsvg2-bin).
set -euo pipefail
cd "$(dirname "$0")/../data/icons"
for size in 16 22 24 32 48 64 128 256; do
    mkdir -p "hicolor/${size}x${size}/apps"
    rsvg-convert -w "$size" -h "$size" ckpt-inspector.svg -o "hicolor/${size}x${size}/apps/ckpt-inspector.png"
done
echo "render-icons: wrote $(ls hicolor | wc -l) sizes"
