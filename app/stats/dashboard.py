"""The Statistics dashboard's tables, as plain rows (no Qt): what the window shows per judge
run, per category and per annotator, built from a computed report (``report.compute_stats``)
and nothing else — every number here is one the report already holds, only laid out.

A table is a title, columns (name, numeric?, what it means) and rows of cells; a cell is the
text shown and a sort key (the number, ``None`` for n/a, which sorts first). A table with no
rows has an ``empty`` text that says what is missing and how to get it, so the window never
shows an empty grid, an empty plot or a 1×1 heat map. Accuracies are shown in per cent with
their 95 % interval (Wilson for accuracies, the report's bootstrap for agreement), n beside.

The one figure that the report does not carry — how many labels, ties and both-bad labels each
annotator gave — is counted from the same coded label arrays the report was computed from
(:func:`label_counts`, a count, no statistic).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..store import Store
from .conventions import REGISTRY
from .data import BOTH_BAD, TIE, StatsData
from .scores import RunScores
from .scores_json import judges_of

#: The two vote conventions the judge tables show per run: (registry name, the label the CLI's
#: ``--vote`` and stored verdicts use). The rules are the registry's, never restated here.
VOTES = (("vlrewardbench", "official"), ("plurality", "plurality"))

#: What each empty table or figure says (tests look for these).
NO_RUNS = (
    "No judge run yet: run `pairscope judge --db PROJECT` (or `pairscope import-verdicts` for a run made"
    " elsewhere), or judge items in the window with Ctrl+Shift+J."
)
NO_PREFERENCE_RUNS = "No judge run with preference verdicts: step runs score steps (see the report text)."
NO_LABELS = "No labels yet: label items in the main window (keys 1, 2, T …)."
NO_SHARED = "Needs two annotators on shared items: agreement compares annotators who labelled the same items."
NO_REFERENCE = "No reference pairs: the dataset names no chosen/rejected response to measure against."
NO_CATEGORIES = "No items in this project yet."
NO_K_CURVE = "Needs a judge run with preference verdicts (K = 1, 3, 5 … samples per item)."
NO_CONFIDENCES = "no confidences: the judge run stored no log-probabilities"
#: Coverages the calibration table shows (the figure draws every 5 %).
COVERAGE_COLUMNS = (0.1, 0.2, 0.5)


class Column(NamedTuple):
    name: str
    numeric: bool = False
    help: str = ""  # a header tooltip: what the number is


class Cell(NamedTuple):
    text: str
    sort: float | str | None = None  # None: no value (n/a)


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    empty: str = ""  # shown instead of the grid when there are no rows
    note: str = ""  # one line under the title: how to read it

    def value(self, row: int, column: str) -> str:
        """The text shown in ``row`` under ``column`` (tests, copy)."""
        names = [c.name.replace("\n", " ") for c in self.columns]
        return self.rows[row][names.index(column.replace("\n", " "))].text

    def as_tsv(self) -> str:
        """The table as tab-separated text (what "Copy" puts on the clipboard)."""
        lines = ["\t".join(c.name.replace("\n", " ") for c in self.columns)]
        lines += ["\t".join(cell.text for cell in row) for row in self.rows]
        return "\n".join(lines)


@dataclass(frozen=True)
class FigureEntry:
    name: str  # key of ``plots.FIGURES``
    title: str
    empty: str = ""  # why there is nothing to draw ("" = drawable)


@dataclass(frozen=True)
class Dashboard:
    overview: Table
    judge_runs: Table
    categories: Table
    annotators: Table
    annotator_pairs: Table
    judge_vs_annotators: Table
    calibration: Table
    reliability: Table
    figures: tuple[FigureEntry, ...]
    missing: tuple[str, ...] = field(default_factory=tuple)  # the empty states, for the overview
    score_as: Table | None = None  # every run under every scoring convention, side by side


# -- formatting ---------------------------------------------------------------------------------


def pct(value: float | None) -> Cell:
    return Cell("n/a", None) if value is None else Cell(f"{100 * value:.1f}", float(value))


def ci(interval: Sequence[float | None] | None, scale: float = 100.0, digits: int = 1) -> Cell:
    """A 95 % interval as ``low–high`` (per cent by default); sorts by its low end."""
    if not interval or interval[0] is None or interval[1] is None:
        return Cell("n/a", None)
    low, high = float(interval[0]), float(interval[1])
    return Cell(f"{scale * low:.{digits}f}–{scale * high:.{digits}f}", low)


def num(value: float | None, digits: int = 3) -> Cell:
    return Cell("n/a", None) if value is None else Cell(f"{value:.{digits}f}", float(value))


def count(value: int | None) -> Cell:
    return Cell("n/a", None) if value is None else Cell(f"{int(value):,}", int(value))


def text(value: Any) -> Cell:
    return Cell(str(value), str(value))


def _accuracy_columns(what: str = "accuracy") -> tuple[Column, ...]:
    return (
        Column(f"{what} %", True, "correct / decided items: undecided (no majority) excluded"),
        Column("95 % CI", True, "Wilson score interval of that accuracy, n = decided"),
        Column(f"{what} %\n(undecided wrong)", True, "correct / scored items: undecided counted wrong"),
        Column("95 % CI ", True, "Wilson score interval, n = scored"),
    )


def _run_name(run_id: str, m: RunScores) -> str:
    orders = ", both orders" if m.both_orders else ""
    frames = f", {m.frames} frames" if m.frames else ""
    return f"run {run_id} ({m.mode}, K={m.k}{orders}{frames})"


def _preference_runs(report: Mapping[str, Any]) -> dict[str, RunScores]:
    return {k: m for k, m in judges_of(report).items() if m.votes}


def _vote_help() -> str:
    return "; ".join(f"{label}: {REGISTRY[name].rule}" for name, label in VOTES)


# -- tables -------------------------------------------------------------------------------------


def judge_runs_table(report: Mapping[str, Any]) -> Table:
    """One row per judge run and vote convention."""
    columns = (
        Column("run"),
        Column("mode"),
        Column("K", True, "samples per item"),
        Column("vote", False, _vote_help()),
        Column("judged", True, "items with a stored verdict"),
        Column("scored", True, "judged items whose reference names a response"),
        Column("decided", True, "scored items with a majority under this vote"),
        Column("correct", True),
        Column("undecided", True, "scored − decided"),
        *_accuracy_columns(),
        Column("macro %", True, "mean of per-category accuracies (undecided excluded)"),
    )
    rows = []
    judges = judges_of(report)
    for run_id, m in judges.items():
        for name, label in VOTES:
            c = m.conventions.get(name)
            if c is None:
                continue
            o = c.overall
            rows.append(
                (
                    Cell(f"run {run_id}", int(run_id)),
                    text(m.mode),
                    count(m.k),
                    text(label),
                    count(m.judged),
                    count(m.scored),
                    count(o.decided),
                    count(int(o.correct)),
                    count(o.undecided),
                    pct(o.accuracy),
                    ci(o.ci),
                    pct(o.accuracy_all),
                    ci(o.ci_all),
                    pct(c.macro),
                )
            )
    empty = NO_PREFERENCE_RUNS if judges else NO_RUNS
    note = "Accuracy against the dataset's reference, per vote convention (see STATISTICS.md)."
    return Table("Judge runs", columns, tuple(rows), "" if rows else empty, note)


def categories_table(report: Mapping[str, Any]) -> Table:
    """One row per category and judge run: items, then each convention's accuracy and CI."""
    items = report.get("categories") or {}
    runs = _preference_runs(report)
    flips = ((report.get("agreement") or {}).get("flip_rate") or {}).get("all") or {}
    flip_by_cat = flips.get("by_category") or {}
    columns = [
        Column("category"),
        Column("items", True, "items of this category in the project"),
        Column("labels ≠\nreference %", True, "annotators' strict preferences that differ from the reference"),
    ]
    if runs:
        columns += [
            Column("run"),
            Column("scored", True, "judged items of this category whose reference names a response"),
        ]
        for _, convention in VOTES:
            columns += [
                Column(f"{convention} %", True, f"{convention} vote: correct / decided (undecided excluded)"),
                Column(f"{convention}\n95 % CI", True, "Wilson score interval, n = decided"),
                Column(f"{convention}\nundecided", True, "scored items without a majority under this vote"),
            ]
    rows: list[tuple[Cell, ...]] = []
    categories = sorted(set(items) | {c for m in runs.values() if m.official for c in m.official.per_category})
    for category in categories:
        base = (
            text(category),
            count(items.get(category, 0)),
            pct((flip_by_cat.get(category) or {}).get("rate")),
        )
        if not runs:
            rows.append(base)
            continue
        for run_id, m in runs.items():
            row = [*base, Cell(f"run {run_id}", int(run_id))]
            official = m.official.per_category.get(category) if m.official else None
            row.append(count(official.scored if official else 0))
            for name, _ in VOTES:
                c = m.conventions.get(name)
                g = c.per_category.get(category) if c else None
                row += [pct(g.accuracy if g else None), ci(g.ci if g else None), count(g.undecided if g else 0)]
            rows.append(tuple(row))
    note = "Judge accuracy per category under both vote conventions." if runs else NO_RUNS
    return Table("Categories", tuple(columns), tuple(rows), "" if rows else NO_CATEGORIES, note)


