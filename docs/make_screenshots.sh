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

shot() {  # shot OUTPUT ITEM_ID
    xvfb-run -a -s "-screen 0 1440x900x24" bash -c '
        .venv/bin/pairscope "$0" --annotator alice --item "$2" &
        pid=$!
        sleep 5
        import -window root "$1"
        kill $pid
    ' "$work/demo.pairscope" "$1" "$2"
    echo "wrote $1"
}
shot docs/screenshot-main.png wildvision_demo_01
shot docs/screenshot-video.png video_demo_01
shot docs/screenshot-steps.png steps_demo_01
