"""Two judges side by side: the paired 2×2 table, McNemar's exact test, a paired bootstrap CI of
the accuracy difference, the same per slice with Holm and Šidák adjusted p-values, and the
matrix of pairwise differences of N runs (docs/STATISTICS.md, "Comparing two judges"); the
text, JSON and forest plot of a comparison are :mod:`.compare_report`'s.

A judge is one run; its verdict on an item is its item verdict under the chosen convention, read
with :func:`.judge_metrics.item_verdicts` (the one vote; nothing here decides an item another
way). An item is **paired** when both runs judged it and the dataset's reference names a
response; the accuracy difference and the tests are on the paired items both runs **decided**
(VL-RewardBench's scoring leaves undecided items out), or, with ``undecided_wrong``, on every
paired item with no majority counted wrong. Items only one run judged are listed apart.

The statistics are statsmodels': McNemar's exact test is
``statsmodels.stats.contingency_tables.mcnemar(exact=True)`` (the two-sided binomial test of
the discordant items at p = ½), Šidák's adjustment ``statsmodels.stats.multitest.multipletests``,
within each kind of slice; Holm's is its step-down written out (:func:`holm`, tested equal to
``multipletests``, whose Holm branch calls ``gc.collect()``).
The bootstrap resamples items with replacement (percentile interval), drawn as counts of the
three kinds of item (only A right, only B right, the same) from a fresh
``numpy.random.default_rng(seed)`` for the overall figure and for each slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..records import DEFAULT_CONVENTION
from ..store import RunRecord, Store
from .data import StatsData, load_stats_data

#: The kinds of slice, in the order they are reported.
SLICE_KINDS = ("category", "source", "error type", "dataset")
#: How the items both runs judged are sorted in the window: the flips first.
FLIP_KINDS = ("A right, B wrong", "B right, A wrong", "disagree", "agree")
RESAMPLES = 2000
SEED = 0
LEVEL = 0.95


# -- the statistics on two outcome arrays ------------------------------------------------------


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """McNemar's exact two-sided p-value from the discordant counts
    (``statsmodels.stats.contingency_tables.mcnemar(exact=True)``): 1.0 when none is discordant."""
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar([[0, int(a_only)], [int(b_only), 0]], exact=True).pvalue)


def paired_bootstrap_ci(
    right_a: np.ndarray, right_b: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> tuple[float, float] | None:
    """Percentile CI of accuracy(B) − accuracy(A), resampling the n paired items with
    replacement (``None`` without items or resamples). An item adds +1 (only B right), −1 (only
    A right) or 0 to the difference, so a resample is drawn as its counts of the three kinds —
    ``default_rng(seed).multinomial(n, [b_only/n, a_only/n, rest], size=resamples)`` — the same
    distribution as drawing n item indices, in time independent of n."""
    a, b = np.asarray(right_a, dtype=bool), np.asarray(right_b, dtype=bool)
    n = len(a)
    if not n or resamples < 1:
        return None
    shares = [float((b & ~a).sum()) / n, float((a & ~b).sum()) / n]
    counts = np.random.default_rng(seed).multinomial(n, [*shares, max(0.0, 1.0 - sum(shares))], size=resamples)
    means = (counts[:, 0] - counts[:, 1]) / n
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest p becomes
    min(1, max over j ≤ i of (m − j + 1)·p_(j)). Equal to ``multipletests(method="holm")``
    (tested); not called through it because statsmodels' Holm branch calls ``gc.collect()``, and
    a collection off the GUI thread can free Qt objects there (app/gui/gc_thread.py)."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    out = np.empty(m)
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return [float(x) for x in out]


def sidak(pvalues: Sequence[float]) -> list[float]:
    """Šidák's single-step adjusted p-values 1 − (1 − p)^m
    (``statsmodels.stats.multitest.multipletests(method="sidak")``)."""
    if not len(pvalues):
        return []
    from statsmodels.stats.multitest import multipletests

    with np.errstate(divide="ignore"):  # it takes log1p(-p): at p = 1 the adjusted p is exactly 1
        return [float(p) for p in multipletests(list(pvalues), method="sidak")[1]]


def adjust(pvalues: Sequence[float], method: str) -> list[float]:
    """Adjusted p-values, ``holm`` (:func:`holm`) or ``sidak`` (:func:`sidak`)."""
    if method not in ("holm", "sidak"):
        raise ValueError(f"adjustment must be holm or sidak, got {method!r}")
    return holm(pvalues) if method == "holm" else sidak(pvalues)


@dataclass(frozen=True)
class Paired:
    """Two judges on the same items: the 2×2 table (``both_right``, ``a_only`` right,
    ``b_only`` right, ``both_wrong``), the difference accuracy(B) − accuracy(A) with its paired
    bootstrap CI, and McNemar's exact p (``None`` without items)."""

    both_right: int
    a_only: int
    b_only: int
    both_wrong: int
    ci: tuple[float, float] | None
    p: float | None

    @property
    def n(self) -> int:
        return self.both_right + self.a_only + self.b_only + self.both_wrong

    @property
    def accuracy_a(self) -> float | None:
        return (self.both_right + self.a_only) / self.n if self.n else None

    @property
    def accuracy_b(self) -> float | None:
        return (self.both_right + self.b_only) / self.n if self.n else None

    @property
    def difference(self) -> float | None:
        """accuracy(B) − accuracy(A) = (B only − A only) / n."""
        return (self.b_only - self.a_only) / self.n if self.n else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "both_right": self.both_right,
            "a_only": self.a_only,
            "b_only": self.b_only,
            "both_wrong": self.both_wrong,
            "accuracy_a": _num(self.accuracy_a),
            "accuracy_b": _num(self.accuracy_b),
            "difference": _num(self.difference),
            "ci": None if self.ci is None else [_num(self.ci[0]), _num(self.ci[1])],
            "mcnemar_p": _num(self.p),
        }


