"""Statistics over rankings with ties (``app.rankings``): agreement among annotators who ranked
the same items, and each annotator's pairwise accuracy against the dataset's reference ranking.

Input: ``StatsData.label_ranks`` (annotator → the rankings of their current labels) and
``StatsData.reference_ranks`` (the items' reference rankings), both :class:`~.data.RankRows`:
one dense rank per response, 1 = best, tied responses share a rank.

* **Kendall's W** per item among the annotators who ranked it (every stored ranking is full),
  tie-corrected on average ranks: ``W = 12 S / (m²(n³ − n) − m Σ T)``, ``S`` the squared
  deviations of the response rank sums from ``m(n + 1)/2``, ``T = Σ (t³ − t)`` over each
  annotator's tie groups of size ``t``; reported as the mean over items with ≥ 2 rankers
  (items where every annotator ties everything have no W).
* **Krippendorff's α, ordinal**, on ranks: units are (item, response), values the rank, coders
  the annotators (``krippendorff.alpha(level_of_measurement="ordinal")``), over items ranked by
  ≥ 2 annotators.
* **Pairwise accuracy over induced pairs** (:func:`app.rankings.induced_pairs`): every pair of
  responses the reference ranks apart is scored 1 when the annotator orders it the same way,
  ½ when the annotator ties it, 0 when reversed; pairs the *reference* ties are left out.
* **Pairwise agreement** between two annotators over the induced pairs of the items both
  ranked, ties included: 1 for the same relation (the same order, or both tie), ½ when one
  ties, 0 when reversed.

Confidence intervals are 95 % percentile bootstraps over *items* (the pairs and units of one
item move together: they are not independent), with the project's bootstrap conventions
(``app.stats.agreement``: ``bootstrap`` resamples, ``seed``, resamples where a statistic is
undefined left out); α's resamples sum the drawn items' shares of the coincidence matrix
(:func:`coincidence_parts`), which equals ``krippendorff`` on the drawn items. Cost is numpy
over label rows (10,000 items × 3 rankers: ~0.1 s, ~0.75 s with 200 resamples); a project
without rankings computes nothing (:func:`has_rankings`)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from ..rankings import induced_pairs
from .agreement import _percentile_ci
from .data import RankRows, StatsData
from .scores import response_signal, vote_table

#: The rule of the pairwise figures, as the report states it.
PAIR_RULE = "pairs the reference ties are left out; a pair the annotator ties counts 1/2"
_CHUNK = 2_000_000  # bootstrap draws held at once


def has_rankings(data: StatsData) -> bool:
    """Whether some item has a ranking label or a reference ranking (the report's Rankings
    section is shown only then)."""
    return bool(data.label_ranks) or (data.reference_ranks is not None and len(data.reference_ranks) > 0)


def pair_index(width: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``(a, b)``, ``a < b``, of ``width`` responses in the order
    :func:`app.rankings.induced_pairs` lists them (the induced pairs of a strict ranking)."""
    pairs = [(a, b) for a, b, _ in induced_pairs(tuple(range(1, width + 1)))]
    if not pairs:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    a, b = np.array(pairs, dtype=np.intp).T
    return a, b


def pair_signs(ranks: np.ndarray) -> np.ndarray:
    """Rows × pairs (:func:`pair_index` of the width): +1 when response ``a`` is ranked above
    ``b``, −1 below, 0 tied, NaN where the row has fewer responses — the induced pairs of each
    row, as :func:`app.rankings.induced_pairs` decides them."""
    a, b = pair_index(ranks.shape[1])
    return np.sign(ranks[:, b] - ranks[:, a])


# -- Kendall's W -------------------------------------------------------------------------------


