"""What ``pairscope suspects`` and the Suspect references dialog show of the model of
:mod:`.suspects`: each run's accuracy with and without the suspects, and the report as text
and as JSON (docs/STATISTICS.md, "Suspect references")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..judge.ensemble import short_label
from ..store import Store
from ..store.references import current_reference_reviews
from .judge_metrics import wilson_ci
from .suspects import SUSPECT_THRESHOLD, Evidence, SuspectReport, json_number

# -- accuracy with and without the suspects ------------------------------------------------


@dataclass(frozen=True)
class Accuracy:
    """correct / decided on some items (undecided left out), with its Wilson 95% interval."""

    decided: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.decided if self.decided else None

    @property
    def ci(self) -> list[float] | None:
        return wilson_ci(self.correct, self.decided)

    def as_dict(self) -> dict[str, Any]:
        return {
            "decided": self.decided,
            "correct": self.correct,
            "accuracy": json_number(self.accuracy),
            "ci95": self.ci,
        }


@dataclass(frozen=True)
class NoiseAccuracy:
    """One run's accuracy four ways (docs/STATISTICS.md, "Suspect references")."""

    run_id: int
    label: str
    all: Accuracy  # every item with a reference, against the dataset's reference
    confirmed: Accuracy  # items whose reference humans confirmed
    without_suspects: Accuracy  # items scoring below SUSPECT_THRESHOLD (and not marked wrong)
    corrected: Accuracy  # against the corrected reference where a reviewer marked it wrong

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "label": self.label,
            "all": self.all.as_dict(),
            "confirmed_reference": self.confirmed.as_dict(),
            "without_suspects": self.without_suspects.as_dict(),
            "corrected_reference": self.corrected.as_dict(),
        }


def _count(counts: dict[str, list[int]], name: str, right: bool) -> None:
    counts[name][0] += 1
    counts[name][1] += int(right)


def accuracy_under_label_noise(report: SuspectReport, threshold: float = SUSPECT_THRESHOLD) -> list[NoiseAccuracy]:
    """Each run's accuracy on all items, on confirmed-reference items, without the suspects
    and with the corrected references (an item marked wrong with no corrected response is
    left out of the last)."""
    out = []
    for run in report.runs:
        decided = {i: c for i, c in report.decisions.get(run.id, {}).items() if c is not None}
        counts = {name: [0, 0] for name in ("all", "confirmed", "without", "corrected")}
        add = partial(_count, counts)
        for s in report.items:
            if s.item_id not in decided:
                continue
            choice = decided[s.item_id]
            add("all", choice == s.reference)
            if s.item_id in report.confirmed:
                add("confirmed", choice == s.reference)
            if s.score < threshold and s.status != "wrong":
                add("without", choice == s.reference)
            if s.status == "wrong":
                if s.review is not None and s.review.corrected is not None:
                    add("corrected", choice == s.review.corrected)
            else:
                add("corrected", choice == s.reference)
        out.append(
            NoiseAccuracy(
                run.id,
                short_label(run),
                Accuracy(*counts["all"]),
                Accuracy(*counts["confirmed"]),
                Accuracy(*counts["without"]),
                Accuracy(*counts["corrected"]),
            )
        )
    return out


@dataclass(frozen=True)
class ReferenceNoise:
    """The ``stats`` report's "reference noise" section: each run's accuracy four ways
    (:func:`accuracy_under_label_noise`), with how many suspects and reviewed references
    there are."""

    reference_accuracy: float
    suspects: int
    reviewed: int
    runs: tuple[NoiseAccuracy, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": "one-coin Dawid-Skene (EM), docs/STATISTICS.md#suspect-references",
            "reference_accuracy": json_number(self.reference_accuracy),
            "suspects": self.suspects,
            "reviewed": self.reviewed,
            "runs": [a.as_dict() for a in self.runs],
        }


def reference_noise(store: Store, run_ids: Sequence[int] | None = None) -> ReferenceNoise | None:
    """The "reference noise" section of ``pairscope stats`` for judge runs ``run_ids`` (default:
    every run the model uses). ``None``, without fitting anything, unless some reference was
    reviewed (the fit costs ~5 s per 10,000 items with two runs and three annotators: the
    statistics of a project nobody reviewed do not pay it; ``pairscope suspects`` fits it)."""
    from .suspects import load_suspects

    if not current_reference_reviews(store):
        return None
    report = load_suspects(store)
    reviewed = sum(1 for s in report.items if s.review is not None)
    suspects = len(report.queue())
    wanted = None if run_ids is None else set(run_ids)
    runs = tuple(a for a in accuracy_under_label_noise(report) if wanted is None or a.run_id in wanted)
    return ReferenceNoise(report.reference_accuracy, suspects, reviewed, runs)


