"""Step-wise (process reward) figures: a step judge's scores and annotators' step marks against
the dataset's step marks, and Best-of-N picks from step scores.

Definitions (VisualProcessBench / ProcessBench / ViLBench conventions):

- A step is **predicted erroneous** when its score is ≤ ``threshold`` (recorded in the output).
  Reference: a step marked incorrect is erroneous, correct is correct; neutral or unmarked
  steps are left out.
- ``f1_erroneous`` / ``f1_correct``: F1 with that class as positive (scikit-learn);
  ``f1_weighted``: VLRMBench's (github.com/JCruan519/VLRMBench ``model_eval/utils.py``,
  ``get_F1Score``): F1(erroneous) weighted by the share of correct steps and F1(correct) by the
  share of erroneous steps, ``(n_correct·F1_err + n_err·F1_ok) / n``;
  ``f1_weighted_support``: the support-weighted mean (scikit-learn's ``average="weighted"``);
  ``f1_macro``: their plain mean.
- As in VLRMBench (``format_model_answer_tolist``: an answer without indicators is padded with
  0), a judged response whose sample is unparsed counts in the F1 figures as "no error on
  any step" (``responses_unparsed``); a failed sample counts nowhere (VLRMBench writes no row).
- ``first_error_accuracy``: share of judged responses whose first predicted-erroneous step is
  the reference's first erroneous step (both "none" counts as a match), also split into
  responses with and without a reference error.
- Best-of-N from step scores: per item with 3+ responses and a reference best, the response
  with the highest aggregate (``min``, ``mean``, ``product`` of scores scaled to 0–1, or
  ``last``) is the pick; accuracy, and its gain over a random pick (1/N) and over the first
  response.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score, f1_score

from ..judge.modes import get_mode
from .data import RunData, StatsData
from .judge_metrics import wilson_ci

AGGREGATES = ("min", "mean", "product", "last")
DEFAULT_THRESHOLD = 2  # of the bundled 1–5 step scale: 1 wrong, 2 mostly wrong


def _first_error(marks: Iterable[bool | None]) -> int:
    """Index of the first erroneous step, -1 when none."""
    return next((i for i, m in enumerate(marks) if m is False), -1)


def _step_scores(data: StatsData, run: RunData) -> dict[tuple[int, int], tuple]:
    """(item id, response) → the step scores of the last judged sample that scored it."""
    rows_of = {int(item_id): i for i, item_id in enumerate(data.item_ids)}
    scores: dict[tuple[int, int], tuple] = {}
    for item_id, sample, scores_json in run.score_rows:
        i = rows_of.get(item_id)
        if i is None or sample >= run.judged.shape[1] or not run.judged[i, sample]:
            continue
        given = tuple(json.loads(scores_json))
        if given and not np.isnan(run.first_shown[i, sample]):
            scores[(item_id, int(run.first_shown[i, sample]))] = given
    return scores


def _unparsed_responses(data: StatsData, run: RunData, scored: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """(item id, response) judged without error but never parsed (no sample scored it)."""
    rows, samples = np.nonzero(run.judged & ~run.parsed & ~np.isnan(run.first_shown))
    found = {(int(data.item_ids[i]), int(run.first_shown[i, s])) for i, s in zip(rows, samples)}
    return found - set(scored)


def step_run_metrics(data: StatsData, run: RunData, threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """PRM figures of one step run (the last sample of each response counts)."""
    scores = _step_scores(data, run)
    unparsed = _unparsed_responses(data, run, scores)
    truth: list[bool] = []
    predicted: list[bool] = []
    for item_id, r in sorted(unparsed):  # VLRMBench: no indicators read = no error on any step
        for ref in data.reference_steps.get((item_id, r), ()):
            if ref is not None:
                truth.append(not ref)
                predicted.append(False)
    first_hits = {"all": [0, 0], "with_error": [0, 0], "without_error": [0, 0]}
    for (item_id, r), s in scores.items():
        marks = list(data.reference_steps.get((item_id, r), ()))
        pred = [None if x is None else x <= threshold for x in s]
        for ref, p in zip(marks, pred):
            if ref is not None and p is not None:
                truth.append(not ref)
                predicted.append(p)
        if any(m is not None for m in marks):
            hit = int(_first_error(marks) == next((i for i, p in enumerate(pred) if p), -1))
            for key in ("all", "with_error" if False in marks else "without_error"):
                first_hits[key][0] += hit
                first_hits[key][1] += 1
    out: dict[str, Any] = {
        "run_id": int(run.run.id),
        "mode": run.run.mode,
        "threshold": threshold,
        "responses": len(scores),
        "responses_unparsed": len(unparsed),
        "steps": len(truth),
    }
    out.update(_f1s(truth, predicted))
    for key, (hit, n) in first_hits.items():
        name = "first_error_accuracy" + ("" if key == "all" else f"_{key}")
        out[name] = hit / n if n else None
        out[name + "_n"] = n
    out["first_error_accuracy_ci"] = wilson_ci(*first_hits["all"])
    out["best_of_n"] = {agg: best_of_n_from_steps(data, scores, agg) for agg in AGGREGATES}
    return out


def _f1s(truth: list[bool], predicted: list[bool]) -> dict[str, Any]:
    if not truth:
        return {
            "f1_erroneous": None,
            "f1_correct": None,
            "f1_weighted": None,
            "f1_weighted_support": None,
            "f1_macro": None,
            "support_erroneous": 0,
            "support_correct": 0,
        }
    err, ok = f1_score(truth, predicted, labels=[True, False], average=None, zero_division=0)
    n_err, n_ok = sum(truth), len(truth) - sum(truth)
    return {
        "f1_erroneous": float(err),
        "f1_correct": float(ok),
        # VLRMBench's get_F1Score: each class's F1 weighted by the OTHER class's share
        "f1_weighted": float((err * n_ok + ok * n_err) / len(truth)),
        "f1_weighted_support": float((err * n_err + ok * n_ok) / len(truth)),
        "f1_macro": float((err + ok) / 2),
        "support_erroneous": int(n_err),
        "support_correct": int(n_ok),
    }


def aggregate(scores: Iterable[float | None], how: str, scale: float = 5.0) -> float | None:
    """One number for a response's step scores (``None`` when a score is missing)."""
    given = list(scores)
    values = [v for v in given if v is not None]
    if not values or len(values) != len(given):
        return None
    if how == "min":
        return float(min(values))
    if how == "mean":
        return float(np.mean(values))
    if how == "product":
        return float(math.prod(v / scale for v in values))
    if how == "last":
        return float(values[-1])
    raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")