def label_counts(data: StatsData) -> dict[str, dict[str, int]]:
    """Per annotator: current labels with a preference, tie or both-bad (``labels``), of which
    ``ties`` and ``both_bad`` — counted from the coded arrays the report reads."""
    return {
        name: {
            "labels": int((~np.isnan(coded)).sum()),
            "ties": int((coded == TIE).sum()),
            "both_bad": int((coded == BOTH_BAD).sum()),
        }
        for name, coded in data.labels.items()
    }


def shared_items(data: StatsData) -> dict[str, int]:
    """Items each annotator pair both labelled (``"a|b"`` as in the report's pair keys)."""
    names = list(data.labels)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            out[f"{a}|{b}"] = int((~np.isnan(data.labels[a]) & ~np.isnan(data.labels[b])).sum())
    return out


def annotators_table(report: Mapping[str, Any], counts: Mapping[str, Mapping[str, int]] | None = None) -> Table:
    """One row per annotator: labels given, ties, disagreement with the reference, accuracy
    against it with and without ties, and mean Cohen's kappa with the other annotators."""
    counts = counts or {}
    accuracy = report.get("annotator_accuracy") or {}
    agreement = report.get("agreement") or {}
    flips = (agreement.get("flip_rate") or {}).get("annotators") or {}
    kappas = agreement.get("cohen_pairs") or {}
    names = list(dict.fromkeys([*counts, *accuracy, *flips]))
    columns = (
        Column("annotator"),
        Column("labels", True, "current labels with a preference, a tie or both bad (discards left out)"),
        Column("ties", True, "tie labels"),
        Column("tie %", True, "ties / labels"),
        Column("both bad", True),
        Column("vs\nreference", True, "strict preferences on items with a reference"),
        Column("≠ reference\n%", True, "share of those that differ from the dataset's reference (flip rate)"),
        Column("accuracy %\n(ties wrong)", True, "a tie label on a response reference counts wrong"),
        Column("95 % CI", True, "Wilson score interval"),
        Column("accuracy %\n(ties out)", True, "tie labels left out"),
        Column("95 % CI ", True, "Wilson score interval"),
        Column("mean κ\nwith others", True, "mean Cohen's kappa over the pairs this annotator is in"),
    )
    rows = []
    for name in names:
        c = counts.get(name) or {}
        acc = accuracy.get(name) or {}
        with_ties, without = acc.get("with_ties") or {}, acc.get("without_ties") or {}
        flip = flips.get(name) or {}
        mine = [v for pair, v in kappas.items() if name in pair.split("|") and v is not None]
        labels = c.get("labels")
        rows.append(
            (
                text(name),
                count(labels),
                count(c.get("ties")),
                pct(c["ties"] / labels if labels else None),
                count(c.get("both_bad")),
                count(flip.get("n")),
                pct(flip.get("rate")),
                pct(with_ties.get("accuracy")),
                ci(with_ties.get("ci")),
                pct(without.get("accuracy")),
                ci(without.get("ci")),
                num(float(np.mean(mine)) if mine else None),
            )
        )
    note = "Each annotator's current labels against the dataset's reference."
    return Table("Annotators", columns, tuple(rows), "" if rows else NO_LABELS, note)


