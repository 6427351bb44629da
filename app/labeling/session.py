"""One annotator's labeling session: blind order, screen↔index mapping, undo and redo.

The label panel speaks in screen positions (what the annotator saw); the store speaks in
response indices. This module is the only place that maps one to the other. Every change
is written at once (append-only); undo and redo write new rows too, so the audit trail
keeps every step.

A write that fails for a reason that passes (the project busy with another connection's write —
waited for only :data:`SAVE_WAIT_MS` —,
a full disk, a read-only file) is not lost: the label is kept pending (:mod:`.pending`: in
memory and in a journal beside the project), shown as the item's label everywhere this
session reads, and written in order on the next save, on :meth:`LabelingSession.retry_pending`
and at the next start. Every write of the window goes through :meth:`LabelingSession._write`.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, replace

from ..rankings import groups_from_ranks, ranked_fields, ranking_text, ranks_from_groups
from ..records import LABEL_KINDS, ItemFilter, Label, LabelDraft, TableRow
from ..store import Store
from ..store.busy import waiting_at_most
from ..store.connection import utc_now
from ..store.items import FilteredItems
from ..store.label_schemas import label_schema_row
from .pending import PendingLabels, UnsavedLabels, save_failure
from .schema import DEFAULT_SCHEMA, LabelSchema, schema_from_json

#: Appended to a table row's label while it is pending (kept, not yet in the project).
PENDING_MARK = " (not yet saved)"
#: How long a save waits for the write lock another connection holds (a background op's
#: import, another process) before the label goes to the pending journal: the window's thread
#: never waits the store's 5 s busy timeout; the label lands when that write ends.
SAVE_WAIT_MS = 20
#: How long a retry of pending labels waits for that lock (the window retries every second).
RETRY_WAIT_MS = 20


def draft_to_label(
    item_id: int, annotator: str, order: tuple[int, ...], draft: LabelDraft, kind: str = "label"
) -> Label:
    """Turn what the panel shows into a storable label (response indices, order kept)."""
    if draft.is_empty:
        return Label(item_id, annotator, "cleared", display_order=order, kind=kind)
    ranking: tuple[int, ...] = ()
    ranks: tuple[int, ...] = ()
    outcome = draft.outcome or ("prefer" if draft.preferred_position else "unrated")
    if draft.rank_groups:
        groups = [[order[pos - 1] for pos in group] for group in draft.rank_groups]
        outcome, ranking, ranks = ranked_fields(ranks_from_groups(groups, len(order)))
    elif outcome == "prefer":
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
        ranks=ranks,
    )


def screen_groups(ranks: tuple[int, ...], order: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """A stored ranking's tied groups in screen positions (1-based, as ``order`` shows them),
    without the last group: it holds the responses left unranked, which share the last rank
    anyway (so a ranking built 3, 1 reads back as ``((3,), (1,))`` and the next key extends it)."""
    position = {index: pos for pos, index in enumerate(order, start=1)}
    groups = tuple(tuple(sorted(position[i] for i in group)) for group in groups_from_ranks(ranks))
    return groups[:-1] if len(groups) > 1 else groups


def label_to_draft(label: Label | None, order: tuple[int, ...]) -> LabelDraft:
    """Show a stored label in this annotator's screen terms."""
    if label is None or label.outcome == "cleared":
        return LabelDraft()
    position = {index: pos for pos, index in enumerate(order, start=1)}
    preferred = label.preferred
    rank_groups: tuple[tuple[int, ...], ...] = ()
    if label.ranks and all(i in position for i in range(len(label.ranks))):
        rank_groups = screen_groups(label.ranks, order)
    return LabelDraft(
        rank_groups=rank_groups,
        outcome=None if label.outcome == "unrated" else label.outcome,
        preferred_position=position.get(preferred) if preferred is not None else None,
        strength=label.strength,
        error_types=tuple(label.error_types),
        discard_reasons=tuple(label.discard_reasons),
        note=label.note,
        step_marks=tuple((position[idx], step, correct) for idx, step, correct in label.step_marks if idx in position),
    )


def project_label_schema(store: Store, version: int | None = None) -> LabelSchema:
    """The project's label schema (``version``: that stored version; ``None``: the newest),
    the built-in one when the project stores none; ``ValueError`` for a version it lacks.
    Reads only."""
    row = label_schema_row(store, version)
    if row is None:
        if version not in (None, DEFAULT_SCHEMA.version):
            raise ValueError(f"{store.path} has no label schema version {version}")
        return DEFAULT_SCHEMA
    return schema_from_json(row.schema, row.guidelines, row.version, row.note)


