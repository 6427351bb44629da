"""Dependencies match use (issue 15).

* Every third-party import in app/, models/, widgets/ (and the package's __init__) is declared:
  in the base install, or, for the judge backends' modules, in their extra.
* Every declared dependency is used: base and runtime extras are imported by that code, dev
  tools by the tests, benchmarks or build scripts.
* The base install (no extras) runs the window, labeling, stats, export and merge; choosing a
  judge there names the command that installs it.

Import names map onto distributions with ``importlib.metadata.packages_distributions()``.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RUNTIME_EXTRAS = ("judge", "endpoint", "serve", "openai")

#: Modules that run only with an extra: their imports must be declared there.
EXTRA_MODULES = {"models/transformers_backend.py": "judge", "models/openai_backend.py": "endpoint"}
#: Imported, but installed (and pinned exactly) by a declared distribution: PySide6's binding
#: runtime is released in lockstep with it.
PROVIDED_BY = {"shiboken6": "pyside6-essentials"}
#: Declared without a direct import, and why (each must still be declared: no stale entries).
INDIRECT = {
    ("judge", "torchvision"): "transformers' video processors (Qwen2-VL, SmolVLM, LLaVA-OneVision) need it",
}
#: Dev tools that are run, not imported: where each is used.
TOOLS = {
    "pytest-qt": ("tests/helpers.py", "qtbot"),
    "pytest-timeout": ("pyproject.toml", "timeout = "),
    "import-linter": ("tests/test_guards.py", "lint-imports"),
    "ruff": ("tests/test_guards.py", 'tool("ruff")'),
    "mypy": ("tests/test_guards.py", '"mypy"'),
    "pyinstaller": ("packaging/build-app.sh", "-m PyInstaller"),
    "transformers": ("tests/conftest.py", "transformers serve"),  # transformers[serving]
    "pairscope": ("pyproject.toml", 'all = ["pairscope['),  # dev includes the `all` extra
}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(key: str | None) -> dict[str, Requirement]:
    """The base dependencies (``key=None``) or an extra's, by normalized name."""
    project = PYPROJECT["project"]
    specs = project["dependencies"] if key is None else project["optional-dependencies"][key]
    return {normalize(r.name): r for r in map(Requirement, specs)}


