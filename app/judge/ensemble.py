"""Several judge runs read together: per item how many judges and trials got it wrong, how
the judges agree with each other (Cohen's kappa), and the *hard set* — the items that at least
``m`` of the ``n`` judges fail — saved as a collection that export already understands.

A *judge* is one run; its *trials* are the run's vote samples (K samples, and each order of
each sample in a both-orders run, each shown in a random order of the responses). A judge's
verdict on an item is the one vote of :mod:`.votes` (``results.item_verdicts``, the same
decision the filters store in ``judge_items``) under a named convention; nothing here decides
an item a second way. Counting trials only reads the vote table's cells.

The hard-set rule is VL-RewardBench's AI-aided filtering (Li et al., 2024, arXiv:2411.17451 §3:
small judges run several times with the answers in random order; the items most of them fail
are kept — the maintainers: "samples [that] cannot be answered correctly by small models (e.g.,
Qwen2-VL 7B and LLaVA)"), with the thresholds recorded in the collection's description.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..store import Store
from .modes import get_mode
from .results import item_verdicts
from .runs import RunChoice, run_choices
from .votes import DEFAULT_CONVENTION, TIE, Accuracy, ItemVerdict, check_convention


@dataclass(frozen=True)
class JudgeAccuracy:
    """One run's headline against the dataset's reference, under the ensemble's convention."""

    run_id: int
    label: str
    judged: int  # items with a verdict and a reference
    decided: int
    correct: int
    trials: int  # vote samples per item (K, 2K for both orders)

    @property
    def accuracy(self) -> float | None:
        """correct / decided (undecided items left out, VL-RewardBench's scoring)."""
        return self.correct / self.decided if self.decided else None

    @property
    def undecided(self) -> int:
        return self.judged - self.decided


@dataclass(frozen=True)
class EnsembleItem:
    """What the ensemble says about one item with a reference."""

    item_id: int
    reference: int
    outcomes: dict[int, str]  # run id → right / wrong / undecided (runs that judged it)
    trials_wrong: int  # trials naming another response than the reference, or a tie
    trials_right: int  # trials naming the reference
    trials: int  # every trial of the runs that judged it (unparsed, failed, missing included)

    def fails(self, undecided_fails: bool = False) -> int:
        """Judges that failed the item: their verdict is wrong (or, if asked, undecided)."""
        bad = ("wrong", "undecided") if undecided_fails else ("wrong",)
        return sum(1 for o in self.outcomes.values() if o in bad)

    @property
    def judges_wrong(self) -> int:
        return self.fails(False)


@dataclass(frozen=True)
class Ensemble:
    """Runs read together (see the module docstring)."""

    runs: tuple[RunChoice, ...]
    convention: str
    verdicts: dict[int, dict[int, ItemVerdict]]  # run id → item id → verdict
    items: tuple[EnsembleItem, ...]  # items with a reference judged by at least one run, by id
    accuracy: tuple[JudgeAccuracy, ...]
    run_labels: dict[int, str] = field(default_factory=dict)

    @property
    def run_ids(self) -> tuple[int, ...]:
        return tuple(r.id for r in self.runs)

    def wrong_distribution(self) -> dict[int, int]:
        """Judges wrong → items (0 … n, every count listed)."""
        counts = Counter(i.judges_wrong for i in self.items)
        return {k: counts.get(k, 0) for k in range(len(self.runs) + 1)}

    def trial_distribution(self) -> dict[int, int]:
        """Trials wrong → items (only counts that occur)."""
        return dict(sorted(Counter(i.trials_wrong for i in self.items).items()))

    def kappa(self) -> dict[tuple[int, int], float]:
        """Cohen's kappa (unweighted) of every ordered pair of runs on the items both decided;
        NaN where undefined (no shared decided item, or one category only). The diagonal is 1
        where the run decided anything. Computed by ``app.stats.agreement.cohen_pairs``, which
        equals ``sklearn.metrics.cohen_kappa_score``."""
        from ..stats.agreement import cohen_pairs  # numpy-only; loads with the statistics

        ids = sorted({i for v in self.verdicts.values() for i in v})
        coded = {
            str(run): np.array(
                [
                    np.nan
                    if (v := self.verdicts[run].get(i)) is None or v.choice(self.convention) is None
                    else float(v.choice(self.convention))  # type: ignore[arg-type]
                    for i in ids
                ]
            )
            for run in self.run_ids
        }
        pairs = cohen_pairs(coded) if len(coded) >= 2 else {}
        out: dict[tuple[int, int], float] = {}
        for a in self.run_ids:
            for b in self.run_ids:
                if a == b:
                    out[a, b] = 1.0 if np.any(~np.isnan(coded[str(a)])) else float("nan")
                else:
                    out[a, b] = float(pairs.get((str(a), str(b)), pairs.get((str(b), str(a)), float("nan"))))
        return out

    def hard_set(self, min_fail: int, undecided_fails: bool = False) -> list[int]:
        """Item ids (ascending) that at least ``min_fail`` of the ensemble's judges fail."""
        check_min_fail(min_fail, len(self.runs))
        return [i.item_id for i in self.items if i.fails(undecided_fails) >= min_fail]


