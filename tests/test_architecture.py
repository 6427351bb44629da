"""DESIGN.md's import rules and packaging, checked on every test run."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QT = ("PySide6", "PyQt5", "PyQt6", "qtpy", "shiboken6")
HEAVY = ("torch", "transformers")


def imports_of(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, at module level?) for every import in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = ("." * node.level) + (node.module or "")
            found.append((node.lineno, module, id(node) in top_level))
    return found


def python_files(folder: str, exclude: str | None = None):
    for path in sorted((ROOT / folder).rglob("*.py")):
        if exclude and exclude in path.relative_to(ROOT).parts:
            continue
        yield path


def violations(folder, forbidden, exclude=None, top_level_only=False):
    bad = []
    for path in python_files(folder, exclude):
        for line, module, top in imports_of(path):
            if top_level_only and not top:
                continue
            if module.split(".")[0] in forbidden or any(module.startswith(f) for f in forbidden):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return bad


def test_core_and_models_never_import_qt():
    assert violations("app", QT, exclude="gui") + violations("models", QT) == []


def test_models_never_import_app_widgets_or_sqlite():
    assert violations("models", ("pairscope.app", "pairscope.widgets", "sqlite3", "sqlite_utils")) == []
    relative_up = [v for v in violations("models", ("..",))]
    assert relative_up == []


def test_widgets_never_touch_the_store():
    forbidden = ("pairscope.app.store", "pairscope.app.importer", "sqlite3", "sqlite_utils", "pairscope.app.gui")
    assert violations("widgets", forbidden) == []
    allowed_app = {"pairscope.app.records"}
    other_app = [
        f"{p.relative_to(ROOT)}:{line} imports {m}"
        for p in python_files("widgets")
        for line, m, _ in imports_of(p)
        if m.startswith("pairscope.app") and m not in allowed_app
    ]
    assert other_app == []


def test_torch_and_transformers_only_lazily_outside_models():
    assert violations("app", HEAVY, top_level_only=True) + violations("widgets", HEAVY) == []


def test_cli_import_loads_no_qt_or_torch():
    code = (
        "import sys, pairscope.app.cli, pairscope.app.importer, pairscope.app.media, pairscope.models;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6','torch','transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_subpackage_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {"app": "pairscope.app", "widgets": "pairscope.widgets", "models": "pairscope.models",
             "resources": "pairscope.resources"}
    on_disk = set()
    for folder, name in roots.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            on_disk.add(".".join([name, *rel.parts]))
    assert on_disk == set(config["packages"])
    for package in config["packages"]:
        assert (ROOT / config["package-dir"][package]).is_dir(), package


def test_no_module_grows_past_600_lines():
    big = [
        f"{p.relative_to(ROOT)} ({n} lines)"
        for folder in ("app", "widgets", "models")
        for p in python_files(folder)
        if (n := len(p.read_text().splitlines())) > 600
    ]
    assert big == []


@pytest.mark.slow
def test_built_wheel_contains_every_package_and_the_demo(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    import zipfile

    [wheel] = tmp_path.glob("pairscope-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("pairscope/app/cli.py", "pairscope/app/store/schema.py", "pairscope/app/formats/base.py",
                     "pairscope/app/gui/main_window.py", "pairscope/widgets/item_table.py",
                     "pairscope/resources/demo/images.jsonl"):
        assert required in names, required


def test_shortcut_guide_lists_every_shortcut():
    from pairscope.app.keymap import KEYMAP

    guide = (ROOT / "docs" / "ANNOTATION.md").read_text()
    missing = [s.description for s in KEYMAP if f"| {s.description} |" not in guide]
    assert missing == []