def annotator_pairs_table(report: Mapping[str, Any], shared: Mapping[str, int] | None = None) -> Table:
    """One row per annotator pair with shared items: agreement, disagreement, Cohen's kappa."""
    agreement = report.get("agreement") or {}
    percent = agreement.get("percent_pairs") or {}
    kappas = agreement.get("cohen_pairs") or {}
    kappa_ci = (agreement.get("ci") or {}).get("cohen_pairs") or {}
    shared = shared or {}
    columns = (
        Column("annotator"),
        Column("with"),
        Column("shared items", True, "items both labelled"),
        Column("agree %", True, "share of shared items with the same label"),
        Column("disagree %", True, "100 − agree"),
        Column("Cohen's κ", True, "unweighted, on the shared items"),
        Column("95 % CI", True, f"percentile bootstrap over items ({agreement.get('bootstrap', 0)} resamples)"),
    )
    rows = []
    for pair in kappas:
        if shared and not shared.get(pair):
            continue
        a, b = pair.split("|", 1)
        agree = percent.get(pair)
        rows.append(
            (
                text(a),
                text(b),
                count(shared.get(pair)) if shared else Cell("n/a", None),
                pct(agree),
                pct(None if agree is None else 1.0 - agree),
                num(kappas.get(pair)),
                ci(kappa_ci.get(pair), scale=1.0, digits=3),
            )
        )
    empty = NO_SHARED if (agreement.get("annotators") or []) else NO_LABELS
    note = "Agreement between annotators on the items both labelled."
    return Table("Annotator pairs", columns, tuple(rows), "" if rows else empty, note)