def describe(draft: LabelDraft, n_responses: int | None = None) -> str:
    """A short summary for the item table, in screen terms (e.g. ``R2 clearly``; a ranking
    ``R3 > R1 = R4 > R2``, the responses left unranked last when ``n_responses`` is given)."""
    if draft.is_empty:
        return ""
    if draft.rank_groups:
        groups = [[p - 1 for p in group] for group in draft.rank_groups]
        ranked = {p for group in groups for p in group}
        if n_responses is not None and (rest := [p for p in range(n_responses) if p not in ranked]):
            groups.append(rest)
        text = ranking_text(groups)
    elif draft.outcome == "prefer" and draft.preferred_position:
        text = f"R{draft.preferred_position}" + (f" {draft.strength}" if draft.strength else "")
    else:
        text = {"tie": "tie", "both_bad": "both bad", "discard": "discard"}.get(draft.outcome or "", "")
    if draft.error_types:
        errors = ", ".join(t.kind for t in draft.error_types)
        text = f"{text} · {errors}" if text else f"no preference · {errors}"
    if draft.step_marks and not text:
        text = f"{len(draft.step_marks)} steps marked"
    return text or "note"


@dataclass(frozen=True)
class _Change:
    item_id: int
    before: LabelDraft
    after: LabelDraft


