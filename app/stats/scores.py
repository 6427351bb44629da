"""A judge run's scores as one typed record, produced by one function (:func:`score_run`) and
read by attribute everywhere: the ``stats`` text, the dashboard, the figures, the research CSV,
the window's statistics view and ``stats --json`` (:func:`to_json`, which keeps the documented
keys, in :mod:`.scores_json`). The fields are documented once, in docs/STATISTICS.md ("The
typed result").

Every convention of :mod:`.conventions` scores the same vote table; each gives a
:class:`ConventionScores` whose figures are :class:`~app.judge.votes.Accuracy` records
(scored / decided / correct, both denominators, Wilson intervals).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..judge.modes import Samples, get_mode
from ..judge.votes import ERROR, UNPARSED, Accuracy, decide, decide_counts, present_counts
from ..judge.votes import TIE as TIE_VOTE
from ..labeling.schema import error_kind_order, kind_order_key
from .conventions import REGISTRY, ScoringInput, group_codes, resolve
from .data import BOTH_BAD, TIE, RunData, StatsData

if TYPE_CHECKING:
    from ..store import Store

DEFAULT = "vlrewardbench"


@dataclass(frozen=True)
class TiesAccuracy:
    """Accuracy with ties counted and without (video reward benchmarks report both); each an
    :class:`Accuracy` whose ``scored`` = ``decided`` = its n."""

    with_ties: Accuracy
    without_ties: Accuracy


@dataclass(frozen=True)
class BestOfN:
    """Best-of-N over scored items with 3+ responses: the run's decision as the pick (no pick
    counts wrong); the baselines a random pick and always the first response."""

    accuracy: Accuracy
    random: float | None
    first_response: float | None

    @property
    def items(self) -> int:
        return self.accuracy.scored

    @property
    def gain_over_random(self) -> float | None:
        a = self.accuracy.accuracy_all
        return None if a is None or self.random is None else a - self.random

    @property
    def gain_over_first(self) -> float | None:
        a = self.accuracy.accuracy_all
        return None if a is None or self.first_response is None else a - self.first_response


@dataclass(frozen=True)
class ConventionScores:
    """One convention's figures of a run. ``per_source`` is keyed as VL-RewardBench's cal.py
    keys datasets (the folder of ``image_path``: rlaif-v, rlhf-v, povid, vlfeedback,
    wildvision-battle, reasoning_tasks); ``per_query_source`` by the row's ``query_source``.
    ``k_curve[k]``: the vote over the first k samples (vote conventions). ``extra``: the
    convention's own figures (ACC+, with/without ties, …), ``None`` = n/a; ``notes`` say why."""

    name: str
    headline_rule: str
    overall: Accuracy
    per_category: dict[str, Accuracy]
    per_source: dict[str, Accuracy]
    per_query_source: dict[str, Accuracy]
    per_error_type: dict[str, Accuracy]
    best_of_n: BestOfN
    ties: TiesAccuracy | None = None
    k_curve: dict[int, Accuracy] = field(default_factory=dict)
    extra: dict[str, float | None] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    verdict: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False, compare=False)

    @property
    def macro_categories(self) -> list[str]:
        return [c for c, a in self.per_category.items() if a.accuracy is not None]

    @property
    def macro_all_categories(self) -> list[str]:
        return [c for c, a in self.per_category.items() if a.accuracy_all is not None]

    @property
    def macro(self) -> float | None:
        """Unweighted mean of per-category accuracy (undecided excluded) where defined."""
        used = [a for c in self.macro_categories if (a := self.per_category[c].accuracy) is not None]
        return float(np.mean(used)) if used else None

    @property
    def macro_all(self) -> float | None:
        """Unweighted mean of per-category accuracy with undecided counted wrong."""
        used = [a for c in self.macro_all_categories if (a := self.per_category[c].accuracy_all) is not None]
        return float(np.mean(used)) if used else None

    @property
    def headline(self) -> float | None:
        """The figure the toolkit reports (:data:`.conventions.HEADLINES`)."""
        if self.headline_rule == "overall":
            return self.overall.accuracy
        if self.headline_rule == "macro_all":
            return self.macro_all
        return self.overall.accuracy_all