def check_min_fail(min_fail: int, n: int) -> int:
    if not 1 <= min_fail <= n:
        raise ValueError(f"--min-fail must be between 1 and the number of runs ({n}), got {min_fail}")
    return min_fail


def default_min_fail(n: int) -> int:
    """A majority of the judges (2 of 3, 3 of 4, 3 of 5)."""
    return n // 2 + 1


def parse_runs(text: str) -> list[int]:
    """``"1,2,3"`` → ``[1, 2, 3]`` (each run once, in the order given)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
            raise ValueError(f"--runs takes run ids separated by commas (e.g. 1,2,3), got {text!r}")
        if int(part) not in out:
            out.append(int(part))
    if not out:
        raise ValueError("--runs names no run")
    return out


def trial_counts(verdict: ItemVerdict, reference: int) -> tuple[int, int]:
    """(wrong, right) trials of one judge on one item: cells naming another response or a tie,
    and cells naming the reference. Unparsed, failed and missing cells are neither."""
    wrong = sum(1 for v in verdict.votes if v == TIE or (v >= 0 and int(v) != reference))
    right = sum(1 for v in verdict.votes if v >= 0 and int(v) == reference)
    return wrong, right


def load_ensemble(store: Store, run_ids: Sequence[int], convention: str = DEFAULT_CONVENTION) -> Ensemble:
    """Read the runs' item verdicts (the one vote) and score them against the dataset's
    reference. ``ValueError`` for an unknown run or one that casts no preference votes."""
    check_convention(convention)
    choices = {c.id: c for c in run_choices(store)}
    runs = []
    for run_id in run_ids:
        if run_id not in choices:
            known = ", ".join(str(i) for i in choices) or "none"
            raise ValueError(f"no judge run {run_id} in this project (runs: {known})")
        if not get_mode(choices[run_id].mode).votes_on_preference:
            raise ValueError(f"run {run_id} ({choices[run_id].mode}) casts no preference votes: it cannot join")
        runs.append(choices[run_id])
    verdicts = {r.id: item_verdicts(store, store.run(r.id)) for r in runs}
    ids = sorted({i for v in verdicts.values() for i in v})
    ref = {i: r for i, r in store.ref_chosen(ids).items() if r is not None}
    items = []
    for item_id in ids:
        if item_id not in ref:
            continue
        outcomes, wrong, right, trials = {}, 0, 0, 0
        for run in runs:
            v = verdicts[run.id].get(item_id)
            if v is None or not v.present:  # every sample failed: a failure, not the judge's verdict
                continue
            outcomes[run.id] = v.outcome(ref[item_id], convention)
            w, r = trial_counts(v, ref[item_id])
            wrong, right, trials = wrong + w, right + r, trials + v.planned
        items.append(EnsembleItem(item_id, ref[item_id], outcomes, wrong, right, trials))
    accuracy = []
    for run in runs:
        a = Accuracy.of_pairs(
            [(verdicts[run.id][i.item_id].choice(convention), i.reference) for i in items if run.id in i.outcomes]
        )
        planned = max((v.planned for v in verdicts[run.id].values()), default=0)
        accuracy.append(JudgeAccuracy(run.id, short_label(run), a.scored, a.decided, int(a.correct), planned))
    labels = {r.id: short_label(r) for r in runs}
    return Ensemble(tuple(runs), convention, verdicts, tuple(items), tuple(accuracy), labels)


def short_label(run: RunChoice) -> str:
    """``run 3 · qwen2-vl-2b · K=3 · both orders``"""
    parts = [f"run {run.id}", run.model, f"K={run.k}"]
    if run.both_orders:
        parts.append("both orders")
    return " · ".join(parts)


@dataclass(frozen=True)
class HardSet:
    """A hard set as built: its items and the rule that chose them."""

    name: str
    item_ids: tuple[int, ...]
    min_fail: int
    n: int
    undecided_fails: bool
    convention: str
    run_labels: tuple[str, ...]
    candidates: int  # items with a reference judged by at least one run

    def description(self) -> str:
        """What the collection's description records: thresholds, convention and runs."""
        failed = "wrong or undecided" if self.undecided_fails else "wrong; undecided does not count as failing"
        return (
            f"hard set: items that at least {self.min_fail} of {self.n} judges fail"
            f" (a judge fails an item when its {self.convention} vote over its trials is {failed});"
            f" {len(self.item_ids)} of {self.candidates} judged items with a reference;"
            f" runs: {'; '.join(self.run_labels)}. VL-RewardBench recipe (arXiv:2411.17451 §3)."
        )


