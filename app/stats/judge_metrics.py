"""Judge accuracy as VL-RewardBench and VideoRewardBench report it, from ``StatsData`` arrays.

Conventions (all numbers are shares in [0, 1], ``None`` where the denominator is empty):

- An item's **verdict** comes from its vote table (``app.judge.modes`` turns each mode's
  samples into votes) decided by ``app.judge.votes.decide`` under a named convention:
  ``official`` (a response named by more than half of all K samples, VL-RewardBench's
  ``cal.py``) or ``plurality`` (the unique most-named response among the samples naming one).
  No majority leaves the item **undecided**. Every figure is computed under both; the
  top-level keys repeat the ``official`` ones and ``vote`` says so.
- An item is **scored** when the run stored at least one verdict for it (errors included) and
  the target names a response: NaN, tie and both-bad targets are excluded.
- ``overall`` = correct / decided scored items: undecided excluded from the denominator
  (VL-RewardBench's scoring). ``overall_unparsed_wrong`` = correct / scored items: undecided
  counted wrong (VLMEvalKit's).
- ``macro`` = unweighted mean of per-category accuracies over the categories that have a
  defined accuracy in that convention (listed in ``macro_categories`` and
  ``macro_unparsed_wrong_categories``).
- Step runs cast no preference votes: their accuracy keys are ``None`` and ``note`` says why.

Keys of the returned dicts are strings so a report survives a JSON round trip unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import numpy as np

from ..judge.modes import MODES, Samples, get_mode
from ..judge.votes import CONVENTIONS, DEFAULT_CONVENTION, ERROR, UNPARSED, decide, decide_counts, vote_counts
from ..judge.votes import TIE as TIE_VOTE
from ..labeling.schema import error_kind_order, kind_order_key
from ..records import VIDEOREWARDBENCH_DIMENSIONS
from .data import BOTH_BAD, TIE, RunData, StatsData

K_CURVE = (1, 3, 5, 7, 9)


def wilson_ci(successes: int, n: int, alpha: float = 0.05) -> list[float] | None:
    """The Wilson score interval of a proportion (statsmodels), ``[low, high]``; ``None`` at n = 0."""
    if not n:
        return None
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(int(successes), int(n), alpha=alpha, method="wilson")
    return [float(low), float(high)]


def decide_with_ties(votes: np.ndarray, convention: str) -> np.ndarray:
    """Item decisions where a judged tie is a candidate like a response: ``TIE`` (the stats
    code) when tie votes win under the convention."""
    v = np.asarray(votes, dtype=float)
    slot = np.fmax.reduce(v, axis=None) if v.size else -1
    slot = 0 if np.isnan(slot) or slot < 0 else int(slot) + 1
    remapped = np.where(v == TIE_VOTE, slot, v)
    out = decide(remapped, convention)
    return np.where(out == slot, TIE, out)


def vote_table(data: StatsData, run: RunData) -> np.ndarray | None:
    """items × K vote samples of a run (``app.judge.votes`` codes); ``None`` for modes that
    cast no preference votes."""
    mode = get_mode(run.run.mode)
    if not mode.votes_on_preference:
        return None
    stored = run.judged | ~np.isnan(run.first_shown) | run.parsed
    score = run.scores if run.scores is not None else np.full(run.choices.shape, np.nan)
    samples = Samples(stored=stored, ok=run.judged, parsed=run.parsed, choice=run.choices, score=score)
    return mode.vote_table(samples, data.n_responses, int(run.run.k), bool(run.run.both_orders))


def item_verdicts(data: StatsData, run: RunData, convention: str = DEFAULT_CONVENTION) -> np.ndarray | None:
    """The verdict per item (NaN = undecided or not judged); ``None`` when the run casts no
    preference votes."""
    votes = vote_table(data, run)
    return None if votes is None else decide(votes, convention)


def judged_items(run: RunData) -> np.ndarray:
    """Items with at least one stored verdict, errors included (``first_shown`` is set for
    every stored sample)."""
    return np.any(run.judged | run.parsed | ~np.isnan(run.first_shown), axis=1)


def run_metrics(
    data: StatsData, run: RunData, target: np.ndarray | None = None, categories: Sequence[str] = ()
) -> dict[str, Any]:
    """Every accuracy figure of one run against ``target`` (default the dataset reference; an
    adjudicated or annotator label array works too), under each vote convention (keys
    ``official`` and ``plurality``; the top level repeats ``official``). ``categories`` adds
    categories to report even if no item has them (n = 0, accuracy None).

    Counts: ``judged`` items with a stored verdict; ``scored`` those with a target; ``decided``
    scored items with a majority; ``correct``; ``unparsed`` = scored − decided (no majority);
    ``samples_unparsed`` and ``samples_failed``: vote samples without a verdict in the text and
    samples that failed (errors are not unparsed). ``per_category[c]``: ``n`` (scored),
    ``accuracy`` (undecided excluded), ``accuracy_unparsed_wrong``, ``unparsed``.
    ``k_curve[str(k)]``: accuracy (undecided excluded) of the vote over the first k samples
    (2k in both-orders runs), k = 1, 3, 5, 7, 9 up to the run's K. Position keys: see
    ``_position``; error types: see ``_per_error_type``.
    """
    target = data.ref_chosen if target is None else np.asarray(target, dtype=float)
    judged = judged_items(run)
    scored = judged & _names_response(target)
    out: dict[str, Any] = {
        "run_id": int(run.run.id),
        "mode": run.run.mode,
        "frames": run.run.frames,
        "k": int(run.run.k),
        "both_orders": bool(run.run.both_orders),
        "judged": int(judged.sum()),
        "scored": int(scored.sum()),
        "note": None,
        "vote": DEFAULT_CONVENTION,
    }
    votes = vote_table(data, run)
    if votes is None:
        out["note"] = "step runs score steps: no preference verdicts (see the step metrics)"
        for key in (
            "decided",
            "correct",
            "unparsed",
            "overall",
            "overall_unparsed_wrong",
            "macro",
            "macro_unparsed_wrong",
            "position_consistency",
            "position_consistency_items",
            "first_position_preference",
            "samples_unparsed",
            "samples_failed",
        ):
            out[key] = None
        out.update(
            macro_categories=[], macro_unparsed_wrong_categories=[], per_category={}, per_error_type={}, k_curve={}
        )
        for convention in CONVENTIONS:
            out[convention] = None
        return out
    out["samples_unparsed"] = int((votes[judged] == UNPARSED).sum())
    out["samples_failed"] = int((votes[judged] == ERROR).sum())
    step = votes.shape[1] // max(1, int(run.run.k))  # vote columns per sample (2: both orders)
    cumulative = vote_counts(votes, cumulative=True)
    for convention in CONVENTIONS:
        out[convention] = _convention_metrics(
            data, votes, cumulative, convention, target, scored, categories, run, step
        )
    out.update(out[DEFAULT_CONVENTION])
    out.update(_position(run, bool(run.run.both_orders)))
    return out


def _convention_metrics(
    data: StatsData,
    votes: np.ndarray,
    cumulative: np.ndarray,
    convention: str,
    target: np.ndarray,
    scored: np.ndarray,
    categories: Sequence[str],
    run: RunData,
    step: int,
) -> dict[str, Any]:
    width = votes.shape[1]
    verdict = decide_counts(cumulative[:, -1], convention, width) if width else np.full(len(votes), np.nan)
    decided = scored & ~np.isnan(verdict)
    correct = decided & (verdict == target)
    n_scored, n_decided, n_correct = int(scored.sum()), int(decided.sum()), int(correct.sum())
    out: dict[str, Any] = dict(
        decided=n_decided,
        correct=n_correct,
        unparsed=n_scored - n_decided,
        overall=_share(n_correct, n_decided),
        overall_unparsed_wrong=_share(n_correct, n_scored),
        overall_ci=wilson_ci(n_correct, n_decided),
        overall_unparsed_wrong_ci=wilson_ci(n_correct, n_scored),
    )
    out.update(_per_category(data, scored, decided, correct, categories))
    out["per_source"] = _per_source(data, scored, decided, correct)
    out["ties"] = _ties(votes, convention, target, scored | (np.isin(target, [TIE]) & judged_items(run)))
    out["best_of_n"] = _best_of_n(data, verdict, target, scored)
    out["per_error_type"] = _per_error_type(data, scored, decided, correct)
    out["k_curve"] = {}
    for k in (k for k in K_CURVE if k <= run.run.k):
        columns = min(k * step, width)
        v = decide_counts(cumulative[:, columns - 1], convention, columns) if columns else verdict
        hit = scored & (v == target)
        out["k_curve"][str(k)] = _share(hit.sum(), (scored & ~np.isnan(v)).sum())
    return out


def ties_accuracy(decision: np.ndarray, target: np.ndarray, judged: np.ndarray) -> dict[str, Any]:
    """Accuracy with ties counted and without (video reward benchmarks report both), for a
    judge's decisions or an annotator's labels (``TIE`` = a tie decision or label).

    ``with_ties``: every judged item whose target is a response or a tie; right when the
    decision equals it, so a tie decision on a response target is wrong. ``without_ties``:
    items whose target names a response and whose decision is not a tie. No decision (NaN)
    counts wrong in both."""
    tie_decided = decision == TIE
    with_mask = judged & (np.isin(target, [TIE]) | _names_response(target))
    without_mask = judged & _names_response(target) & ~tie_decided
    out = {}
    for name, mask in (("with_ties", with_mask), ("without_ties", without_mask)):
        hits = int((mask & (decision == target)).sum())
        n = int(mask.sum())
        out[name] = {"n": n, "accuracy": _share(hits, n), "ci": wilson_ci(hits, n)}
    return out


def _ties(votes: np.ndarray, convention: str, target: np.ndarray, judged: np.ndarray) -> dict[str, Any]:
    """:func:`ties_accuracy` of a run, a tie decision being tie votes winning the convention."""
    return ties_accuracy(decide_with_ties(votes, convention), target, judged)


def _best_of_n(data: StatsData, verdict: np.ndarray, target: np.ndarray, scored: np.ndarray) -> dict[str, Any]:
    """Best-of-N over scored items with 3+ responses: the run's decision as the pick."""
    from .prm import best_of_n_summary

    rows = np.flatnonzero(scored & (data.n_responses >= 3))
    picks = [
        (None if np.isnan(verdict[i]) else int(verdict[i]), int(target[i]), int(data.n_responses[i])) for i in rows
    ]
    return best_of_n_summary(picks)