def third_party_imports(files) -> dict[str, set[str]]:
    """Top-level import name → the files (relative to the repository) importing it; the
    standard library, relative and ``pairscope`` imports left out. Lazy imports count."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in files:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (  # pytest.importorskip("datasets") imports too
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names = [str(node.args[0].value)]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "pairscope" and top != "__future__":
                    found[top].add(rel)
    return found


def runtime_files() -> list[Path]:
    return [
        ROOT / "__init__.py",
        *(p for folder in ("app", "models", "widgets") for p in (ROOT / folder).rglob("*.py")),
    ]


@functools.cache
def installed_packages() -> dict[str, list[str]]:
    return md.packages_distributions()  # reads every installed RECORD: once per session


def distributions(import_name: str) -> set[str]:
    """The installed distributions providing a top-level import name (normalized)."""
    return {normalize(d) for d in installed_packages().get(import_name, [])}


def undeclared(imports: dict[str, set[str]], base: set[str], extras: dict[str, set[str]]) -> list[str]:
    """Each import its file may not use: not in the base install, nor in the extra that the
    file runs under (EXTRA_MODULES), nor installed by a declared package (PROVIDED_BY)."""
    problems = []
    for name, files in sorted(imports.items()):
        dists = distributions(name)
        if not dists:
            problems.append(f"{name} (imported by {', '.join(sorted(files))}) is not installed: install the extras")
            continue
        for file in sorted(files):
            allowed = base | extras.get(EXTRA_MODULES.get(file, ""), set())
            if dists & allowed or PROVIDED_BY.get(name) in allowed:
                continue
            where = f"the {EXTRA_MODULES[file]!r} extra" if file in EXTRA_MODULES else "the base dependencies"
            problems.append(f"{file} imports {name} ({', '.join(sorted(dists))}), which is not in {where}")
    return problems


def unused(declared: set[str], imports: dict[str, set[str]], extra: str | None = None) -> list[str]:
    used = {d for name in imports for d in distributions(name)}
    return sorted(d for d in declared if d not in used and (extra, d) not in INDIRECT)


def base_closure() -> set[str]:
    """The distributions a base install holds: the base dependencies and theirs, recursively."""
    seen, todo = {"pairscope"}, [Requirement(s) for s in PYPROJECT["project"]["dependencies"]]
    while todo:
        req = todo.pop()
        name = normalize(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo += [Requirement(r) for r in md.requires(req.name) or ()]
        except md.PackageNotFoundError:
            pass
    return seen


# -- declared ⇔ used ------------------------------------------------------------------------


def test_every_import_in_the_app_is_declared():
    base = set(requirements(None))
    extras = {extra: set(requirements(extra)) for extra in RUNTIME_EXTRAS}
    assert undeclared(third_party_imports(runtime_files()), base, extras) == []


def test_every_base_and_runtime_extra_dependency_is_imported():
    imports = third_party_imports(runtime_files())
    assert unused(set(requirements(None)), imports) == []
    for extra, module in (("judge", "models/transformers_backend.py"), ("endpoint", "models/openai_backend.py")):
        own = {name: files for name, files in imports.items() if module in files}
        assert unused(set(requirements(extra)), own, extra) == [], extra
    for key, _dist in INDIRECT:
        assert _dist in requirements(key), f"INDIRECT names {_dist}, which the {key} extra no longer declares"


def test_every_dev_dependency_is_used_by_the_tests_benchmarks_or_build():
    files = [*(ROOT / "tests").glob("*.py"), *(ROOT / "bench").glob("*.py"), *(ROOT / "packaging").glob("*.py")]
    imported = {d for name in third_party_imports(files) for d in distributions(name)}
    problems = []
    for name in requirements("dev"):
        if name in imported:
            continue
        where, evidence = TOOLS.get(name, (None, None))
        if where is None or evidence not in (ROOT / where).read_text():
            problems.append(name)
    assert problems == []


def test_the_endpoint_extra_has_its_aliases_and_all_names_every_runtime_extra():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert extras["serve"] == extras["openai"] == extras["endpoint"]
    assert extras["all"] == ["pairscope[judge,endpoint]"]


def test_the_checks_catch_a_planted_undeclared_import_and_an_unused_dependency(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import numpy\n\ndef later():\n    import pytest\n    from PIL import Image\n")
    imports = third_party_imports([planted])
    assert set(imports) == {"numpy", "pytest", "PIL"}
    problems = undeclared(imports, {"numpy", "pillow"}, {})
    assert problems == ["planted.py imports pytest (pytest), which is not in the base dependencies"]
    assert unused({"numpy", "pillow", "orjson"}, imports) == ["orjson"]


def test_the_torch_stack_is_not_in_the_base_install():
    closure = base_closure()
    assert not closure & {"torch", "torchvision", "transformers", "httpx", "pytest"}, closure


def test_versions_agree():
    import pairscope
    import pairscope.app

    assert pairscope.__version__ == pairscope.app.__version__ == PYPROJECT["project"]["version"]
    out = subprocess.run(
        [sys.executable, "-m", "pairscope.app.cli.main", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"pairscope {pairscope.__version__}"


def test_choosing_a_judge_without_its_extra_names_the_command(monkeypatch):
    from pairscope.models.base import JudgeError, create_backend

    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec: not installed
    with pytest.raises(JudgeError, match=re.escape("pip install 'pairscope[judge]'")):
        create_backend("transformers", model=str(ROOT))
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(JudgeError, match=re.escape("pip install 'pairscope[endpoint]'")):
        create_backend("openai", model="m", endpoint="http://127.0.0.1:9/v1")


# -- the base install runs ------------------------------------------------------------------

#: Runs the command line with every package outside the base install made unimportable: a
#: finder placed first raises ModuleNotFoundError for them, as an absent package does (and,
#: unlike ``sys.modules[name] = None``, libraries probing ``sys.modules`` see nothing).
BASE_ONLY = """
import json, os, sys
BLOCKED = set(json.loads(os.environ["BLOCKED"]))
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the base install)", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
from pairscope.app.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def blocked_imports() -> list[str]:
    keep = base_closure()
    return sorted(
        name
        for name, dists in installed_packages().items()
        if not {normalize(d) for d in dists} & keep and name.isidentifier()
    )


@pytest.mark.slow
def test_the_base_install_labels_computes_stats_exports_and_merges(tmp_path):
    blocked = blocked_imports()
    assert {"torch", "transformers", "httpx", "pytest"} <= set(blocked)
    env = {
        **os.environ,
        "BLOCKED": json.dumps(blocked),
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }

    def pairscope(*args, selftest: str | None = None):
        run_env = {**env, **({"PAIRSCOPE_SELFTEST": selftest} if selftest else {})}
        return subprocess.run(
            [sys.executable, "-c", BASE_ONLY, *args], cwd=tmp_path, env=run_env, capture_output=True, text=True
        )

    demo = tmp_path / "demo.pairscope"
    assert pairscope("demo", str(demo)).returncode == 0
    window = pairscope(str(demo), "--annotator", "ann", selftest="1")
    assert window.returncode == 0, window.stderr
    assert '"ok": true' in window.stdout and '"outcome": "prefer"' in window.stdout, window.stdout
    info = pairscope("info", "--db", str(demo))
    assert info.returncode == 0 and "labels: 1" in info.stdout, info.stdout + info.stderr
    stats = pairscope("stats", "--db", str(demo), "--bootstrap", "20", "--csv", str(tmp_path / "csv"))
    assert stats.returncode == 0, stats.stderr
    assert (tmp_path / "csv" / "labels.csv").read_text().count("\n") == 2  # the header and the label
    export = pairscope("export", "--db", str(demo), "--format", "jsonl", "--out", str(tmp_path / "out"))
    assert export.returncode == 0 and (tmp_path / "out" / "manifest.json").exists(), export.stderr
    packed = tmp_path / "ann.pairscope"
    assert pairscope("pack", "--db", str(demo), "--out", str(packed), "--annotator", "bob").returncode == 0
    merged = pairscope("merge", str(tmp_path / "merged.pairscope"), str(demo), str(packed), "--trust", "ann")
    assert merged.returncode == 0, merged.stderr
    judge = pairscope("judge", "--db", str(demo), "--model", str(tmp_path))
    assert judge.returncode == 1
    assert "pip install 'pairscope[judge]'" in judge.stderr, judge.stderr
