"""The CI guards (import contracts, lint, thread leaks) run here, and each is shown to fail
on a planted violation: a guard that cannot fail guards nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PACKAGES = ("app", "models", "widgets")


def run(args, cwd=ROOT, env=None):
    """Run a tool; return (exit status, stdout + stderr)."""
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stdout + proc.stderr


def tool(name: str) -> str:
    """A console script installed beside this interpreter (the `dev` extra installs them)."""
    path = BIN / name
    assert path.exists(), f"{name} is missing: install the dev extra (bash packaging/setup.sh)"
    return str(path)


# --- import contracts (import-linter, [tool.importlinter] in pyproject.toml) --------------


def importlinter_config(namespace: str) -> str:
    """pyproject.toml's [tool.importlinter] sections, with `pairscope.` renamed."""
    lines, keep = [], False
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            keep = line.strip() in ("[tool.importlinter]", "[[tool.importlinter.contracts]]")
        if keep:
            lines.append(line)
    return "\n".join(lines).replace("pairscope.", f"{namespace}.").replace('"pairscope"', f'"{namespace}"') + "\n"


def lint_imports(cwd: Path, config: Path | None = None, pythonpath: Path | None = None):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    args = [tool("lint-imports"), "--no-cache", "--no-logo", *([str(config)] if config else [])]
    return run(args, cwd=cwd, env=env)


def test_import_contracts_hold():
    code, out = lint_imports(ROOT)
    assert code == 0, out
    assert "0 broken" in out
    assert "BROKEN" not in out


def test_import_contracts_cover_every_design_rule():
    config = importlinter_config("pairscope")
    for forbidden in (
        "PySide6",
        "shiboken6",
        "sqlite3",
        "pairscope.app.store",
        "pairscope.app.gui",
        "pairscope.app.judge",
        "pairscope.app.stats",
        "pairscope.app.curation",
    ):
        assert f'"{forbidden}"' in config, forbidden


# Each plant: files added to a copy of the tree, the contract it must break, and the chain
# (relative imports resolved, indirect hops followed) the report must name.
PLANTS = {
    "core imports Qt through models, relatively": (
        {
            "app/formats/_planted.py": "from ...models import _planted_qt\n",
            "models/_planted_qt.py": "import PySide6.QtGui\n",
        },
        "app core never imports Qt",
        ["planted.app.formats._planted -> planted.models._planted_qt", "planted.models._planted_qt -> PySide6"],
    ),
    "core imports the window": (
        {"app/stats/_planted.py": "def later():\n    from ..gui import media_loader\n"},
        "app core never imports the window",
        ["planted.app.stats._planted -> planted.app.gui.media_loader"],
    ),
    "models import a widget": (
        {"models/_planted.py": "from ..widgets.text_diff import *\n"},
        "models never imports app, widgets",
        ["planted.models._planted -> planted.widgets.text_diff"],
    ),
    "models use sqlite3 through a helper": (
        {"models/_planted.py": "from . import _helper\n", "models/_helper.py": "import sqlite3\n"},
        "models never imports app, widgets",
        ["planted.models._helper -> sqlite3"],
    ),
    "widgets reach the store through app": (
        {
            "widgets/_planted.py": "from ..app import _planted_helper\n",
            "app/_planted_helper.py": "from .store import Store\n",
        },
        "widgets never touch the store",
        ["planted.widgets._planted -> planted.app._planted_helper", "planted.app._planted_helper -> planted.app.store"],
    ),
    "store imports stats": (
        {"app/store/_planted.py": "from ..stats import report\n"},
        "the store is the bottom layer",
        ["planted.app.store._planted -> planted.app.stats.report"],
    ),
}


