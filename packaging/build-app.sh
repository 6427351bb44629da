#!/usr/bin/env bash
# Build the desktop app: a PyInstaller one-folder bundle of the annotator install (the window,
# labeling, import, stats, export, merge; the demo data), with no torch, transformers or httpx:
# a judge runs from a pip install (docs/INSTALL.md). Output: dist/pairscope/pairscope (the
# `pairscope` command: no arguments opens the window) plus the desktop entry, icon and
# AppStream metainfo in dist/pairscope/share/.
#
#   bash packaging/build-app.sh [--python PY] [--dist DIR]
#
# By default the bundle is built from a clean base install in build/app-venv (`pip install .`,
# no extras: exactly what an annotator installs). --python builds from another interpreter's
# environment instead (it needs pairscope installed without -e, and pyinstaller).
# tests/test_bundle.py builds it and labels an item in the frozen app.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

python=""
dist="$root/dist"
while [ $# -gt 0 ]; do
    case "$1" in
        --python) python=$2; shift 2 ;;
        --dist) dist=$(realpath -m "$2"); shift 2 ;;
        *) echo "usage: bash packaging/build-app.sh [--python PY] [--dist DIR]" >&2; exit 2 ;;
    esac
done

if [ -z "$python" ]; then
    # PAIRSCOPE_APP_VENV puts the build venv elsewhere (tests/test_bundle.py keeps one in the
    # user's cache, so a fresh clone on the same machine does not install PySide6 again). Two
    # builds sharing one venv take turns: the lock is held until this script exits.
    venv=${PAIRSCOPE_APP_VENV:-build/app-venv}
    mkdir -p "$(dirname "$venv")"
    exec 9>"$venv.lock"
    flock 9
    if ! "$venv/bin/python" -c "import sys" >/dev/null 2>&1; then
        rm -rf "$venv"  # absent, or left broken by an interrupted build
        "${PYTHON:-python3}" -m venv "$venv"
    fi
    echo "build-app: installing the annotator install (no extras) and pyinstaller into $venv"
    # No pipe and no `|| true`: a failed install stops the build with pip's own error.
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade "$root" "pyinstaller>=6.10"
    python=$venv/bin/python
fi

# The judge stacks are optional extras; the annotator bundle leaves them out explicitly, so an
# import path that reaches them (models/transformers_backend.py imports torch lazily) does not
# drag several GB in. Tk and test tooling are never used by the app.
excludes=(torch torchvision torchaudio transformers tokenizers safetensors huggingface_hub accelerate
          datasets httpx fastapi uvicorn tkinter _tkinter IPython pytest PySide6.QtWebEngineCore)

work=build/app-work
rm -rf "$work" "$dist/pairscope"
start=$(date +%s)
args=(--noconfirm --onedir --name pairscope --distpath "$dist" --workpath "$work" --specpath "$work"
      --log-level WARN --collect-data pairscope.resources
      --collect-submodules pairscope.app --collect-submodules pairscope.widgets --collect-submodules pairscope.models)
for m in "${excludes[@]}"; do args+=(--exclude-module "$m"); done
"$python" -m PyInstaller "${args[@]}" packaging/pairscope_main.py

share="$dist/pairscope/share"
mkdir -p "$share/applications" "$share/metainfo" "$share/icons/hicolor/scalable/apps"
# The bundle's one executable is `pairscope` (no arguments: the window); a pip install has
# the `pairscope-gui` entry point the packaged .desktop file names.
sed -e 's/^Exec=pairscope-gui/Exec=pairscope/' -e 's/^TryExec=pairscope-gui/TryExec=pairscope/' \
    packaging/io.github.pairscope.PairScope.desktop >"$share/applications/io.github.pairscope.PairScope.desktop"
cp packaging/io.github.pairscope.PairScope.metainfo.xml "$share/metainfo/"
cp packaging/icons/pairscope.svg "$share/icons/hicolor/scalable/apps/io.github.pairscope.PairScope.svg"
for png in packaging/icons/pairscope-*.png; do
    size=$(basename "$png" .png); size=${size#pairscope-}
    mkdir -p "$share/icons/hicolor/${size}x${size}/apps"
    cp "$png" "$share/icons/hicolor/${size}x${size}/apps/io.github.pairscope.PairScope.png"
done

for m in torch transformers httpx; do
    if [ -e "$dist/pairscope/_internal/$m" ]; then
        echo "build-app: $m is in the bundle; the annotator app must not carry it" >&2
        exit 1
    fi
done
echo "build-app: $dist/pairscope ($(du -sh "$dist/pairscope" | cut -f1), built in $(( $(date +%s) - start )) s)"