@dataclass(frozen=True)
class SampleCounts:
    """Vote samples of the judged items: ``present`` (a response, a tie or unparsed text),
    ``unparsed``, ``ties`` (a judged tie or equal top scores) and ``failed``."""

    present: int
    unparsed: int
    ties: int
    failed: int


@dataclass(frozen=True)
class RunScores:
    """Everything one run's samples score to. ``judged``: items with a stored sample;
    ``scored``: judged items with some sample present and a target naming a response;
    ``failed_items``: judged items with a target whose every sample failed (left out of every
    accuracy, reported as failures). ``conventions``: registry order; empty for runs that cast
    no preference votes (``note`` says why)."""

    run_id: int
    mode: str
    frames: int | None
    k: int
    both_orders: bool
    judged: int
    scored: int
    failed_items: int
    samples: SampleCounts | None
    conventions: dict[str, ConventionScores]
    note: str | None = None
    position_consistency: float | None = None
    position_consistency_items: float | None = None
    first_position_preference: float | None = None
    human_kappa: dict[str, float | None] = field(default_factory=dict)

    @property
    def votes(self) -> bool:
        return bool(self.conventions)

    def convention(self, name: str = DEFAULT) -> ConventionScores | None:
        """A convention's scores by name or alias (``official``); ``None`` for step runs."""
        return self.conventions.get(resolve(name))

    @property
    def official(self) -> ConventionScores | None:
        return self.conventions.get("vlrewardbench")

    @property
    def plurality(self) -> ConventionScores | None:
        return self.conventions.get("plurality")