@pytest.mark.parametrize("plant", PLANTS, ids=list(PLANTS))
def test_import_contracts_break_on_a_planted_violation(tmp_path, plant):
    files, contract, chain = PLANTS[plant]
    tree = tmp_path / "planted"
    for folder in PACKAGES:
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for path in tree.rglob("*.py"):  # absolute imports follow the rename
        path.write_text(path.read_text().replace("pairscope.", "planted."))
    for rel, text in files.items():
        (tree / rel).write_text(text)
    config = tmp_path / "contracts.toml"
    config.write_text(importlinter_config("planted"))

    code, out = lint_imports(tmp_path, config, pythonpath=tmp_path)
    assert code != 0, out
    flat = " ".join(out.split())  # the report wraps long lines
    assert f"{contract}" in flat and "BROKEN" in flat, out
    broken_section = flat[flat.index("Broken contracts") :]
    assert contract in broken_section, out
    for hop in chain:
        assert hop in flat, out


# --- thread leaks (the autouse fixture in tests/conftest.py) ---------------------------------

LEAKY_TEST = """
import threading, time

def test_leaves_a_daemon_running():
    threading.Thread(target=time.sleep, args=(30,), name="planted-sleeper", daemon=True).start()

def test_a_thread_that_finishes_in_the_grace_period_is_fine():
    threading.Thread(target=time.sleep, args=(0.3,), name="quick-one", daemon=True).start()
"""


LEAKY_MODULE_FIXTURE = """
import threading, time, pytest

@pytest.fixture(scope="module")
def shared_worker():
    threading.Thread(target=time.sleep, args=(30,), name="planted-module-worker", daemon=True).start()

def test_uses_the_shared_worker(shared_worker):
    pass
"""


def test_the_thread_fixtures_fail_tests_that_leave_a_daemon_running(pytester):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_leaky=LEAKY_TEST, test_leaky_module=LEAKY_MODULE_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # the sleepers die with it
    result.assert_outcomes(passed=3, errors=2)  # leaky tests pass, then their teardown errors
    out = result.stdout.str()
    assert "test leaked running threads: ['planted-sleeper']" in out
    assert "test module leaked running threads: ['planted-module-worker']" in out
    assert "quick-one" not in out


# --- ruff -----------------------------------------------------------------------------------


def test_ruff_finds_nothing():
    code, out = run([tool("ruff"), "check", "--no-cache", *PACKAGES, "tests", "bench"])
    assert code == 0, out


def test_ruff_fails_on_a_planted_unused_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('"""A module with an unused import."""\n\nimport os\n')
    config = ROOT / "pyproject.toml"
    code, out = run([tool("ruff"), "check", "--no-cache", "--config", str(config), str(planted)], cwd=tmp_path)
    assert code != 0, out
    assert "F401" in out and "os" in out, out


def test_ruff_format_check_fails_on_a_planted_misformat(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("x = {  'a':1 }\n")
    config = ROOT / "pyproject.toml"
    code, out = run(
        [tool("ruff"), "format", "--check", "--no-cache", "--config", str(config), str(planted)], cwd=tmp_path
    )
    assert code != 0 and "planted.py" in out, out


def test_ruff_format_leaves_the_tree_unchanged():
    code, out = run([tool("ruff"), "format", "--check", "--no-cache", *PACKAGES])
    assert code == 0, out


# --- mypy -----------------------------------------------------------------------------------


def mypy(tmp_path):
    """Type-check the packages under their installed names. The folders map onto
    pairscope.* only through the editable install's import hook, which mypy does not run,
    so the check runs on a symlinked `pairscope/` namespace."""
    namespace = tmp_path / "pairscope"
    namespace.mkdir()
    for folder in PACKAGES:
        (namespace / folder).symlink_to(ROOT / folder, target_is_directory=True)
    packages = [arg for folder in PACKAGES for arg in ("-p", f"pairscope.{folder}")]
    return run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            *packages,
        ],
        cwd=tmp_path,
    )


@pytest.mark.slow
def test_mypy_finds_no_type_errors(tmp_path):
    code, out = mypy(tmp_path)
    assert code == 0, out


def test_mypy_fails_on_a_planted_type_error(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def count(words: list[str]) -> int:\n    return ' '.join(words)\n")
    code, out = run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(planted),
        ],
        cwd=tmp_path,
    )
    assert code != 0, out
    assert "planted.py:2: error: Incompatible return value type" in out, out
