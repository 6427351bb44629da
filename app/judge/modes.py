"""Judging modes: each one owns how it plans an item's samples, renders the prompt, parses an
answer, turns stored samples into item votes and reads a sample back in the panels.

``MODES`` is the registry; nothing outside this module branches on a mode's name
(``tests/test_mode_names.py`` fails on a comparison with one, or a ``case`` on one).

- ``pairwise``: the judge sees all responses in a seeded order and names the better one.
- ``pointwise``: the judge scores each response alone; per sample, the unique top score wins.
- ``step``: the judge scores each step of one response (process reward); it casts no
  preference votes, so it has no item verdict (its figures are the step metrics).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pairscope.models.parsing import pairwise_parser, score_parser, step_parser
from pairscope.models.prompts import PromptTemplate, render_pairwise, render_pointwise, render_steps

from .votes import ERROR, TIE, UNPARSED, ItemVerdict

if TYPE_CHECKING:
    from ..records import Item
    from ..store import VerdictRecord


@dataclass(frozen=True)
class Parsed:
    """What one generation says, with ``choice`` as a response index (never a position)."""

    parsed: bool
    choice: int | None = None
    scores: tuple[float | None, ...] | None = None
    span: tuple[int, int] | None = None  # the characters that decided


@dataclass
class Samples:
    """A run's stored samples, item-aligned: arrays items × stored sample index.
    ``ok``: stored without error; ``choice``: response index picked (NaN: none);
    ``score``: the first parsed score (NaN: none)."""

    stored: np.ndarray
    ok: np.ndarray
    parsed: np.ndarray
    choice: np.ndarray
    score: np.ndarray

    @classmethod
    def of_items(cls, per_item: Sequence[Sequence[VerdictRecord]]) -> Samples:
        """Several items' samples (one row each, in order) from their stored verdicts."""
        width = max((v.sample_idx for verdicts in per_item for v in verdicts), default=-1) + 1
        rows = len(per_item)
        stored, ok, parsed = (np.zeros((rows, width), dtype=bool) for _ in range(3))
        choice, score = np.full((rows, width), np.nan), np.full((rows, width), np.nan)
        for i, verdicts in enumerate(per_item):
            for v in verdicts:
                s = v.sample_idx
                stored[i, s], ok[i, s], parsed[i, s] = True, v.error is None, v.parsed and v.error is None
                if v.choice is not None:
                    choice[i, s] = v.choice
                if v.scores and v.scores[0] is not None:
                    score[i, s] = v.scores[0]
        return cls(stored, ok, parsed, choice, score)


def _fit(a: np.ndarray, width: int, fill: bool | float) -> np.ndarray:
    """``a`` cut or padded with ``fill`` to ``width`` columns."""
    if a.shape[1] >= width:
        return a[:, :width]
    return np.concatenate([a, np.full((a.shape[0], width - a.shape[1]), fill, dtype=a.dtype)], axis=1)


#: The most samples per item a run takes (``--k``, an imported file's ``sample`` indices): the
#: vote tables are items × K wide (VL-RewardBench votes K = 1..9).
MAX_K = 100


def k_problem(k: object) -> str | None:
    """Why ``k`` is no run's K, or ``None``."""
    if isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= MAX_K:
        return None
    return f"must be a whole number from 1 to {MAX_K}, got {k}"


#: ``(sample index, order shown)`` for each sample an item gets.
Plan = list[tuple[int, tuple[int, ...]]]
#: Names a response (by index) as the reviewer sees it.
Screen = Callable[[int], str]


