"""The checkout under test as the ``pairscope`` a subprocess imports, and scratch copies of it
to plant violations in (tests/test_guards.py, tests/test_headless.py).

An editable install's finder sits at the end of ``sys.meta_path``, so a folder on PYTHONPATH
whose ``pairscope`` entry links to a checkout wins over whichever copy is installed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("app", "models", "widgets", "resources")


def copy_checkout(dest: Path, root: Path = ROOT) -> Path:
    """A scratch copy of the package folders, the root package and pyproject.toml."""
    for folder in FOLDERS:
        shutil.copytree(root / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("__init__.py", "pyproject.toml"):
        shutil.copy2(root / name, dest / name)
    return dest


def plant(root: Path, files: dict[str, str]) -> None:
    """Write (or overwrite) files under ``root``; paths are relative to it."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def namespace(root: Path, where: Path) -> Path:
    """A new folder ``where`` whose one entry, ``pairscope``, links to the checkout at ``root``."""
    where.mkdir(parents=True)
    (where / "pairscope").symlink_to(root.resolve(), target_is_directory=True)
    return where


def env_importing(root: Path, where: Path, **extra: str) -> dict[str, str]:
    """The environment of a subprocess whose ``import pairscope`` is the checkout at ``root``."""
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(namespace(root, where)), *filter(None, [env.get("PYTHONPATH")])])
    return env