def judge_vs_annotators_table(report: Mapping[str, Any]) -> Table:
    """Cohen's kappa between each run's item verdicts (official vote) and each annotator."""
    columns = (Column("run"), Column("annotator"), Column("Cohen's κ", True, "judge verdict (official) vs label"))
    rows = tuple(
        (Cell(f"run {run_id}", int(run_id)), text(name), num(kappa))
        for run_id, m in _preference_runs(report).items()
        for name, kappa in m.human_kappa.items()
    )
    if rows:
        empty = ""
    elif not report.get("judges"):
        empty = NO_RUNS
    else:
        empty = NO_LABELS if not report.get("annotator_accuracy") else NO_PREFERENCE_RUNS
    return Table("Judge ↔ annotators", columns, rows, empty, "How far each judge agrees with each annotator.")


def overview_table(report: Mapping[str, Any], counts: Mapping[str, Mapping[str, int]] | None = None) -> Table:
    """The headline numbers: the project, agreement with its interval, each run's accuracy."""
    agreement = report.get("agreement") or {}
    intervals = agreement.get("ci") or {}
    hist = (report.get("length") or {}).get("diff_hist") or {}
    columns = (
        Column("figure"),
        Column("value", True),
        Column("95 % CI", True),
        Column("n", True, "what the figure is computed over"),
        Column("how", False, "what the n counts / the rule"),
    )
    blank = Cell("", None)
    rows: list[tuple[Cell, ...]] = [
        (text("items"), count(report.get("items")), blank, blank, text("items in the project")),
        (text("categories"), count(len(report.get("categories") or {})), blank, blank, blank),
        (
            text("annotators with labels"),
            count(len(counts) if counts is not None else len(report.get("annotator_accuracy") or {})),
            blank,
            count(sum(c["labels"] for c in counts.values())) if counts else blank,
            text("current labels in all"),
        ),
        (
            text("length difference of the reference pairs"),
            num(hist.get("mean")),
            blank,
            count(hist.get("n", 0)),
            text("mean of (chosen − rejected words) / chosen words"),
        ),
    ]
    n_shared = agreement.get("n_items") or 0
    for key, label, what in (
        ("percent", "percent agreement %", "items labelled by ≥ 2 annotators"),
        ("cohen_mean", "Cohen's κ (mean of pairs)", "items labelled by ≥ 2 annotators"),
        ("fleiss", "Fleiss' κ", "items labelled by all annotators"),
        ("krippendorff_alpha", "Krippendorff's α", "every item with ≥ 2 labels"),
    ):
        value = agreement.get(key)
        if key == "percent":
            rows.append((text(label), pct(value), ci(intervals.get(key)), count(n_shared), text(what)))
        else:
            rows.append((text(label), num(value), ci(intervals.get(key), 1.0, 3), count(n_shared), text(what)))
    for run_id, m in judges_of(report).items():
        for name, convention in VOTES:
            c = m.conventions.get(name)
            if c is None:
                continue
            rows.append(
                (
                    text(f"{_run_name(run_id, m)}: accuracy % ({convention})"),
                    pct(c.overall.accuracy),
                    ci(c.overall.ci),
                    count(c.overall.decided),
                    text("decided items (undecided excluded)"),
                )
            )
        if m.failed_items:
            rows.append(
                (
                    text(f"{_run_name(run_id, m)}: failed items"),
                    count(m.failed_items),
                    blank,
                    count(m.failed_items),
                    text("every sample failed: not scored (see `pairscope info --missing`)"),
                )
            )
    return Table("Overview", columns, tuple(rows), "", "The headline numbers; the other tabs break them down.")


