"""Calibration of a judge run: is an item confidence of 0.8 right 80 % of the time?

Per run with preference verdicts, over its **calibrated items**: items with an official
decision (``votes.decide``, official convention), an item confidence
(``app.judge.confidence.item_confidence``) and a target that names a response. The target is the
dataset's reference where the item has one, else the response its newest current adjudication
prefers (``target_counts`` says how many came from each). An item is *correct* when its
decision equals the target.

- **reliability** (the reliability diagram): item confidences in ``bins`` equal-width bins on
  [0, 1] — bin 0 is [0, 0.1], bin b is (b/10, (b+1)/10] — each with its item count ``n``, mean
  confidence and accuracy (``sklearn.calibration.calibration_curve``, strategy "uniform"; the
  counts use its binning). Empty bins have ``n`` = 0 and no confidence or accuracy.
- **ece** (expected calibration error): Σ_b (n_b / N) · |accuracy_b − confidence_b| over the
  bins above (Guo et al. 2017). Written here: scikit-learn has no ECE function, and the sum is
  one line over the calibration curve it computes.
- **coverage** (the coverage–accuracy curve): items sorted by confidence, highest first (equal
  confidences in item order, as the "Confident and wrong" filter sorts); for q = 5 %, 10 %, …,
  100 %, the accuracy of the top ⌈q·N⌉ items, with that count and the lowest confidence kept.
- **mean_confidence**, **accuracy** (over the N calibrated items), **decided_without_confidence**
  (decided items with a target but no confidence: ties, unparsed or log-probabilities missing).

A run without any stored confidence has ``n`` = 0 and ``note`` = :data:`NO_CONFIDENCES`.
No Qt here; figures are in ``plots.calibration``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..judge.confidence import item_confidence
from ..judge.modes import get_mode
from .data import RunData, StatsData
from .judge_metrics import item_verdicts

BINS = 10
COVERAGE_STEPS = 20
NO_CONFIDENCES = "no confidences: the judge run stored no log-probabilities"


def calibration_target(data: StatsData) -> tuple[np.ndarray, np.ndarray]:
    """Per item the response to score against (NaN: none) and whether it is the adjudication
    (the reference where there is one, else the newest adjudication's preference)."""
    ref = np.asarray(data.ref_chosen, dtype=float)
    adjudicated = data.adjudicated if data.adjudicated is not None else np.full(len(ref), np.nan)
    from_adjudication = np.isnan(ref) & ~np.isnan(adjudicated)
    return np.where(from_adjudication, adjudicated, ref), from_adjudication


def reliability_bins(confidence: np.ndarray, correct: np.ndarray, bins: int = BINS) -> list[dict[str, Any]]:
    """The reliability diagram's bins (see the module doc), every bin listed."""
    from sklearn.calibration import calibration_curve

    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=int)
    edges = np.linspace(0.0, 1.0, bins + 1)
    ids = np.searchsorted(edges[1:-1], confidence)  # calibration_curve's own binning
    counts = np.bincount(ids, minlength=bins)
    accuracy = confidence_mean = np.zeros(0)
    if len(confidence):
        accuracy, confidence_mean = calibration_curve(correct, confidence, n_bins=bins, strategy="uniform", pos_label=1)
    out, filled = [], iter(zip(accuracy, confidence_mean))
    for b in range(bins):
        row: dict[str, Any] = {"low": float(edges[b]), "high": float(edges[b + 1]), "n": int(counts[b])}
        if counts[b]:
            acc, conf = next(filled)
            row.update(confidence=float(conf), accuracy=float(acc))
        else:
            row.update(confidence=None, accuracy=None)
        out.append(row)
    return out


def expected_calibration_error(bins: list[dict[str, Any]]) -> float | None:
    """Σ (n_b / N) |accuracy_b − confidence_b| over reliability bins; ``None`` without items."""
    total = sum(b["n"] for b in bins)
    if not total:
        return None
    return float(sum(b["n"] / total * abs(b["accuracy"] - b["confidence"]) for b in bins if b["n"]))


def coverage_curve(confidence: np.ndarray, correct: np.ndarray, steps: int = COVERAGE_STEPS) -> list[dict[str, Any]]:
    """Accuracy of the ⌈q·N⌉ most confident items for q = 1/steps … 1 (ties in the given
    order: the caller passes items in store order)."""
    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=float)
    n = len(confidence)
    if not n:
        return []
    order = np.argsort(-confidence, kind="stable")
    hits = np.cumsum(correct[order])
    out = []
    for step in range(1, steps + 1):
        q = step / steps
        keep = max(1, math.ceil(round(q * n, 9)))
        out.append(
            {
                "coverage": q,
                "n": int(keep),
                "accuracy": float(hits[keep - 1] / keep),
                "min_confidence": float(confidence[order[keep - 1]]),
            }
        )
    return out


def run_calibration(
    data: StatsData, run: RunData, bins: int = BINS, decision: np.ndarray | None = None
) -> dict[str, Any] | None:
    """A run's calibration (module doc); ``None`` for runs that cast no preference votes.
    ``decision``: the run's official verdicts, where the caller decided them already."""
    if not get_mode(run.run.mode).votes_on_preference:
        return None
    if decision is None:
        decision = item_verdicts(data, run, "official")
    target, from_adjudication = calibration_target(data)
    out: dict[str, Any] = {
        "run_id": int(run.run.id),
        "convention": "official",
        "target": "reference, else the newest adjudication",
        "bins": [],
        "coverage": [],
        "n": 0,
        "ece": None,
        "mean_confidence": None,
        "accuracy": None,
        "note": None,
    }
    if decision is None or run.confidence is None:
        out["note"] = NO_CONFIDENCES
        return out
    confidence = item_confidence(decision, run.choices, run.confidence, data.n_responses)
    scored = ~np.isnan(decision) & ~np.isnan(target) & (target >= 0)
    use = scored & ~np.isnan(confidence)
    conf, correct = confidence[use], (decision[use] == target[use])
    table = reliability_bins(conf, correct, bins)
    out.update(
        bins=table,
        coverage=coverage_curve(conf, correct),
        n=int(use.sum()),
        ece=expected_calibration_error(table),
        mean_confidence=float(conf.mean()) if len(conf) else None,
        accuracy=float(correct.mean()) if len(conf) else None,
        decided_without_confidence=int((scored & np.isnan(confidence)).sum()),
        target_counts={
            "reference": int((use & ~from_adjudication).sum()),
            "adjudication": int((use & from_adjudication).sum()),
        },
    )
    if not out["n"]:
        out["note"] = "no calibrated items: no decided item with a confidence has a reference or adjudication"
    return out


def calibration_report(
    data: StatsData, runs: list[RunData], bins: int = BINS, verdicts: Mapping[int, np.ndarray] | None = None
) -> dict[str, Any]:
    """``{run id: run_calibration}`` for every run that votes on preferences (``verdicts``: run
    id → official verdicts already decided)."""
    out = {}
    for run in runs:
        c = run_calibration(data, run, bins, None if verdicts is None else verdicts.get(run.run.id))
        if c is not None:
            out[str(run.run.id)] = c
    return out


__all__ = [
    "BINS",
    "NO_CONFIDENCES",
    "calibration_report",
    "calibration_target",
    "coverage_curve",
    "expected_calibration_error",
    "reliability_bins",
    "run_calibration",
]
