"""Inter-annotator agreement, judge↔human kappa and reference flip rate, as pure functions.

``labels`` maps annotator → coded preference per item (see ``app.stats.data``: response index,
``TIE``, ``BOTH_BAD``, NaN = no label). Every statistic is nominal (categories unordered) and
equals its reference implementation to floating-point rounding:

* Cohen's kappa — ``sklearn.metrics.cohen_kappa_score`` (unweighted) per annotator pair;
* Fleiss' kappa — ``statsmodels.stats.inter_rater.fleiss_kappa`` (``method="fleiss"``);
* Krippendorff's alpha — ``krippendorff.alpha(level_of_measurement="nominal")``.

Undefined values (no shared items, only one category used) are NaN here and ``None`` in the
report, where the libraries return NaN, warn or raise.

Speed: every statistic depends on the items only through how many items share each *profile*
(the row of codes across annotators), so items are collapsed to distinct profiles once and a
statistic is a weighted sum over profiles. A bootstrap resample is then a weight vector (how
often each profile was drawn), so B resamples cost one (B × profiles) matrix product instead of
B recomputations. Cost grows with resamples × distinct profiles × annotator pairs. Measured on
2 CPU cores, whole report (both variants + flip rate): 100k items × 3 annotators (≤ 125
profiles) ≈ 65 ms without bootstrap, 75 ms with 200 resamples, 90 ms with 1000; 100k items ×
10 annotators who all label everything (~38k profiles) ≈ 0.3 s / 1.8 s / 6.7 s — pass fewer
resamples there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import combinations
from typing import Any

import numpy as np

from .data import TIE, StatsData

Labels = dict[str, np.ndarray]
_FLOAT_STATS = ("percent", "cohen_mean", "fleiss", "krippendorff_alpha")
_ALL = (*_FLOAT_STATS, "percent_pairs", "cohen_pairs")
_MULTINOMIAL_MAX_PROFILES = 4096  # above this, drawing item indices is faster than a multinomial


class _Profiles:
    """Items labelled by ≥ 2 annotators, collapsed to distinct label rows."""

    def __init__(self, labels: Labels):
        self.names = list(labels)
        matrix = np.column_stack([np.asarray(labels[n], float) for n in self.names]) if self.names else np.empty((0, 0))
        present = ~np.isnan(matrix)
        matrix = matrix[present.sum(1) >= 2]
        self.n_items = len(matrix)
        self.domain = np.unique(matrix[~np.isnan(matrix)])
        k = len(self.domain)
        codes = np.where(np.isnan(matrix), -1, np.searchsorted(self.domain, np.nan_to_num(matrix)))
        # One integer key per row (mixed radix k+1), re-densified before it could overflow.
        key, size = np.zeros(self.n_items, np.int64), 1
        for column in codes.T:
            if size * (k + 1) > 2**62:
                key = np.unique(key, return_inverse=True)[1].astype(np.int64)
                size = int(key.max()) + 1
            key, size = key * (k + 1) + column + 1, size * (k + 1)
        _, first, self.inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        self.inverse = self.inverse.astype(np.int32)  # int32 gathers are several times faster
        self.codes = codes[first]  # (profiles, annotators), -1 = no label
        self.counts = counts.astype(float)  # items per profile
        self.per_category = (
            np.stack([(self.codes == c).sum(1) for c in range(k)], 1).astype(float)
            if k
            else np.zeros((len(self.codes), 0))
        )
        self.raters = (self.codes >= 0).sum(1).astype(float)
        self.designs: dict[tuple[int, int], np.ndarray] = {}

    @property
    def pairs(self) -> list[tuple[int, int]]:
        return list(combinations(range(len(self.names)), 2))


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    den = np.asarray(den, float)
    return np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den != 0)


def _cohen(n: np.ndarray, agree: np.ndarray, chance: np.ndarray) -> np.ndarray:
    """Cohen's kappa from the items both coded (``n``), their agreements and Σ of the product
    of the two marginals, as sklearn: 1 − Σoff(observed) / Σoff(expected), expected = outer(marginals) / n."""
    return 1.0 - _safe_div(n * (n - agree), n * n - chance)


def _pair_sums(p: _Profiles, w: np.ndarray, a: int, b: int) -> np.ndarray:
    """Per weight row, on the items both a and b labelled: a's count per category, b's count per
    category, then the number of agreements — all that Cohen's kappa needs, shape (rows, 2k + 1)."""
    k = len(p.domain)
    both = (p.codes[:, a] >= 0) & (p.codes[:, b] >= 0)
    if len(w) == 1:  # point estimate: bincount beats a one-row matrix product
        cells = np.concatenate([p.codes[both, a], k + p.codes[both, b], np.full(int(both.sum()), 2 * k)])
        agree = np.where(p.codes[both, a] == p.codes[both, b], 1.0, 0.0)
        weights = np.concatenate([w[0, both], w[0, both], w[0, both] * agree])
        return np.bincount(cells, weights, minlength=2 * k + 1)[None, :]
    design = p.designs.get((a, b))
    if design is None:
        design = np.zeros((len(p.codes), 2 * k + 1))  # profiles missing a or b stay all-zero rows
        rows = np.flatnonzero(both)
        design[rows, p.codes[rows, a]] = 1.0
        design[rows, k + p.codes[rows, b]] = 1.0
        design[rows, 2 * k] = p.codes[rows, a] == p.codes[rows, b]
        if design.size <= 2**18:  # keep small ones for the next chunk of resamples
            p.designs[(a, b)] = design
    return w @ design


