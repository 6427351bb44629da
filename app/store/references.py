"""Reviews of the dataset's reference: "reference is wrong" (with the corrected response),
"reference confirmed", or an earlier review withdrawn (table ``reference_reviews``, schema
migration 7 — see its docstring).

Append-only like labels: every decision is a new row with who, when and why; the newest row
per item is its *current review*, and a ``withdrawn`` current row means "no review". A project
older than the table has no reviews (reads return nothing; a write raises ``ValueError``).
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .clock import time_problem
from .connection import utc_now

if TYPE_CHECKING:  # pragma: no cover
    from .connection import StoreBase

#: What a review says about the reference.
REVIEW_VERDICTS = ("wrong", "confirmed", "withdrawn")
_TABLE = "reference_reviews"
_COLUMNS = "r.uuid, r.item_id, a.name, r.created_at, r.verdict, r.corrected, r.original, r.reason"
_FROM = f"{_TABLE} r JOIN annotators a ON a.id = r.annotator_id"


@dataclass(frozen=True)
class ReferenceReview:
    """One reviewer's decision on an item's reference. ``original`` is the reference's chosen
    response when the review was made; ``corrected`` the response the reviewer names as the
    better one (``wrong`` only; ``None``: none of them, or not said)."""

    item_id: int
    reviewer: str
    verdict: str
    corrected: int | None = None
    reason: str = ""
    original: int | None = None
    created_at: str | None = None
    uuid: str | None = None


def _row(row: tuple) -> ReferenceReview:
    uid, item_id, name, created, verdict, corrected, original, reason = row
    return ReferenceReview(item_id, name, verdict, corrected, reason, original, created, uid)


def has_reference_reviews(store: StoreBase) -> bool:
    """Whether the project has the table (schema 8 and later; a file read without upgrading may not)."""
    return bool(store.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_TABLE,)))


def add_reference_review(store: StoreBase, review: ReferenceReview) -> ReferenceReview:
    """Append a review (durably, in one transaction); returns it with uuid, time and the
    reference it reviewed. ``ValueError`` (nothing written) for an unknown verdict, a
    corrected response the item lacks or that is the reference itself, a ``wrong`` review of
    an item without a reference, an empty reviewer name, a bad time, or a project without the
    table; ``KeyError`` for an unknown item."""
    if review.verdict not in REVIEW_VERDICTS:
        raise ValueError(f"a reference review is one of {', '.join(REVIEW_VERDICTS)}, not {review.verdict!r}")
    name = review.reviewer.strip()
    if not name:
        raise ValueError("a reference review needs the reviewer's name")
    if review.created_at and (why := time_problem(review.created_at)) is not None:
        raise ValueError(f"the review's time {review.created_at[:40]!r} {why}; not stored")
    if not has_reference_reviews(store):
        raise ValueError(f"{store.path} predates reference reviews: open it writable once to upgrade it")
    with store.transaction() as conn:
        found = conn.execute("SELECT n_responses, ref_chosen FROM items WHERE id = ?", (review.item_id,)).fetchone()
        if found is None:
            raise KeyError(f"no item with id {review.item_id}")
        n_responses, reference = found
        if review.verdict != "withdrawn" and reference is None:
            raise ValueError(f"item {review.item_id} has no dataset reference to review")
        if review.corrected is not None:
            if review.verdict != "wrong":
                raise ValueError("only a 'wrong' review names a corrected response")
            if not 0 <= review.corrected < n_responses:
                raise ValueError(f"item {review.item_id} has no response {review.corrected} (it has {n_responses})")
            if review.corrected == reference:
                raise ValueError(f"response {review.corrected} is the reference itself: a correction names another")
        row = conn.execute("SELECT id FROM annotators WHERE name = ?", (name,)).fetchone()
        if row is None:
            cur = conn.execute("INSERT INTO annotators (name, created_at) VALUES (?, ?)", (name, utc_now()))
            annotator_id = cur.lastrowid
        else:
            annotator_id = row[0]
        stored = ReferenceReview(
            review.item_id,
            name,
            review.verdict,
            review.corrected,
            review.reason.strip(),
            reference,
            review.created_at or utc_now(),
            review.uuid or str(uuidlib.uuid4()),
        )
        conn.execute(
            f"INSERT INTO {_TABLE} (uuid, item_id, annotator_id, created_at, verdict, corrected, original, reason)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                stored.uuid,
                stored.item_id,
                annotator_id,
                stored.created_at,
                stored.verdict,
                stored.corrected,
                stored.original,
                stored.reason,
            ),
        )
    return stored


def reference_review_history(store: StoreBase, item_id: int) -> list[ReferenceReview]:
    """Every review of an item, oldest first (the audit trail)."""
    if not has_reference_reviews(store):
        return []
    rows = store.query(f"SELECT {_COLUMNS} FROM {_FROM} WHERE r.item_id = ? ORDER BY r.created_at, r.rowid", (item_id,))
    return [_row(r) for r in rows]


def current_reference_reviews(store: StoreBase, item_ids: Iterable[int] | None = None) -> dict[int, ReferenceReview]:
    """The current review per item (the newest row; items whose newest is ``withdrawn`` have
    none), of every item or of these."""
    if not has_reference_reviews(store):
        return {}
    rows = store.query(f"SELECT {_COLUMNS} FROM {_FROM} ORDER BY r.created_at, r.rowid")
    wanted = None if item_ids is None else set(item_ids)
    newest: dict[int, ReferenceReview] = {}
    for row in rows:
        review = _row(row)
        if wanted is None or review.item_id in wanted:
            newest[review.item_id] = review
    return {i: r for i, r in newest.items() if r.verdict != "withdrawn"}


def corrected_ranking(ranking: tuple[int, ...], corrected: int) -> tuple[int, ...]:
    """The reference ranking with the corrected response first, the others in the dataset's order."""
    return (corrected, *(i for i in ranking if i != corrected))


__all__ = [
    "REVIEW_VERDICTS",
    "ReferenceReview",
    "add_reference_review",
    "corrected_ranking",
    "current_reference_reviews",
    "has_reference_reviews",
    "reference_review_history",
]
