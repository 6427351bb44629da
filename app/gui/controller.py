"""The annotation window's controller: the labeling session, the table filter, the
current item and its media. The window forwards user actions here and shows what comes
back; nothing here builds widgets.

A save never raises for a project that cannot be written just now: the session keeps the
label pending (see :mod:`pairscope.app.labeling.pending`), ``pending_changed`` tells the window what
to say, and a timer retries until every pending label is stored."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from ..judge.queue import QueueCache
from ..judge.runs import RunChoice, pick_run, run_choices
from ..labeling.active_time import ActiveTime
from ..labeling.session import LabelingSession
from ..records import Item, ItemFilter, LabelDraft, TableRow
from ..store import Store
from .media_loader import FrameSource, LoadedMedia, MediaLoader

if TYPE_CHECKING:
    from ..judge.review import ReviewData


def filtered_item_ids(store: Store, item_filter: ItemFilter) -> list[int]:
    """The ids of the items ``item_filter`` selects, in the table's order (store work: what a
    background op lists through its own connection instead of the window's table)."""
    return [s.id for s in store.item_summaries(0, max(store.count_items(item_filter), 1), filter=item_filter)]


@dataclass(frozen=True)
class ItemView:
    """Everything the window shows for the current item (blind: no reference data)."""

    item: Item
    order: tuple[int, ...]
    draft: LabelDraft

    @property
    def item_id(self) -> int:
        """The item's store key (the window shows items read from the store: they have one)."""
        assert self.item.id is not None, f"item {self.item.ext_id} is not stored"
        return self.item.id


#: Review filters of the table: name → ItemFilter fields (judge filters use the chosen run).
FOCUS: dict[str, dict] = {
    "judge_wrong": {"judge": "wrong"},
    "judge_unparsed": {"judge": "unparsed"},
    "judge_inconsistent": {"judge": "inconsistent"},
    "judge_confident_wrong": {"judge": "confident_wrong"},
    "annotators_disagree": {"disagreement": "annotators"},
    "disagree_with_reference": {"disagreement": "reference"},
    "adjudicated": {"status": "adjudicated"},
    "not_adjudicated": {"status": "not_adjudicated"},
    "suspect_reference": {},  # the suspect queue's items (set_filter: item_ids)
}

#: How often labels kept pending are retried (each retry waits at most RETRY_WAIT_MS).
RETRY_INTERVAL_MS = 1000