def _evaluate(p: _Profiles, w: np.ndarray, which: tuple[str, ...] = _ALL) -> dict[str, Any]:
    """The statistics named in ``which`` for each row of profile weights ``w`` (rows × profiles)."""
    agreeing = (p.per_category**2).sum(1) - p.raters  # ordered pairs of raters that agree, per profile
    out: dict[str, Any] = {}
    if "percent" in which:
        out["percent"] = _safe_div(w @ (agreeing / (p.raters * (p.raters - 1))), w.sum(1))
    if {"percent_pairs", "cohen_pairs", "cohen_mean"} & set(which):
        out["percent_pairs"], out["cohen_pairs"] = {}, {}
        k = len(p.domain)
        for pair in p.pairs:
            sums = _pair_sums(p, w, *pair)
            n, agree = sums[:, :k].sum(1), sums[:, 2 * k]
            chance = (sums[:, :k] * sums[:, k : 2 * k]).sum(1)
            out["percent_pairs"][pair] = _safe_div(agree, n)
            out["cohen_pairs"][pair] = _cohen(n, agree, chance)
        kappas = np.array(list(out["cohen_pairs"].values())).reshape(-1, len(w))
        defined = ~np.isnan(kappas)
        out["cohen_mean"] = _safe_div(np.where(defined, kappas, 0.0).sum(0), defined.sum(0))
    if "fleiss" in which:
        r = len(p.names)
        full = p.raters == r
        subjects = w[:, full].sum(1)
        p_mean = _safe_div(w[:, full] @ (agreeing[full] / (r * (r - 1))), subjects)
        p_cat = _safe_div(w[:, full] @ p.per_category[full], (subjects * r)[:, None])
        p_exp = (p_cat**2).sum(1)
        out["fleiss"] = _safe_div(p_mean - p_exp, 1.0 - p_exp)
    if "krippendorff_alpha" in which:
        n_v = w @ p.per_category  # pairable values per category (coincidence-matrix marginals)
        n = n_v.sum(1)
        observed = n - w @ (agreeing / (p.raters - 1))  # off-diagonal mass of the coincidence matrix
        expected = _safe_div(n * n - (n_v**2).sum(1), n - 1)
        out["krippendorff_alpha"] = np.where(n > 1, 1.0 - _safe_div(observed, expected), np.nan)
    return out


def _point(labels: Labels, stat: str) -> float:
    p = _Profiles(labels)
    return float(_evaluate(p, p.counts[None, :], (stat,))[stat][0])


def _named(p: _Profiles, by_index: dict[tuple[int, int], np.ndarray]) -> dict[tuple[str, str], float]:
    return {(p.names[a], p.names[b]): float(v[0]) for (a, b), v in by_index.items()}


