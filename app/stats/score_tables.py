"""The dashboard's "score as" table: every judge run under every scoring convention of the
registry (:mod:`.conventions`), side by side, laid out as :mod:`.dashboard` lays out its tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conventions import REGISTRY
from .dashboard import NO_PREFERENCE_RUNS, NO_RUNS, Cell, Column, Table, _preference_runs, count, num, pct, text


def score_as_table(report: Mapping[str, Any]) -> Table:
    """The "score as" table: every run under every scoring convention of the registry, side
    by side (the same samples; the figure each toolkit reports, and why they differ)."""
    columns = (
        Column("run"),
        Column("convention"),
        Column("toolkit"),
        Column("headline %", True, "the figure the toolkit reports"),
        Column("headline of", False, "overall = correct / decided; overall_all = correct / scored; macro_all"),
        Column("scored", True),
        Column("decided", True),
        Column("correct", True, "fractional where a convention gives partial credit"),
        Column("what differs", False),
    )
    rows = []
    for run_id, m in _preference_runs(report).items():
        for name, c in m.conventions.items():
            entry = REGISTRY[name]
            rows.append(
                (
                    Cell(f"run {run_id}", int(run_id)),
                    text(name),
                    text(entry.toolkit),
                    pct(c.headline),
                    text(c.headline_rule),
                    count(c.overall.scored),
                    count(c.overall.decided),
                    num(float(c.overall.correct), 1),
                    text(entry.differs),
                )
            )
    empty = NO_PREFERENCE_RUNS if report.get("judges") else NO_RUNS
    note = "The same samples under every toolkit's convention (STATISTICS.md, Conventions)."
    return Table("Score as", columns, tuple(rows), "" if rows else empty, note)
