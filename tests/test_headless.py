"""The core runs headless: every module of app/ outside app/gui, and of models/, imports with
Qt made unimportable, and a statistics report draws and saves its figures. import-linter and
the ast checks read import statements; this runs the code, so Qt reached through a library
(matplotlib's Qt backend) or a swallowed ``ImportError`` is caught too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checkout import ROOT, copy_checkout, env_importing, plant

#: The headless subprocess builds the demo and draws every figure: a hang guard, not a speed limit.
pytestmark = pytest.mark.timeout(1800)

# The finder records every attempt, so one that the code catches still fails the check.
HEADLESS = r"""
import importlib, json, os, sys
from pathlib import Path
QT = {"PySide6", "shiboken6", "PySide2", "shiboken2", "PyQt5", "PyQt6", "qtpy"}
tried = []

class NoQt:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in QT:
            tried.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (Qt is blocked: the core runs headless)", name=name)
        return None

sys.meta_path.insert(0, NoQt())
for name in json.loads(os.environ["CORE_MODULES"]):
    try:
        importlib.import_module(name)
    except Exception as exc:
        sys.exit(f"importing {name}: {type(exc).__name__}: {exc}")

from pairscope.app.demo import create_demo_project
from pairscope.app.stats.report import compute_stats, write_report
from pairscope.app.store import Store

try:
    create_demo_project("demo.pairscope")
    with Store("demo.pairscope") as store:
        write_report(compute_stats(store, bootstrap=10), Path("report"))
except Exception as exc:
    sys.exit(f"drawing the report: {type(exc).__name__}: {exc}")

import matplotlib
backend = dict.__getitem__(matplotlib.rcParams, "backend")  # unresolved: reading it may probe bindings
print(json.dumps({
    "tried": tried,
    "backend": backend if isinstance(backend, str) else None,
    "figures": len(os.listdir("report")),
    "qt_modules": sorted(m for m in sys.modules if m.partition(".")[0] in QT or "qt" in m.rpartition(".")[2]),
}))
"""


def core_modules(root: Path = ROOT) -> list[str]:
    """The installed name of every module of app/ (app/gui aside) and models/."""
    names = []
    for folder in ("app", "models"):
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[:2] == ["app", "gui"]:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(["pairscope", *parts]))
    return names


def run_headless(root: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir()
    env = env_importing(root, tmp_path / "ns", CORE_MODULES=json.dumps(core_modules(root)))
    env.pop("MPLBACKEND", None)  # the code's own choice of backend is what is checked
    return subprocess.run(
        [sys.executable, "-c", HEADLESS], cwd=work, env=env, capture_output=True, text=True, timeout=1500
    )


def headless_problems(proc: subprocess.CompletedProcess) -> list[str]:
    """What made the core load (or try to load) Qt; empty when it ran headless."""
    if proc.returncode != 0:
        return [proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    problems = [f"tried to import {name}" for name in seen["tried"]]
    if seen["backend"] and "qt" in seen["backend"].lower():
        problems.append(f"matplotlib backend set to {seen['backend']}")
    problems += [f"loaded {name}" for name in seen["qt_modules"]]
    if not seen["figures"]:
        problems.append("the report saved no figure")
    return problems


def test_core_modules_are_every_module_outside_the_window():
    names = core_modules()
    assert "pairscope.app.stats.plots" in names and "pairscope.models.parsing" in names
    assert "pairscope.app.store" in names and not [n for n in names if n.startswith("pairscope.app.gui")]


@pytest.mark.slow
def test_the_core_imports_and_draws_its_figures_without_qt(tmp_path):
    assert headless_problems(run_headless(ROOT, tmp_path)) == []


_FIGURE = '    fig = Figure(figsize=(width, height), layout="constrained")\n'  # in plots._figure

# Each plant goes into a scratch copy of the checkout: a new file (text), or an edit of one
# (old, new); the fragment must appear in what the check reports.
PLANTS = {
    "Qt imported by a new core module": (
        {"app/stats/_planted.py": "from PySide6.QtCore import QObject\n"},
        "importing pairscope.app.stats._planted: ModuleNotFoundError: No module named 'PySide6'",
    ),
    "matplotlib told to use its Qt backend at import": (
        {"app/stats/_planted.py": 'import matplotlib\n\nmatplotlib.use("QtAgg")\n'},
        "matplotlib backend set to QtAgg",
    ),
    "the Qt backend imported only when a figure is drawn": (
        {"app/stats/plots.py": (_FIGURE, "    from matplotlib.backends import backend_qtagg\n" + _FIGURE)},
        "drawing the report: ImportError: Failed to import any of the following Qt binding modules",
    ),
    "a Qt import whose ImportError is swallowed": (
        {"models/_planted.py": "try:\n    import shiboken6\nexcept ImportError:\n    shiboken6 = None\n"},
        "tried to import shiboken6",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("plant_name", PLANTS, ids=list(PLANTS))
def test_the_headless_check_fails_on_a_planted_qt_import(tmp_path, plant_name):
    edits, fragment = PLANTS[plant_name]
    checkout = copy_checkout(tmp_path / "checkout")
    files = {}
    for rel, edit in edits.items():
        if isinstance(edit, tuple):
            text = (checkout / rel).read_text()
            assert text.count(edit[0]) == 1, f"{rel} no longer holds the one line the plant edits"
            edit = text.replace(edit[0], edit[1], 1)
        files[rel] = edit
    plant(checkout, files)
    problems = headless_problems(run_headless(checkout, tmp_path))
    assert any(fragment.lower() in p.lower() for p in problems), problems