def percent_agreement(labels: Labels) -> float:
    """Observed agreement (Fleiss' P̄ convention): over items labelled by ≥ 2 annotators, the
    mean over items of the fraction of annotator pairs on that item that gave the same code.
    Items weigh equally whatever their number of raters; with 2 annotators this is the plain
    fraction of shared items they agree on."""
    return _point(labels, "percent")


def percent_pairs(labels: Labels) -> dict[tuple[str, str], float]:
    """Per annotator pair: fraction of the items both labelled on which they gave the same code."""
    p = _Profiles(labels)
    return _named(p, _evaluate(p, p.counts[None, :], ("percent_pairs",))["percent_pairs"])


def cohen_pairs(labels: Labels) -> dict[tuple[str, str], float]:
    """Unweighted Cohen's kappa per annotator pair (in ``labels`` order), on the items both
    labelled — equals ``sklearn.metrics.cohen_kappa_score``; NaN where undefined."""
    p = _Profiles(labels)
    return _named(p, _evaluate(p, p.counts[None, :], ("cohen_pairs",))["cohen_pairs"])


def cohen_mean(labels: Labels) -> float:
    """Light's kappa: the plain mean of pairwise Cohen's kappas over the pairs where it is defined."""
    return _point(labels, "cohen_mean")


def fleiss(labels: Labels) -> float:
    """Fleiss' kappa (1971) over the items labelled by *all* annotators in ``labels`` — Fleiss
    needs the same number of raters per item, so partly labelled items are left out (use
    Krippendorff's alpha for those). Equals statsmodels' ``fleiss_kappa(aggregate_raters(…))``."""
    return _point(labels, "fleiss")


def krippendorff_alpha(labels: Labels) -> float:
    """Nominal Krippendorff's alpha, 1 − D_o / D_e from the coincidence matrix; uses every item
    with ≥ 2 labels (missing labels allowed). Equals ``krippendorff.alpha(level_of_measurement="nominal")``."""
    return _point(labels, "krippendorff_alpha")


_FAST: dict[Callable, str] = {
    percent_agreement: "percent",
    cohen_mean: "cohen_mean",
    fleiss: "fleiss",
    krippendorff_alpha: "krippendorff_alpha",
}


def strict_labels(labels: Labels, n_responses: np.ndarray) -> Labels:
    """Only strict A/B preferences (code 0 or 1 on items with exactly 2 responses); ties,
    both-bad and multi-response items become missing. Annotators left with no label are dropped."""
    two = np.asarray(n_responses) == 2
    out = {name: np.where(two & ((coded == 0) | (coded == 1)), coded, np.nan) for name, coded in labels.items()}
    return {name: coded for name, coded in out.items() if not np.all(np.isnan(coded))}


def _resample_weights(p: _Profiles, n: int, rng: np.random.Generator, chunk: int) -> Iterator[np.ndarray]:
    """Yield (rows × profiles) weights: how often each profile is drawn when n_items item indices
    are resampled with replacement, ``chunk`` resamples at a time."""
    probabilities = p.counts / p.n_items
    for start in range(0, n, chunk):
        rows = min(chunk, n - start)
        if len(p.counts) <= _MULTINOMIAL_MAX_PROFILES:  # multinomial over profiles: same distribution
            yield rng.multinomial(p.n_items, probabilities, size=rows).astype(float)
        else:
            drawn = p.inverse[rng.integers(0, p.n_items, size=(rows, p.n_items), dtype=np.int32)]
            weights = np.empty((rows, len(p.counts)))
            for row, profiles in enumerate(drawn):  # row by row: the counts stay in cache
                weights[row] = np.bincount(profiles, minlength=len(p.counts))
            yield weights


def _bootstrap(p: _Profiles, n: int, seed: int, which: tuple[str, ...] = _ALL) -> dict[str, Any]:
    """Every statistic over ``n`` item-level bootstrap resamples (arrays of length n)."""
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n, 4_000_000 // max(1, len(p.counts)), 10_000_000 // max(1, p.n_items)))
    parts = [_evaluate(p, w, which) for w in _resample_weights(p, n, rng, chunk)]
    out: dict[str, Any] = {k: np.concatenate([x[k] for x in parts]) for k in _FLOAT_STATS if k in parts[0]}
    if "cohen_pairs" in parts[0]:
        out["cohen_pairs"] = {pair: np.concatenate([x["cohen_pairs"][pair] for x in parts]) for pair in p.pairs}
    return out


