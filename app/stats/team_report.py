"""The lead's report after a merge: per annotator, items done of assigned, gold accuracy with a
Wilson CI, agreement with the others (Cohen's kappa, :func:`.agreement.cohen_pairs`), position
bias in their own preferences, and flags.

Read from the store only (``store.assignments``: who holds what, the gold items; current
labels). A label counts when it makes the item labeled (``Label.is_labeled``). Coding for
agreement is :mod:`.data`'s: the preferred response's index, ``TIE``, ``BOTH_BAD``; a discard
is no label. Gold: a label is correct when its outcome is the expected one and, for
``prefer``, names the expected response; a discard of a gold item counts as wrong.

Position bias: over the annotator's strict preferences on items shown with two responses, the
share that picked the response shown first, with a two-sided exact binomial test against ½
(scipy). Flags: ``fails gold`` when the gold CI's upper bound is below ``gold_threshold``;
``position bias`` when p < 0.05 over at least ``min_position`` preferences; ``too fast`` when
the median active time of the annotator's current labels is below ``too_fast_s`` seconds over
at least ``min_timed`` timed labels.

Time: a label's active time (``Label.active_ms``, schema 9: the item on screen, the window
focused, the annotator active; ``labeling.active_time``) in seconds, over the annotator's
current labels that have one (labels made before schema 9, by the research API or imported
without a time have none and are left out; ``seconds_n`` says how many count). Median,
quartiles and 90th percentile (numpy's linear interpolation) and a histogram over
:data:`TIME_BINS_S`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..judge.votes import wilson_ci
from ..records import Label
from ..store import Store
from ..store.assignments import GoldItem, assignments, gold_items
from .agreement import cohen_pairs
from .data import BOTH_BAD, TIE

GOLD_THRESHOLD = 0.8
MIN_POSITION = 10
#: ``too fast``: median active seconds per item below this ...
TOO_FAST_S = 3.0
#: ... over at least this many timed labels
MIN_TIMED = 10
#: the histogram's bin edges in seconds (the last bin is open: 300 s and more)
TIME_BINS_S = (0, 2, 5, 10, 20, 30, 60, 120, 300)


@dataclass
class AnnotatorRow:
    """One annotator's figures (``None``: not computable, e.g. no gold item labeled)."""

    annotator: str
    assigned: int = 0
    done: int = 0
    labeled: int = 0
    gold_assigned: int = 0
    gold_labeled: int = 0
    gold_correct: int = 0
    gold_accuracy: float | None = None
    gold_ci: list[float] | None = None
    kappa_mean: float | None = None
    kappa: dict[str, float | None] = field(default_factory=dict)
    first_shown_share: float | None = None
    first_shown_n: int = 0
    position_p: float | None = None
    seconds_n: int = 0
    seconds_median: float | None = None
    seconds_q1: float | None = None
    seconds_q3: float | None = None
    seconds_p90: float | None = None
    seconds_histogram: list[int] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


def code(label: Label) -> float:
    """A label as an agreement code (NaN: no preference stated)."""
    if label.outcome == "prefer" and label.preferred is not None:
        return float(label.preferred)
    return {"tie": TIE, "both_bad": BOTH_BAD}.get(label.outcome, math.nan)


def gold_correct(label: Label, gold: GoldItem) -> bool:
    """Whether a label gives a gold item its expected outcome."""
    return label.outcome == gold.outcome and (gold.outcome != "prefer" or label.preferred == gold.preferred)


def _position(labels: list[Label]) -> tuple[int, int]:
    first = n = 0
    for label in labels:
        if label.outcome == "prefer" and label.preferred is not None and len(label.display_order) == 2:
            n += 1
            first += label.display_order[0] == label.preferred
    return first, n


