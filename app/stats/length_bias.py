"""Length bias: are preferences (the dataset's, an annotator's, a judge's) driven by length?

VL-RewardBench's check plots (chosen words − rejected words) / chosen words over the
reference pairs: a bell centred on zero means the labels are not length-driven. Word counts are
whitespace-split words, as stored. Only items with exactly two responses take part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .data import StatsData
from .judge_metrics import item_verdicts

#: The histogram spans [-1, 1]: 0 = equal lengths, 1 = empty rejected response, −1 = rejected
#: twice as long as chosen. Longer rejected responses fall below −1 and are counted in the
#: first bin (``clipped``) so the centre keeps its resolution.
DIFF_RANGE = (-1.0, 1.0)


def diff_histogram(data: StatsData, bins: int = 21, chosen: np.ndarray | None = None) -> dict[str, Any]:
    """Histogram of (chosen − rejected words) / chosen words over two-response items whose
    ``chosen`` (default the dataset reference) is response 0 or 1.

    Items whose chosen response has no words are left out (the ratio is undefined) and counted in
    ``zero_chosen``. ``mean`` and ``median`` are of the unclipped ratios; ``n`` counts them.
    """
    chosen = data.ref_chosen if chosen is None else np.asarray(chosen, dtype=float)
    pairs = _two_response(data) & np.isin(chosen, (0.0, 1.0))
    rows = np.flatnonzero(pairs)
    c_idx = chosen[rows].astype(np.intp)
    c = data.response_words[rows, c_idx]
    r = data.response_words[rows, 1 - c_idx]
    zero = c == 0
    ratio = (c[~zero] - r[~zero]) / c[~zero]
    counts, edges = np.histogram(np.clip(ratio, *DIFF_RANGE), bins=bins, range=DIFF_RANGE)
    return {
        "counts": counts.tolist(),
        "edges": edges.tolist(),
        "n": int(ratio.size),
        "mean": float(ratio.mean()) if ratio.size else None,
        "median": float(np.median(ratio)) if ratio.size else None,
        "clipped": int((ratio < DIFF_RANGE[0]).sum()),
        "zero_chosen": int(zero.sum()),
    }


def longer_preference(choices: np.ndarray, data: StatsData) -> float | None:
    """Share of decided two-response items (``choices`` 0 or 1, e.g. a judge's majority verdicts
    or an annotator's coded labels; ties, both-bad and NaN are not decided) on which the LONGER
    response was picked; items with equal word counts are excluded. ``None`` if none remain."""
    choices = np.asarray(choices, dtype=float)
    w = data.response_words
    keep = _two_response(data) & np.isin(choices, (0.0, 1.0)) & (w[:, 0] != w[:, 1])
    if not keep.any():
        return None
    longer = (w[keep, 1] > w[keep, 0]).astype(float)
    return float((choices[keep] == longer).mean())


def quartiles(data: StatsData) -> dict[str, list[float | None]]:
    """``[q1, median, q3]`` of query words and of response words (responses 0 and 1 of every
    item pooled), by ``numpy.percentile`` with linear interpolation; ``None`` when empty."""

    def q(values: np.ndarray) -> list[float | None]:
        values = values[np.isfinite(values)]
        if not values.size:
            return [None, None, None]
        return [float(x) for x in np.percentile(values, (25, 50, 75), method="linear")]

    return {
        "query_words": q(np.asarray(data.query_words, dtype=float)),
        "response_words": q(np.asarray(data.response_words, dtype=float).ravel()),
    }


def length_report(data: StatsData, verdicts: Mapping[int, np.ndarray] | None = None) -> dict[str, Any]:
    """The length section of the statistics report: word-count quartiles, the reference's
    length-difference histogram, and the longer-response preference of every judge run (its
    majority verdicts; ``None`` for runs without pairwise verdicts) and every annotator.
    ``verdicts``: run id → the run's official verdicts, where the caller decided them already."""
    judge = {}
    for run in data.runs:
        known = None if verdicts is None else verdicts.get(run.run.id)
        verdict = item_verdicts(data, run) if known is None else known
        judge[str(run.run.id)] = None if verdict is None else longer_preference(verdict, data)
    return {
        **quartiles(data),
        "diff_hist": diff_histogram(data),
        "judge_longer": judge,
        "annotator_longer": {name: longer_preference(labels, data) for name, labels in data.labels.items()},
    }


def _two_response(data: StatsData) -> np.ndarray:
    w = data.response_words
    return (np.asarray(data.n_responses) == 2) & np.isfinite(w[:, 0]) & np.isfinite(w[:, 1])