def best_of_n_from_steps(data: StatsData, scores: dict[tuple[int, int], tuple], how: str) -> dict[str, Any]:
    """Best-of-N accuracy of the pick by aggregated step scores (see the module docstring)."""
    rows_of = {int(item_id): i for i, item_id in enumerate(data.item_ids)}
    picks = []
    for item_id in dict.fromkeys(item_id for item_id, _ in scores):
        i = rows_of[item_id]
        n, best = int(data.n_responses[i]), data.ref_chosen[i]
        if n < 3 or np.isnan(best):
            continue
        agg = [aggregate(scores.get((item_id, r), ()), how) for r in range(n)]
        known = [a for a in agg if a is not None]
        if len(known) != n:
            continue
        top = max(known)
        winners = [r for r, a in enumerate(agg) if a == top]
        picks.append((winners[0] if len(winners) == 1 else None, int(best), n))
    return best_of_n_summary(picks)


def best_of_n_summary(picks: list[tuple[int | None, int, int]]) -> dict[str, Any]:
    """``(pick or None, reference best, N)`` per item → accuracy (no pick counts wrong), its
    Wilson CI, and the gains over a random pick and over always taking the first response."""
    if not picks:
        return {
            "items": 0,
            "accuracy": None,
            "accuracy_ci": None,
            "random": None,
            "first_response": None,
            "gain_over_random": None,
            "gain_over_first": None,
        }
    hits = sum(1 for p, b, _ in picks if p is not None and p == b)
    acc = hits / len(picks)
    random_pick = float(np.mean([1 / n for _, _, n in picks]))
    first = sum(1 for _, b, _ in picks if b == 0) / len(picks)
    return {
        "items": len(picks),
        "accuracy": acc,
        "accuracy_ci": wilson_ci(hits, len(picks)),
        "random": random_pick,
        "first_response": first,
        "gain_over_random": acc - random_pick,
        "gain_over_first": acc - first,
    }


def annotator_step_agreement(data: StatsData) -> dict[str, Any]:
    """Annotators' current step marks: accuracy against the dataset's marks per annotator, and
    Cohen's kappa between each pair on the steps both marked."""
    marks = data.step_marks
    out: dict[str, Any] = {"annotators": {}, "pairs": []}
    for name, mine in marks.items():
        hit = n = 0
        for (item_id, r, step), correct in mine.items():
            steps = data.reference_steps.get((item_id, r), ())
            ref = steps[step] if step < len(steps) else None
            if ref is not None:
                n += 1
                hit += ref == correct
        out["annotators"][name] = {
            "steps_marked": len(mine),
            "vs_reference_n": n,
            "vs_reference_accuracy": hit / n if n else None,
            "vs_reference_ci": wilson_ci(hit, n),
        }
    names = sorted(marks)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = sorted(set(marks[a]) & set(marks[b]))
            x = [marks[a][s] for s in shared]
            y = [marks[b][s] for s in shared]
            kappa = float(cohen_kappa_score(x, y)) if len(set(x) | set(y)) > 1 and shared else None
            out["pairs"].append(
                {
                    "a": a,
                    "b": b,
                    "steps": len(shared),
                    "cohen_kappa": kappa,
                    "agreement": sum(p == q for p, q in zip(x, y)) / len(shared) if shared else None,
                }
            )
    return out


def prm_report(
    data: StatsData, threshold: float = DEFAULT_THRESHOLD, runs: list[RunData] | None = None
) -> dict[str, Any]:
    """Step metrics of every step run (or of these runs), and annotators' step-mark agreement,
    from the statistics' one snapshot (:func:`app.stats.data.load_stats_data`)."""
    metrics = [
        step_run_metrics(data, r, threshold)
        for r in (data.runs if runs is None else runs)
        if not get_mode(r.run.mode).votes_on_preference
    ]
    return {"threshold": threshold, "runs": metrics, "annotators": annotator_step_agreement(data)}
