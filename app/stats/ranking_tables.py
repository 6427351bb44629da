"""The Statistics window's ranking tables, built from the report's ``rankings`` section
(:func:`app.stats.rankings.rankings_report`; docs/STATISTICS.md, "Rankings"): agreement among
annotators who rank (Kendall's W, Krippendorff's α ordinal, pairwise agreement) and each
annotator's and judge's rankings against the reference over induced pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .dashboard import Cell, Column, Table, ci, count, num, pct, text

_FIGURE_COLUMNS = (
    Column("items", True, "items ranked by both sides of the comparison"),
    Column("pairs", True, "induced pairs compared"),
)


def _ci_column(rankings: Mapping[str, Any]) -> Column:
    return Column(
        "95 % CI", True, f"percentile bootstrap over items ({rankings.get('kendall_w', {}).get('bootstrap', 0)})"
    )


def agreement_table(rankings: Mapping[str, Any]) -> Table:
    """Kendall's W, α ordinal and each annotator pair's agreement over induced pairs."""
    columns = (Column("figure"), Column("value", True), Column("items", True), _ci_column(rankings))
    w, alpha = rankings.get("kendall_w") or {}, rankings.get("krippendorff_alpha_ordinal") or {}
    rows: list[tuple[Cell, ...]] = [
        (text("Kendall's W (mean over items)"), num(w.get("mean")), count(w.get("items")), ci(w.get("ci"), 1.0, 3)),
        (
            text("Krippendorff's α, ordinal"),
            num(alpha.get("alpha")),
            count(alpha.get("items")),
            ci(alpha.get("ci"), 1.0, 3),
        ),
    ]
    for pair, fig in ((rankings.get("pairwise_agreement") or {}).get("pairs") or {}).items():
        a, b = pair.split("|", 1)
        rows.append(
            (text(f"pairs agreed: {a} / {b}"), pct(fig.get("agreement")), count(fig.get("items")), ci(fig.get("ci")))
        )
    note = "Among annotators who ranked the same items (3 or more responses); ties count as ranked equal."
    return Table("Rankings: agreement", columns, tuple(rows), "No item was ranked by two annotators.", note)


def reference_table(rankings: Mapping[str, Any]) -> Table:
    """Each annotator's (and judge run's) rankings against the reference ranking, over induced pairs."""
    columns = (Column("who"), *_FIGURE_COLUMNS, Column("accuracy %", True), _ci_column(rankings))
    accuracy = rankings.get("pairwise_accuracy") or {}
    named = {
        **(accuracy.get("annotators") or {}),
        **{f"judge run {k}": v for k, v in (rankings.get("judges") or {}).items()},
    }
    rows = tuple(
        (text(name), count(fig.get("items")), count(fig.get("pairs")), pct(fig.get("accuracy")), ci(fig.get("ci")))
        for name, fig in named.items()
        if fig.get("pairs")
    )
    note = accuracy.get("rule") or ""
    return Table("Rankings vs the reference", columns, rows, "No ranked item has a reference ranking.", note)


def rankings_tables(report: Mapping[str, Any]) -> list[Table]:
    """The ranking tables to show, none when the report has no ``rankings`` section."""
    rankings = report.get("rankings")
    if not isinstance(rankings, Mapping):
        return []
    return [agreement_table(rankings), reference_table(rankings)]
