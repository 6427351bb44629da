#!/usr/bin/env bash
# Regenerate the screenshots in docs/ from the demo project, on a virtual screen (Xvfb).
# Needs: bash packaging/setup.sh --gui
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home"   # fresh settings: no remembered project or window geometry
mkdir -p "$HOME"
.venv/bin/pairscope demo "$work/demo.pairscope" >/dev/null
xvfb-run -a -s "-screen 0 1440x900x24" bash -c '
    .venv/bin/pairscope "$0" --annotator alice &
    pid=$!
    sleep 5
    import -window root docs/screenshot-main.png
    kill $pid
' "$work/demo.pairscope"
echo "wrote docs/screenshot-main.png"