def accuracy_on(verdict: np.ndarray, target: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    """``n``, ``accuracy`` (undecided excluded) and ``accuracy_unparsed_wrong`` of item
    verdicts over ``mask`` items whose target names a response."""
    scored = mask & _names_response(target)
    decided = scored & ~np.isnan(verdict)
    correct = (decided & (verdict == target)).sum()
    return {
        "n": int(scored.sum()),
        "accuracy": _share(correct, decided.sum()),
        "accuracy_unparsed_wrong": _share(correct, scored.sum()),
    }


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


# -- helpers ------------------------------------------------------------------------------------


def _names_response(target: np.ndarray) -> np.ndarray:
    return np.isfinite(target) & (target >= 0) & (target != TIE) & (target != BOTH_BAD)


def _share(num: SupportsFloat, den: SupportsFloat) -> float | None:
    return float(num) / float(den) if den else None


def _factorize(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Distinct values (sorted, as strings) and each item's code; a pass per distinct value is
    far faster than a Python loop over 100k items when there are a handful of categories."""
    values = np.asarray(values, dtype=object)
    distinct = sorted(set(values.tolist()), key=str)
    codes = np.zeros(len(values), dtype=np.intp)
    for j, v in enumerate(distinct):
        codes[values == v] = j
    return [str(v) for v in distinct], codes


def _per_group(
    values: np.ndarray, scored: np.ndarray, decided: np.ndarray, correct: np.ndarray, extra: Sequence[str] = ()
) -> dict[str, Any]:
    """``n``, both accuracies, ``unparsed`` and Wilson CIs per distinct value (sorted)."""
    names, codes = _factorize(values)
    names += [c for c in extra if c not in names]
    m = len(names)
    n, dec, cor = (np.bincount(codes[mask], minlength=m) for mask in (scored, decided, correct))
    per = {}
    for j in sorted(range(m), key=lambda j: names[j]):
        per[names[j]] = {
            "n": int(n[j]),
            "accuracy": _share(cor[j], dec[j]),
            "accuracy_unparsed_wrong": _share(cor[j], n[j]),
            "unparsed": int(n[j] - dec[j]),
            "ci": wilson_ci(cor[j], dec[j]),
            "ci_unparsed_wrong": wilson_ci(cor[j], n[j]),
        }
    return per


def _per_category(
    data: StatsData, scored: np.ndarray, decided: np.ndarray, correct: np.ndarray, extra: Sequence[str]
) -> dict[str, Any]:
    per = _per_group(data.categories, scored, decided, correct, extra)
    used = [c for c, v in per.items() if v["accuracy"] is not None]
    used_wrong = [c for c, v in per.items() if v["accuracy_unparsed_wrong"] is not None]
    return {
        "per_category": per,
        "macro": float(np.mean([per[c]["accuracy"] for c in used])) if used else None,
        "macro_categories": used,
        "macro_unparsed_wrong": float(np.mean([per[c]["accuracy_unparsed_wrong"] for c in used_wrong]))
        if used_wrong
        else None,
        "macro_unparsed_wrong_categories": used_wrong,
    }


def _per_source(data: StatsData, scored: np.ndarray, decided: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    """Accuracy per VL-RewardBench ``query_source`` (rlaif-v, povid, wildvision, mathverse …),
    over the items that name one."""
    if data.sources is None or not len(data.sources):
        return {}
    named = np.array([s is not None for s in data.sources], dtype=bool)
    if not named.any():
        return {}
    values = np.array([str(s) if s is not None else "" for s in data.sources], dtype=object)
    per = _per_group(values, scored & named, decided & named, correct & named)
    per.pop("", None)
    return per


def _tag_matrix(data: StatsData) -> tuple[list[str], np.ndarray]:
    """Error kinds present (taxonomy order, unknown kinds after) and an items × kinds mask,
    built per distinct tag tuple (few) rather than per item."""
    distinct = list(set(data.error_kinds))
    present = sorted({k for tags in distinct for k in tags}, key=kind_order_key(error_kind_order(data)))
    per_tuple = np.zeros((len(distinct), len(present)), dtype=bool)
    for j, tags in enumerate(distinct):
        per_tuple[j] = [k in tags for k in present]
    code = {tags: j for j, tags in enumerate(distinct)}
    codes = np.fromiter(map(code.__getitem__, data.error_kinds), dtype=np.intp, count=len(data.error_kinds))
    return present, per_tuple[codes]


def _per_error_type(data: StatsData, scored: np.ndarray, decided: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    """Judge error rate per dataset error kind: ``error_rate`` = wrong / decided tagged items,
    ``error_rate_unparsed_wrong`` = (tagged − correct) / tagged; an item counts once per kind."""
    kinds, tags = _tag_matrix(data)
    n, dec, cor = ((tags & mask[:, None]).sum(axis=0) for mask in (scored, decided, correct))
    return {
        k: {
            "n": int(n[j]),
            "error_rate": _share(dec[j] - cor[j], dec[j]),
            "error_rate_unparsed_wrong": _share(n[j] - cor[j], n[j]),
            "unparsed": int(n[j] - dec[j]),
            "ci": wilson_ci(dec[j] - cor[j], dec[j]),
        }
        for j, k in enumerate(kinds)
    }


def _position(run: RunData, both: bool) -> dict[str, Any]:
    """Position bias over every judged item (no target needed).

    ``first_position_preference``: share of samples with a response picked (judged ties have
    none) that picked the response shown first; 0.5 = no position bias.
    ``position_consistency``: both-orders runs, share of sample pairs with both orders parsed
    whose two picks are the same (two judged ties count as the same, as in ``app.judge.votes``);
    ``position_consistency_items``: share of items with such a pair whose every pair agrees
    (``app.judge.results``' consistency).
    """
    out: dict[str, Any] = {
        "position_consistency": None,
        "position_consistency_items": None,
        "first_position_preference": None,
    }
    if not get_mode(run.run.mode).shows_order:
        return out
    c, first = run.choices, run.first_shown
    picked = ~np.isnan(c) & ~np.isnan(first)
    out["first_position_preference"] = _share((picked & (c == first)).sum(), picked.sum())
    if both:
        s = c.shape[1] // 2 * 2
        c0, c1 = c[:, 0:s:2], c[:, 1:s:2]
        pair = run.parsed[:, 0:s:2] & run.parsed[:, 1:s:2]
        same = pair & ((c0 == c1) | (np.isnan(c0) & np.isnan(c1)))
        out["position_consistency"] = _share(same.sum(), pair.sum())
        has = pair.any(axis=1)
        out["position_consistency_items"] = _share((has & (same == pair).all(axis=1)).sum(), has.sum())
    return out