def average_ranks(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row (NaN past its responses): the average (mid) rank of each response — ``1 + (the
    responses ranked above it) + (the others tied with it) / 2`` — and ``Σ (t³ − t)`` over the
    row's tie groups. Rows are handled in chunks (rows × width² at a time)."""
    n_rows, width = ranks.shape
    mid = np.full(ranks.shape, np.nan)
    ties = np.zeros(n_rows)
    step = max(1, _CHUNK // max(1, width * width))
    for start in range(0, n_rows, step):
        r = ranks[start : start + step]
        above = (r[:, None, :] < r[:, :, None]).sum(2)
        tied = (r[:, None, :] == r[:, :, None]).sum(2)  # itself included
        mid[start : start + step] = np.where(np.isnan(r), np.nan, above + (tied + 1) / 2)
        ties[start : start + step] = np.where(np.isnan(r), 0, tied**2 - 1).sum(1)  # Σ t(t² − 1) = Σ(t³ − t)
    return mid, ties


def kendall_w_items(label_ranks: dict[str, RankRows], n_responses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's W (tie-corrected) of every item ranked by ≥ 2 annotators: ``(item rows, W)``,
    W NaN where undefined (every ranking ties everything)."""
    if len(label_ranks) < 2:
        return np.zeros(0, np.intp), np.zeros(0)
    width = max(r.ranks.shape[1] for r in label_ranks.values())
    rows = np.concatenate([r.rows for r in label_ranks.values()])
    ranks = np.concatenate([_pad(r.ranks, width) for r in label_ranks.values()])
    items, inverse, m = np.unique(rows, return_inverse=True, return_counts=True)
    mid, ties = average_ranks(ranks)
    sums = np.zeros((len(items), width))
    np.add.at(sums, inverse, np.nan_to_num(mid))
    tie_sum = np.bincount(inverse, ties, minlength=len(items))
    n = n_responses[items].astype(float)
    deviation = np.where(np.arange(width)[None, :] < n[:, None], sums - (m * (n + 1) / 2)[:, None], 0.0)
    s = (deviation**2).sum(1)
    denominator = m**2 * (n**3 - n) - m * tie_sum
    w = np.divide(12 * s, denominator, out=np.full(len(items), np.nan), where=denominator > 0)
    keep = m >= 2
    return items[keep], w[keep]


def _pad(ranks: np.ndarray, width: int) -> np.ndarray:
    if ranks.shape[1] == width:
        return ranks
    return np.concatenate([ranks, np.full((len(ranks), width - ranks.shape[1]), np.nan)], axis=1)


# -- Krippendorff's alpha (ordinal) ------------------------------------------------------------


def reliability_matrix(label_ranks: dict[str, RankRows], n_responses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Annotators × units (each (item, response) of the items ranked by ≥ 2 annotators, items
    in order), the rank each annotator gave (NaN: not ranked) — ``krippendorff``'s
    ``reliability_data`` — and each unit's item row."""
    names = list(label_ranks)
    counts = np.bincount(np.concatenate([r.rows for r in label_ranks.values()]), minlength=len(n_responses))
    items = np.flatnonzero(counts >= 2) if len(names) >= 2 else np.zeros(0, np.intp)
    n = n_responses[items].astype(np.intp)
    offset = np.cumsum(n) - n
    matrix = np.full((len(names), int(n.sum())), np.nan)
    for k, name in enumerate(names):
        r = label_ranks[name]
        at = np.searchsorted(items, r.rows)
        mine = (at < len(items)) & (items[np.minimum(at, max(len(items) - 1, 0))] == r.rows)
        for_row, width = np.flatnonzero(mine), n[at[mine]]
        row = np.repeat(for_row, width)
        col = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
        matrix[k, np.repeat(offset[at[mine]], width) + col] = r.ranks[row, col]
    return matrix, np.repeat(items, n)


def ordinal_alpha(reliability: np.ndarray) -> float:
    """``krippendorff.alpha(reliability_data=…, level_of_measurement="ordinal")``; NaN when it is
    undefined (fewer than two values, nothing pairable)."""
    import krippendorff

    values = reliability[~np.isnan(reliability)]
    if len(np.unique(values)) < 2 or not np.any((~np.isnan(reliability)).sum(0) >= 2):
        return float("nan")
    return float(krippendorff.alpha(reliability_data=reliability, level_of_measurement="ordinal"))


def coincidence_parts(reliability: np.ndarray, unit_items: np.ndarray) -> np.ndarray:
    """Items × values × values: each item's share of Krippendorff's coincidence matrix, ``Σ over
    its units (n_uc n_uk − [c = k] n_uc) / (m_u − 1)`` (values = the distinct ranks, ascending).
    The matrix of a resample of the items is their weighted sum (:func:`alpha_of_coincidences`)."""
    domain = np.unique(reliability[~np.isnan(reliability)])
    counts = np.stack([(reliability == v).sum(0) for v in domain], axis=1).astype(float)  # units × values
    pairable = np.maximum(counts.sum(1), 2)
    per_unit = counts[:, :, None] * counts[:, None, :]
    per_unit[:, np.arange(len(domain)), np.arange(len(domain))] -= counts
    per_unit /= (pairable - 1)[:, None, None]
    starts = np.flatnonzero(np.diff(unit_items, prepend=-1))  # units come grouped by item
    return np.add.reduceat(per_unit, starts, axis=0) if len(starts) else np.zeros((0, len(domain), len(domain)))


def alpha_of_coincidences(o: np.ndarray) -> np.ndarray:
    """Ordinal α of each coincidence matrix in ``o`` (rows × values × values), as
    ``krippendorff.alpha`` computes it from its own: ``1 − Σ o·δ² / Σ e·δ²``, ``e`` the
    coincidences expected by chance, δ² the ordinal metric on the marginals."""
    n_v = o.sum(1)
    n = n_v.sum(1)
    below = np.concatenate([np.zeros((len(o), 1)), np.cumsum(n_v, axis=1)], axis=1)
    k = np.arange(o.shape[1])
    low, high = np.minimum.outer(k, k), np.maximum.outer(k, k)
    between = below[:, high + 1] - below[:, low]
    d = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2) ** 2
    e = n_v[:, :, None] * n_v[:, None, :]
    e[:, k, k] -= n_v
    e /= np.where(n > 1, n - 1, np.nan)[:, None, None]
    expected = (e * d).sum((1, 2))
    return 1 - np.divide((o * d).sum((1, 2)), expected, out=np.full(len(o), np.nan), where=expected > 0)


def _alpha_resamples(reliability: np.ndarray, unit_items: np.ndarray, n: int, seed: int) -> np.ndarray:
    """α over ``n`` resamples of the items (every unit of a drawn item comes along): each
    resample's coincidence matrix is the drawn items' :func:`coincidence_parts` summed."""
    parts = coincidence_parts(reliability, unit_items)
    if len(parts) == 0 or parts.shape[1] < 2 or not n:
        return np.zeros(0)
    flat = parts.reshape(len(parts), -1)
    rng = np.random.default_rng(seed)
    out = np.empty(n)
    step = max(1, _CHUNK // max(1, len(parts)))
    for start in range(0, n, step):
        rows = min(step, n - start)
        weights = rng.multinomial(len(parts), np.full(len(parts), 1 / len(parts)), size=rows).astype(float)
        out[start : start + rows] = alpha_of_coincidences((weights @ flat).reshape(rows, *parts.shape[1:]))
    return out


# -- pairwise figures --------------------------------------------------------------------------


def pair_credit(signs: np.ndarray, reference: np.ndarray, *, agreement: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the summed credit and the number of pairs counted, ``signs`` against
    ``reference`` (both rows × pairs of :func:`pair_signs`). Accuracy: pairs the reference ties
    are left out, an annotator tie is ½. Agreement (``agreement=True``): every pair both rank,
    ``1 − |s − r| / 2`` (same relation 1, one tie ½, reversed 0)."""
    counted = ~np.isnan(signs) & ~np.isnan(reference)
    if not agreement:
        counted &= reference != 0
    credit = np.where(counted, 1 - np.abs(np.nan_to_num(signs) - np.nan_to_num(reference)) / 2, 0.0)
    return credit.sum(1), counted.sum(1).astype(float)


def _ratio_resamples(credit: np.ndarray, pairs: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Σ credit / Σ pairs over ``n`` resamples of the rows (items) with replacement."""
    rng = np.random.default_rng(seed)
    out = np.empty(n)
    step = max(1, _CHUNK // max(1, len(credit)))
    for start in range(0, n, step):
        drawn = rng.integers(0, len(credit), (min(step, n - start), len(credit)))
        total = pairs[drawn].sum(1)
        out[start : start + len(drawn)] = np.divide(
            credit[drawn].sum(1), total, out=np.full(len(drawn), np.nan), where=total > 0
        )
    return out


def _mean_resamples(values: np.ndarray, n: int, seed: int) -> np.ndarray:
    return _ratio_resamples(values, np.ones(len(values)), n, seed)


def _on_reference(r: RankRows, reference: RankRows | None, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``r`` whose item has a reference ranking, and the reference's ranks of them."""
    if reference is None or not len(r):
        return np.zeros(0, np.intp), np.zeros((0, width))
    order = np.argsort(reference.rows, kind="stable")
    at = np.searchsorted(reference.rows[order], r.rows)
    found = (at < len(order)) & (reference.rows[order][np.minimum(at, max(len(order) - 1, 0))] == r.rows)
    return np.flatnonzero(found), _pad(reference.ranks, width)[order[at[found]]]


def _figure(credit: np.ndarray, pairs: np.ndarray, key: str, bootstrap: int, seed: int) -> dict[str, Any]:
    total = float(pairs.sum())
    used = pairs > 0
    out: dict[str, Any] = {
        "items": int(used.sum()),
        "pairs": int(total),
        "credit": _num(float(credit.sum())),
        key: float(credit.sum()) / total if total else None,
        "ci": None,
    }
    if bootstrap > 0 and used.any():
        out["ci"] = _ci(_ratio_resamples(credit[used], pairs[used], bootstrap, seed))
    return out


def pairwise_accuracy(data: StatsData, bootstrap: int = 200, seed: int = 0) -> dict[str, Any]:
    """Each annotator's rankings against the reference rankings over induced pairs
    (:data:`PAIR_RULE`): per annotator and pooled (``all``: every (annotator, item) ranking),
    each ``items``, ``pairs``, ``credit``, ``accuracy`` and its bootstrap ``ci`` over items."""
    per: dict[str, Any] = {}
    credits, counts = [], []
    for name, r in data.label_ranks.items():
        width = r.ranks.shape[1]
        if data.reference_ranks is not None:
            width = max(width, data.reference_ranks.ranks.shape[1])
        rows, reference = _on_reference(r, data.reference_ranks, width)
        credit, pairs = pair_credit(pair_signs(_pad(r.ranks, width)[rows]), pair_signs(reference))
        per[name] = _figure(credit, pairs, "accuracy", bootstrap, seed)
        credits.append(credit)
        counts.append(pairs)
    pooled = _figure(
        np.concatenate(credits) if credits else np.zeros(0),
        np.concatenate(counts) if counts else np.zeros(0),
        "accuracy",
        bootstrap,
        seed,
    )
    return {"rule": PAIR_RULE, "annotators": per, "all": pooled}


def judge_pairwise_accuracy(data: StatsData, bootstrap: int = 200, seed: int = 0) -> dict[str, Any]:
    """Each judge run that votes on preferences, ranking an item's responses by its signal
    (``app.stats.scores.response_signal``: pointwise the mean score, pairwise the share of
    samples naming each; equal signals tie), against the reference rankings over induced pairs
    (:data:`PAIR_RULE`: a judge tie counts ½). Items the run said nothing on are left out.
    Run id → ``mode``, ``items``, ``pairs``, ``credit``, ``accuracy``, ``ci``."""
    reference = data.reference_ranks
    out: dict[str, Any] = {}
    if reference is None:
        return out
    for run in data.runs:
        votes = vote_table(data, run)
        if votes is None:
            continue
        signal = response_signal(data, run, votes)[reference.rows]
        width = max(signal.shape[1], reference.ranks.shape[1])
        said = ~np.all(np.isnan(signal), axis=1)
        ranks = -_pad(signal, width)[said]  # a higher signal ranks above: the relations of its ranks
        credit, pairs = pair_credit(pair_signs(ranks), pair_signs(_pad(reference.ranks, width)[said]))
        out[str(run.run.id)] = {"mode": run.run.mode, **_figure(credit, pairs, "accuracy", bootstrap, seed)}
    return out


def pairwise_agreement(data: StatsData, bootstrap: int = 200, seed: int = 0) -> dict[str, Any]:
    """Per annotator pair (``"alice|bob"``), over the induced pairs of the items both ranked
    (ties included: same relation 1, one tie ½, reversed 0): ``items``, ``pairs``, ``credit``,
    ``agreement``, bootstrap ``ci`` over items; ``mean`` over the pairs where it is defined."""
    out: dict[str, Any] = {}
    for x, y in combinations(data.label_ranks, 2):
        a, b = data.label_ranks[x], data.label_ranks[y]
        width = max(a.ranks.shape[1], b.ranks.shape[1])
        _, in_a, in_b = np.intersect1d(a.rows, b.rows, assume_unique=True, return_indices=True)
        credit, pairs = pair_credit(
            pair_signs(_pad(a.ranks, width)[in_a]), pair_signs(_pad(b.ranks, width)[in_b]), agreement=True
        )
        out[f"{x}|{y}"] = _figure(credit, pairs, "agreement", bootstrap, seed)
    defined = [v["agreement"] for v in out.values() if v["agreement"] is not None]
    return {"pairs": out, "mean": float(np.mean(defined)) if defined else None}


# -- the report section ------------------------------------------------------------------------


def rankings_report(data: StatsData, bootstrap: int = 200, seed: int = 0) -> dict[str, Any]:
    """The ``rankings`` section of ``stats --json`` (docs/STATISTICS.md, "Rankings"):
    ``annotators``, ``ranking_labels``, ``items_ranked``, ``items_with_reference``,
    ``kendall_w`` (``mean`` over ``items`` ranked by ≥ 2, ``ci``, ``bootstrap``),
    ``krippendorff_alpha_ordinal`` (``alpha``, ``items``, ``units``, ``ci``, ``bootstrap``),
    ``pairwise_accuracy`` (:func:`pairwise_accuracy`), ``pairwise_agreement``
    (:func:`pairwise_agreement`) and ``judges`` (:func:`judge_pairwise_accuracy`). ``None`` for
    what is undefined."""
    ranked = [r.rows for r in data.label_ranks.values()]
    item_rows, w = kendall_w_items(data.label_ranks, data.n_responses)
    defined = w[~np.isnan(w)]
    kendall: dict[str, Any] = {
        "mean": float(defined.mean()) if len(defined) else None,
        "items": int(len(defined)),
        "ci": _ci(_mean_resamples(defined, bootstrap, seed)) if bootstrap > 0 and len(defined) else None,
        "bootstrap": bootstrap,
    }
    alpha: dict[str, Any] = {"alpha": None, "items": 0, "units": 0, "ci": None, "bootstrap": bootstrap}
    if len(data.label_ranks) >= 2:
        matrix, unit_items = reliability_matrix(data.label_ranks, data.n_responses)
        value = ordinal_alpha(matrix) if matrix.size else float("nan")
        alpha.update(items=int(len(np.unique(unit_items))), units=int(matrix.shape[1]), alpha=_json(value))
        if bootstrap > 0 and alpha["alpha"] is not None:
            alpha["ci"] = _ci(_alpha_resamples(matrix, unit_items, bootstrap, seed))
    return {
        "annotators": list(data.label_ranks),
        "ranking_labels": int(sum(len(r) for r in ranked)),
        "items_ranked": int(len(np.unique(np.concatenate(ranked)))) if ranked else 0,
        "items_with_reference": 0 if data.reference_ranks is None else int(len(np.unique(data.reference_ranks.rows))),
        "kendall_w": kendall,
        "krippendorff_alpha_ordinal": alpha,
        "pairwise_accuracy": pairwise_accuracy(data, bootstrap, seed),
        "pairwise_agreement": pairwise_agreement(data, bootstrap, seed),
        "judges": judge_pairwise_accuracy(data, bootstrap, seed),
    }


#: The keys of the ``rankings`` section (tests/test_ranking_stats.py pins them).
RANKINGS_KEYS = (
    "annotators",
    "ranking_labels",
    "items_ranked",
    "items_with_reference",
    "kendall_w",
    "krippendorff_alpha_ordinal",
    "pairwise_accuracy",
    "pairwise_agreement",
    "judges",
)


def _json(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else float(x)


def _ci(values: np.ndarray) -> list[float] | None:
    low, high = _percentile_ci(values)
    return None if np.isnan(low) else [low, high]


__all__ = [
    "PAIR_RULE",
    "RANKINGS_KEYS",
    "alpha_of_coincidences",
    "average_ranks",
    "coincidence_parts",
    "has_rankings",
    "judge_pairwise_accuracy",
    "kendall_w_items",
    "ordinal_alpha",
    "pair_credit",
    "pair_index",
    "pair_signs",
    "pairwise_accuracy",
    "pairwise_agreement",
    "rankings_report",
    "reliability_matrix",
]
