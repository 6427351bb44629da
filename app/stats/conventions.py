"""Scoring conventions as a registry: every toolkit's rule for turning a judge's samples into an
accuracy, each a named :class:`Convention` citing the file and the rule it follows.

The same vote table (``app.judge.votes``: per item, one cell per sample holding the response it
names, a tie, unparsed, failed or missing) goes through every convention; ``app.stats.scores``
turns each one's :class:`Decision` into the typed figures (overall, macro, per category, …). What
they share: an item is *scored* when the run stored a sample for it, some sample is present (not
failed, not missing — an item whose samples all failed is a failure of the infrastructure, not
of the judge) and its target names a response. Where a convention needs data an item does not
have (an id's several pairs for ACC+), it scores what it can and says ``None`` ("n/a") with a note.

``official`` is an alias of ``vlrewardbench`` (the name the CLI's ``--vote`` and stored item
verdicts use).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..judge.votes import ERROR, decide_counts
from ..records import CONVENTION_ALIASES, SCORING_CONVENTIONS
from .data import TIE

#: How a convention's headline is read from its figures: ``overall`` = correct / decided
#: (undecided excluded), ``overall_all`` = correct / scored (undecided counted wrong),
#: ``macro_all`` = the mean over categories of correct / scored.
HEADLINES = ("overall", "overall_all", "macro_all")


@dataclass(frozen=True)
class ScoringInput:
    """What a convention reads, item-aligned. ``votes``: items × vote cells (``step`` cells per
    sample: 2 in both-orders runs); ``target``: the response each item should get (``TIE`` of
    ``app.stats.data`` for a tie target, NaN none); ``base``: the items every convention may
    score (judged, some sample present, not failed); ``signal``: items × responses, how strongly
    the samples favour each response (pointwise: the mean score; pairwise: the share of present
    samples naming it), NaN where nothing says; ``first_shown``: items × vote cells, the
    response shown first; ``groups``: the dataset id per item (None: unknown)."""

    votes: np.ndarray
    target: np.ndarray
    base: np.ndarray
    names_response: np.ndarray
    step: int
    k: int
    n_responses: np.ndarray
    signal: np.ndarray
    first_shown: np.ndarray | None = None
    groups: np.ndarray | None = None
    #: ``groups`` numbered (:func:`group_codes`), when the caller has them already (every run
    #: of a project shares them); None: numbered from ``groups`` where a convention needs them.
    group_codes: np.ndarray | None = None
    #: What several conventions read, computed once per input (:meth:`first`, :meth:`counts_at`).
    _memo: dict[object, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def first(self) -> tuple[np.ndarray, np.ndarray]:
        """:func:`first_present` of ``votes``, computed once (four conventions read it)."""
        if "first" not in self._memo:
            self._memo["first"] = first_present(self.votes)
        cell, column = self._memo["first"]
        return cell.copy(), column

    def counts_at(self, column: int) -> tuple[np.ndarray, np.ndarray]:
        """Votes per response (items × responses) and samples present per item over the cells
        ``0 … column``: ``vote_counts(votes, cumulative=True)[:, column]`` and
        ``present_counts(votes, cumulative=True)[:, column]``, without the cumulative table."""
        key = ("counts", column)
        if key not in self._memo:
            v = np.asarray(self.votes, dtype=float)
            if "top" not in self._memo:  # responses counted: as vote_counts, over the whole table
                top = np.fmax.reduce(v, axis=None) if v.size else np.nan
                self._memo["top"] = 0 if np.isnan(top) or top < 0 else int(top) + 1
            n = int(self._memo["top"])
            head = v[:, : column + 1]
            counts = (
                np.stack([(head == r).sum(axis=1, dtype=np.int32) for r in range(n)], axis=1)
                if n
                else np.zeros((len(v), 0), dtype=np.int32)
            )
            present = (~np.isnan(head) & (head != ERROR)).sum(axis=1, dtype=np.int32)
            self._memo[key] = (counts, present)
        counted: tuple[np.ndarray, np.ndarray] = self._memo[key]
        return counted

    def codes(self) -> np.ndarray | None:
        """``group_codes``, else ``groups`` numbered once; None without groups."""
        if self.group_codes is not None:
            return self.group_codes
        if self.groups is None:
            return None
        if "codes" not in self._memo:
            self._memo["codes"] = group_codes(self.groups)
        codes: np.ndarray = self._memo["codes"]
        return codes


def group_codes(groups: np.ndarray) -> np.ndarray:
    """Each item's group as a number (0, 1, … in order of first appearance; equal ids, equal
    numbers), so that per-group counts are ``bincount``s."""
    codes: dict[object, int] = {}
    values = np.asarray(groups, dtype=object).tolist()
    if len(set(values)) == len(values):  # every id once (one pair each): its position
        return np.arange(len(values), dtype=np.int64)
    return np.fromiter((codes.setdefault(g, len(codes)) for g in values), dtype=np.int64, count=len(values))


@dataclass(frozen=True)
class Decision:
    """A convention's reading of a run: ``verdict`` per item (a response index, ``TIE``, NaN =
    undecided), the items it ``scored``, ``credit`` per item where it is not simply verdict ==
    target (partial credit), ``k_curve`` verdicts over the first k samples (vote conventions
    only), named ``extra`` figures and ``notes`` on what it could not reproduce."""

    verdict: np.ndarray
    scored: np.ndarray
    credit: np.ndarray | None = None
    k_curve: dict[int, np.ndarray] = field(default_factory=dict)
    extra: dict[str, float | None] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Convention:
    """One toolkit's scoring rule. ``source``: the file the rule is read from; ``rule``: what it
    does; ``differs``: what a user sees differ from the other conventions; ``headline``: which
    figure the toolkit reports (:data:`HEADLINES`)."""

    name: str
    toolkit: str
    source: str
    rule: str
    differs: str
    headline: str
    decide: Callable[[ScoringInput], Decision]
    uses_ties: bool = False  # the with/without-ties split of a tie-vote decision applies


K_CURVE = (1, 3, 5, 7, 9)


# -- shared pieces -------------------------------------------------------------------------------


def _majority(inp: ScoringInput, convention: str) -> Decision:
    """A K-vote over the present samples (``official`` = cal.py's majority, or ``plurality``),
    with the K-curve over the first k samples."""
    width = inp.votes.shape[1]
    if not width:
        return Decision(np.full(len(inp.votes), np.nan), inp.base & inp.names_response)
    counts, present = inp.counts_at(width - 1)
    verdict = decide_counts(counts, convention, present)
    curve = {}
    for k in (k for k in K_CURVE if k <= inp.k):
        columns = min(k * inp.step, width)
        if columns == width:  # every sample: the verdict itself
            curve[k] = verdict.copy()
            continue
        counts, present = inp.counts_at(columns - 1)
        curve[k] = decide_counts(counts, convention, present)
    return Decision(verdict, inp.base & inp.names_response, k_curve=curve)


def first_present(votes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item the first present sample's cell (a response, ``TIE`` or ``UNPARSED``; NaN when
    none) and its column (-1 when none): toolkits that score one generation per item."""
    v = np.asarray(votes, dtype=float)
    here = ~np.isnan(v) & (v != ERROR)
    column = np.where(here.any(axis=1), here.argmax(axis=1), -1) if v.shape[1] else np.full(len(v), -1)
    cell = np.where(column >= 0, v[np.arange(len(v)), np.maximum(column, 0)] if v.shape[1] else np.nan, np.nan)
    return cell, column


def _response_or_nan(cell: np.ndarray) -> np.ndarray:
    return np.where(cell >= 0, cell, np.nan)


# -- the conventions -----------------------------------------------------------------------------


def _vlrewardbench(inp: ScoringInput) -> Decision:
    """VL-RewardBench cal.py: an item goes to the response named by more than half of the
    samples present (unparsed and tied ones count, failed and missing ones do not); no majority
    leaves it out of the accuracy."""
    return _majority(inp, "official")


def _plurality(inp: ScoringInput) -> Decision:
    """PairScope's plurality: the response named most often among the samples naming one; a
    tied top count is undecided."""
    return _majority(inp, "plurality")


def _vlmevalkit(inp: ScoringInput) -> Decision:
    """VLMEvalKit's VLRewardBench: one generation per item (the first present sample); an
    answer naming no response scores 0 (undecided counted wrong)."""
    cell, _ = inp.first()
    return Decision(
        _response_or_nan(cell),
        inp.base & inp.names_response,
        notes=(
            "one generation per item (the first present sample); VLMEvalKit re-reads every answer with an LLM"
            " judge — PairScope's parser stands in",
        ),
    )


def _lmms_eval(inp: ScoringInput) -> Decision:
    """lmms-eval's vl_rewardbench: one generation per item; an unmatched answer is re-parsed by
    an LLM, else random.choice([1, 2]) — here its expected credit 0.5; the score is the macro
    average over categories."""
    cell, _ = inp.first()
    verdict = _response_or_nan(cell)
    scored = inp.base & inp.names_response
    unparsed = scored & np.isnan(verdict)
    credit = np.where(verdict == inp.target, 1.0, 0.0)
    credit[unparsed] = 0.5  # random.choice([1, 2]) unseeded: its expected credit
    verdict = np.where(unparsed, -9.0, verdict)  # decided (by the coin), never equal to a target
    return Decision(
        verdict,
        scored,
        credit=credit,
        notes=(
            "unmatched text goes to an LLM re-parse (gpt-5-nano) in lmms-eval; PairScope has none, so what its"
            " parser leaves unparsed gets lmms-eval's fallback random.choice([1, 2]), counted at its expected"
            " credit 0.5",
            "order rule: lmms-eval shows the responses in the order sum(len(response)) % 2 picks; PairScope's"
            " samples keep their own seeded order (see position bias), so this is not reproduced",
        ),
    )


MMRB_SEED = 123


def _mmrb(inp: ScoringInput) -> Decision:
    """Multimodal RewardBench's 2_get_accuracy.py: ``[[A]]``/``[[B]]``, else a coin flip
    (``random.seed(123)``, ``'A' if random.random() < 0.5``), one draw per unmatched answer in
    file order; A is the response shown first. Every item is decided."""
    cell, column = inp.first()
    verdict = _response_or_nan(cell)
    scored = inp.base & inp.names_response
    rng = random.Random(MMRB_SEED)  # 2_get_accuracy.py: random.seed(123), one draw per unmatched answer
    coin = np.flatnonzero(scored & np.isnan(verdict))  # in item order, as the file's lines
    pick_a = np.array([rng.random() < 0.5 for _ in range(len(coin))], dtype=bool)
    first = np.full(len(coin), np.nan)
    if inp.first_shown is not None:
        col = column[coin]
        shown = (col >= 0) & (col < inp.first_shown.shape[1])
        first[shown] = inp.first_shown[coin[shown], col[shown]]
    first = np.where(np.isnan(first), 0.0, first)
    # "B" names no single response of a 3+ item: wrong (-9)
    other = np.where(inp.n_responses[coin] == 2, 1.0 - first, -9.0)
    verdict[coin] = np.where(pick_a, first, other)
    return Decision(
        verdict,
        scored,
        notes=(f"unparsed answers are coin flips ('A' if random.random() < 0.5), seed {MMRB_SEED}, in item order",),
    )


def _mm_rlhf(inp: ScoringInput) -> Decision:
    """MM-RLHF-RewardBench: Accuracy over pairs (one judgement each, undecided wrong) and ACC+
    over ids (an id counts when every one of its pairs is right); ACC+ is n/a when no id has
    two pairs or the ids are unknown."""
    cell, _ = inp.first()
    verdict = _response_or_nan(cell)
    scored = inp.base & inp.names_response
    extra: dict[str, float | None] = {"acc_plus": None, "acc_plus_groups": None}
    notes = ["one judgement per pair (the first present sample); undecided counts wrong"]
    codes = inp.codes()
    if codes is None:
        notes.append("ACC+ n/a: the items' dataset ids are not known")
    else:
        group = codes[scored]  # each id's number (every run of a project shares them)
        right = (verdict == inp.target)[scored]
        size = int(codes.max()) + 1 if len(codes) else 0
        pairs = np.bincount(group, minlength=size)
        wrong = np.bincount(group, weights=~right, minlength=size)
        ids = int(np.count_nonzero(pairs))  # the ids with a scored pair
        if np.any(pairs > 1):
            extra["acc_plus"] = float(np.sum((wrong == 0) & (pairs > 0))) / ids
            extra["acc_plus_groups"] = float(ids)
        else:
            notes.append("ACC+ n/a: no id has two or more pairs")
    return Decision(verdict, scored, extra=extra, notes=tuple(notes))


def _rewardbench2(inp: ScoringInput) -> Decision:
    """RewardBench 2: per prompt 1 / #responses tied at the top when the reference is among
    them, else 0 (best-of-4 there, any N here); the Ties subset's score is n/a."""
    scored = inp.base & inp.names_response
    s = inp.signal
    has = ~np.all(np.isnan(s), axis=1) if s.size else np.zeros(len(s), bool)
    top = np.nanmax(np.where(np.isnan(s), -np.inf, s), axis=1) if s.size else np.zeros(len(s))
    at_top = (s == top[:, None]) & ~np.isnan(s)
    n_top = at_top.sum(axis=1)
    rows = np.arange(len(s))
    ref = np.where(np.isfinite(inp.target) & (inp.target >= 0) & (inp.target < s.shape[1]), inp.target, 0).astype(int)
    ref_top = at_top[rows, ref] if s.size else np.zeros(len(s), bool)
    credit = np.where(has & ref_top, 1.0 / np.maximum(n_top, 1), 0.0)
    verdict = np.where(has & (n_top == 1), np.argmax(at_top, axis=1).astype(float), np.nan)
    verdict = np.where(has & (n_top > 1), TIE, verdict)
    verdict = np.where(has, verdict, -9.0)  # nothing said: scored 0, as a reward model's NaN score would be
    return Decision(
        verdict,
        scored,
        credit=credit,
        extra={"ties_score": None},
        notes=(
            "credit 1/#responses tied at the top score when the reference is among them (results = 1/np.sum(scores"
            " == max) if the chosen one is at max); best-of-4 on RewardBench 2, any N here",
            "Ties score n/a: it needs RewardBench 2's Ties subset (several correct answers per prompt)",
        ),
    )


def tie_calibrated_accuracy(h: np.ndarray, m: np.ndarray) -> tuple[float | None, float | None, np.ndarray]:
    """VideoAlign's ``calc_accuracy_with_ties`` (tie calibration, arXiv:2305.14324) on human
    labels ``h`` (1, -1, 0 = tie) and model margins ``m``: the pairs sorted by |m| (stably, as
    Python's ``sorted``) become model ties one at a time; a pair is right when both tie or the
    signs agree; the best accuracy seen (the first, by its strict ``>``) is the result. Returns
    ``(accuracy, ε = |m| of the last pair made a tie, which pairs are model ties)``."""
    h, m = np.asarray(h, dtype=float), np.asarray(m, dtype=float)
    ties = np.zeros(len(h), dtype=bool)
    if not len(h):
        return None, None, ties
    order = np.argsort(np.abs(m), kind="stable")
    hs, ms = h[order], m[order]
    consistent = (hs != 0) & (hs * ms > 0)
    acc = (np.cumsum(hs == 0) + consistent.sum() - np.cumsum(consistent)) / len(h)
    best = int(np.argmax(acc))
    ties[order[: best + 1]] = True
    return float(acc[best]), float(abs(ms[best])), ties


def _videoalign(inp: ScoringInput) -> Decision:
    """VideoAlign's calc_accuracy.py on two-response items: accuracy with ties by tie
    calibration over response and tie targets, and without ties over response targets."""
    two = inp.n_responses == 2
    s = inp.signal
    has = two & ~np.isnan(s[:, 0]) & ~np.isnan(s[:, 1]) if s.shape[1] >= 2 else np.zeros(len(s), bool)
    is_tie = inp.target == TIE
    mask = inp.base & has & (inp.names_response | is_tie)
    m = np.where(has, (s[:, 0] if s.shape[1] else 0) - (s[:, 1] if s.shape[1] > 1 else 0), 0.0)
    h = np.where(is_tie, 0.0, np.where(inp.target == 0, 1.0, -1.0))
    with_ties, eps, model_ties = tie_calibrated_accuracy(h[mask], m[mask])
    strict = mask & (h != 0)
    without = float((h[strict] * m[strict] > 0).mean()) if strict.any() else None
    verdict = np.where(m > 0, 0.0, np.where(m < 0, 1.0, -9.0))  # m = 0 off the calibrated ties: wrong, as D
    verdict[np.flatnonzero(mask)[model_ties]] = TIE
    return Decision(
        verdict,
        mask,
        extra={"with_ties": with_ties, "without_ties": without, "tie_threshold": eps},
        notes=(
            "m = signal(response 0) − signal(response 1) (pointwise: mean score; pairwise: vote share); with ties ="
            " the tie-calibrated accuracy over items with a response or tie target, without ties = share of"
            " response targets whose sign m agrees with (a model tie counts wrong); items whose samples"
            " say nothing (all unparsed) have no m and are left out",
        ),
    )


def _entry(
    name: str, toolkit: str, source: str, rule: str, differs: str, headline: str, fn: Callable, ties: bool = False
) -> Convention:
    return Convention(name, toolkit, source, rule, differs, headline, fn, ties)


REGISTRY: dict[str, Convention] = {
    c.name: c
    for c in (
        _entry(
            "vlrewardbench",
            "VL-RewardBench",
            "github vl-rewardbench/VL_RewardBench cal.py (classify, distribution_dataset)",
            "item right when agree > total_count/2, wrong when reject > total_count/2 (total_count = the samples"
            " present: agree + reject + doesntMatch), else left out; accuracy = agree / (agree + reject);"
            " macro over general, hallucination, reasoning",
            "undecided items leave the denominator; failed samples are not counted in K",
            "overall",
            _vlrewardbench,
            True,
        ),
        _entry(
            "vlmevalkit",
            "VLMEvalKit",
            "github open-compass/VLMEvalKit vlmeval/dataset (class VLRewardBench, VLRewardBench_eval_answer)",
            "one generation per item, re-read by an LLM ('Answer 1'/'Answer 2' in its reply); unparsed scores"
            " 0.0; Overall Consistency = sum of scores / all items, Macro Accuracy = mean of category scores",
            "undecided items count wrong (denominator = every scored item); K = 1",
            "overall_all",
            _vlmevalkit,
        ),
        _entry(
            "lmms-eval",
            "lmms-eval",
            "github EvolvingLMMs-Lab/lmms-eval lmms_eval/tasks/vl_rewardbench/utils.py",
            "order: answers swapped when sum(len(response)) % 2 == 1; unmatched text re-parsed by an LLM, else"
            " random.choice([1, 2]); the reported score is the macro average over categories",
            "headline is the macro average; unparsed items get a coin (credit 0.5); K = 1",
            "macro_all",
            _lmms_eval,
        ),
        _entry(
            "mmrb",
            "Multimodal RewardBench",
            "github facebookresearch/multimodal_rewardbench scripts/2_get_accuracy.py",
            "[[A]] / [[B]] in the output, else 'A' if random.random() < 0.5 (random.seed(123)); acc = correct / all",
            "unparsed answers are seeded coin flips, so every item is decided; K = 1",
            "overall_all",
            _mmrb,
        ),
        _entry(
            "mm-rlhf",
            "MM-RLHF-RewardBench",
            "MM-RLHF (arXiv:2502.10391) MM-RLHF-RewardBench: Acc over pairs, Acc+ over questions",
            "Accuracy = correct pairs / all pairs; ACC+ = share of ids whose every pair is right",
            "ACC+ needs several pairs per id (n/a otherwise); undecided counts wrong; K = 1",
            "overall_all",
            _mm_rlhf,
        ),
        _entry(
            "rewardbench2",
            "RewardBench 2",
            "github allenai/reward-bench rewardbench/utils.py reroll_and_score_dataset (scripts/run_v2.py)",
            "per prompt: 1 / #completions tied at the top score when the chosen one is at the top, else 0"
            " (best-of-4); the Ties subset has its own score",
            "a tie at the top gives partial credit instead of undecided",
            "overall_all",
            _rewardbench2,
        ),
        _entry(
            "videoalign",
            "VideoAlign (VideoGen-RewardBench)",
            "github KwaiVGI/VideoAlign calc_accuracy.py (calc_accuracy_with_ties, calc_accuracy_without_ties)",
            "m = score(A) − score(B); with ties: tie calibration (best ε, |m| ≤ ε is a tie); without ties:"
            " C / (C + D + Tm) over pairs the human did not tie",
            "tie targets count; a threshold makes near-equal signals ties",
            "overall_all",
            _videoalign,
        ),
        _entry(
            "plurality",
            "PairScope",
            "app/judge/votes.py (decide_counts, 'plurality')",
            "the response named most often among the samples naming one; a tied top count is undecided",
            "no majority needed: fewer undecided items at K > 1",
            "overall",
            _plurality,
            True,
        ),
    )
}
assert tuple(REGISTRY) == SCORING_CONVENTIONS, "records.SCORING_CONVENTIONS lists the registry in order"


def resolve(name: str) -> str:
    """A convention's registry name from a name or an alias (``official`` → ``vlrewardbench``);
    ``ValueError`` naming the choices for an unknown one."""
    name = CONVENTION_ALIASES.get(name, name)
    if name not in REGISTRY:
        known = ", ".join([*REGISTRY, *CONVENTION_ALIASES])
        raise ValueError(f"scoring convention must be one of {known}, got {name!r}")
    return name


__all__ = [
    "HEADLINES",
    "MMRB_SEED",
    "REGISTRY",
    "Convention",
    "Decision",
    "ScoringInput",
    "first_present",
    "group_codes",
    "resolve",
    "tie_calibrated_accuracy",
]
