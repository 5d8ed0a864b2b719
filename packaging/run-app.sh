#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the desktop app (the `dev` preset) and starts it: on FILE when one is given, otherwise on
# the bundled demo checkpoint when it is there. Run packaging/install-deps.sh first.
#   packaging/run-app.sh [FILE]
set -euo pipefail

cd "$(dirname "$0")/.."

cmake --preset dev
cmake --build --preset dev -j"$(nproc)" --target ckpt-inspector

app=build/dev/app/ckpt-inspector
demo=resources/demo/demo-checkpoint.pt
args=("$@")
if ((${#args[@]} == 0)) && [[ -f $demo ]]; then
    args=("$PWD/$demo")
fi

if [[ -z ${DISPLAY:-} ]]; then
    echo "run-app: no DISPLAY: starting ckpt-inspector under xvfb-run -a, a virtual X server;"
    echo "run-app: the window is not visible on any screen. Stop it with Ctrl+C."
    exec xvfb-run -a -s "-screen 0 1280x800x24" "$app" "${args[@]}"
fi
exec "$app" "${args[@]}"
