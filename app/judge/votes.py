"""The K-vote, written once: what each sample says and what an item's samples decide.

A run's samples are turned (by its mode, see ``modes``) into a *vote table*: items × vote
samples, each cell a response index, or ``TIE`` (the judge said tie / equal top scores),
``UNPARSED`` (no verdict found in the text), ``ERROR`` (the sample failed: missing media, out of
memory, endpoint error) or NaN (no sample stored, e.g. a cancelled run). Every reader — the judge
CLI summary, the judge panel, the review panel, filters (``judge_items``), statistics, export —
decides items from this table with :func:`decide`, under a named convention:

``official`` (the ``vlrewardbench`` convention of ``app.stats.conventions``)
    VL-RewardBench's ``cal.py`` (``classify``: ``agree > total_count / 2`` with ``total_count =
    agree + reject + doesntMatch``): an item goes to the response named by **more than half of
    the samples present** — unparsed and tied samples count, failed samples (an API call that
    returned nothing, missing media) and missing ones (a cancelled run) do not, as ``cal.py``
    only sees the lines its inference wrote; otherwise there is no majority and the item is
    left out of the accuracy ("undecided"). An item with no sample present is *failed*, not
    undecided.
``plurality``
    The response named most often among the samples that name one (a tie for the top count is
    undecided). PairScope's rule before the official one was implemented.

At K = 1 both give the same decision. Both-orders runs have 2K vote samples (each order of
each of the K samples is one sample): the official majority is more than K of the 2K.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..records import CONVENTIONS as CONVENTIONS
from ..records import DEFAULT_CONVENTION as DEFAULT_CONVENTION

TIE, UNPARSED, ERROR = -1.0, -2.0, -3.0
CONVENTION_HELP = {
    "official": "strict majority of the samples present (VL-RewardBench cal.py: agree > total/2; failed and"
    " missing samples are not present); no majority = undecided",
    "plurality": "most frequent among samples naming a response; a tied top count = undecided",
}


def check_convention(convention: str) -> str:
    if convention not in CONVENTIONS:
        raise ValueError(f"vote convention must be one of {', '.join(CONVENTIONS)}, got {convention!r}")
    return convention


def vote_counts(votes: np.ndarray, cumulative: bool = False) -> np.ndarray:
    """Votes per response index: items × responses, or (``cumulative``) items × samples ×
    responses counted over the first s + 1 samples, so every K of a K-curve is one slice."""
    v = np.asarray(votes, dtype=float)
    top = np.fmax.reduce(v, axis=None) if v.size else np.nan
    n = 0 if np.isnan(top) or top < 0 else int(top) + 1
    if cumulative:
        if not n:
            return np.zeros((*v.shape, 0), dtype=np.int32)
        return np.stack([np.cumsum(v == r, axis=1, dtype=np.int32) for r in range(n)], axis=2)
    if not n:
        return np.zeros((len(v), 0), dtype=np.int32)
    return np.stack([(v == r).sum(axis=1, dtype=np.int32) for r in range(n)], axis=1)


def present_counts(votes: np.ndarray, cumulative: bool = False) -> np.ndarray:
    """Samples present per item — a response, a tie or unparsed text; not failed, not missing —
    or (``cumulative``) items × samples counted over the first s + 1: the denominator of
    ``cal.py``'s majority (``total_count``)."""
    v = np.atleast_2d(np.asarray(votes, dtype=float))
    here = ~np.isnan(v) & (v != ERROR)
    return np.cumsum(here, axis=1, dtype=np.int32) if cumulative else here.sum(axis=1, dtype=np.int32)


def decide_counts(counts: np.ndarray, convention: str, planned: int | np.ndarray) -> np.ndarray:
    """Item decisions (response index, NaN = undecided) from items × responses vote counts;
    ``planned`` is the number of samples the official majority is taken of, per item (the
    samples present, :func:`present_counts`) or one number for every item."""
    check_convention(convention)
    if counts.shape[1] == 0:
        return np.full(counts.shape[0], np.nan)
    narrow = counts.shape[1] <= 16  # a few responses: column by column, several times faster than along axis 1
    columns = [counts[:, r] for r in range(counts.shape[1])] if narrow else []
    if narrow:
        top, winner = columns[0].copy(), np.zeros(len(counts), dtype=np.intp)
        for r, column in enumerate(columns[1:], start=1):
            winner[column > top] = r  # the first response with the top count, as argmax
            np.maximum(top, column, out=top)
    else:
        top, winner = counts.max(axis=1), counts.argmax(axis=1)
    if convention == "official":
        decided = (top > 0) & (2 * top > np.asarray(planned))
    else:
        at_top = sum((c == top).view(np.int8) for c in columns) if narrow else (counts == top[:, None]).sum(axis=1)
        decided = (top > 0) & (at_top == 1)
    return np.where(decided, winner, np.nan)


