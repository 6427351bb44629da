"""What the review and adjudication view shows for one item: every annotator's label and
every judge verdict, in the reviewer's screen terms (Response 1/2 as the reviewer sees them).

Reviewing is not blind: it exists to compare the labels with each other, with the judge and
with the dataset's reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..labeling import describe, label_to_draft
from ..records import Item
from ..store import Store

if TYPE_CHECKING:
    from .modes import JudgingMode


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
    """Every current label (one per annotator and kind) and every judge sample of an item; each
    sample reads as its run's mode says (a pairwise pick, a pointwise score, step scores)."""
    position = {index: pos for pos, index in enumerate(order, start=1)}

    def screen(index: int | None) -> str:
        return "—" if index is None else f"R{position.get(index, index + 1)}"

    current = sorted(
        store.item_current_labels(item.stored_id), key=lambda lab: (lab.kind != "adjudication", lab.annotator)
    )
    lines = [
        LabelLine(
            label.annotator, label.kind, describe(label_to_draft(label, order)), label.note, label.created_at or ""
        )
        for label in current
    ]
    verdicts = []
    from .modes import get_mode  # numpy and the verdict parsers load when a review is shown

    modes: dict[int, tuple[JudgingMode, str]] = {}
    for v in store.verdicts(item_id=item.id):
        if v.run_id not in modes:
            run = store.run(v.run_id)
            modes[v.run_id] = (get_mode(run.mode), run.parser)
        mode, parser = modes[v.run_id]
        choice = mode.sample_reading(v, screen)
        span = mode.decisive_span(v, item, parser)
        verdicts.append(
            VerdictLine(
                v.run_id, v.sample_idx, ", ".join(screen(i) for i in v.order_shown), choice, v.raw_output or "", span
            )
        )
    return ReviewData(item.stored_id, screen(item.reference.chosen), tuple(lines), tuple(verdicts))