def _clean(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _times(row: AnnotatorRow, labels: list[Label]) -> None:
    """The active-time figures of ``row`` from its labels that carry a time."""
    seconds = np.array([lab.active_ms / 1000 for lab in labels if lab.active_ms is not None], dtype=float)
    row.seconds_n = len(seconds)
    if not len(seconds):
        return
    q1, median, q3, p90 = np.percentile(seconds, [25, 50, 75, 90])
    row.seconds_q1, row.seconds_median, row.seconds_q3, row.seconds_p90 = map(float, (q1, median, q3, p90))
    edges = np.array([*TIME_BINS_S, np.inf], dtype=float)
    row.seconds_histogram = [int(c) for c in np.histogram(seconds, bins=edges)[0]]


def team_report(
    store: Store,
    annotators: list[str] | None = None,
    *,
    gold_threshold: float = GOLD_THRESHOLD,
    min_position: int = MIN_POSITION,
    too_fast_s: float = TOO_FAST_S,
    min_timed: int = MIN_TIMED,
) -> list[AnnotatorRow]:
    """Per annotator (those with assignments, else everyone who labeled; or ``annotators``)."""
    from scipy.stats import binomtest  # type: ignore[import-untyped]

    held = assignments(store)
    gold = gold_items(store)
    names = annotators or sorted({a.annotator for a in held}) or sorted(store.annotators())
    current = {name: {i: lab for i, lab in store.current_labels(name).items() if lab.is_labeled} for name in names}
    items = sorted({i for labs in current.values() for i in labs})
    index = {i: k for k, i in enumerate(items)}
    coded: dict[str, np.ndarray] = {}
    for name in names:
        arr = np.full(len(items), np.nan)
        for i, lab in current[name].items():
            arr[index[i]] = code(lab)
        coded[name] = arr
    pairs = cohen_pairs(coded) if len(names) > 1 else {}
    rows = []
    for name in names:
        mine = [a for a in held if a.annotator == name]
        labs = current[name]
        row = AnnotatorRow(name, assigned=len(mine), labeled=len(labs))
        row.done = sum(1 for a in mine if a.item_id in labs)
        row.gold_assigned = sum(1 for a in mine if a.gold)
        scored = [gold_correct(labs[i], g) for i, g in gold.items() if i in labs]
        row.gold_labeled, row.gold_correct = len(scored), sum(scored)
        if scored:
            row.gold_accuracy = row.gold_correct / row.gold_labeled
            row.gold_ci = wilson_ci(row.gold_correct, row.gold_labeled)
        for (a, b), kappa in pairs.items():
            if name in (a, b):
                row.kappa[b if a == name else a] = _clean(kappa)
        defined = [k for k in row.kappa.values() if k is not None]
        row.kappa_mean = float(np.mean(defined)) if defined else None
        first, n = _position(list(labs.values()))
        row.first_shown_n = n
        if n:
            row.first_shown_share = first / n
            row.position_p = float(binomtest(first, n, 0.5).pvalue)
        if row.gold_ci is not None and row.gold_ci[1] < gold_threshold:
            row.flags.append("fails gold")
        if row.position_p is not None and n >= min_position and row.position_p < 0.05:
            row.flags.append("position bias")
        _times(row, list(labs.values()))
        if row.seconds_median is not None and row.seconds_n >= min_timed and row.seconds_median < too_fast_s:
            row.flags.append("too fast")
        rows.append(row)
    return rows


def report_dict(rows: list[AnnotatorRow], too_fast_s: float = TOO_FAST_S, min_timed: int = MIN_TIMED) -> dict[str, Any]:
    """The report as ``team-report --json`` prints it (times in seconds)."""
    return {
        "annotators": [asdict(r) for r in rows],
        "time_bins_s": list(TIME_BINS_S),
        "too_fast": {"median_below_s": too_fast_s, "min_timed_labels": min_timed},
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _secs(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}s"


def report_lines(rows: list[AnnotatorRow], too_fast_s: float = TOO_FAST_S, min_timed: int = MIN_TIMED) -> list[str]:
    """The report as text, one line per annotator."""
    if not rows:
        return ["team: no annotators with assignments or labels"]
    out = ["team (per annotator): done/assigned, gold accuracy [95% Wilson CI], mean Cohen's kappa, first-shown share"]
    for r in rows:
        ci = f" [{_pct(r.gold_ci[0])}, {_pct(r.gold_ci[1])}]" if r.gold_ci else ""
        kappa = "—" if r.kappa_mean is None else f"{r.kappa_mean:.2f}"
        pos = f"{_pct(r.first_shown_share)} of {r.first_shown_n}" if r.first_shown_n else "—"
        flags = f"  FLAGS: {', '.join(r.flags)}" if r.flags else ""
        time = (
            f"{_secs(r.seconds_median)} median [{_secs(r.seconds_q1)}, {_secs(r.seconds_q3)}] of {r.seconds_n}"
            if r.seconds_n
            else "—"
        )
        out.append(
            f"  {r.annotator}: {r.done}/{r.assigned} done, gold {r.gold_correct}/{r.gold_labeled}"
            f" {_pct(r.gold_accuracy)}{ci}, kappa {kappa}, first shown {pos}, active time/item {time}{flags}"
        )
    out.append(
        f"  (active time: seconds per item, median [quartiles] of the timed labels; too fast: median"
        f" under {too_fast_s:g}s over at least {min_timed} timed labels)"
    )
    return out


__all__ = [
    "TIME_BINS_S",
    "TOO_FAST_S",
    "AnnotatorRow",
    "code",
    "gold_correct",
    "report_dict",
    "report_lines",
    "team_report",
]