def reference_noise_lines(noise: ReferenceNoise) -> list[str]:
    """The section's text in ``pairscope stats``."""
    lines = [
        f"reference noise: {noise.suspects} references contradicted by some vote (the suspect queue),"
        f" {noise.reviewed} reviewed; estimated reference accuracy {_pct(noise.reference_accuracy)}"
        " (pairscope suspects lists them)"
    ]
    for a in noise.runs:
        cells = [("all items", a.all), ("confirmed reference", a.confirmed), ("corrected references", a.corrected)]
        lines.append(
            f"  {a.label}: " + " · ".join(f"{name} {_pct(c.accuracy)} ({c.correct}/{c.decided})" for name, c in cells)
        )
    return lines


# -- what `pairscope suspects` prints --------------------------------------------------------


def summary_dict(report: SuspectReport, top: int | None = None, reviewed: bool = True) -> dict[str, Any]:
    """The ``pairscope suspects --json`` document (``reviewed`` False: the queue without
    items a reviewer decided)."""
    queue = report.queue(top, reviewed)
    return {
        "model": "one-coin Dawid-Skene (EM), docs/STATISTICS.md#suspect-references",
        "reference_accuracy": json_number(report.reference_accuracy),
        "items": len(report.items),
        "suspects": len(report.queue()),
        "threshold": SUSPECT_THRESHOLD,
        "iterations": report.iterations,
        "converged": report.converged,
        "runs": [r.id for r in report.runs],
        "left_out_runs": [{"run": r, "why": why} for r, why in report.left_out_runs],
        "sources": [
            {
                "kind": f.kind,
                "key": f.key,
                "label": f.label,
                "votes": f.votes,
                "agree_with_reference": f.agree_with_reference,
                "reliability": json_number(f.reliability),
            }
            for f in report.sources
        ],
        "accuracy": [a.as_dict() for a in accuracy_under_label_noise(report)],
        "queue": [s.as_dict() for s in queue],
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def evidence_line(e: Evidence) -> str:
    """``run 2 · judge-b · K=3 says response 1 (confidence 0.91, reliability 0.88)``"""
    if e.source in ("adjudication", "review"):
        what = "no preferred response" if e.says is None else f"response {e.says}"
        return f"{e.source} by {e.name}: {what} ({e.note})" if e.note else f"{e.source} by {e.name}: {what}"
    if e.says is None:
        return f"{e.name}: {e.note}"
    parts = []
    if e.confidence is not None:
        parts.append(f"confidence {e.confidence:.2f}")
    if e.reliability is not None:
        parts.append(f"reliability {e.reliability:.2f}")
    mark = "agrees" if e.agrees else "disagrees"
    return f"{e.name} says response {e.says}, {mark}" + (f" ({', '.join(parts)})" if parts else "")


def summary_lines(report: SuspectReport, top: int | None = None, reviewed: bool = True) -> list[str]:
    """The ``pairscope suspects`` text: the fit, each source, per-run accuracy four ways, the queue."""
    queue = report.queue(None, reviewed)
    lines = [
        f"{len(report.items)} items with a reference; {len(report.queue())} contradicted by at least one vote;"
        f" estimated reference accuracy {_pct(report.reference_accuracy)}"
        f" (one-coin Dawid-Skene, {report.iterations} EM iterations{'' if report.converged else ', not converged'})"
    ]
    for run_id, why in report.left_out_runs:
        lines.append(f"  run {run_id} left out: {why}")
    lines.append("sources (votes, naming the reference, mean reliability):")
    for f in report.sources:
        name = f.label if f.kind == "run" else f"annotator {f.label}"
        lines.append(f"  {name}: {f.votes} votes, {f.agree_with_reference} for the reference, {_pct(f.reliability)}")
    if report.runs:
        lines.append("accuracy per run (correct / decided): all · confirmed reference · without suspects · corrected")
        for a in accuracy_under_label_noise(report):
            cells = [a.all, a.confirmed, a.without_suspects, a.corrected]
            lines.append(f"  {a.label}: " + " · ".join(f"{_pct(c.accuracy)} ({c.correct}/{c.decided})" for c in cells))
    shown = queue if top is None else queue[:top]
    lines.append(f"suspects, most suspect first ({len(shown)} of {len(queue)}):")
    for rank, s in enumerate(shown, start=1):
        other = "" if s.alternative is None else f", likely response {s.alternative}"
        state = "" if s.status == "open" else f" [{s.status}]"
        lines.append(f"{rank:>4}. {s.ext_id} score {s.score:.3f} (reference: response {s.reference}{other}){state}")
        for e in s.evidence:
            lines.append(f"        {evidence_line(e)}")
    if not queue:
        lines.append("  none: no evidence contradicts any reference")
    return lines


__all__ = [
    "Accuracy",
    "NoiseAccuracy",
    "ReferenceNoise",
    "accuracy_under_label_noise",
    "evidence_line",
    "reference_noise",
    "reference_noise_lines",
    "summary_dict",
    "summary_lines",
]