def _calibration_empty(report: Mapping[str, Any]) -> str:
    """Why there is no calibration to show ("" when some run has calibrated items)."""
    entries = (report.get("calibration") or {}).values()
    if any(c.get("n") for c in entries):
        return ""
    if not report.get("judges"):
        return NO_RUNS
    if not entries:
        return NO_PREFERENCE_RUNS
    notes = {c.get("note") for c in entries}
    return NO_CONFIDENCES if NO_CONFIDENCES in notes else next(iter(notes)) or NO_CONFIDENCES


def calibration_table(report: Mapping[str, Any]) -> Table:
    """Per run: ECE, mean item confidence against accuracy, accuracy of the most confident items."""
    columns = (
        Column("run"),
        Column("items", True, "decided items with a confidence and a reference (else adjudication)"),
        Column("ECE", True, "expected calibration error: Σ (n_bin / N) · |accuracy − confidence| over 10 bins"),
        Column("mean confidence %", True, "mean item confidence"),
        Column("accuracy %", True, "official vote, over the same items"),
        *(
            Column(f"top {int(100 * q)} % acc. %", True, f"accuracy of the {int(100 * q)} % most confident items")
            for q in COVERAGE_COLUMNS
        ),
        Column("no confidence", True, "decided items with a target but no confidence (ties, unparsed, no log-probs)"),
    )
    rows = []
    for run_id, c in (report.get("calibration") or {}).items():
        if not c.get("n"):
            continue
        at = {round(p["coverage"], 6): p for p in c.get("coverage") or ()}
        rows.append(
            (
                Cell(f"run {run_id}", int(run_id)),
                count(c["n"]),
                num(c.get("ece")),
                pct(c.get("mean_confidence")),
                pct(c.get("accuracy")),
                *(pct((at.get(round(q, 6)) or {}).get("accuracy")) for q in COVERAGE_COLUMNS),
                count(c.get("decided_without_confidence")),
            )
        )
    note = "Item confidence = mean probability the samples gave the item's official decision (STATISTICS.md)."
    return Table("Calibration", columns, tuple(rows), "" if rows else _calibration_empty(report), note)


