"""PairScope: a desktop workbench for multimodal reward-model data.

For notebooks and scripts, ``pairscope.open(path)`` reads a project as pandas tables
(read-only; see docs/RESEARCH_API.md)::

    import pairscope
    p = pairscope.open("demo.pairscope")
    p.items(); p.labels(current=True); p.runs(); p.verdicts(run); p.stats()

This module imports nothing itself: the window's start-up path passes through it, and pandas
loads only when ``open`` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from os import PathLike

    from .app.research import Project

__version__ = "0.1.0"  # equal to pyproject.toml's version and pairscope.app.__version__ (a test checks)

__all__ = ["__version__", "open"]


def open(path: str | PathLike[str]) -> Project:  # noqa: A001 - the name notebooks expect
    """A project file (``.pairscope``) opened read-only for analysis: a ``Project``."""
    from .app.research import Project

    return Project(path)