@dataclass(frozen=True)
class ItemKeys:
    """Per item (aligned with ``StatsData.item_ids``): the dataset id (an id's pairs share it)
    and cal.py's dataset (``image_path.split("/")[1]``; None without such a path). What every
    run of a project scores by (the ids numbered, the slices) is computed once per keys."""

    groups: np.ndarray
    datasets: np.ndarray
    _memo: dict[object, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def group_codes(self) -> np.ndarray:
        """:attr:`groups` numbered (:func:`.conventions.group_codes`), once."""
        if "codes" not in self._memo:
            self._memo["codes"] = group_codes(self.groups)
        return self._memo["codes"]


def cal_dataset(image_path: str | None) -> str | None:
    """VL-RewardBench cal.py's dataset of an item: ``item["image_path"].split("/")[1]``."""
    if not image_path:
        return None
    parts = image_path.replace("\\", "/").split("/")
    return parts[1] if len(parts) > 2 and parts[1] else None


def load_item_keys(store: Store, data: StatsData) -> ItemKeys:
    """The item keys of :class:`ItemKeys`, read from the store (one columnar read per table,
    :meth:`Store.item_key_columns`); an item the store no longer has gets None for both."""
    ids_csv, group_list, media_csv, refs = store.item_key_columns()
    ids, groups = _csv_ints(ids_csv), np.array(group_list, dtype=object)
    if not np.array_equal(ids, data.item_ids):  # else: the same items in the same order
        groups = _placed(data.item_ids, ids, groups)
    of_ref = {ref: cal_dataset(ref) for ref in set(refs)}  # once per distinct path
    datasets = _placed(data.item_ids, _csv_ints(media_csv), np.array([of_ref[r] for r in refs], dtype=object))
    return ItemKeys(groups, datasets)


def _csv_ints(column: str | None) -> np.ndarray:
    return np.fromstring(column, sep=",", dtype=np.int64) if column else np.zeros(0, dtype=np.int64)


def _placed(item_ids: np.ndarray, ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` (one per id of ``ids``) at their items' rows of ``item_ids``; None elsewhere."""
    out = np.full(len(item_ids), None, dtype=object)
    if not len(ids) or not len(item_ids):
        return out
    order = np.argsort(ids, kind="stable")
    at = np.minimum(np.searchsorted(ids[order], item_ids), len(ids) - 1)
    found = ids[order][at] == item_ids
    out[found] = values[order[at[found]]]
    return out


# -- the one function ----------------------------------------------------------------------------


def vote_table(data: StatsData, run: RunData) -> np.ndarray | None:
    """items × vote samples of a run (``app.judge.votes`` codes); ``None`` for modes that cast
    no preference votes."""
    mode = get_mode(run.run.mode)
    if not mode.votes_on_preference:
        return None
    stored = run.judged | ~np.isnan(run.first_shown) | run.parsed
    score = run.scores if run.scores is not None else np.full(run.choices.shape, np.nan)
    samples = Samples(stored=stored, ok=run.judged, parsed=run.parsed, choice=run.choices, score=score)
    return mode.vote_table(samples, data.n_responses, int(run.run.k), bool(run.run.both_orders))


def judged_items(run: RunData) -> np.ndarray:
    """Items with at least one stored sample, errors included."""
    return np.any(run.judged | run.parsed | ~np.isnan(run.first_shown), axis=1)


def names_response(target: np.ndarray) -> np.ndarray:
    return np.isfinite(target) & (target >= 0) & (target != TIE) & (target != BOTH_BAD)


def score_run(
    data: StatsData,
    run: RunData,
    target: np.ndarray | None = None,
    categories: Sequence[str] = (),
    keys: ItemKeys | None = None,
    conventions: Sequence[str] | None = None,
) -> RunScores:
    """Score one run against ``target`` (default the dataset reference; an adjudicated or
    annotator label array works too) under every convention (or these). ``categories`` adds
    categories to report even if no item has them; ``keys`` gives cal.py's datasets and the
    ids ACC+ groups by."""
    target = data.ref_chosen if target is None else np.asarray(target, dtype=float)
    judged = judged_items(run)
    rec = run.run
    votes = vote_table(data, run)
    common: dict[str, Any] = dict(
        run_id=int(rec.id), mode=rec.mode, frames=rec.frames, k=int(rec.k), both_orders=bool(rec.both_orders)
    )
    if votes is None:
        return RunScores(
            **common,
            judged=int(judged.sum()),
            scored=int((judged & names_response(target)).sum()),
            failed_items=0,
            samples=None,
            conventions={},
            note="step runs score steps: no preference verdicts (see the step metrics)",
        )
    present = present_counts(votes) > 0
    base = judged & present
    failed_items = judged & ~present & (votes == ERROR).any(axis=1)
    cells = votes[judged]
    samples = SampleCounts(
        present=int((~np.isnan(cells) & (cells != ERROR)).sum()),
        unparsed=int((cells == UNPARSED).sum()),
        ties=int((cells == TIE_VOTE).sum()),
        failed=int((cells == ERROR).sum()),
    )
    step = max(1, votes.shape[1] // max(1, int(rec.k)))
    inp = ScoringInput(
        votes=votes,
        target=target,
        base=base,
        names_response=names_response(target),
        step=step,
        k=int(rec.k),
        n_responses=data.n_responses,
        signal=response_signal(data, run, votes),
        first_shown=run.first_shown if run.first_shown.shape == votes.shape else None,
        groups=None if keys is None else keys.groups,
        group_codes=None if keys is None else keys.group_codes,
    )
    names = list(REGISTRY) if conventions is None else [resolve(c) for c in conventions]
    slices = _slices(data, categories, keys)
    scored_conventions = {name: _convention(data, inp, name, slices) for name in names}
    official = scored_conventions.get("vlrewardbench")
    position = _position(run)
    kappa: dict[str, float | None] = {}
    if data.labels and official is not None:
        from .agreement import judge_human_kappa

        kappa = {n: (None if v != v else float(v)) for n, v in judge_human_kappa(official.verdict, data.labels).items()}
    return RunScores(
        **common,
        judged=int(judged.sum()),
        scored=int((base & names_response(target)).sum()),
        failed_items=int((failed_items & names_response(target)).sum()),
        samples=samples,
        conventions=scored_conventions,
        human_kappa=kappa,
        position_consistency=position["position_consistency"],
        position_consistency_items=position["position_consistency_items"],
        first_position_preference=position["first_position_preference"],
    )


def response_signal(data: StatsData, run: RunData, votes: np.ndarray) -> np.ndarray:
    """items × responses: pointwise runs the mean parsed score of each response over the
    samples (sample j scores response r at stored index j·n + r, as ``Pointwise.plan`` lays
    them out); other runs the share of present samples naming each response. NaN: nothing said (every
    sample unparsed)."""
    width = int(data.n_responses.max()) if len(data.n_responses) else 0
    out = np.full((len(votes), width), np.nan)
    k = int(run.run.k)
    if run.scores is not None:
        for n in np.unique(data.n_responses):
            if n < 2:
                continue
            rows = np.flatnonzero(data.n_responses == n)
            s = run.scores[rows]
            ok = run.parsed[rows] & run.judged[rows]
            s = np.where(ok, s, np.nan)
            if s.shape[1] < k * n:
                s = np.concatenate([s, np.full((len(rows), k * n - s.shape[1]), np.nan)], axis=1)
            by = s[:, : k * n].reshape(len(rows), k, int(n))
            has = (~np.isnan(by)).any(axis=1)
            mean = np.nansum(by, axis=1) / np.maximum((~np.isnan(by)).sum(axis=1), 1)
            out[rows, : int(n)] = np.where(has, mean, np.nan)
        return out
    present = present_counts(votes)
    said = ((votes >= 0) | (votes == TIE_VOTE)).any(axis=1)  # some sample named a response or a tie
    for r in range(width):
        share = (votes == r).sum(axis=1) / np.maximum(present, 1)
        out[:, r] = np.where(said & (r < data.n_responses), share, np.nan)
    return out


@dataclass(frozen=True)
class Slice:
    """One way the items are broken down: ``names`` (sorted), ``codes`` each item's group
    (-1: in none) and ``members`` which names each group is in (groups × names; None: group j
    is name j). Error tags (several per item) group items by their tuple of tags."""

    names: list[str]
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    members: np.ndarray | None = None

    def accuracies(
        self,
        verdict: np.ndarray,
        target: np.ndarray,
        scored: np.ndarray,
        credit: np.ndarray | None,
        level: np.ndarray | None = None,
    ) -> dict[str, Accuracy]:
        """:meth:`Accuracy.count` over each name's items, counted for all names at once
        (``level``: :func:`count_levels` of the same arrays, when the caller has it)."""
        if not self.names:
            return {}
        if level is None:
            level = count_levels(verdict, target, scored)
        groups = len(self.names) if self.members is None else len(self.members)
        table = np.bincount((self.codes + 1) * 4 + level, minlength=(groups + 1) * 4).reshape(groups + 1, 4)[1:]
        tallies = [table[:, 1:].sum(axis=1), table[:, 2:].sum(axis=1), table[:, 3]]
        if self.members is not None:
            tallies = [t @ self.members.astype(np.int64) for t in tallies]
        out = {}
        if credit is not None:
            decided, inside = level >= 2, self.codes >= 0
        for j, name in enumerate(self.names):
            correct: float = int(tallies[2][j])
            if credit is not None:  # the same items' credit, summed as Accuracy.count sums it
                mine = self.codes == j if self.members is None else inside & self.members[:, j][self.codes]
                correct = float(np.asarray(credit, dtype=float)[decided & mine].sum())
            out[name] = Accuracy(int(tallies[0][j]), int(tallies[1][j]), correct)
        return out


def count_levels(verdict: np.ndarray, target: np.ndarray, scored: np.ndarray) -> np.ndarray:
    """Per item 0 (not scored) … 3 (right; right ⊆ decided ⊆ scored), for one ``bincount`` per slice."""
    decided = scored & ~np.isnan(verdict)
    return scored.astype(np.intp) + decided + (decided & (verdict == target))


#: The slices every convention is broken down by: category, source, query_source, error_type.
Slices = dict[str, Slice]


def _slices(data: StatsData, categories: Sequence[str], keys: ItemKeys | None) -> Slices:
    """The items per category, cal.py dataset, query_source and error tag; built once per
    data, categories and keys (every run of a project shares them)."""
    memo_key = ("slices", id(data), tuple(categories))
    if keys is not None:
        cached = keys._memo.get(memo_key)
        if cached is not None and cached[0] is data:
            return cached[1]
    queries = None
    if data.sources is not None and len(data.sources):
        queries = np.array([None if s is None else str(s) for s in data.sources], dtype=object)
    kinds, tag_codes, members = _tag_groups(data)
    slices = {
        "category": _coded(data.categories, categories),
        "source": _coded(keys.datasets) if keys is not None else Slice([]),
        "query_source": _coded(queries) if queries is not None else Slice([]),
        "error_type": Slice(kinds, tag_codes, members),
    }
    if keys is not None:
        keys._memo[memo_key] = (data, slices)  # data held, so its id names it while cached
    return slices


def _coded(values: np.ndarray | None, extra: Sequence[str] = ()) -> Slice:
    """Each distinct value (as ``str``, sorted; ``extra`` added) and each item's index among
    them (-1: None)."""
    if values is None:
        return Slice([])
    v = np.asarray(values, dtype=object).tolist()
    distinct = set(v) - {None}
    if not all(type(x) is str for x in distinct):
        v = [str(x) if x is not None else None for x in v]
        distinct = set(v) - {None}
    names = sorted((distinct - {"\0"}) | set(extra))
    index: dict[object, int] = {name: j for j, name in enumerate(names)}
    index[None] = index["\0"] = -1
    return Slice(names, np.fromiter(map(index.__getitem__, v), dtype=np.intp, count=len(v)))


def _convention(data: StatsData, inp: ScoringInput, name: str, slices: Slices) -> ConventionScores:
    c = REGISTRY[name]
    d = c.decide(inp)
    credit = d.credit
    scored = d.scored
    target = inp.target

    level = count_levels(d.verdict, target, scored)  # shared by the four breakdowns

    def by(kind: str) -> dict[str, Accuracy]:
        return slices[kind].accuracies(d.verdict, target, scored, credit, level)

    ties = None
    if c.uses_ties:
        tie_mask = scored | (np.isin(target, [TIE]) & inp.base)
        ties = ties_accuracy(_tie_decisions(inp, "official" if name == "vlrewardbench" else name), target, tie_mask)
    k_curve = {k: Accuracy.count(v, target, scored) for k, v in d.k_curve.items()}
    return ConventionScores(
        name=name,
        headline_rule=c.headline,
        overall=Accuracy.count(d.verdict, target, scored, credit),
        per_category=by("category"),
        per_source=by("source"),
        per_query_source=by("query_source"),
        per_error_type=by("error_type"),
        best_of_n=_best_of_n(data, d.verdict, target, scored, credit),
        ties=ties,
        k_curve=k_curve,
        extra=dict(d.extra),
        notes=d.notes,
        verdict=d.verdict,
    )


def _tie_decisions(inp: ScoringInput, convention: str) -> np.ndarray:
    """:func:`decide_with_ties` of ``inp.votes``, from the vote counts the convention counted
    already: a judged tie is one more candidate, after the responses."""
    width = inp.votes.shape[1]
    if not width:
        return decide_with_ties(inp.votes, convention)
    counts, present = inp.counts_at(width - 1)
    slot = counts.shape[1]
    ties = (np.asarray(inp.votes) == TIE_VOTE).sum(axis=1, dtype=np.int32)
    out = decide_counts(np.concatenate([counts, ties[:, None]], axis=1), convention, present)
    return np.where(out == slot, TIE, out)


def _tag_groups(data: StatsData) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The error types present (in the schema's order), each item's tuple of tags as a number,
    and which types each tuple holds (tuples × types)."""
    distinct = list(set(data.error_kinds))
    present = sorted({k for tags in distinct for k in tags}, key=kind_order_key(error_kind_order(data)))
    per_tuple = np.zeros((len(distinct), len(present)), dtype=bool)
    for j, tags in enumerate(distinct):
        per_tuple[j] = [k in tags for k in present]
    code = {tags: j for j, tags in enumerate(distinct)}
    codes = np.fromiter(map(code.__getitem__, data.error_kinds), dtype=np.intp, count=len(data.error_kinds))
    return present, codes, per_tuple


def _best_of_n(
    data: StatsData, verdict: np.ndarray, target: np.ndarray, scored: np.ndarray, credit: np.ndarray | None = None
) -> BestOfN:
    """Best-of-N over scored 3+-response items; a convention's partial ``credit`` counts as its
    overall does (RewardBench 2: 1/#ties at the top)."""
    rows = scored & (data.n_responses >= 3)
    n = int(rows.sum())
    accuracy = Accuracy.count(verdict, target, rows, credit)
    accuracy = Accuracy(n, n, accuracy.correct)  # no pick counts wrong
    if not n:
        return BestOfN(accuracy, None, None)
    return BestOfN(accuracy, float(np.mean(1.0 / data.n_responses[rows])), float(np.mean(target[rows] == 0)))


def decide_with_ties(votes: np.ndarray, convention: str) -> np.ndarray:
    """Item decisions where a judged tie is a candidate like a response: ``TIE`` (the stats
    code) when tie votes win under the convention."""
    v = np.asarray(votes, dtype=float)
    slot = np.fmax.reduce(v, axis=None) if v.size else -1
    slot = 0 if np.isnan(slot) or slot < 0 else int(slot) + 1
    remapped = np.where(v == TIE_VOTE, slot, v)
    out = decide(remapped, convention)
    return np.where(out == slot, TIE, out)


def ties_accuracy(decision: np.ndarray, target: np.ndarray, judged: np.ndarray) -> TiesAccuracy:
    """With ties: every judged item whose target is a response or a tie, right when the
    decision equals it; without ties: response targets whose decision is not a tie. No
    decision counts wrong in both."""
    tie_decided = decision == TIE
    with_mask = judged & (np.isin(target, [TIE]) | names_response(target))
    without_mask = judged & names_response(target) & ~tie_decided

    def n_of(mask: np.ndarray) -> Accuracy:
        n = int(mask.sum())
        return Accuracy(n, n, int((mask & (decision == target)).sum()))

    return TiesAccuracy(n_of(with_mask), n_of(without_mask))


def _position(run: RunData) -> dict[str, float | None]:
    """Position bias over every judged item (see docs/STATISTICS.md)."""
    out: dict[str, float | None] = {
        "position_consistency": None,
        "position_consistency_items": None,
        "first_position_preference": None,
    }
    if not get_mode(run.run.mode).shows_order:
        return out
    c, first = run.choices, run.first_shown
    picked = ~np.isnan(c) & ~np.isnan(first)
    out["first_position_preference"] = _share((picked & (c == first)).sum(), picked.sum())
    if run.run.both_orders:
        s = c.shape[1] // 2 * 2
        c0, c1 = c[:, 0:s:2], c[:, 1:s:2]
        pair = run.parsed[:, 0:s:2] & run.parsed[:, 1:s:2]
        same = pair & ((c0 == c1) | (np.isnan(c0) & np.isnan(c1)))
        out["position_consistency"] = _share(same.sum(), pair.sum())
        has = pair.any(axis=1)
        out["position_consistency_items"] = _share((has & (same == pair).all(axis=1)).sum(), has.sum())
    return out


def _share(num: Any, den: Any) -> float | None:
    return float(num) / float(den) if den else None


__all__ = [
    "DEFAULT",
    "BestOfN",
    "ConventionScores",
    "ItemKeys",
    "RunScores",
    "SampleCounts",
    "TiesAccuracy",
    "cal_dataset",
    "decide_with_ties",
    "judged_items",
    "load_item_keys",
    "score_run",
    "ties_accuracy",
    "vote_table",
]