class LabelingSession:
    """Labels for one annotator in one project. Not thread-safe; use from one thread.

    ``pending`` shares the labels not yet stored with another session of the same project
    (the window's labeling and adjudicating sessions); by default the project's journal is
    read, and what it holds is written now when the project can be written.
    """

    def __init__(self, store: Store, annotator: str, kind: str = "label", pending: PendingLabels | None = None):
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
        # The schema the window shows: labels record its version (they are given under it).
        self.schema = project_label_schema(store)
        self.pending = pending if pending is not None else PendingLabels(store.path)
        if pending is None and len(self.pending) and not store.readonly:
            self.retry_pending()  # a start after a crash or a failed save: replay the journal

    def order(self, item_id: int) -> tuple[int, ...]:
        """The response order this annotator sees for the item (the same every time; reads only)."""
        return self.store.display_order(item_id, self.annotator)

    def draft(self, item_id: int) -> LabelDraft:
        """The annotator's current label for the item, in screen terms."""
        return label_to_draft(self._current_label(item_id), self.order(item_id))

    def _current_label(self, item_id: int) -> Label | None:
        """The newest pending label of the item, else the stored current one."""
        pending = self.pending.latest(item_id, self.annotator, self.kind)
        if pending is not None:
            return pending
        return self.store.current_label(item_id, self.annotator, self.kind)

    def save(self, item_id: int, draft: LabelDraft, active_ms: int | None = None) -> Label | None:
        """Write ``draft`` as the item's new current label (durably, before returning: in
        the project, or kept pending in the journal when the project cannot be written).
        ``active_ms``: the item's active time so far (``active_time.ActiveTime``), stored with it.

        Returns the label (stored or pending), or ``None`` when nothing changed.
        """
        before = self.draft(item_id)
        if draft == before:
            return None
        label = self._write(item_id, draft, active_ms)
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

    def _write(self, item_id: int, draft: LabelDraft, active_ms: int | None = None) -> Label:
        """The one write path: store the label, or keep it pending (behind any pending ones,
        so that labels land in the order they were made)."""
        label = draft_to_label(item_id, self.annotator, self.order(item_id), draft, self.kind)
        label = replace(label, uuid=str(uuidlib.uuid4()), created_at=utc_now(), active_ms=active_ms)  # kept if it waits
        if len(self.pending):
            self.pending.keep(label, ext_id=self._ext_id(item_id))
            self.retry_pending()
            return label
        try:
            with waiting_at_most(self.store, SAVE_WAIT_MS):
                return self.store.add_label(label, self.schema.version)
        except Exception as exc:
            failure = save_failure(exc)
            if failure is None:
                raise
            self.pending.keep(label, failure, self._ext_id(item_id))
            return label

    def _ext_id(self, item_id: int) -> str | None:
        """The item's dataset id for the journal (``None`` when even reading fails)."""
        try:
            summaries = self.store.item_summaries_by_id([item_id])
        except Exception as exc:
            if save_failure(exc) is None:
                raise
            return None
        return summaries[0].ext_id if summaries else None

    # -- labels not yet stored --------------------------------------------------------------

    def retry_pending(self) -> list[Label]:
        """Write the pending labels in order, waiting at most :data:`RETRY_WAIT_MS` for
        another process's write lock; returns those stored now."""
        return self.pending.flush(self.store, RETRY_WAIT_MS)

    def close(self) -> list[Label]:
        """A last try to store the pending labels. Returns those still not stored but kept in
        the journal (stored at the next start); raises :class:`~.pending.UnsavedLabels` when
        some are only in memory (the journal could not be written either), so nothing
        acknowledged is dropped without a word. The store stays open (it is the caller's)."""
        if len(self.pending):
            self.retry_pending()
        if self.pending.memory_only():
            raise UnsavedLabels(self.pending)
        return list(self.pending.labels)

    def __enter__(self) -> LabelingSession:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.close()

    def pending_item_ids(self) -> set[int]:
        """Items whose label by this session is pending."""
        return set(self.pending.by_item(self.annotator, self.kind))

    # -- navigation and the table -----------------------------------------------------------

    def first_unlabeled(self, after_id: int = 0) -> int | None:
        """Where to resume: the first item (after ``after_id``) without a current label of
        this session's kind (pending labels count)."""
        pending = self.pending.by_item(self.annotator, self.kind)
        item_id = self.store.first_unlabeled(self.annotator, after_id, self.kind)
        while item_id is not None and item_id in pending and pending[item_id].is_labeled:
            item_id = self.store.first_unlabeled(self.annotator, item_id, self.kind)
        cleared = [i for i, label in pending.items() if not label.is_labeled and i > after_id]
        candidates = [i for i in (item_id, *cleared) if i is not None]
        return min(candidates) if candidates else None

    def labeled_ids(self) -> set[int]:
        """Items with this annotator's current label of this session's kind, pending labels
        counted (what the "next item" queue of ``app/judge/queue.py`` leaves out)."""
        from ..store.queue_queries import queue_labeled_ids

        done = queue_labeled_ids(self.store, self.annotator, self.kind)
        for item_id, label in self.pending.by_item(self.annotator, self.kind).items():
            (done.add if label.is_labeled else done.discard)(item_id)
        return done

    def progress(self) -> tuple[int, int]:
        """(items labeled — or adjudicated — by this annotator, items in the project);
        pending labels count."""
        done = self.store.labeled_count(self.annotator, self.kind)
        pending = self.pending.by_item(self.annotator, self.kind)
        if pending:
            stored = self.store.current_labels(self.annotator, list(pending), self.kind)
            done += sum(label.is_labeled - (i in stored and stored[i].is_labeled) for i, label in pending.items())
        return done, self.store.item_count()

    def table_filter(self, text: str = "", category: str | None = None, status: str | None = None) -> ItemFilter:
        """The table's filter; ``labeled``/``unlabeled`` mean this session's kind."""
        return ItemFilter(category=category, text=text, status=status, annotator=self.annotator, label_kind=self.kind)

    def row_of(self, item_id: int, item_filter: ItemFilter | None = None) -> int:
        """The item's row in the table under ``item_filter``."""
        return self.store.count_items(item_filter, before_id=item_id)

    def table_row(self, item_id: int) -> TableRow:
        """The table row of one item (after its label changed)."""
        return self._rows(self.store.item_summaries_by_id([item_id]))[0]

    def table_rows(
        self, offset: int, limit: int, item_filter: ItemFilter | FilteredItems | None = None
    ) -> list[TableRow]:
        """A page of table rows with this annotator's status and label (or adjudication) summary;
        from a :class:`FilteredItems` (the filter's one query, ``store.filtered_items``) when given."""
        if isinstance(item_filter, FilteredItems):
            return self._rows(item_filter.page(offset, limit))
        return self._rows(self.store.item_summaries(offset, limit, filter=item_filter))

    def _rows(self, summaries) -> list[TableRow]:
        ids = [s.id for s in summaries]
        labels = self.store.current_labels(self.annotator, ids, self.kind)
        pending = self.pending.by_item(self.annotator, self.kind)
        orders = self.store.display_orders(self.annotator, ids)
        rows = []
        for s in summaries:
            mark = PENDING_MARK if s.id in pending else ""
            label = pending[s.id] if mark else labels.get(s.id)
            if label is None or label.outcome == "cleared":
                rows.append(TableRow(s, "unlabeled", mark))
                continue
            draft = label_to_draft(label, orders[s.id])
            # Error types or a note alone leave the item unlabeled (shown with what they say).
            status = "discarded" if label.outcome == "discard" else "labeled" if label.is_labeled else "unlabeled"
            rows.append(TableRow(s, status, describe(draft, len(orders[s.id])) + mark))
        return rows