def reliability_table(report: Mapping[str, Any]) -> Table:
    """The reliability diagram as numbers: per run and non-empty confidence bin."""
    columns = (
        Column("run"),
        Column("confidence bin"),
        Column("items", True),
        Column("mean confidence %", True),
        Column("accuracy %", True),
        Column("gap", True, "accuracy − mean confidence (negative: over-confident), in points"),
    )
    rows = []
    for run_id, c in (report.get("calibration") or {}).items():
        for b in c.get("bins") or ():
            if b["n"]:
                gap = 100 * (b["accuracy"] - b["confidence"])
                rows.append(
                    (
                        Cell(f"run {run_id}", int(run_id)),
                        Cell(f"{b['low']:.1f}–{b['high']:.1f}", b["low"]),
                        count(b["n"]),
                        pct(b["confidence"]),
                        pct(b["accuracy"]),
                        Cell(f"{gap:+.1f}", gap),
                    )
                )
    note = "Accuracy per confidence bin: a calibrated judge is right as often as it is confident."
    return Table("Reliability", columns, tuple(rows), "" if rows else _calibration_empty(report), note)


# -- figures ------------------------------------------------------------------------------------

FIGURE_TITLES = {
    "length_bias": "Length bias",
    "judge_accuracy": "Judge accuracy",
    "judge_per_category": "Accuracy per category",
    "k_curve": "Accuracy vs K",
    "annotator_accuracy": "Annotators vs reference",
    "annotator_kappa": "Annotator κ",
    "calibration": "Calibration",
}


def figure_empty(name: str, report: Mapping[str, Any]) -> str:
    """Why figure ``name`` has nothing to draw for this report ("" when it has)."""
    runs = _preference_runs(report)
    if name == "length_bias":
        return "" if ((report.get("length") or {}).get("diff_hist") or {}).get("n") else NO_REFERENCE
    if name in ("judge_accuracy", "judge_per_category", "k_curve"):
        if not runs:
            return NO_PREFERENCE_RUNS if report.get("judges") else NO_RUNS
        if name == "judge_per_category" and not any(m.official and m.official.per_category for m in runs.values()):
            return "No judged item has a category."
        return ""
    if name == "annotator_accuracy":
        accuracy = report.get("annotator_accuracy") or {}
        if not accuracy:
            return NO_LABELS
        return "" if any((a.get("with_ties") or {}).get("n") for a in accuracy.values()) else NO_REFERENCE
    if name == "calibration":
        return _calibration_empty(report)
    if name == "annotator_kappa":
        agreement = report.get("agreement") or {}
        defined = [v for v in (agreement.get("cohen_pairs") or {}).values() if v is not None]
        return "" if len(agreement.get("annotators") or []) >= 2 and defined else NO_SHARED
    return ""


# -- the whole dashboard ------------------------------------------------------------------------


def build_dashboard(
    report: Mapping[str, Any],
    counts: Mapping[str, Mapping[str, int]] | None = None,
    shared: Mapping[str, int] | None = None,
    figures: Iterable[str] = FIGURE_TITLES,
) -> Dashboard:
    """Every table of the dashboard from a report (``counts``/``shared``: :func:`label_counts`
    and :func:`shared_items` of the same data; without them those cells read n/a)."""
    tables = dict(
        overview=overview_table(report, counts),
        judge_runs=judge_runs_table(report),
        categories=categories_table(report),
        annotators=annotators_table(report, counts),
        annotator_pairs=annotator_pairs_table(report, shared),
        judge_vs_annotators=judge_vs_annotators_table(report),
        calibration=calibration_table(report),
        reliability=reliability_table(report),
    )
    entries = tuple(FigureEntry(n, FIGURE_TITLES.get(n, n.replace("_", " ")), figure_empty(n, report)) for n in figures)
    missing = tuple(
        dict.fromkeys(t.empty for t in tables.values() if t.empty) | dict.fromkeys(e.empty for e in entries if e.empty)
    )
    from .score_tables import score_as_table  # it lays out this module's Table

    return Dashboard(**tables, figures=entries, missing=missing, score_as=score_as_table(report))


def compute_dashboard(store: Store, bootstrap: int = 200) -> tuple[dict[str, Any], Dashboard]:
    """The report of ``store`` and its dashboard, from one read of the project (the label
    counts and the report cannot differ by a label saved meanwhile)."""
    from .data import load_stats_data
    from .report import compute_stats

    data = load_stats_data(store)
    report = compute_stats(store, bootstrap=bootstrap, data=data)
    return report, build_dashboard(report, label_counts(data), shared_items(data))