class JudgingMode:
    """Base of the modes; see the module docstring."""

    name: str = ""
    votes_on_preference: bool = True  # its samples vote for a response (step runs score steps)
    shows_order: bool = False  # the judge sees several responses in an order (position bias applies)

    def plan(self, ext_id: str, n: int, k: int, both_orders: bool, seed: int) -> Plan:
        """``(sample index, order shown)`` for every sample of an item with ``n`` responses."""
        raise NotImplementedError

    def render(self, template: PromptTemplate, item: Item, order: tuple[int, ...]) -> str:
        raise NotImplementedError

    def parse(self, text: str, item: Item, order: tuple[int, ...], parser: str = "lenient") -> Parsed:
        """What ``text`` says, read by the ``parser`` profile (``lenient`` or ``strict``)."""
        raise NotImplementedError

    def planned_votes(self, k: int, both_orders: bool) -> int:
        """K of the official majority: the vote samples each item is planned to get."""
        return k

    def vote_table(self, samples: Samples, n_responses: np.ndarray, k: int, both_orders: bool) -> np.ndarray | None:
        """items × planned vote samples (see ``votes``); ``None`` when the mode casts no votes."""
        return None

    def item_verdicts(
        self,
        item_ids: Sequence[int],
        n_responses: Sequence[int],
        per_item: Sequence[Sequence[VerdictRecord]],
        k: int,
        both_orders: bool,
    ) -> list[ItemVerdict] | None:
        """The verdicts of a run on these items (in order) from each one's stored verdicts,
        decided as one vote table (``None``: the mode casts no votes)."""
        table = self.vote_table(Samples.of_items(per_item), np.asarray(n_responses), k, both_orders)
        if table is None:
            return None
        errors = [tuple(v.error for v in sorted(vs, key=lambda v: v.sample_idx) if v.error) for vs in per_item]
        pairs = self.planned_votes(k, both_orders) == 2 * k  # samples come as order pairs (2j, 2j+1)
        return ItemVerdict.from_table(item_ids, table, pairs, errors)

    def item_verdict(
        self, item_id: int, n_responses: int, verdicts: Sequence[VerdictRecord], k: int, both_orders: bool
    ) -> ItemVerdict | None:
        """The verdict of a run on one item from its stored verdicts (``None``: no votes)."""
        verdicts_ = self.item_verdicts([item_id], [n_responses], [verdicts], k, both_orders)
        return None if verdicts_ is None else verdicts_[0]

    def sample_reading(self, verdict: VerdictRecord, screen: Screen) -> str:
        """How one stored sample reads in the review/judge panels; ``screen(index)`` names a
        response as the reviewer sees it."""
        if verdict.error:
            return f"error: {verdict.error}"
        if not verdict.parsed:
            return "unparsed"
        return self._reading(verdict, screen)

    def _reading(self, verdict: VerdictRecord, screen: Screen) -> str:
        raise NotImplementedError

    def decisive_span(self, verdict: VerdictRecord, item: Item, parser: str = "lenient") -> tuple[int, int] | None:
        """Characters of the raw output that decided the sample (highlighted in review)."""
        if not verdict.raw_output or verdict.error:
            return None
        return self.parse(verdict.raw_output, item, verdict.order_shown, parser).span


class Pairwise(JudgingMode):
    name = "pairwise"
    shows_order = True

    def plan(self, ext_id: str, n: int, k: int, both_orders: bool, seed: int) -> Plan:
        """Sample ``j`` shuffles the responses with ``Random(f"{seed}:{ext_id}:{j}")``; with
        ``both_orders`` it is judged twice, as samples ``2j`` (that order) and ``2j+1`` (reversed)."""
        if n < 2:
            return []  # a single (step-wise) response has nothing to compare with
        plan: Plan = []
        for j in range(k):
            order = list(range(n))
            random.Random(f"{seed}:{ext_id}:{j}").shuffle(order)
            if both_orders:
                plan += [(2 * j, tuple(order)), (2 * j + 1, tuple(reversed(order)))]
            else:
                plan.append((j, tuple(order)))
        return plan

    def render(self, template: PromptTemplate, item: Item, order: tuple[int, ...]) -> str:
        return render_pairwise(template, item.prompt, [item.responses[i].text for i in order])

    def parse(self, text: str, item: Item, order: tuple[int, ...], parser: str = "lenient") -> Parsed:
        v = pairwise_parser(parser)(text, len(order))
        choice = order[v.choice] if v.parsed and v.choice is not None else None
        return Parsed(v.parsed, choice, None, v.span)

    def planned_votes(self, k: int, both_orders: bool) -> int:
        return 2 * k if both_orders else k

    def vote_table(self, samples: Samples, n_responses: np.ndarray, k: int, both_orders: bool) -> np.ndarray:
        width = self.planned_votes(k, both_orders)
        stored = _fit(samples.stored, width, False)
        ok = _fit(samples.ok, width, False)
        parsed = _fit(samples.parsed, width, False)
        choice = _fit(samples.choice, width, np.nan)
        said = np.where(np.isnan(choice), TIE, choice)
        return np.where(stored, np.where(ok, np.where(parsed, said, UNPARSED), ERROR), np.nan)

    def _reading(self, verdict: VerdictRecord, screen: Screen) -> str:
        return screen(verdict.choice) if verdict.choice is not None else "tie"


