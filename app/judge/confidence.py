"""Confidence: per sample, the probability the judge gave its verdict; per item, from its K samples.

**Sample confidence** (:func:`sample_confidence`, stored in ``verdicts.confidence``): read by
``pairscope.models.confidence.pairwise_confidence`` from the sample's stored log-probabilities
at the token that names the chosen answer, renormalised over the allowed answers (the N
positions shown). Only modes that show the judge an order of responses and vote on one
(pairwise) have it; pointwise and step scores, ties, unparsed and failed samples, and samples
without log-probabilities have none (``None``, shown as n/a).

**Item confidence** (:func:`item_confidence`): for an item with an official decision d (the one
vote, ``votes.decide``, official convention), the mean over its samples that have a confidence
of the probability each gave d:

- a sample that named d contributes its confidence c;
- a sample that named another response contributes 1 − c on a two-response item (the only
  other answer) and 0 on an item with more responses (its probability for d is at most 1 − c
  and is not stored: 0 is the conservative bound);
- samples without a confidence (ties, unparsed, failed, no log-probabilities) are left out.

An item without an official decision, or whose samples have no confidence, has none (NaN).
The "Confident and wrong" filter orders by the same figure, computed in SQL
(``app/store/items.py``; tests check the two agree).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pairscope.models.confidence import pairwise_confidence

if TYPE_CHECKING:
    from pairscope.models.base import Generation

    from ..store import VerdictRecord
    from .modes import JudgingMode, Parsed
    from .votes import ItemVerdict


def sample_confidence(mode: JudgingMode, parsed: Parsed | None, gen: Generation, order: Sequence[int]) -> float | None:
    """The probability the judge gave the response ``parsed`` names, among the ``order``
    shown, from the generation's log-probabilities; ``None`` where there is none (see the
    module doc)."""
    logprobs = getattr(gen, "logprobs", None)
    if not logprobs or gen.error is not None or parsed is None or not parsed.parsed:
        return None
    if not (mode.shows_order and mode.votes_on_preference) or parsed.choice is None:
        return None
    if parsed.choice not in order:
        return None
    return pairwise_confidence(logprobs, gen.text, parsed.span, list(order).index(parsed.choice), len(order))


def item_confidence(
    decision: np.ndarray, choices: np.ndarray, confidence: np.ndarray | None, n_responses: np.ndarray
) -> np.ndarray:
    """Per item the mean probability its samples gave its official decision (module doc).

    ``decision``: items (response index, NaN = undecided); ``choices``: items × samples, the
    response each sample named (NaN: none); ``confidence``: items × samples (NaN: none) or
    ``None`` (no sample has one); ``n_responses``: items. NaN where undefined."""
    decision = np.asarray(decision, dtype=float)
    out = np.full(len(decision), np.nan)
    if confidence is None or not len(decision):
        return out
    choices = np.asarray(choices, dtype=float)
    conf = np.asarray(confidence, dtype=float)
    width = min(choices.shape[1], conf.shape[1])
    choices, conf = choices[:, :width], conf[:, :width]
    d = decision[:, None]
    valid = ~np.isnan(conf) & ~np.isnan(choices) & ~np.isnan(d)
    two = (np.asarray(n_responses) == 2)[:, None]
    gave = np.where(choices == d, conf, np.where(two, 1.0 - conf, 0.0))
    n = valid.sum(axis=1)
    total = np.where(valid, gave, 0.0).sum(axis=1)
    has = n > 0
    out[has] = total[has] / n[has]
    return out


def item_confidence_of(verdict: ItemVerdict | None, samples: Sequence[VerdictRecord], n_responses: int) -> float | None:
    """:func:`item_confidence` of one item from its stored samples (the review and judge panels)."""
    if verdict is None or verdict.official is None or not samples:
        return None
    width = max(v.sample_idx for v in samples) + 1
    choices, conf = np.full((1, width), np.nan), np.full((1, width), np.nan)
    for v in samples:
        if v.error is None and v.parsed and v.choice is not None:
            choices[0, v.sample_idx] = v.choice
        if v.confidence is not None:
            conf[0, v.sample_idx] = v.confidence
    value = item_confidence(np.array([verdict.official], dtype=float), choices, conf, np.array([n_responses]))[0]
    return None if np.isnan(value) else float(value)


__all__ = ["item_confidence", "item_confidence_of", "sample_confidence"]