def paired(
    right_a: np.ndarray, right_b: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> Paired:
    """The paired figures of two boolean arrays (item i right for A, for B)."""
    a, b = np.asarray(right_a, dtype=bool), np.asarray(right_b, dtype=bool)
    a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
    n = len(a)
    return Paired(
        int((a & b).sum()),
        a_only,
        b_only,
        int((~a & ~b).sum()),
        paired_bootstrap_ci(a, b, resamples, seed, level),
        mcnemar_exact(a_only, b_only) if n else None,
    )


# -- two runs of a project -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunInfo:
    id: int
    model: str
    k: int
    both_orders: bool

    @property
    def label(self) -> str:
        """``run 3 · qwen2-vl-2b · K=3 · both orders``"""
        parts = [f"run {self.id}", self.model, f"K={self.k}"]
        return " · ".join([*parts, "both orders"] if self.both_orders else parts)

    @classmethod
    def of(cls, run: RunRecord) -> RunInfo:
        return cls(int(run.id), run.model_path, int(run.k), bool(run.both_orders))


@dataclass(frozen=True)
class SliceResult:
    """One slice (``kind``: category, source, error type, dataset; ``value``: its name) with its
    p-values adjusted over the slices of its kind."""

    kind: str
    value: str
    paired: Paired
    p_holm: float | None
    p_sidak: float | None


@dataclass(frozen=True)
class ItemPair:
    """One item both runs judged: the reference, each run's verdict (a response index, ``None``:
    undecided) and outcome (right / wrong / undecided / unscored), and its ``kind`` in
    :data:`FLIP_KINDS`."""

    item_id: int
    ext_id: str
    reference: int | None
    a: int | None
    b: int | None
    outcome_a: str
    outcome_b: str
    kind: str


@dataclass(frozen=True)
class Consistency:
    """Both-orders runs: per run, items of the paired set whose every sample pair agrees across
    the two orders, of those with a judged pair; ``paired`` (both runs both-orders) compares
    being consistent as the 2×2 compares being right."""

    consistent: dict[int, tuple[int, int]]  # run id → (consistent, items with a judged pair)
    paired: Paired | None


@dataclass(frozen=True)
class Comparison:
    """Run B against run A on one project (see the module docstring)."""

    a: RunInfo
    b: RunInfo
    convention: str
    undecided_wrong: bool
    resamples: int
    seed: int
    level: float
    overall: Paired
    slices: tuple[SliceResult, ...]
    items: tuple[ItemPair, ...]  # every item both judged: flips first (FLIP_KINDS), then by id
    only_a: tuple[str, ...]  # display ids of the items only A judged
    only_b: tuple[str, ...]
    undecided: dict[str, int]  # paired items: "a" only A undecided, "b", "both"
    unscored: int  # items both judged whose reference names no response
    consistency: Consistency | None = None
    notes: tuple[str, ...] = field(default=())

    def flips(self) -> list[ItemPair]:
        """The items the two runs disagree on, "A right, B wrong" first, then "B right, A
        wrong", then the other disagreements."""
        return [i for i in self.items if i.kind != "agree"]


def _num(x: float | None) -> float | None:
    return None if x is None or x != x else round(float(x), 6)


def _run(data: StatsData, run_id: int) -> Any:
    for run in data.runs:
        if int(run.run.id) == run_id:
            return run
    known = ", ".join(str(int(r.run.id)) for r in data.runs) or "none"
    raise ValueError(f"no judge run {run_id} in this project (runs: {known})")


def _verdicts(data: StatsData, run_id: int, convention: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """(the run's data, items it judged, its verdict per item: NaN undecided or not judged)."""
    from .judge_metrics import item_verdicts, judged_items  # the one vote of app.judge

    run = _run(data, run_id)
    verdict = item_verdicts(data, run, convention)
    if verdict is None:
        raise ValueError(f"run {run_id} ({run.run.mode}) casts no preference votes: it cannot be compared")
    return run, judged_items(run), verdict


def _consistent(data: StatsData, run: Any) -> np.ndarray | None:
    """1.0 / 0.0 / NaN per item (every order pair agrees / one does not / none judged), both-orders runs only."""
    if not run.run.both_orders:
        return None
    from ..judge.votes import item_consistency
    from .judge_metrics import vote_table

    votes = vote_table(data, run)
    return None if votes is None else item_consistency(votes)


@dataclass(frozen=True)
class _Items:
    """Per item of ``data``: display id and subset (the dataset an item came from)."""

    ext_ids: np.ndarray
    subsets: np.ndarray


def _item_names(store: Store, data: StatsData) -> _Items:
    summaries = {s.id: s for s in store.item_summaries(0, max(store.item_count(), 1))}
    ids = [int(i) for i in data.item_ids]
    return _Items(
        np.array([summaries[i].ext_id if i in summaries else str(i) for i in ids], dtype=object),
        np.array([summaries[i].subset if i in summaries else None for i in ids], dtype=object),
    )


def _slices(data: StatsData, names: _Items) -> list[tuple[str, str, np.ndarray]]:
    """(kind, value, item mask) of every slice with at least one item."""
    from ..labeling.schema import error_kind_order, kind_order_key

    out: list[tuple[str, str, np.ndarray]] = []
    columns: list[tuple[str, np.ndarray | None]] = [
        ("category", data.categories),
        ("source", data.sources),
        ("dataset", names.subsets),
    ]
    for kind, values in columns:
        if values is None or not len(values):
            continue
        text = np.array(["" if v is None else str(v) for v in values], dtype=object)
        for value in sorted(set(text.tolist()) - {""}):
            out.append((kind, value, text == value))
    tags = {kind for item in set(data.error_kinds) for kind in item}
    for value in sorted(tags, key=kind_order_key(error_kind_order(data))):
        out.append(("error type", value, np.array([value in item for item in data.error_kinds], dtype=bool)))
    return sorted(out, key=lambda s: SLICE_KINDS.index(s[0]))


def _outcome(choice: float, reference: float) -> str:
    if choice != choice:
        return "undecided"
    if reference != reference:
        return "unscored"
    return "right" if choice == reference else "wrong"


def _kind(outcome_a: str, outcome_b: str, a: float, b: float, undecided_wrong: bool) -> str:
    wrong = ("wrong", "undecided") if undecided_wrong else ("wrong",)
    if outcome_a == "right" and outcome_b in wrong:
        return FLIP_KINDS[0]
    if outcome_b == "right" and outcome_a in wrong:
        return FLIP_KINDS[1]
    same = (a != a and b != b) or a == b
    return FLIP_KINDS[3] if same else FLIP_KINDS[2]


def compare_data(
    data: StatsData,
    names: _Items,
    run_a: int,
    run_b: int,
    convention: str = DEFAULT_CONVENTION,
    *,
    undecided_wrong: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    slices: bool = True,
) -> Comparison:
    """:func:`compare_runs` on arrays already read (the N-run matrix reads the project once)."""
    if run_a == run_b:
        raise ValueError(f"compare two different runs (run {run_a} given twice)")
    ra, judged_a, va = _verdicts(data, run_a, convention)
    rb, judged_b, vb = _verdicts(data, run_b, convention)
    ref = np.where(data.ref_chosen >= 0, data.ref_chosen, np.nan)
    both = judged_a & judged_b
    scored = both & ~np.isnan(ref)
    dec_a, dec_b = ~np.isnan(va), ~np.isnan(vb)
    right_a, right_b = dec_a & (va == ref), dec_b & (vb == ref)
    use = scored if undecided_wrong else scored & dec_a & dec_b
    args = (resamples, seed, level)
    overall = paired(right_a[use], right_b[use], *args)
    results: list[SliceResult] = []
    if slices:
        for kind in SLICE_KINDS:
            found = [(value, mask & use) for k, value, mask in _slices(data, names) if k == kind]
            found = [(value, mask) for value, mask in found if mask.any()]
            cells = [(value, paired(right_a[mask], right_b[mask], *args)) for value, mask in found]
            ps = [c.p for _v, c in cells]
            holm = adjust([p for p in ps if p is not None], "holm")
            sidak = adjust([p for p in ps if p is not None], "sidak")
            results.extend(SliceResult(kind, v, c, holm[j], sidak[j]) for j, (v, c) in enumerate(cells))
    rows = np.flatnonzero(both)
    pairs = []
    for i in rows.tolist():
        oa, ob = _outcome(va[i], ref[i]), _outcome(vb[i], ref[i])
        pairs.append(
            ItemPair(
                int(data.item_ids[i]),
                str(names.ext_ids[i]),
                None if ref[i] != ref[i] else int(ref[i]),
                None if va[i] != va[i] else int(va[i]),
                None if vb[i] != vb[i] else int(vb[i]),
                oa,
                ob,
                _kind(oa, ob, va[i], vb[i], undecided_wrong),
            )
        )
    pairs.sort(key=lambda p: (FLIP_KINDS.index(p.kind), p.item_id))
    consistency = None
    ca, cb = _consistent(data, ra), _consistent(data, rb)
    if ca is not None or cb is not None:
        counts = {
            run_id: (int((c[scored] == 1).sum()), int((~np.isnan(c[scored])).sum()))
            for run_id, c in ((run_a, ca), (run_b, cb))
            if c is not None
        }
        pair = None
        if ca is not None and cb is not None:
            has = scored & ~np.isnan(ca) & ~np.isnan(cb)
            pair = paired(ca[has] == 1, cb[has] == 1, *args)
        consistency = Consistency(counts, pair)
    notes = []
    if ra.run.k != rb.run.k or ra.run.both_orders != rb.run.both_orders:
        notes.append(
            f"the runs differ in K or orders ({RunInfo.of(ra.run).label}; {RunInfo.of(rb.run).label}):"
            f" each item verdict is its run's own {convention} vote"
        )
    return Comparison(
        RunInfo.of(ra.run),
        RunInfo.of(rb.run),
        convention,
        undecided_wrong,
        resamples,
        seed,
        level,
        overall,
        tuple(results),
        tuple(pairs),
        tuple(str(x) for x in names.ext_ids[judged_a & ~judged_b]),
        tuple(str(x) for x in names.ext_ids[judged_b & ~judged_a]),
        {
            "a": int((scored & ~dec_a & dec_b).sum()),
            "b": int((scored & dec_a & ~dec_b).sum()),
            "both": int((scored & ~dec_a & ~dec_b).sum()),
        },
        int((both & np.isnan(ref)).sum()),
        consistency,
        tuple(notes),
    )


def compare_runs(
    store: Store,
    run_a: int,
    run_b: int,
    convention: str = DEFAULT_CONVENTION,
    *,
    undecided_wrong: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Comparison:
    """Run B against run A (one read snapshot of the project). ``ValueError`` for an unknown
    run, the same run twice, a run that casts no preference votes or an unknown convention."""
    data = load_stats_data(store)
    return compare_data(
        data,
        _item_names(store, data),
        run_a,
        run_b,
        convention,
        undecided_wrong=undecided_wrong,
        resamples=resamples,
        seed=seed,
        level=level,
    )


# -- N runs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairCell:
    """Column run ``b`` against row run ``a``: their paired figures, the Holm-adjusted p over
    every pair of the matrix."""

    a: int
    b: int
    paired: Paired
    p_holm: float | None


@dataclass(frozen=True)
class Matrix:
    """Every pair of N runs (``cells[(a, b)]`` for a listed before b)."""

    runs: tuple[RunInfo, ...]
    convention: str
    undecided_wrong: bool
    cells: dict[tuple[int, int], PairCell]


def compare_many(
    store: Store,
    run_ids: Sequence[int],
    convention: str = DEFAULT_CONVENTION,
    *,
    undecided_wrong: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Matrix:
    """The pairwise matrix of N ≥ 2 runs: each pair on its own paired items, McNemar p adjusted
    by Holm over all N(N−1)/2 pairs."""
    ids = list(dict.fromkeys(int(r) for r in run_ids))
    if len(ids) < 2:
        raise ValueError("compare needs at least two different runs (--run A --run B)")
    data = load_stats_data(store)
    names = _Items(np.array([str(i) for i in data.item_ids], dtype=object), np.full(len(data.item_ids), None))
    found: dict[tuple[int, int], Comparison] = {}
    for x, a in enumerate(ids):
        for b in ids[x + 1 :]:
            found[a, b] = compare_data(
                data,
                names,
                a,
                b,
                convention,
                undecided_wrong=undecided_wrong,
                resamples=resamples,
                seed=seed,
                level=level,
                slices=False,
            )
    tested = {k: c.overall.p for k, c in found.items() if c.overall.p is not None}
    holm = dict(zip(tested, adjust(list(tested.values()), "holm")))
    runs = {c.a.id: c.a for c in found.values()} | {c.b.id: c.b for c in found.values()}
    cells = {k: PairCell(k[0], k[1], c.overall, holm.get(k)) for k, c in found.items()}
    return Matrix(tuple(runs[i] for i in ids), convention, undecided_wrong, cells)


__all__ = [
    "FLIP_KINDS",
    "SLICE_KINDS",
    "Comparison",
    "Consistency",
    "ItemPair",
    "Matrix",
    "PairCell",
    "Paired",
    "RunInfo",
    "SliceResult",
    "adjust",
    "compare_data",
    "compare_many",
    "compare_runs",
    "holm",
    "sidak",
    "mcnemar_exact",
    "paired",
    "paired_bootstrap_ci",
]