def decide(votes: np.ndarray, convention: str, planned: int | np.ndarray | None = None) -> np.ndarray:
    """Item decisions from a vote table (``planned`` defaults to each item's samples present)."""
    v = np.atleast_2d(np.asarray(votes, dtype=float))
    return decide_counts(vote_counts(v), convention, present_counts(v) if planned is None else planned)


def order_consistency(votes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both-orders runs: ``(pair judged, pair agrees)`` per sample pair (columns 2j, 2j+1).
    A pair is judged when both orders gave a verdict (a response or a tie); two ties agree."""
    v = np.atleast_2d(np.asarray(votes, dtype=float))
    s = v.shape[1] // 2 * 2
    a, b = v[:, 0:s:2], v[:, 1:s:2]
    said = lambda x: ~np.isnan(x) & ((x >= 0) | (x == TIE))  # noqa: E731
    judged = said(a) & said(b)
    return judged, judged & (a == b)


def item_consistency(votes: np.ndarray) -> np.ndarray:
    """Per item: 1.0 when every judged order pair agrees, 0.0 when one disagrees, NaN when no
    pair was judged."""
    judged, same = order_consistency(votes)
    out = np.full(judged.shape[0], np.nan)
    has = judged.any(axis=1)
    out[has] = (same == judged).all(axis=1)[has]
    return out


@dataclass(frozen=True)
class ItemVerdict:
    """A run's verdict on one item, under both conventions. ``votes`` are the item's row of the
    vote table; ``errors`` the reasons of its failed samples."""

    item_id: int
    votes: tuple[float, ...]
    official: int | None
    plurality: int | None
    consistent: bool | None = None
    errors: tuple[str, ...] = field(default=())

    @classmethod
    def from_table(
        cls, item_ids: Sequence[int], table: npt.ArrayLike, both_orders: bool, errors: Sequence[Sequence[str]] = ()
    ) -> list[ItemVerdict]:
        """The verdicts of several items from their rows of a vote table, decided in one go
        (``errors``: each item's failure reasons, in row order)."""
        t = np.atleast_2d(np.asarray(table, dtype=float))
        official, plurality = (decide(t, c) for c in CONVENTIONS)
        consistent = item_consistency(t) if both_orders else np.full(len(t), np.nan)
        reasons = list(errors) or [()] * len(t)
        return [
            cls(
                item_id,
                tuple(t[i].tolist()),
                _int(official[i]),
                _int(plurality[i]),
                None if np.isnan(consistent[i]) else bool(consistent[i]),
                tuple(reasons[i]),
            )
            for i, item_id in enumerate(item_ids)
        ]

    @classmethod
    def from_votes(
        cls, item_id: int, votes: npt.ArrayLike, both_orders: bool, errors: Sequence[str] = ()
    ) -> ItemVerdict:
        """One item's verdict from its row of the vote table."""
        return cls.from_table([item_id], np.asarray(votes, dtype=float).reshape(1, -1), both_orders, [errors])[0]

    def choice(self, convention: str = DEFAULT_CONVENTION) -> int | None:
        return self.official if check_convention(convention) == "official" else self.plurality

    @property
    def planned(self) -> int:
        return len(self.votes)

    @property
    def present(self) -> int:
        """Samples present (not failed, not missing): the official majority's denominator."""
        return sum(1 for v in self.votes if not np.isnan(v) and v != ERROR)

    @property
    def counts(self) -> dict[int, int]:
        """Votes per response index."""
        out: dict[int, int] = {}
        for v in self.votes:
            if v >= 0:
                out[int(v)] = out.get(int(v), 0) + 1
        return out

    def _count(self, code: float) -> int:
        return sum(1 for v in self.votes if v == code)

    @property
    def ties(self) -> int:
        return self._count(TIE)

    @property
    def unparsed(self) -> int:
        return self._count(UNPARSED)

    @property
    def failed(self) -> int:
        return self._count(ERROR)

    @property
    def missing(self) -> int:
        return sum(1 for v in self.votes if np.isnan(v))

    def outcome(self, reference: int | None, convention: str = DEFAULT_CONVENTION) -> str:
        """``right``/``wrong`` against the reference, ``undecided`` (no majority), ``unscored``."""
        choice = self.choice(convention)
        if choice is None:
            return "undecided"
        if reference is None:
            return "unscored"
        return "right" if choice == reference else "wrong"


def _int(x: float) -> int | None:
    return None if np.isnan(x) else int(x)


def wilson_ci(successes: float, n: int, alpha: float = 0.05) -> list[float] | None:
    """The Wilson score interval of a proportion (statsmodels), ``[low, high]``; ``None`` at n = 0.
    ``successes`` may be fractional (RewardBench 2's 1/#ties credit)."""
    if not n:
        return None
    count = int(successes) if float(successes).is_integer() else float(successes)
    if alpha != 0.05:
        from statsmodels.stats.proportion import proportion_confint  # loads only where a CI is read

        low, high = proportion_confint(count, int(n), alpha=alpha, method="wilson")
        return [float(low), float(high)]
    # statsmodels' "wilson" branch, step by step (the same float operations, so the same bits),
    # with its critical value norm.isf(0.025) as a constant: no scipy.stats import for a CI
    crit, crit2 = _WILSON_CRIT
    count_a, nobs_a = np.asarray(count), np.asarray(int(n))
    q_ = count_a / nobs_a
    denom = 1 + crit2 / nobs_a
    center = (q_ + crit2 / (2 * nobs_a)) / denom
    dist = crit * np.sqrt(q_ * (1.0 - q_) / nobs_a + crit2 / (4.0 * nobs_a**2))
    dist /= denom
    return [float(np.clip(center - dist, 0, 1)), float(np.clip(center + dist, 0, 1))]


#: ``scipy.stats.norm.isf(0.025)`` and its square, as statsmodels computes them for a 95 % interval.
_WILSON_CRIT = (np.float64(1.9599639845400545), np.float64(1.9599639845400545) ** 2)


@dataclass(frozen=True)
class Accuracy:
    """One accuracy figure, counted once for every reader (the CLI summary, the judge panel, the
    ensemble, the statistics): ``scored`` items have a target that names a response (failed
    items — no sample present — are not scored), ``decided`` of them got a decision, ``correct``
    of those match (fractional where a convention gives partial credit). Both denominators are
    kept: ``accuracy`` leaves undecided items out (VL-RewardBench's ``cal.py``),
    ``accuracy_all`` counts them wrong (VLMEvalKit's)."""

    scored: int
    decided: int
    correct: float

    @property
    def undecided(self) -> int:
        return self.scored - self.decided

    @property
    def accuracy(self) -> float | None:
        """correct / decided (undecided excluded); ``None`` when nothing was decided."""
        return self.correct / self.decided if self.decided else None

    @property
    def accuracy_all(self) -> float | None:
        """correct / scored (undecided counted wrong); ``None`` when nothing was scored."""
        return self.correct / self.scored if self.scored else None

    @property
    def accuracy_undecided_wrong(self) -> float | None:
        """:attr:`accuracy_all` under the name the run summary prints."""
        return self.accuracy_all

    @property
    def ci(self) -> list[float] | None:
        """95 % Wilson interval of :attr:`accuracy` (n = decided)."""
        return wilson_ci(self.correct, self.decided)

    @property
    def ci_all(self) -> list[float] | None:
        """95 % Wilson interval of :attr:`accuracy_all` (n = scored)."""
        return wilson_ci(self.correct, self.scored)

    @classmethod
    def count(
        cls, choice: npt.ArrayLike, target: npt.ArrayLike, scored: npt.ArrayLike, credit: npt.ArrayLike | None = None
    ) -> Accuracy:
        """Count over the ``scored`` items: decided = a choice (not NaN), correct = choice equals
        the target (or the sum of ``credit`` over decided items, when given)."""
        c, t, s = np.asarray(choice, dtype=float), np.asarray(target, dtype=float), np.asarray(scored, dtype=bool)
        decided = s & ~np.isnan(c)
        if credit is None:
            correct: float = int((decided & (c == t)).sum())
        else:
            correct = float(np.asarray(credit, dtype=float)[decided].sum())
        return cls(int(s.sum()), int(decided.sum()), correct)

    @classmethod
    def of_pairs(cls, pairs: Sequence[tuple[int | None, int]]) -> Accuracy:
        """From ``(choice, reference)`` per scored item (``None``: undecided)."""
        decided = [(c, r) for c, r in pairs if c is not None]
        return cls(len(pairs), len(decided), sum(1 for c, r in decided if c == r))
