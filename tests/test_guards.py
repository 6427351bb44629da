"""The CI guards (import contracts and the layers table, lint and format, types, thread leaks)
run here, each on the checkout under test, and each is shown to fail on a planted violation:
a guard that cannot fail guards nothing."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from checkout import copy_checkout, env_importing, plant

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PACKAGES = ("app", "models", "widgets")
#: A cold mypy over the tree takes ~100 s on an idle 2-core machine; on a busy one several
#: times that. The tools get a hang guard, not a speed limit, and so do these tests.
TOOL_TIMEOUT_S = 1500
pytestmark = pytest.mark.timeout(TOOL_TIMEOUT_S + 300)


def run(args, cwd=ROOT, env=None):
    """Run a tool; return (exit status, stdout + stderr)."""
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    return proc.returncode, proc.stdout + proc.stderr


def tool(name: str) -> str:
    """A console script installed beside this interpreter (the `dev` extra installs them)."""
    path = BIN / name
    assert path.exists(), f"{name} is missing: install the dev extra (bash packaging/setup.sh)"
    return str(path)


# --- import contracts (import-linter, [tool.importlinter] in pyproject.toml) --------------


def lint_imports(root: Path, tmp_path: Path):
    """`lint-imports` on the checkout at ``root`` with its own pyproject.toml. grimp analyses
    the ``pairscope`` that Python imports, so a namespace on PYTHONPATH makes it this checkout
    rather than whichever copy is installed."""
    env = env_importing(root, tmp_path / "ns")
    return run([tool("lint-imports"), "--no-cache", "--no-logo", str(root / "pyproject.toml")], cwd=tmp_path, env=env)


def contracts(pyproject: str | None = None) -> dict[str, dict]:
    """The import-linter contracts of a pyproject.toml (this checkout's by default), by id."""
    text = (ROOT / "pyproject.toml").read_text() if pyproject is None else pyproject
    return {c["id"]: c for c in tomllib.loads(text)["tool"]["importlinter"]["contracts"]}


def test_import_contracts_hold(tmp_path):
    code, out = lint_imports(ROOT, tmp_path)
    assert code == 0, out
    assert "0 broken" in out
    assert "BROKEN" not in out


def test_import_contracts_cover_every_design_rule():
    forbidden = {m for c in contracts().values() for m in c.get("forbidden_modules", ())}
    assert {"PySide6", "shiboken6", "sqlite3", "pairscope.app.store", "pairscope.app.gui"} <= forbidden
    assert contracts()["app-layers"]["type"] == "layers"


def broken(out: str, contract: str, chain: list[str]) -> None:
    """Assert that lint-imports' report names ``contract`` among the broken ones, with each hop."""
    flat = " ".join(out.split())  # the report wraps long lines
    assert "Broken contracts" in flat, out
    assert contract in flat[flat.index("Broken contracts") :], out
    for hop in chain:
        assert hop in flat, out


def test_lint_imports_analyses_the_checkout_not_the_installed_copy(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    plant(checkout, {"app/store/_planted.py": "from ..stats import report\n"})
    installed = Path(importlib.util.find_spec("pairscope").origin).parent
    assert not (installed / "app" / "store" / "_planted.py").exists()  # the two differ
    code, out = lint_imports(checkout, tmp_path)
    assert code != 0, out
    broken(out, "app/ is layered", ["pairscope.app.store._planted -> pairscope.app.stats.report"])


# Each plant: files added to a copy of the tree, the contract it must break, and the chain
# (relative imports resolved, indirect hops followed) the report must name.
PLANTS = {
    "core imports Qt through models, relatively": (
        {
            "app/formats/_planted.py": "from ...models import _planted_qt\n",
            "models/_planted_qt.py": "import PySide6.QtGui\n",
        },
        "app core never imports Qt",
        ["pairscope.app.formats._planted -> pairscope.models._planted_qt", "pairscope.models._planted_qt -> PySide6"],
    ),
    "core imports the window": (
        {"app/stats/_planted.py": "def later():\n    from ..gui import media_loader\n"},
        "app core never imports the window",
        ["pairscope.app.stats._planted -> pairscope.app.gui.media_loader"],
    ),
    "models import a widget": (
        {"models/_planted.py": "from ..widgets.text_diff import *\n"},
        "models never imports app, widgets",
        ["pairscope.models._planted -> pairscope.widgets.text_diff"],
    ),
    "models use sqlite3 through a helper": (
        {"models/_planted.py": "from . import _helper\n", "models/_helper.py": "import sqlite3\n"},
        "models never imports app, widgets",
        ["pairscope.models._helper -> sqlite3"],
    ),
    "widgets reach the store through app": (
        {
            "widgets/_planted.py": "from ..app import _planted_helper\n",
            "app/_planted_helper.py": "from .store import Store\n",
        },
        "widgets never touch the store",
        [
            "pairscope.widgets._planted -> pairscope.app._planted_helper",
            "pairscope.app._planted_helper -> pairscope.app.store",
        ],
    ),
    "store imports stats (a row above)": (
        {"app/store/_planted.py": "from ..stats import report\n"},
        "app/ is layered",
        ["pairscope.app.store._planted -> pairscope.app.stats.report"],
    ),
    "judge imports stats lazily (a row above)": (
        {"app/judge/_planted.py": "def later():\n    from ..stats import report\n"},
        "app/ is layered",
        ["pairscope.app.judge._planted -> pairscope.app.stats.report"],
    ),
    "formats import the store (the same row)": (
        {"app/formats/_planted.py": "from ..store import Store\n"},
        "app/ is layered",
        ["pairscope.app.formats._planted -> pairscope.app.store"],
    ),
    "a new module of app/ has no row": (
        {"app/_planted_new.py": "VALUE = 1\n"},
        "app/ is layered",
        ["The following modules are not listed as layers", "pairscope.app._planted_new"],
    ),
}


@pytest.mark.parametrize("plant_name", PLANTS, ids=list(PLANTS))
def test_import_contracts_break_on_a_planted_violation(tmp_path, plant_name):
    files, contract, chain = PLANTS[plant_name]
    checkout = copy_checkout(tmp_path / "checkout")
    plant(checkout, files)
    code, out = lint_imports(checkout, tmp_path)
    assert code != 0, out
    broken(out, contract, chain)


# --- the layers contract is ARCHITECTURE.md's table -----------------------------------------


def layers_in_table(markdown: str) -> list[set[str]]:
    """The rows of the table under "Who may import whom", top to bottom: each row's modules
    of app/ (`app/judge/` -> judge, `app/cli/` -> cli)."""
    rows: list[set[str]] = []
    lines = iter(markdown.splitlines())
    for line in lines:
        if line.startswith("| layer | package |"):
            break
    next(lines, None)  # the |---| row
    for line in lines:
        if not line.startswith("|"):
            break
        number, package = (cell.strip() for cell in line.strip("| ").split("|")[:2])
        assert number == str(len(rows) + 1), f"layer rows are numbered 1, 2, ... in order: {line[:60]}"
        rows.append({re.sub(r"^app/|/$|\.py$", "", p) for p in re.findall(r"`(app/[^`]+)`", package)})
    return rows


def layer_drift(markdown: str, pyproject: str) -> list[str]:
    """How the `app-layers` contract differs from ARCHITECTURE.md's table; empty when equal."""
    contract = contracts(pyproject).get("app-layers")
    if contract is None:
        return ["no app-layers contract"]
    drift = []
    if contract["type"] != "layers" or contract.get("containers") != ["pairscope.app"]:
        drift.append("app-layers is not a layers contract on the container pairscope.app")
    if not contract.get("exhaustive"):
        drift.append("app-layers is not exhaustive: a module without a row would be unchecked")
    drift += [
        f"{layer!r}: a row's modules are independent (|), not ':'" for layer in contract["layers"] if ":" in layer
    ]
    layers = [{m.strip() for m in re.split(r"[|:]", layer)} for layer in contract["layers"]]
    table = layers_in_table(markdown)
    for i in range(max(len(table), len(layers))):
        row = table[i] if i < len(table) else set()
        layer = layers[i] if i < len(layers) else set()
        if row != layer:
            drift.append(f"row {i + 1}: the table says {sorted(row)}, the contract {sorted(layer)}")
    return drift


ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"


def test_the_layers_contract_is_the_architecture_table():
    assert len(layers_in_table(ARCHITECTURE.read_text())) >= 5
    assert layer_drift(ARCHITECTURE.read_text(), (ROOT / "pyproject.toml").read_text()) == []


def test_layer_drift_is_found_on_planted_edits():
    markdown, pyproject = ARCHITECTURE.read_text(), (ROOT / "pyproject.toml").read_text()
    assert "| 2 | `app/cli/` |" in markdown and '    "gui",\n    "cli",\n' in pyproject
    swapped = markdown.replace("| 2 | `app/cli/` |", "| 2 | `app/cli/`, `app/gui/` |").replace(
        "| 1 | `app/gui/` |", "| 1 | |"
    )
    assert layer_drift(swapped, pyproject) == [
        "row 1: the table says [], the contract ['gui']",
        "row 2: the table says ['cli', 'gui'], the contract ['cli']",
    ]
    merged = pyproject.replace('    "gui",\n    "cli",\n', '    "gui : cli",\n')
    drift = layer_drift(markdown, merged)
    assert "'gui : cli': a row's modules are independent (|), not ':'" in drift
    assert "row 1: the table says ['gui'], the contract ['cli', 'gui']" in drift
    assert layer_drift(markdown, pyproject.replace("exhaustive = true", "exhaustive = false")) == [
        "app-layers is not exhaustive: a module without a row would be unchecked"
    ]


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


FORMATTED = (*PACKAGES, "tests", "bench")  # the whole tree


def ruff_format_check(root: Path):
    return run([tool("ruff"), "format", "--check", "--no-cache", *FORMATTED], cwd=root)


def test_ruff_format_check_fails_on_a_planted_misformat(tmp_path):
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")  # its [tool.ruff] settings
    plant(tmp_path, {f"{folder}/_planted.py": "x = {  'a':1 }\n" for folder in FORMATTED})
    code, out = ruff_format_check(tmp_path)
    assert code != 0, out
    assert [f for f in FORMATTED if f"{f}/_planted.py" not in out] == [], out


def test_ruff_format_leaves_the_tree_unchanged():
    code, out = ruff_format_check(ROOT)
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


TYPED = ("judge", "stats", "store")  # disallow_untyped_defs in pyproject.toml


@pytest.mark.parametrize("base", ["pairscope.app", "app"])
def test_mypy_refuses_an_untyped_def_in_the_typed_packages(tmp_path, base):
    """Under both names mypy gives the folders (see the override in pyproject.toml)."""
    untyped = "def count(words):\n    return len(words)\n"
    for package in (*TYPED, "formats"):
        folder = tmp_path.joinpath(*base.split("."), package)
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / "_planted.py").write_text(untyped)
    args = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    code, out = run([*args, "--cache-dir", str(tmp_path / "cache"), "-p", base], cwd=tmp_path)
    assert code != 0, out
    flagged = sorted(line.split("/")[-2] for line in out.splitlines() if "[no-untyped-def]" in line)
    assert flagged == sorted(TYPED), out  # formats/ is not in the override


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
