#!/usr/bin/env bash
# Set up PairScope in ./.venv on a fresh machine: torch from the local wheel, then the
# package with every extra and the test tools (`.[dev]`, which includes `all`); see
# docs/INSTALL.md for the smaller installs (annotator, researcher, GPU judge). With --gui, also the apt packages a real Qt window needs
# (xcb libraries; Xvfb, a window manager and xdotool for machines without a screen and the
# test that types real keys). Safe to run again: it only adds
# what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

want_gui=0
[ "${1:-}" = "--gui" ] && want_gui=1

if [ "$want_gui" = 1 ] && command -v dpkg-query >/dev/null 2>&1; then
    pkgs=(xvfb xauth x11-utils xdotool openbox imagemagick libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-randr0
          libxcb-render-util0 libxcb-shape0 libxcb-xfixes0 libxcb-xkb1 libxkbcommon-x11-0 libxcb-cursor0
          libegl1 libgl1 libfontconfig1 libdbus-1-3 fonts-dejavu-core)
    missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        if [ "$(id -u)" = 0 ]; then
            echo "setup: installing apt packages: ${missing[*]}"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
        else
            echo "setup: Qt needs these apt packages (run as root): sudo apt-get install ${missing[*]}" >&2
        fi
    fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# A failed install stops the set-up with pip's own error (and its exit status); only pip's
# notices about this machine's unused local package folders are left out of the output.
pip_install() {
    local log status=0
    log=$(mktemp)
    .venv/bin/python -m pip install -q --disable-pip-version-check "$@" >"$log" 2>&1 || status=$?
    grep -v "^WARNING: Location" "$log" >&2 || true
    rm -f "$log"
    if [ "$status" != 0 ]; then
        echo "setup: failed: pip install $* (exit $status; pip's error is above)" >&2
        exit "$status"
    fi
}

# torch 2.14.1 + torchvision 0.29.1 lie on this machine's disk (FACTS.md): ~45 s, no download.
if ! .venv/bin/python -c "import torch, torchvision" >/dev/null 2>&1; then
    echo "setup: installing torch 2.14.1 + torchvision 0.29.1"
    pip_install torch==2.14.1 torchvision==0.29.1
fi
echo "setup: installing pairscope (editable) with the dev extra (judge, endpoint, test tools)"
# dev = all (judge: transformers; endpoint: httpx) + pytest, lint, type checks, the reference
# statistics libraries, datasets, transformers[serving] (a real `transformers serve` for the
# endpoint tests) and pyinstaller (the bundle test).
pip_install -e ".[dev]"
.venv/bin/python -c "import pairscope, torch, transformers, httpx, datasets, PyInstaller; print('setup: ok, pairscope', pairscope.__version__, 'torch', torch.__version__)"
