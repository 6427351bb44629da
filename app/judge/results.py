"""Per-item judgements and a run's headline accuracy (the full analytics are elsewhere).

Accuracy is reported both ways, labelled: unparsed items excluded from the denominator
(VL-RewardBench's scoring) and unparsed items counted wrong (VLMEvalKit's).
"""

from __future__ import annotations

from dataclasses import dataclass

from .session import ItemJudgement, pointwise_choice, vote
from ..store import RunRecord, Store, VerdictRecord


def judge_item(run: RunRecord, verdicts: list[VerdictRecord]) -> ItemJudgement:
    """The K-vote of one item from its verdicts in ``run`` (pointwise: higher score wins)."""
    if run.mode == "pointwise":
        n = max(v.order_shown[0] for v in verdicts) + 1
        verdicts = pointwise_choice(verdicts, n, run.k)
    return vote(verdicts, run.both_orders)


def item_judgements(store: Store, run: RunRecord) -> dict[int, ItemJudgement]:
    """The K-vote of every item judged in a run."""
    by_item: dict[int, list[VerdictRecord]] = {}
    for v in store.verdicts(run.id):
        by_item.setdefault(v.item_id, []).append(v)
    return {item_id: judge_item(run, verdicts) for item_id, verdicts in by_item.items()}


@dataclass(frozen=True)
class RunSummary:
    items: int
    with_reference: int
    correct: int
    undecided: int
    accuracy_unparsed_excluded: float | None
    accuracy_unparsed_wrong: float | None
    consistency: float | None

    def line(self) -> str:
        def pct(x):
            return "n/a" if x is None else f"{100 * x:.1f}%"

        text = (f"{self.items} item{'s' if self.items != 1 else ''} judged; vs dataset reference ({self.with_reference} items): "
                f"accuracy {pct(self.accuracy_unparsed_excluded)} (unparsed excluded), "
                f"{pct(self.accuracy_unparsed_wrong)} (unparsed counted wrong); {self.undecided} undecided")
        if self.consistency is not None:
            text += f"; both-orders consistency {pct(self.consistency)}"
        return text


def summarize(store: Store, run: RunRecord) -> RunSummary:
    """Headline accuracy of a pairwise or pointwise run against the dataset's reference."""
    judgements = item_judgements(store, run)
    chosen = dict(store.query("SELECT id, ref_chosen FROM items WHERE ref_chosen IS NOT NULL"))
    scored = [(j, chosen[i]) for i, j in judgements.items() if i in chosen]
    decided = [(j, c) for j, c in scored if j.choice is not None]
    correct = sum(1 for j, c in decided if j.choice == c)
    consistent = [j.consistent for j in judgements.values() if j.consistent is not None]
    return RunSummary(
        items=len(judgements), with_reference=len(scored), correct=correct, undecided=len(scored) - len(decided),
        accuracy_unparsed_excluded=correct / len(decided) if decided else None,
        accuracy_unparsed_wrong=correct / len(scored) if scored else None,
        consistency=sum(consistent) / len(consistent) if consistent else None,
    )
