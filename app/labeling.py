"""One annotator's labeling session: blind order, screen↔index mapping, undo and redo.

The label panel speaks in screen positions (what the annotator saw); the store speaks in
response indices. This module is the only place that maps one to the other. Every change
is written at once (append-only); undo and redo write new rows too, so the audit trail
keeps every step.
"""

from __future__ import annotations

from dataclasses import dataclass

from .records import LABEL_KINDS, ItemFilter, Label, LabelDraft, TableRow
from .store import Store


def draft_to_label(
    item_id: int, annotator: str, order: tuple[int, ...], draft: LabelDraft, kind: str = "label"
) -> Label:
    """Turn what the panel shows into a storable label (response indices, order kept)."""
    if draft.is_empty:
        return Label(item_id, annotator, "cleared", display_order=order, kind=kind)
    ranking: tuple[int, ...] = ()
    outcome = draft.outcome or ("prefer" if draft.preferred_position else "unrated")
    if outcome == "prefer":
        if draft.preferred_position is None:
            raise ValueError("a preference needs the preferred response")
        best = order[draft.preferred_position - 1]
        ranking = (best, *(i for i in order if i != best)) if len(order) == 2 else (best,)
    return Label(
        item_id=item_id,
        annotator=annotator,
        outcome=outcome,
        ranking=ranking,
        strength=draft.strength if outcome == "prefer" else None,
        error_types=tuple(draft.error_types),
        discard_reasons=tuple(draft.discard_reasons),
        note=draft.note,
        display_order=order,
        step_marks=tuple((order[pos - 1], step, correct) for pos, step, correct in draft.step_marks),
        kind=kind,
    )


def label_to_draft(label: Label | None, order: tuple[int, ...]) -> LabelDraft:
    """Show a stored label in this annotator's screen terms."""
    if label is None or label.outcome == "cleared":
        return LabelDraft()
    position = {index: pos for pos, index in enumerate(order, start=1)}
    preferred = label.preferred
    return LabelDraft(
        outcome=None if label.outcome == "unrated" else label.outcome,
        preferred_position=position.get(preferred) if preferred is not None else None,
        strength=label.strength,
        error_types=tuple(label.error_types),
        discard_reasons=tuple(label.discard_reasons),
        note=label.note,
        step_marks=tuple((position[idx], step, correct) for idx, step, correct in label.step_marks if idx in position),
    )


def describe(draft: LabelDraft) -> str:
    """A short summary for the item table, in screen terms (e.g. ``R2 clearly``)."""
    if draft.is_empty:
        return ""
    if draft.outcome == "prefer" and draft.preferred_position:
        text = f"R{draft.preferred_position}" + (f" {draft.strength}" if draft.strength else "")
    else:
        text = {"tie": "tie", "both_bad": "both bad", "discard": "discard"}.get(draft.outcome or "", "")
    if draft.error_types:
        text += " · " + ", ".join(t.kind for t in draft.error_types)
    if draft.step_marks and not text:
        text = f"{len(draft.step_marks)} steps marked"
    return text or "note"


@dataclass(frozen=True)
class _Change:
    item_id: int
    before: LabelDraft
    after: LabelDraft


class LabelingSession:
    """Labels for one annotator in one project. Not thread-safe; use from one thread."""

    def __init__(self, store: Store, annotator: str, kind: str = "label"):
        self.store = store
        self.annotator = annotator.strip()
        if not self.annotator:
            raise ValueError("an annotator needs a non-empty name")
        if kind not in LABEL_KINDS:
            raise ValueError(f"a label kind is one of {', '.join(LABEL_KINDS)}, not {kind!r}")
        # "label", or "adjudication" for an adjudicator's final decisions: what this session
        # writes, and what its progress, resume point and table status read.
        self.kind = kind
        self._undo: list[_Change] = []
        self._redo: list[_Change] = []

    def order(self, item_id: int) -> tuple[int, ...]:
        """The response order this annotator sees for the item (the same every time; reads only)."""
        return self.store.display_order(item_id, self.annotator)

    def draft(self, item_id: int) -> LabelDraft:
        """The annotator's current label for the item, in screen terms."""
        return label_to_draft(self.store.current_label(item_id, self.annotator, self.kind), self.order(item_id))

    def save(self, item_id: int, draft: LabelDraft) -> Label | None:
        """Write ``draft`` as the item's new current label (durably, before returning).

        Returns the stored label, or ``None`` when nothing changed.
        """
        before = self.draft(item_id)
        if draft == before:
            return None
        label = self._write(item_id, draft)
        self._undo.append(_Change(item_id, before, draft))
        self._redo.clear()
        return label

    def undo(self) -> int | None:
        """Restore the state before the last change; returns the item it touched."""
        if not self._undo:
            return None
        change = self._undo.pop()
        self._write(change.item_id, change.before)
        self._redo.append(change)
        return change.item_id

    def redo(self) -> int | None:
        """Re-apply the last undone change; returns the item it touched."""
        if not self._redo:
            return None
        change = self._redo.pop()
        self._write(change.item_id, change.after)
        self._undo.append(change)
        return change.item_id

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def _write(self, item_id: int, draft: LabelDraft) -> Label:
        return self.store.add_label(draft_to_label(item_id, self.annotator, self.order(item_id), draft, self.kind))

    # -- navigation and the table -----------------------------------------------------------

    def first_unlabeled(self, after_id: int = 0) -> int | None:
        """Where to resume: the first item (after ``after_id``) without a current label of
        this session's kind."""
        return self.store.first_unlabeled(self.annotator, after_id, self.kind)

    def progress(self) -> tuple[int, int]:
        """(items labeled — or adjudicated — by this annotator, items in the project)."""
        return self.store.labeled_count(self.annotator, self.kind), self.store.item_count()

    def table_filter(self, text: str = "", category: str | None = None, status: str | None = None) -> ItemFilter:
        """The table's filter; ``labeled``/``unlabeled`` mean this session's kind."""
        return ItemFilter(category=category, text=text, status=status, annotator=self.annotator, label_kind=self.kind)

    def row_of(self, item_id: int, item_filter: ItemFilter | None = None) -> int:
        """The item's row in the table under ``item_filter``."""
        return self.store.count_items(item_filter, before_id=item_id)

    def table_row(self, item_id: int) -> TableRow:
        """The table row of one item (after its label changed)."""
        return self._rows(self.store.item_summaries_by_id([item_id]))[0]

    def table_rows(self, offset: int, limit: int, item_filter: ItemFilter | None = None) -> list[TableRow]:
        """A page of table rows with this annotator's status and label (or adjudication) summary."""
        return self._rows(self.store.item_summaries(offset, limit, filter=item_filter))

    def _rows(self, summaries) -> list[TableRow]:
        ids = [s.id for s in summaries]
        labels = self.store.current_labels(self.annotator, ids, self.kind)
        orders = self.store.display_orders(self.annotator, ids)
        rows = []
        for s in summaries:
            label = labels.get(s.id)
            if label is None:
                rows.append(TableRow(s, "unlabeled", ""))
                continue
            draft = label_to_draft(label, orders[s.id])
            status = "discarded" if label.outcome == "discard" else "labeled"
            rows.append(TableRow(s, status, describe(draft)))
        return rows