class Pointwise(JudgingMode):
    name = "pointwise"

    def plan(self, ext_id: str, n: int, k: int, both_orders: bool, seed: int) -> Plan:
        """One generation per response per sample: sample ``j`` of response ``r`` is ``j·n + r``."""
        return [(j * n + r, (r,)) for j in range(k) for r in range(n)]

    def render(self, template: PromptTemplate, item: Item, order: tuple[int, ...]) -> str:
        return render_pointwise(template, item.prompt, item.responses[order[0]].text)

    def parse(self, text: str, item: Item, order: tuple[int, ...], parser: str = "lenient") -> Parsed:
        s = score_parser(parser)(text)
        return Parsed(s.parsed, order[0] if s.parsed else None, (s.score,), s.span)

    def vote_table(self, samples: Samples, n_responses: np.ndarray, k: int, both_orders: bool) -> np.ndarray:
        """Sample ``j`` votes for the unique top of its n scores; a shared top score is a tie;
        a failed score makes it an error, an unparsed one unparsed, a missing one missing."""
        votes = np.full((len(n_responses), k), np.nan)
        for n in np.unique(n_responses):
            if n < 2:
                continue  # nothing to compare
            rows = np.flatnonzero(n_responses == n)
            shape = (len(rows), k, int(n))
            stored = _fit(samples.stored[rows], k * n, False).reshape(shape)
            ok = _fit(samples.ok[rows], k * n, False).reshape(shape)
            parsed = _fit(samples.parsed[rows], k * n, False).reshape(shape) & ok
            score = _fit(samples.score[rows], k * n, np.nan).reshape(shape)
            valid = parsed & ~np.isnan(score)
            s = np.where(valid, score, -np.inf)
            best = s.max(axis=2, keepdims=True)
            unique = (s == best).sum(axis=2) == 1
            vote = np.where(unique, s.argmax(axis=2), TIE)
            vote = np.where(valid.all(axis=2), vote, UNPARSED)
            vote = np.where(stored.all(axis=2), vote, np.nan)
            vote = np.where((stored & ~ok).any(axis=2), ERROR, vote)
            votes[rows] = vote
        return votes

    def _reading(self, verdict: VerdictRecord, screen: Screen) -> str:
        score = verdict.scores[0] if verdict.scores else None
        return f"{screen(verdict.order_shown[0])} scored {score:g}" if score is not None else "unparsed"


class Step(JudgingMode):
    name = "step"
    votes_on_preference = False

    def plan(self, ext_id: str, n: int, k: int, both_orders: bool, seed: int) -> Plan:
        return [(j * n + r, (r,)) for j in range(k) for r in range(n)]

    def render(self, template: PromptTemplate, item: Item, order: tuple[int, ...]) -> str:
        response = item.responses[order[0]]
        return render_steps(template, item.prompt, [s.text for s in response.steps] or [response.text])

    def parse(self, text: str, item: Item, order: tuple[int, ...], parser: str = "lenient") -> Parsed:
        st = step_parser(parser)(text, len(item.responses[order[0]].steps) or 1)
        return Parsed(st.parsed, order[0], tuple(st.scores), st.span)

    def _reading(self, verdict: VerdictRecord, screen: Screen) -> str:
        scores = ", ".join("?" if s is None else f"{s:g}" for s in (verdict.scores or ()))
        return f"{screen(verdict.order_shown[0])} step scores {scores}"


MODES: dict[str, JudgingMode] = {m.name: m for m in (Pairwise(), Pointwise(), Step())}


def get_mode(name: str) -> JudgingMode:
    """The registered mode called ``name``; ``ValueError`` lists the known ones."""
    try:
        return MODES[name]
    except KeyError:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {name!r}") from None