def _percentile_ci(values: np.ndarray) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return (np.nan, np.nan)
    low, high = np.percentile(values, [2.5, 97.5])
    return (float(low), float(high))


def bootstrap_ci(fn: Callable[[Labels], float], labels: Labels, n: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap CI of ``fn(labels)``: resample the items labelled by ≥ 2
    annotators with replacement ``n`` times, recompute, take the 2.5th and 97.5th percentiles
    (linear interpolation) of the resamples where the statistic is defined. Reproducible for a
    given ``seed``. ``percent_agreement``, ``cohen_mean``, ``fleiss`` and ``krippendorff_alpha``
    take a vectorised path (resample counts per label profile — the same distribution); any
    other ``fn`` is called once per resample."""
    if fn in _FAST:
        p = _Profiles(labels)
        return _percentile_ci(_bootstrap(p, n, seed, (_FAST[fn],))[_FAST[fn]]) if p.n_items else (np.nan, np.nan)
    names = list(labels)
    rows = np.flatnonzero(sum((~np.isnan(np.asarray(labels[k], float))).astype(int) for k in names) >= 2)
    if not len(rows):
        return (np.nan, np.nan)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n):
        pick = rows[rng.integers(0, len(rows), len(rows))]
        values.append(fn({k: np.asarray(labels[k])[pick] for k in names}))
    return _percentile_ci(np.array(values, float))


def judge_human_kappa(run_choices: np.ndarray, labels: Labels) -> dict[str, float]:
    """Cohen's kappa between the judge's per-item verdict (NaN = undecided) and each annotator,
    on the items both have. A human tie or both-bad counts as disagreeing with any verdict;
    pass ``strict_labels(…)`` to compare strict preferences only."""
    judge = "\0judge"  # cannot collide with an annotator name
    verdict = np.asarray(run_choices, float)
    out = {}
    for name, coded in labels.items():
        fast = _pair_kappa(verdict, np.asarray(coded, float))
        out[name] = cohen_pairs({judge: run_choices, name: coded})[(judge, name)] if fast is None else fast
    return out


def _pair_kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """:func:`cohen_pairs` of two coded arrays by ``bincount`` over the items both have, when
    every code is a small non-negative integer (``None``: not so). The counts are the same
    integers, so the kappa is the same float."""
    both = ~np.isnan(a) & ~np.isnan(b)
    x, y = a[both], b[both]
    if len(x) and not (
        min(x.min(), y.min()) >= 0
        and max(x.max(), y.max()) < 4096
        and np.array_equal(x, np.floor(x))
        and np.array_equal(y, np.floor(y))
    ):
        return None
    xi, yi = x.astype(np.intp), y.astype(np.intp)
    size = int(max(xi.max(), yi.max())) + 1 if len(x) else 1
    n = np.array([float(len(x))])
    agree = np.array([float(np.count_nonzero(xi == yi))])
    chance = np.array([float((np.bincount(xi, minlength=size) * np.bincount(yi, minlength=size)).sum())])
    return float(_cohen(n, agree, chance)[0])


def _flip_counts(flip: np.ndarray, valid: np.ndarray, cat_index: np.ndarray, cats: np.ndarray) -> dict:
    n_cat = np.bincount(cat_index[valid], minlength=len(cats))
    flips_cat = np.bincount(cat_index[valid & flip], minlength=len(cats))
    n, flips = int(valid.sum()), int((valid & flip).sum())
    return {
        "n": n,
        "flips": flips,
        "rate": flips / n if n else None,
        "by_category": {
            str(c): {"n": int(m), "flips": int(f), "rate": float(f / m) if m else None}
            for c, m, f in zip(cats, n_cat, flips_cat)
        },
    }


def reference_flip_rate(labels: Labels, ref_chosen: np.ndarray, categories: np.ndarray) -> dict[str, Any]:
    """How often a strict preference (a response index, not tie/both-bad) differs from the
    dataset's reference choice, on items having both. ``annotators``: per annotator; ``all``:
    pooled over every (annotator, item) label. Each has n, flips, rate (flips / n, None when
    n = 0) and ``by_category`` listing every category, also those without a reference."""
    ref = np.asarray(ref_chosen, float)
    cats, cat_index = np.unique(np.asarray(categories).astype(str), return_inverse=True)
    per: dict[str, Any] = {}
    all_valid, all_flip, all_cat = [], [], []
    for name, coded in labels.items():
        coded = np.asarray(coded, float)
        valid = ~np.isnan(ref) & ~np.isnan(coded) & (coded < TIE)
        flip = coded != ref
        per[name] = _flip_counts(flip, valid, cat_index, cats)
        all_valid.append(valid)
        all_flip.append(flip)
        all_cat.append(cat_index)
    pooled = (
        _flip_counts(np.concatenate(all_flip), np.concatenate(all_valid), np.concatenate(all_cat), cats)
        if labels
        else _flip_counts(np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, int), cats)
    )
    return {"annotators": per, "all": pooled}


def _json(x: Any) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def _ci_json(ci: tuple[float, float]) -> list[float | None] | None:
    return None if np.isnan(ci[0]) else [_json(ci[0]), _json(ci[1])]


def _block(labels: Labels, bootstrap: int, seed: int) -> dict[str, Any]:
    """One variant's statistics, JSON-ready."""
    names = list(labels)
    out: dict[str, Any] = {
        "annotators": names,
        "n_items": 0,
        "percent": None,
        "percent_pairs": {},
        "cohen_pairs": {},
        "cohen_mean": None,
        "fleiss": None,
        "krippendorff_alpha": None,
        "ci": {"percent": None, "cohen_pairs": {}, "cohen_mean": None, "fleiss": None, "krippendorff_alpha": None},
        "bootstrap": bootstrap,
    }
    if len(names) < 2:
        return out
    p = _Profiles(labels)
    out["n_items"] = p.n_items
    point = _evaluate(p, p.counts[None, :])
    key = {pair: f"{p.names[pair[0]]}|{p.names[pair[1]]}" for pair in p.pairs}
    for stat in _FLOAT_STATS:
        out[stat] = _json(point[stat][0])
    for which in ("percent_pairs", "cohen_pairs"):
        out[which] = {key[pair]: _json(v[0]) for pair, v in point[which].items()}
    out["ci"]["cohen_pairs"] = {key[pair]: None for pair in p.pairs}
    if bootstrap > 0 and p.n_items:
        boot = _bootstrap(p, bootstrap, seed, (*_FLOAT_STATS, "cohen_pairs"))
        for stat in _FLOAT_STATS:
            out["ci"][stat] = _ci_json(_percentile_ci(boot[stat]))
        for (a, b), values in boot["cohen_pairs"].items():
            out["ci"]["cohen_pairs"][key[(a, b)]] = _ci_json(_percentile_ci(values))
    return out


def agreement_report(data: StatsData, *, strict: bool = False, bootstrap: int = 1000, seed: int = 0) -> dict:
    """Agreement of the project's annotators, JSON-ready (floats, ints, None for undefined/NaN).

    Keys: ``percent``, ``percent_pairs`` and ``cohen_pairs`` (``{"alice|bob": …}``), ``cohen_mean``,
    ``fleiss``, ``krippendorff_alpha``, ``ci`` (95% percentile bootstrap ``[low, high]`` of each,
    ``bootstrap`` resamples of the items, ``seed``; 0 resamples → None), ``n_items`` (items
    labelled by ≥ 2 annotators), ``annotators``; ``strict`` — the same keys on strict A/B
    preferences only (``strict_labels``); ``flip_rate`` (``reference_flip_rate``); ``variant``.
    ``strict=True`` makes the top-level statistics the strict variant too. With fewer than 2
    annotators the statistics are None and the pair maps empty.
    """
    strict_block = _block(strict_labels(data.labels, data.n_responses), bootstrap, seed)
    report = dict(strict_block) if strict else _block(data.labels, bootstrap, seed)
    report["variant"] = "strict" if strict else "all"
    report["strict"] = strict_block
    report["flip_rate"] = reference_flip_rate(data.labels, data.ref_chosen, data.categories)
    return report
