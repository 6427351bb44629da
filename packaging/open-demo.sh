#!/usr/bin/env bash
# Open the PairScope window on the bundled demo project (created on first use).
# Without a screen, the window runs on a virtual one (Xvfb); see README.
set -euo pipefail
cd "$(dirname "$0")/.."
project=${1:-demo.pairscope}
[ -f "$project" ] || .venv/bin/pairscope demo "$project"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec .venv/bin/pairscope "$project"
fi
echo "open-demo: no screen here; running on a virtual display (Xvfb). Ctrl-C to quit." >&2
exec xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/pairscope "$project"
