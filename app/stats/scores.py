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
from ..judge.votes import ERROR, UNPARSED, Accuracy, decide, present_counts
from ..judge.votes import TIE as TIE_VOTE
from ..labeling.schema import error_kind_order, kind_order_key
from .conventions import REGISTRY, ScoringInput, resolve
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
    and cal.py's dataset (``image_path.split("/")[1]``; None without such a path)."""

    groups: np.ndarray
    datasets: np.ndarray


def cal_dataset(image_path: str | None) -> str | None:
    """VL-RewardBench cal.py's dataset of an item: ``item["image_path"].split("/")[1]``."""
    if not image_path:
        return None
    parts = image_path.replace("\\", "/").split("/")
    return parts[1] if len(parts) > 2 and parts[1] else None


def load_item_keys(store: Store, data: StatsData) -> ItemKeys:
    """The item keys of :class:`ItemKeys`, read from the store."""
    rows = store.item_keys()
    keys: list[tuple[int, str | None, str | None]] = list(rows)
    if not (len(rows) == len(data.item_ids) and np.array_equal([r[0] for r in rows], data.item_ids)):
        by_id = {int(item_id): (group, ref) for item_id, group, ref in rows}  # else: same items, same order
        keys = [(int(i), *by_id.get(int(i), (None, None))) for i in data.item_ids]
    groups = np.array([group for _, group, _ in keys], dtype=object)
    of_ref = {ref: cal_dataset(ref) for ref in {ref for _, _, ref in keys}}  # once per distinct path
    datasets = np.array([of_ref[ref] for _, _, ref in keys], dtype=object)
    return ItemKeys(groups, datasets)


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


#: The slices every convention is broken down by: slice name → (value → item mask).
Slices = dict[str, dict[str, np.ndarray]]


def _slices(data: StatsData, categories: Sequence[str], keys: ItemKeys | None) -> Slices:
    """Item masks per category, cal.py dataset, query_source and error tag, built once per run."""
    queries = None
    if data.sources is not None and len(data.sources):
        queries = np.array([None if s is None else str(s) for s in data.sources], dtype=object)
    kinds, tags = _tag_matrix(data)
    return {
        "category": _masks(data.categories, categories),
        "source": _masks(keys.datasets) if keys is not None else {},
        "query_source": _masks(queries) if queries is not None else {},
        "error_type": {k: tags[:, j] for j, k in enumerate(kinds)},
    }


def _masks(values: np.ndarray | None, extra: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """One mask per distinct value (sorted; items whose value is None in none), one pass each."""
    if values is None:
        return {}
    v = np.asarray(values, dtype=object)
    as_str = np.array([str(x) if x is not None else "\0" for x in v.tolist()], dtype=object)
    distinct = sorted((set(as_str.tolist()) - {"\0"}) | set(extra))
    return {name: as_str == name for name in distinct}


def _convention(data: StatsData, inp: ScoringInput, name: str, slices: Slices) -> ConventionScores:
    c = REGISTRY[name]
    d = c.decide(inp)
    credit = d.credit
    scored = d.scored
    target = inp.target

    def acc(mask: np.ndarray) -> Accuracy:
        return Accuracy.count(d.verdict, target, scored & mask, credit)

    ties = None
    if c.uses_ties:
        tie_mask = scored | (np.isin(target, [TIE]) & inp.base)
        ties = ties_accuracy(
            decide_with_ties(inp.votes, "official" if name == "vlrewardbench" else name), target, tie_mask
        )
    k_curve = {k: Accuracy.count(v, target, scored) for k, v in d.k_curve.items()}
    return ConventionScores(
        name=name,
        headline_rule=c.headline,
        overall=acc(np.ones(len(target), dtype=bool)),
        per_category={k: acc(m) for k, m in slices["category"].items()},
        per_source={k: acc(m) for k, m in slices["source"].items()},
        per_query_source={k: acc(m) for k, m in slices["query_source"].items()},
        per_error_type={k: acc(m) for k, m in slices["error_type"].items()},
        best_of_n=_best_of_n(data, d.verdict, target, scored),
        ties=ties,
        k_curve=k_curve,
        extra=dict(d.extra),
        notes=d.notes,
        verdict=d.verdict,
    )


def _tag_matrix(data: StatsData) -> tuple[list[str], np.ndarray]:
    distinct = list(set(data.error_kinds))
    present = sorted({k for tags in distinct for k in tags}, key=kind_order_key(error_kind_order(data)))
    per_tuple = np.zeros((len(distinct), len(present)), dtype=bool)
    for j, tags in enumerate(distinct):
        per_tuple[j] = [k in tags for k in present]
    code = {tags: j for j, tags in enumerate(distinct)}
    codes = np.fromiter(map(code.__getitem__, data.error_kinds), dtype=np.intp, count=len(data.error_kinds))
    return present, per_tuple[codes] if len(codes) else np.zeros((0, len(present)), dtype=bool)


def _best_of_n(data: StatsData, verdict: np.ndarray, target: np.ndarray, scored: np.ndarray) -> BestOfN:
    rows = scored & (data.n_responses >= 3)
    hit = rows & (verdict == target)
    n = int(rows.sum())
    accuracy = Accuracy(n, n, int(hit.sum()))
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
