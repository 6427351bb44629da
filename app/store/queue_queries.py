"""The reads behind the annotator's "next item" queue (``app/judge/queue.py``): the stored item
verdicts of some runs, the judges' stored confidence, every annotator's current preference,
and the items one annotator has labeled. Read-only; plain rows, ordered by item id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..records import STATED_OUTCOMES

if TYPE_CHECKING:  # pragma: no cover
    from .connection import StoreBase


def _marks(ids: Sequence[object]) -> str:
    return ",".join("?" * len(ids))


def queue_judge_rows(store: StoreBase, run_ids: Sequence[int]) -> list[tuple[int, int, int | None]]:
    """``(item_id, run_id, choice)`` of the runs' stored item verdicts (``judge_items``, the
    official vote; ``choice`` None = no majority), by item then run."""
    ids = [int(r) for r in run_ids]
    if not ids:
        return []
    return store.query(
        f"SELECT item_id, run_id, choice FROM judge_items WHERE run_id IN ({_marks(ids)}) ORDER BY item_id, run_id",
        ids,
    )


def queue_label_rows(store: StoreBase) -> list[tuple[int, str, str, int | None]]:
    """``(item_id, annotator, outcome, preferred)`` of every current label (kind ``label``)
    stating a preference — a response, a tie or both bad — by item then annotator."""
    return store.query(
        "SELECT lc.item_id, a.name, lc.outcome, lc.preferred FROM label_current lc"
        " JOIN annotators a ON a.id = lc.annotator_id"
        f" WHERE lc.kind = 'label' AND lc.outcome IN ({_marks(STATED_OUTCOMES)})"
        " ORDER BY lc.item_id, a.name",
        STATED_OUTCOMES,
    )


def queue_labeled_ids(store: StoreBase, annotator: str, kind: str = "label") -> set[int]:
    """Items with a current label (``labeled``) of ``kind`` by ``annotator``."""
    rows = store.query(
        "SELECT lc.item_id FROM label_current lc WHERE lc.kind = ? AND lc.labeled"
        " AND lc.annotator_id = (SELECT id FROM annotators WHERE name = ?)",
        (kind, annotator),
    )
    return {r[0] for r in rows}


def queue_stamp(store: StoreBase, run_ids: Sequence[int] | None) -> tuple:
    """What changes whenever a queue's inputs change: the runs' samples and stored item
    verdicts (``run_ids``), else the current labels (the annotators' order). Cheap: counts
    and sums over indexed columns."""
    if run_ids is None:
        return tuple(store.query("SELECT count(*), max(rowid) FROM labels")[0])
    ids = [int(r) for r in run_ids]
    if not ids:
        return ()
    marks = _marks(ids)
    samples = store.query(f"SELECT count(*), max(id) FROM verdicts WHERE run_id IN ({marks})", ids)[0]
    items = store.query(
        f"SELECT count(*), total(confidence), total(choice), total(choice IS NULL) FROM judge_items"
        f" WHERE run_id IN ({marks})",
        ids,
    )[0]
    return (*samples, *items)


__all__ = ["queue_judge_rows", "queue_label_rows", "queue_labeled_ids", "queue_stamp"]