class AnnotationController(QObject):
    """Owns the project for the window. Signals reach the GUI thread."""

    media_ready = Signal(object)  # LoadedMedia of the current item
    saved = Signal(object)  # TableRow of the item whose label changed
    pending_changed = Signal(str)  # what to tell the user about labels not yet saved ("" : all saved)

    def __init__(self, store: Store, annotator: str, parent=None):
        super().__init__(parent)
        self.store = store
        self.session = LabelingSession(store, annotator)  # replays what an earlier run left pending
        self.filter = self.session.table_filter()
        self.run_id: int | None = None  # the judge run judge readers show (see choose_run)
        self.ensemble: tuple[int, ...] = ()  # runs read together (review table, queue); () = none
        self.queue_order = "id"  # what U takes next (app/judge/queue.py ORDERS)
        self.queue = QueueCache()  # the last queue ranked, while its inputs stay the same
        self.suspects: list[tuple[int, float]] | None = None  # the suspect queue (a background op's)
        self.next_reason = ""  # why the item U chose is next
        self.current: ItemView | None = None
        self.active_time = ActiveTime()  # fed by the window: focus, input (activity.py)
        self.loader = MediaLoader(parent=self)
        self.loader.loaded.connect(self._on_loaded)
        self._frames: FrameSource | None = None
        self._retry = QTimer(self, interval=RETRY_INTERVAL_MS)
        self._retry.timeout.connect(self.retry_pending)
        if len(self.session.pending):
            self._retry.start()

    @property
    def annotator(self) -> str:
        return self.session.annotator

    @property
    def path(self) -> Path:
        return self.store.path

    # -- the table ---------------------------------------------------------------------------

    def set_filter(
        self, text: str = "", category: str | None = None, status: str | None = None, focus: str | None = None
    ) -> None:
        """The table's filter; ``focus`` is one of :data:`FOCUS` (failure stepping, review)."""
        base = self.session.table_filter(text, category, status)
        fields = dict(FOCUS.get(focus or "", {}))
        if "judge" in fields:
            # No run yet: nothing to step through.
            fields["judge_run"] = self.run_id if self.run_id is not None else -1
        if focus == "suspect_reference":  # none until the scores are there (Shortcuts.score_suspects)
            fields["item_ids"] = tuple(sorted(i for i, _ in self.suspects or []))
        self.filter = replace(base, **fields)

    # -- the judge run every judge reader uses -------------------------------------------------

    def runs(self) -> list[RunChoice]:
        """Every judge run of the project (model, mode, K, date, size), oldest first."""
        return run_choices(self.store)

    def choose_run(self, run_id: int | None) -> RunChoice | None:
        """Make ``run_id`` the run the filters, review and judge panels read (an unknown or
        None id: the default run, the one that judged the most items); returns it."""
        chosen = pick_run(self.runs(), run_id)
        self.run_id = chosen.id if chosen is not None else None
        if self.filter.judge_run is not None and self.filter.judge is not None:
            self.filter = replace(self.filter, judge_run=self.run_id if self.run_id is not None else -1)
        return chosen

    def row_count(self) -> int:
        """The table's rows under the filter: one query (``store.filtered_items``), which the
        pages and :meth:`row_of` then read until the filter changes or is applied again."""
        self.filtered = self.store.filtered_items(self.filter)
        return self.filtered.count

    def _filtered(self):
        if getattr(self, "filtered", None) is None or self.filtered.filter != self.filter:
            self.filtered = self.store.filtered_items(self.filter)
        return self.filtered

    def page(self, offset: int, limit: int) -> list[TableRow]:
        return self.session.table_rows(offset, limit, self._filtered())

    def categories(self) -> list[str]:
        return list(self.store.categories())

    def row_of(self, item_id: int) -> int:
        return self._filtered().row_of(item_id)

    def resume_row(self) -> int:
        """The row to open with: the first item this annotator has not labeled."""
        item_id = self.session.first_unlabeled()
        return 0 if item_id is None else self.row_of(item_id)

    def next_unlabeled_row(self) -> int | None:
        """The row of the next item to label in :attr:`queue_order`; :attr:`next_reason` says why."""
        from ..judge.queue import empty_reason, next_in_queue, preference_runs, suspect_reference

        after = self.current.item_id if self.current else 0
        fallback = ""
        if self.queue_order != "id":
            runs = list(self.ensemble) or preference_runs(self.store)
            labeled = self.session.labeled_ids()
            if self.queue_order == "suspect_reference":
                entries = suspect_reference(self.suspects or [], labeled)
            else:
                entries = self.queue.ranked(self.store, self.queue_order, self.annotator, labeled, runs)
            entry = next_in_queue(entries, after or None)
            if entry is not None:
                self.next_reason = entry.reason
                return self.row_of(entry.item_id)
            fallback = empty_reason(self.queue_order, runs)
        item_id = self.session.first_unlabeled(after) or self.session.first_unlabeled()
        self.next_reason = fallback
        return None if item_id is None else self.row_of(item_id)

    def set_ensemble(self, run_ids) -> None:
        """Read these runs together in the review panel and the queue (empty: the chosen run)."""
        self.ensemble = tuple(run_ids)

    def progress(self) -> tuple[int, int]:
        """(items with this user's current label — adjudication when adjudicating —, all items)."""
        return self.session.progress()

    # -- the current item --------------------------------------------------------------------

    def open(self, item_id: int, neighbours: tuple[int, ...] = ()) -> ItemView:
        """Make ``item_id`` current; its media arrive through ``media_ready`` (or at once
        from the cache), and ``neighbours`` are decoded ahead."""
        item = self.store.get_item(item_id)
        self.current = ItemView(item, self.session.order(item_id), self.session.draft(item_id))
        self.active_time.show(item_id)
        prefetch = tuple(self.store.get_item(n) for n in neighbours)
        hit = self.loader.request(item, prefetch=prefetch)
        if hit is not None:
            self._on_loaded(hit)
        return self.current

    def clear_current(self) -> None:
        """No item is current (the table shows none); a save then does nothing."""
        self.close_frames()
        self.current = None
        self.active_time.show(None)

    def frame_source(self, path: str) -> FrameSource:
        """Frames for playback of the current video (replaces the previous reader)."""
        self.close_frames()
        self._frames = FrameSource(path)
        return self._frames

    def close_frames(self) -> None:
        if self._frames is not None:
            self._frames.close()
            self._frames = None

    def _on_loaded(self, media: LoadedMedia) -> None:
        if self.current is not None and media.item_id == self.current.item.id:
            self.media_ready.emit(media)

    # -- labels ------------------------------------------------------------------------------

    def save(self, draft: LabelDraft) -> bool:
        """Save the current item's label (durably, before returning); True if it changed."""
        if self.current is None:
            return False
        item_id = self.current.item_id
        waiting = self.session.pending_item_ids()
        if self.session.save(item_id, draft, self.active_time.active_ms(item_id)) is None:
            return False
        self.current = ItemView(self.current.item, self.current.order, self.session.draft(item_id))
        self.saved.emit(self.session.table_row(item_id))
        self._after_pending(waiting - {item_id})
        return True

    def undo(self) -> int | None:
        waiting = self.session.pending_item_ids()
        return self._after_history(self.session.undo(), waiting)

    def redo(self) -> int | None:
        waiting = self.session.pending_item_ids()
        return self._after_history(self.session.redo(), waiting)

    def _after_history(self, item_id: int | None, waiting: set[int]) -> int | None:
        """The item an undo/redo touched; refreshes the current view when it is that one."""
        if item_id is None:
            return None
        if self.current is not None and self.current.item.id == item_id:
            self.current = ItemView(self.current.item, self.current.order, self.session.draft(item_id))
        self.saved.emit(self.session.table_row(item_id))
        self._after_pending(waiting - {item_id})
        return item_id

    # -- labels not yet saved ----------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        """How many labels are kept, not yet stored in the project."""
        return len(self.session.pending)

    def pending_message(self) -> str:
        """What the window says about labels not yet saved (``""`` when every one is stored)."""
        return self.session.pending.message()

    def retry_pending(self) -> None:
        """Write the labels kept pending (the timer calls this until none is left)."""
        waiting = self.session.pending_item_ids()
        if len(self.session.pending):
            self.session.retry_pending()
        self._after_pending(waiting)

    def _after_pending(self, waiting: set[int]) -> None:
        """Show the rows of items that were waiting (their labels may have landed), say
        what is still pending, and retry while anything is."""
        for item_id in sorted(waiting):
            self.saved.emit(self.session.table_row(item_id))
        if len(self.session.pending):
            if not self._retry.isActive():
                self._retry.start()
        else:
            self._retry.stop()
        self.pending_changed.emit(self.pending_message())

    # -- review, adjudication, collections ------------------------------------------------------

    @property
    def adjudicating(self) -> bool:
        return self.session.kind == "adjudication"

    def set_adjudicating(self, on: bool) -> None:
        """Switch between labeling and adjudicating (final decisions, stored as
        ``kind="adjudication"`` under the same name). Undo history starts afresh; reload
        the table and progress afterwards."""
        kind = "adjudication" if on else "label"
        self.session = LabelingSession(self.store, self.annotator, kind, pending=self.session.pending)
        # The table's status, its labeled/unlabeled filter, progress and "next unlabeled"
        # now read this mode's kind.
        self.filter = replace(self.filter, label_kind=self.session.kind)
        if self.current is not None:
            current = self.current
            self.current = ItemView(current.item, current.order, self.session.draft(current.item_id))

    def review(self) -> ReviewData | None:
        """Every label and verdict of the current item, in this user's screen terms."""
        if self.current is None:
            return None
        from ..judge.review import review_data  # loads with the first review, not at start

        runs = self.ensemble or (None if self.run_id is None else (self.run_id,))
        return review_data(self.store, self.current.item, self.current.order, runs)

    def add_to_collection(self, name: str) -> int:
        """Add the current item to a named collection (every item the table shows: the
        background op :func:`collect_filtered`)."""
        ids = [self.current.item_id] if self.current else []
        return self.store.add_to_collection(name.strip(), ids)

    def close(self) -> None:
        """Stop, after a last try to store what is pending (what is not stays in the journal
        and is written at the next start)."""
        self._retry.stop()
        if len(self.session.pending):
            self.session.retry_pending()
        self.loader.stop()
        self.close_frames()
        self.store.close()


def suspect_queue(project: Path) -> list[tuple[int, float]]:
    """(item id, score) of the suspect references, most suspect first (``app.stats.suspects``),
    read through a connection of the calling background op's own."""
    from ..stats.suspects import load_suspects
    from .tasks import own_store

    with own_store(project, readonly=True) as store:
        return [(s.item_id, s.score) for s in load_suspects(store).queue()]


def collect_filtered(project: Path, name: str, item_filter: ItemFilter) -> int:
    """Add every item ``item_filter`` selects to the collection ``name`` through a connection
    of its own (a background op's work); returns how many were new."""
    from .tasks import own_store

    with own_store(project) as store:
        return store.add_to_collection(name.strip(), filtered_item_ids(store, item_filter))


__all__ = ["AnnotationController", "ItemView", "FOCUS", "collect_filtered", "filtered_item_ids"]
