#!/usr/bin/env bash
# Open the PairScope window on the bundled demo project (created on first use).
# Without a screen, the window runs on a virtual one (Xvfb) whose display is printed, with a
# command that takes a screenshot of it; see README.
set -euo pipefail
cd "$(dirname "$0")/.."
project=${1:-demo.pairscope}
[ -f "$project" ] || .venv/bin/pairscope demo "$project"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec .venv/bin/pairscope "$project"
fi
command -v Xvfb >/dev/null || { echo "open-demo: no screen and no Xvfb (apt install xvfb)" >&2; exit 1; }
number=99
while [ -e "/tmp/.X11-unix/X$number" ] || [ -e "/tmp/.X$number-lock" ]; do number=$((number + 1)); done
# Its own session: Ctrl-C reaches PairScope (which closes as Quit does), not the X server under it.
setsid Xvfb ":$number" -screen 0 1440x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill "$xvfb" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$number" ] && break; sleep 0.1; done
export DISPLAY=":$number"
if command -v openbox >/dev/null; then setsid openbox >/dev/null 2>&1 & fi
cat >&2 <<EOF
open-demo: no screen here; the window runs on the virtual display DISPLAY=:$number (Xvfb, 1440x900).
  screenshot:  DISPLAY=:$number import -window root pairscope.png    (ImageMagick)
  keys:        DISPLAY=:$number xdotool key 1                        (labels the item shown)
  Ctrl-C quits (labels are saved first).
EOF
# Nobody can answer the annotator-name dialog on a virtual display: the name is given.
status=0
.venv/bin/pairscope "$project" --annotator "${PAIRSCOPE_ANNOTATOR:-$(id -un)}" || status=$?
exit "$status"