def build_hard_set(ensemble: Ensemble, name: str, min_fail: int, undecided_fails: bool = False) -> HardSet:
    ids = ensemble.hard_set(min_fail, undecided_fails)
    return HardSet(
        name.strip(),
        tuple(ids),
        min_fail,
        len(ensemble.runs),
        undecided_fails,
        ensemble.convention,
        tuple(ensemble.run_labels[r] for r in ensemble.run_ids),
        len(ensemble.items),
    )


def save_hard_set(store: Store, hard: HardSet) -> int:
    """Write the hard set as a new collection (its description records the rule); returns its
    size. ``ValueError`` when the name is empty or a collection of that name exists (its items
    were chosen by another rule)."""
    if not hard.name:
        raise ValueError("a hard set needs a collection name")
    if hard.name in store.collections():
        raise ValueError(f"a collection named {hard.name!r} exists already: choose another name")
    store.add_to_collection(hard.name, hard.item_ids, hard.description())
    return len(hard.item_ids)


def summary_dict(ensemble: Ensemble) -> dict:
    """The ``pairscope ensemble --json`` document."""

    def num(x: float | None) -> float | None:
        return None if x is None or np.isnan(x) else round(float(x), 6)

    kappa = ensemble.kappa()
    return {
        "runs": list(ensemble.run_ids),
        "convention": ensemble.convention,
        "items": len(ensemble.items),
        "accuracy": [
            {
                "run": a.run_id,
                "label": a.label,
                "judged": a.judged,
                "decided": a.decided,
                "correct": a.correct,
                "undecided": a.undecided,
                "trials": a.trials,
                "accuracy": num(a.accuracy),
            }
            for a in ensemble.accuracy
        ],
        "kappa": {str(a): {str(b): num(kappa[a, b]) for b in ensemble.run_ids} for a in ensemble.run_ids},
        "judges_wrong": {str(k): v for k, v in ensemble.wrong_distribution().items()},
        "trials_wrong": {str(k): v for k, v in ensemble.trial_distribution().items()},
    }


def summary_lines(ensemble: Ensemble) -> list[str]:
    """The ``pairscope ensemble`` text: per-run accuracy, the kappa matrix, the distributions."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    n = len(ensemble.runs)
    lines = [f"{n} judges, {len(ensemble.items)} items with a reference judged; {ensemble.convention} vote"]
    lines.append("accuracy (correct / decided, undecided excluded):")
    for a in ensemble.accuracy:
        lines.append(
            f"  {a.label}: {pct(a.accuracy)} ({a.correct}/{a.decided}), {a.undecided} undecided, {a.trials} trials/item"
        )
    kappa = ensemble.kappa()
    lines.append("Cohen's kappa between judges (items both decided):")
    lines.append("  " + "run".rjust(6) + "".join(f"{r:>8}" for r in ensemble.run_ids))
    for row in ensemble.run_ids:
        cells = "".join("     n/a" if np.isnan(kappa[row, b]) else f"{kappa[row, b]:8.3f}" for b in ensemble.run_ids)
        lines.append("  " + f"{row:>6}" + cells)
    lines.append("items by judges wrong:")
    for k, v in ensemble.wrong_distribution().items():
        lines.append(f"  {k} of {n}: {v}")
    trials = ensemble.trial_distribution()
    if trials:
        lines.append("items by trials wrong: " + ", ".join(f"{k}: {v}" for k, v in trials.items()))
    return lines


__all__ = [
    "Ensemble",
    "EnsembleItem",
    "HardSet",
    "JudgeAccuracy",
    "build_hard_set",
    "check_min_fail",
    "default_min_fail",
    "load_ensemble",
    "parse_runs",
    "save_hard_set",
    "short_label",
    "summary_dict",
    "summary_lines",
    "trial_counts",
]
