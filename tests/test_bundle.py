"""The bundled desktop app (packaging/build-app.sh): built here from a clean annotator install,
it starts frozen, offscreen, on the demo project, takes one key press through the window's
shortcuts, and the label is in the project file. ~2 minutes (the build); slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from configparser import ConfigParser
from pathlib import Path

import pytest

from pairscope.app.store import Store

ROOT = Path(__file__).resolve().parents[1]
APP_ID = "io.github.pairscope.PairScope"
#: The first build on a fresh machine makes a venv, installs PySide6 and PyInstaller and
#: freezes the app: > 300 s on a busy 2-core machine (111 s with the venv cached). The
#: module's tests get this budget instead of the suite-wide timeout, which would otherwise
#: kill the fixture (pytest-timeout counts fixture set-up in the first test's time).
BUILD_BUDGET_S = 3600
pytestmark = pytest.mark.timeout(BUILD_BUDGET_S + 600)


def build_venv() -> Path:
    """Where the build's annotator venv lives: the user's cache, kept between clones."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "pairscope" / f"app-venv-py{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        ["bash", "packaging/build-app.sh", "--dist", str(dist)],
        cwd=ROOT,
        env={**os.environ, "PAIRSCOPE_APP_VENV": os.environ.get("PAIRSCOPE_APP_VENV") or str(build_venv())},
        capture_output=True,
        text=True,
        timeout=BUILD_BUDGET_S,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-5000:]
    return dist / "pairscope"


@pytest.mark.slow
def test_the_frozen_app_labels_an_item_through_a_key_press(bundle, tmp_path):
    exe = bundle / "pairscope"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHONPATH": "",  # nothing from the test's environment leaks into the frozen app
    }
    version = subprocess.run([str(exe), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert version.stdout.strip() == "pairscope 0.1.0", version.stderr
    demo = tmp_path / "demo.pairscope"
    made = subprocess.run([str(exe), "demo", str(demo)], env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr  # the demo data is inside the bundle

    run = subprocess.run(
        [str(exe), str(demo), "--annotator", "frozen"],
        env={**env, "PAIRSCOPE_SELFTEST": "2"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    [line] = [line for line in run.stdout.splitlines() if line.startswith("selftest: ")]
    result = json.loads(line.removeprefix("selftest: "))
    assert result["ok"] and result["outcome"] == "prefer"

    with Store.open(demo, readonly=True) as store:  # checked here, by the unfrozen code
        item_id = store.item_id(result["item"])
        label = store.current_label(item_id, "frozen")
    assert label is not None and label.outcome == "prefer"
    assert label.ranking[0] == label.display_order[1]  # key 2: the response shown second

    judge = subprocess.run(
        [str(exe), "judge", "--db", str(demo), "--model", str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert judge.returncode == 1 and "pip install 'pairscope[judge]'" in judge.stderr


@pytest.mark.slow
def test_the_bundle_carries_no_judge_stack_and_ships_its_desktop_files(bundle):
    internal = bundle / "_internal"
    assert internal.is_dir()
    for heavy in ("torch", "torchvision", "transformers", "httpx", "pytest"):
        assert not (internal / heavy).exists(), heavy
    share = bundle / "share"
    assert "\nExec=pairscope %f\n" in (share / "applications" / f"{APP_ID}.desktop").read_text()
    assert (share / "metainfo" / f"{APP_ID}.metainfo.xml").is_file()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    assert (share / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png").is_file()
    files = [p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink()]  # links: counted once
    size_mb = sum(p.stat().st_size for p in files) / 2**20
    assert size_mb < 1000, f"the annotator bundle grew to {size_mb:.0f} MB"  # 697 MB when measured (PERFORMANCE.md)


def test_the_desktop_entry_metainfo_and_icons_agree():
    packaging = ROOT / "packaging"
    entry = ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(packaging / f"{APP_ID}.desktop")
    desktop = entry["Desktop Entry"]
    assert desktop["Type"] == "Application" and desktop["Icon"] == APP_ID
    assert desktop["Exec"].split()[0] == "pairscope-gui"  # the GUI entry point in pyproject.toml
    assert "pairscope-gui" in (ROOT / "pyproject.toml").read_text()
    meta = ET.parse(packaging / f"{APP_ID}.metainfo.xml").getroot()
    assert meta.get("type") == "desktop-application" and meta.findtext("id") == APP_ID
    assert meta.find("launchable").text == f"{APP_ID}.desktop"
    assert meta.find("releases/release").get("version") == "0.1.0"
    from PIL import Image

    assert (packaging / "icons" / "pairscope.svg").read_text().lstrip().startswith("<?xml")
    for png in (packaging / "icons").glob("pairscope-*.png"):
        size = int(png.stem.split("-")[1])
        assert Image.open(png).size == (size, size), png.name
