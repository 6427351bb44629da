"""What the review and adjudication view shows for one item: every annotator's label and
every judge verdict, in the reviewer's screen terms (Response 1/2 as the reviewer sees them).

Reviewing is not blind: it exists to compare the labels with each other, with the judge and
with the dataset's reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..labeling import describe, label_to_draft
from ..records import Item
from ..store import Store


@dataclass(frozen=True)
class LabelLine:
    annotator: str
    kind: str  # "label" or "adjudication"
    summary: str  # screen terms, e.g. "R2 clearly · counting"
    note: str
    created_at: str


@dataclass(frozen=True)
class VerdictLine:
    run_id: int
    sample: int
    order: str  # the order the judge saw, in screen terms, e.g. "R2, R1"
    choice: str  # "R1", "undecided", "unparsed", "error: …"
    text: str  # the raw output
    decisive: tuple[int, int] | None  # character span of the sentence that decided


@dataclass(frozen=True)
class ReviewData:
    item_id: int
    reference: str  # the dataset's preference in screen terms
    labels: tuple[LabelLine, ...]
    verdicts: tuple[VerdictLine, ...]


def review_data(store: Store, item: Item, order: tuple[int, ...]) -> ReviewData:
    """Every current label (one per annotator and kind) and every judge sample of an item."""
    from pairscope.models.parsing import (
        parse_pairwise,  # compiled regexes: only when reviewing
    )
    position = {index: pos for pos, index in enumerate(order, start=1)}

    def screen(index: int | None) -> str:
        return "—" if index is None else f"R{position.get(index, index + 1)}"

    current: dict[tuple[str, str], object] = {}
    for label in store.label_history(item.id):
        current[(label.annotator, label.kind)] = label
    lines = []
    for (annotator, kind), label in sorted(current.items(), key=lambda kv: (kv[0][1] != "adjudication", kv[0][0])):
        if label.outcome == "cleared":
            continue
        lines.append(LabelLine(annotator, kind, describe(label_to_draft(label, order)), label.note, label.created_at))
    verdicts = []
    for v in store.verdicts(item_id=item.id):
        if v.error:
            choice = f"error: {v.error}"
        elif not v.parsed:
            choice = "unparsed"
        else:
            choice = screen(v.choice) if v.choice is not None else "tie"
        span = parse_pairwise(v.raw_output or "", len(v.order_shown)).span if v.raw_output else None
        verdicts.append(VerdictLine(v.run_id, v.sample_idx, ", ".join(screen(i) for i in v.order_shown), choice,
                                    v.raw_output or "", span))
    return ReviewData(item.id, screen(item.reference.chosen), tuple(lines), tuple(verdicts))
