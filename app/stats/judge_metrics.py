"""Judge accuracy figures beyond one run's scores: the frames curve and pointwise vs pairwise.

A run's own figures — every convention's overall, macro, per category, per source, ties,
Best-of-N, K-curve — are :func:`app.stats.scores.score_run`'s typed :class:`RunScores`;
:func:`run_metrics` is its ``stats --json`` form (:func:`app.stats.scores.to_json`). The counting
of one accuracy is :class:`app.judge.votes.Accuracy`, shared with the CLI summary and the
ensemble.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..judge.modes import MODES, get_mode
from ..judge.votes import DEFAULT_CONVENTION, Accuracy, decide
from ..judge.votes import wilson_ci as wilson_ci
from ..records import VIDEOREWARDBENCH_DIMENSIONS
from .data import RunData, StatsData
from .scores import ItemKeys, judged_items, names_response, score_run, vote_table
from .scores import decide_with_ties as decide_with_ties
from .scores import ties_accuracy as _ties_accuracy
from .scores_json import to_json

K_CURVE = (1, 3, 5, 7, 9)


def item_verdicts(data: StatsData, run: RunData, convention: str = DEFAULT_CONVENTION) -> np.ndarray | None:
    """The verdict per item (NaN = undecided or not judged); ``None`` when the run casts no
    preference votes."""
    votes = vote_table(data, run)
    return None if votes is None else decide(votes, convention)


def run_metrics(
    data: StatsData,
    run: RunData,
    target: np.ndarray | None = None,
    categories: Sequence[str] = (),
    keys: ItemKeys | None = None,
) -> dict[str, Any]:
    """The ``stats --json`` entry of one run (:func:`app.stats.scores.to_json` of
    :func:`app.stats.scores.score_run`)."""
    return to_json(score_run(data, run, target, categories, keys))


def ties_accuracy(decision: np.ndarray, target: np.ndarray, judged: np.ndarray) -> dict[str, Any]:
    """Accuracy with ties counted and without, for a judge's decisions or an annotator's labels
    (``TIE`` = a tie decision or label), as ``stats --json`` writes it."""
    t = _ties_accuracy(decision, target, judged)
    return {
        name: {"n": a.scored, "accuracy": a.accuracy_all, "ci": a.ci_all}
        for name, a in (("with_ties", t.with_ties), ("without_ties", t.without_ties))
    }


def accuracy_on(verdict: np.ndarray, target: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    """``n``, ``accuracy`` (undecided excluded) and ``accuracy_unparsed_wrong`` of item
    verdicts over ``mask`` items whose target names a response."""
    a = Accuracy.count(verdict, target, mask & names_response(target))
    return {"n": a.scored, "accuracy": a.accuracy, "accuracy_unparsed_wrong": a.accuracy_all}


def frames_curve(data: StatsData, video: np.ndarray | None = None, target: np.ndarray | None = None) -> dict[str, Any]:
    """Accuracy vs frame count on video items, one curve per set of runs that differ only in
    ``frames`` (same model path, mode, K, both-orders, template, seed, temperature and token
    limit; of runs identical in frames too, the latest counts).

    ``video`` is a boolean item mask; by default the items whose media is a video (or, for data
    without media kinds, whose category is a VideoRewardBench dimension).
    """
    if video is None:
        video = (
            (data.media_kind == "video")
            if data.media_kind is not None
            else np.isin(data.categories.astype(str), VIDEOREWARDBENCH_DIMENSIONS)
        )
        how = "category is a VideoRewardBench dimension"
    else:
        video = np.asarray(video, dtype=bool)
        how = "mask given by the caller"
    target = data.ref_chosen if target is None else np.asarray(target, dtype=float)
    groups: dict[tuple, dict[int, RunData]] = {}
    for r in data.runs:
        rec = r.run
        if rec.frames is None or not get_mode(rec.mode).votes_on_preference:
            continue
        key = (
            rec.model_path,
            rec.mode,
            rec.k,
            bool(rec.both_orders),
            rec.template_hash,
            rec.seed,
            (rec.generation or {}).get("temperature"),
            (rec.generation or {}).get("max_new_tokens"),
        )
        by_frames = groups.setdefault(key, {})
        if rec.frames not in by_frames or by_frames[rec.frames].run.id < rec.id:
            by_frames[rec.frames] = r
    curves = []
    for key, by_frames in groups.items():
        if len(by_frames) < 2:
            continue
        points = []
        for frames in sorted(by_frames):
            r = by_frames[frames]
            verdict = item_verdicts(data, r)
            if verdict is None:
                continue
            points.append(
                {
                    "frames": int(frames),
                    "run_id": int(r.run.id),
                    **accuracy_on(verdict, target, video & judged_items(r)),
                }
            )
        if len(points) >= 2:
            curves.append(
                {"model_path": key[0], "mode": key[1], "k": int(key[2]), "both_orders": key[3], "points": points}
            )
    return {"video_items": int(video.sum()), "video_mask": how, "curves": curves}


def pointwise_vs_pairwise(data: StatsData, target: np.ndarray | None = None) -> dict[str, Any]:
    """For every model path with both pairwise and pointwise runs: each run's headline accuracy,
    and the latest run of each mode compared on the items both scored (same denominator, so
    ``accuracy_unparsed_wrong`` is directly comparable; ``agreement`` = share of items both
    decided on which they picked the same response). The modes compared are those that vote
    on a preference (pairwise and pointwise), keyed by name."""
    target = data.ref_chosen if target is None else np.asarray(target, dtype=float)
    compared = [name for name, mode in MODES.items() if mode.votes_on_preference]
    by_model: dict[str, dict[str, list[RunData]]] = {}
    for r in data.runs:
        if r.run.mode in compared:
            by_model.setdefault(r.run.model_path, {}).setdefault(r.run.mode, []).append(r)
    models = []
    for model_path, modes in by_model.items():
        if len(modes) < 2:
            continue
        entry: dict[str, Any] = {"model_path": model_path}
        latest: dict[str, tuple[RunData, np.ndarray]] = {}
        for mode in compared:
            entry[mode] = []
            for r in sorted(modes[mode], key=lambda r: r.run.id):
                verdict = item_verdicts(data, r)
                if verdict is None:
                    continue
                latest[mode] = (r, verdict)
                entry[mode].append(
                    {
                        "run_id": int(r.run.id),
                        "k": int(r.run.k),
                        "frames": r.run.frames,
                        **accuracy_on(verdict, target, judged_items(r)),
                    }
                )
        entry["common"] = None
        if len(latest) == 2:
            (a, (a_run, a_verdict)), (b, (b_run, b_verdict)) = latest.items()
            common = judged_items(a_run) & judged_items(b_run) & _names_response(target)
            both = common & ~np.isnan(a_verdict) & ~np.isnan(b_verdict)
            entry["common"] = {
                f"{a}_run": int(a_run.run.id),
                f"{b}_run": int(b_run.run.id),
                a: accuracy_on(a_verdict, target, common),
                b: accuracy_on(b_verdict, target, common),
                "agreement": _share((both & (a_verdict == b_verdict)).sum(), both.sum()),
            }
        models.append(entry)
    return {"models": models}


def _names_response(target: np.ndarray) -> np.ndarray:
    return names_response(target)


def _share(num: Any, den: Any) -> float | None:
    return float(num) / float(den) if den else None
