"""Annotators, append-only labels, blind display orders and collections."""

from __future__ import annotations

import json
import random
import uuid as uuidlib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..rankings import RankingError, ranked_fields
from ..records import ErrorTag, Label
from .clock import time_problem
from .connection import StoreBase, dumps, inserted_id, utc_now

_LABEL_COLUMNS = (
    "l.uuid, l.item_id, a.name, l.created_at, l.kind, l.outcome, l.ranking, l.strength,"
    " l.error_types, l.discard_reasons, l.note, l.display_order, l.step_marks, l.active_ms, l.ranks"
)


def _label_from_row(row: Sequence[Any]) -> Label:
    (uid, item_id, name, created, kind, outcome, ranking, strength, errors, reasons, note, order, marks) = row[:13]
    active_ms = row[13] if len(row) > 13 else None
    ranks = tuple(json.loads(row[14])) if len(row) > 14 and row[14] else ()
    return Label(
        item_id=item_id,
        annotator=name,
        outcome=outcome,
        ranking=tuple(json.loads(ranking)),
        strength=strength,
        error_types=tuple(ErrorTag(**e) for e in json.loads(errors)),
        discard_reasons=tuple(json.loads(reasons)),
        note=note,
        display_order=tuple(json.loads(order)),
        step_marks=tuple(tuple(m) for m in json.loads(marks)),
        kind=kind,
        uuid=uid,
        created_at=created,
        active_ms=active_ms,
        ranks=ranks,
    )


def ranks_problem(label: Label, n_responses: int) -> str | None:
    """Why ``label.ranks`` cannot be stored with the rest of the label (``None``: it can): one
    dense rank per response, and the outcome and ranking :func:`ranked_fields` derives."""
    if len(label.ranks) != n_responses:
        return f"ranks {list(label.ranks)} do not give one rank to each of the {n_responses} responses"
    try:
        outcome, ranking, dense = ranked_fields(label.ranks)
    except RankingError as exc:
        return str(exc)
    if dense != tuple(label.ranks) or (label.outcome, tuple(label.ranking)) != (outcome, ranking):
        return f"ranks {list(label.ranks)} mean {outcome} {list(ranking)}, not {label.outcome} {list(label.ranking)}"
    return None


#: The one definition of a current label: ``label_current`` (kept by the trigger
#: ``labels_keep_current``, schema migration 2) names the current ``labels`` row per (kind,
#: item, annotator); a ``cleared`` current row means "no current label". Every reader below
#: goes through it.
_CURRENT_FROM = "label_current lc JOIN labels l ON l.rowid = lc.label_rowid JOIN annotators a ON a.id = lc.annotator_id"
_KINDS = ("label", "adjudication")
_ANY_KIND = "lc.kind IN ('label', 'adjudication')"  # lets an item's lookups use the primary key
_ANNOTATOR = "(SELECT id FROM annotators WHERE name = ?)"  # evaluated once per statement


def _check_kind(kind: str) -> str:
    if kind not in _KINDS:
        raise ValueError(f"a label kind is 'label' or 'adjudication', not {kind!r}")
    return kind


def derived_display_order(annotator: str, identity: str, n_responses: int) -> tuple[int, ...]:
    """The blind response order for an annotator and an item that has none stored.

    A pure function of the annotator's name and the item's identity (dataset id + content,
    the same in a project, its packs and merges), so reading it never writes and every copy
    of a project shows the same order. It does not depend on the reference ranking.
    """
    order = list(range(n_responses))
    random.Random(f"pairscope-display-order:{annotator}:{identity}").shuffle(order)
    return tuple(order)


class LabelsMixin(StoreBase):
    """Label storage. Mixed into :class:`pairscope.app.store.Store`.

    Reading (current labels, progress, display orders) never writes and so never waits for
    another process's write transaction; only :meth:`add_label` (and collections) write.
    """

    def annotator_id(self, name: str) -> int:
        """The id of an annotator, creating the annotator on first use (writes)."""
        name = name.strip()
        if not name:
            raise ValueError("an annotator needs a non-empty name")
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM annotators WHERE name = ?", (name,)).fetchone()
            if row:
                return row[0]
            return inserted_id(
                conn.execute("INSERT INTO annotators (name, created_at) VALUES (?, ?)", (name, utc_now()))
            )

    def find_annotator(self, name: str) -> int | None:
        """The id of an annotator, ``None`` if nobody of that name has labeled yet (reads only)."""
        rows = self.query("SELECT id FROM annotators WHERE name = ?", (name.strip(),))
        return rows[0][0] if rows else None

    def annotators(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM annotators ORDER BY id")]

    def add_label(self, label: Label, schema_version: int | None = None) -> Label:
        """Append a label durably (``synchronous=FULL``); returns it with uuid and time set.

        The ranking must name each response index at most once and only indices the item
        has, and a given time must be ISO-8601 and not in the future (``clock.time_problem``);
        anything else raises ``ValueError`` and writes nothing. A new annotator name is
        created here. ``schema_version`` is the label schema version it was given under
        (``None``: the project's newest, else the built-in version 1; see ``label_schemas``).
        """
        _check_kind(label.kind)
        n = self.query("SELECT n_responses FROM items WHERE id = ?", (label.item_id,))
        if not n:
            raise KeyError(f"no item with id {label.item_id}")
        n_responses = n[0][0]
        for seq, what in ((label.ranking, "ranking"), (label.display_order, "display order")):
            if len(set(seq)) != len(seq) or any(not 0 <= i < n_responses for i in seq):
                raise ValueError(f"{what} {list(seq)} is not a list of distinct response indices < {n_responses}")
        if label.outcome == "prefer" and not label.ranking:
            raise ValueError("a 'prefer' label needs the preferred response index")
        if label.ranks and (why := ranks_problem(label, n_responses)) is not None:
            raise ValueError(f"{why}; not stored")
        if label.active_ms is not None and (
            isinstance(label.active_ms, bool) or not isinstance(label.active_ms, int) or label.active_ms < 0
        ):
            raise ValueError(f"active time {label.active_ms!r} is not a whole number of milliseconds >= 0; not stored")
        if label.created_at and (why := time_problem(label.created_at)) is not None:
            raise ValueError(f"the label's time {label.created_at[:40]!r} {why}; not stored")
        stored = replace(label, uuid=label.uuid or str(uuidlib.uuid4()), created_at=label.created_at or utc_now())
        with self.transaction() as conn:
            annotator_id = self.annotator_id(label.annotator)
            conn.execute(
                "INSERT INTO labels (uuid, item_id, annotator_id, created_at, kind, outcome, ranking, preferred,"
                " strength, error_types, discard_reasons, note, display_order, step_marks, active_ms, ranks,"
                " schema_version)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                " coalesce(?, (SELECT max(version) FROM label_schemas), 1))",
                (
                    stored.uuid,
                    stored.item_id,
                    annotator_id,
                    stored.created_at,
                    stored.kind,
                    stored.outcome,
                    json.dumps(list(stored.ranking)),
                    stored.preferred,
                    stored.strength,
                    dumps([e.__dict__ for e in stored.error_types]),
                    json.dumps(list(stored.discard_reasons)),
                    stored.note,
                    json.dumps(list(stored.display_order)),
                    json.dumps([list(m) for m in stored.step_marks]),
                    stored.active_ms,
                    json.dumps(list(stored.ranks)),
                    schema_version,
                ),
            )
        return stored

    def label_history(self, item_id: int, annotator: str | None = None) -> list[Label]:
        """Every label row for an item (optionally one annotator's), oldest first."""
        sql = f"SELECT {_LABEL_COLUMNS} FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE l.item_id = ?"
        params: tuple = (item_id,)
        if annotator is not None:
            sql += " AND a.name = ?"
            params += (annotator,)
        rows = self.query(sql + " ORDER BY l.created_at, l.rowid", params)
        return [_label_from_row(r) for r in rows]

    # -- current labels: all read label_current --------------------------------------------

    def current_label(self, item_id: int, annotator: str, kind: str = "label") -> Label | None:
        """This annotator's current label (or adjudication) of the item; ``None`` if none or cleared."""
        rows = self.query(
            f"SELECT {_LABEL_COLUMNS} FROM {_CURRENT_FROM}"
            f" WHERE lc.kind = ? AND lc.item_id = ? AND lc.annotator_id = {_ANNOTATOR}"
            " AND lc.outcome != 'cleared'",
            (_check_kind(kind), item_id, annotator),
        )
        return _label_from_row(rows[0]) if rows else None

    def current_labels(
        self, annotator: str, item_ids: list[int] | None = None, kind: str = "label"
    ) -> dict[int, Label]:
        """The current (not cleared) label of ``kind`` per item for one annotator.

        ``item_ids=None`` means every item; otherwise only those (one query either way).
        """
        annotator_id = self.find_annotator(annotator)
        if annotator_id is None:
            return {}
        params: list = [annotator_id, _check_kind(kind)]
        where = ""
        if item_ids is not None:
            if not item_ids:
                return {}
            where = f" AND lc.item_id IN ({','.join('?' * len(item_ids))})"
            params += list(item_ids)
        rows = self.query(
            f"SELECT {_LABEL_COLUMNS} FROM {_CURRENT_FROM}"
            f" WHERE lc.annotator_id = ? AND lc.kind = ? AND lc.outcome != 'cleared'{where}",
            params,
        )
        return {row[1]: _label_from_row(row) for row in rows}

    def item_current_labels(self, item_id: int) -> list[Label]:
        """Every current (not cleared) label and adjudication of an item, one per (annotator,
        kind), oldest first (by time, then insertion)."""
        rows = self.query(
            f"SELECT {_LABEL_COLUMNS} FROM {_CURRENT_FROM}"
            f" WHERE {_ANY_KIND} AND lc.item_id = ? AND lc.outcome != 'cleared'"
            " ORDER BY lc.created_at, lc.label_rowid",
            (item_id,),
        )
        return [_label_from_row(r) for r in rows]

    def current_label_counts(self) -> dict[str, int]:
        """Current (not cleared) rows per kind, every annotator: ``{"label": n, "adjudication": m}``
        (what ``pairscope info`` reports; the history is ``info().labels``)."""
        rows = self.query("SELECT kind, count(*) FROM label_current WHERE outcome != 'cleared' GROUP BY kind")
        return {"label": 0, "adjudication": 0, **dict(rows)}

    def labeled_count(self, annotator: str, kind: str = "label") -> int:
        """How many items this annotator has a current label (or adjudication) for."""
        return self.query(
            f"SELECT count(*) FROM label_current WHERE annotator_id = {_ANNOTATOR} AND kind = ? AND labeled",
            (annotator, _check_kind(kind)),
        )[0][0]

    def first_unlabeled(self, annotator: str, after_id: int = 0, kind: str = "label") -> int | None:
        """The first item (in store order) after ``after_id`` without a current label of ``kind``.

        One primary-key probe of ``label_current`` per item: linear in the items skipped.
        """
        rows = self.query(
            "SELECT i.id FROM items i WHERE i.id > ?1 AND NOT EXISTS ("
            " SELECT 1 FROM label_current lc WHERE lc.kind = ?3 AND lc.item_id = i.id"
            "  AND lc.annotator_id = (SELECT id FROM annotators WHERE name = ?2) AND lc.labeled)"
            " ORDER BY i.id LIMIT 1",
            (after_id, annotator, _check_kind(kind)),
        )
        return rows[0][0] if rows else None

    # -- blind display orders ----------------------------------------------------------------

    def display_orders(self, annotator: str, item_ids: list[int]) -> dict[int, tuple[int, ...]]:
        """The order this annotator sees for each of these items (see :meth:`display_order`)."""
        if not item_ids:
            return {}
        marks = ",".join("?" * len(item_ids))
        # After a stored order, the order of the current label (else adjudication), cleared or
        # not: what the annotator saw when labeling, possibly in a pack merged back since.
        rows = self.query(
            "SELECT i.id, i.identity, i.n_responses, d.display_order,"
            " (SELECT l.display_order FROM label_current lc JOIN labels l ON l.rowid = lc.label_rowid"
            f"  WHERE {_ANY_KIND} AND lc.item_id = i.id AND lc.annotator_id = a.id AND l.display_order != '[]'"
            "  ORDER BY lc.kind = 'label' DESC LIMIT 1)"
            " FROM items i LEFT JOIN annotators a ON a.name = ?"
            " LEFT JOIN display_orders d ON d.item_id = i.id AND d.annotator_id = a.id"
            f" WHERE i.id IN ({marks})",
            (annotator.strip(), *item_ids),
        )
        out = {}
        for item_id, identity, n, stored, labeled in rows:
            kept = stored or labeled
            out[item_id] = tuple(json.loads(kept)) if kept else derived_display_order(annotator.strip(), identity, n)
        return out

    def display_order(self, item_id: int, annotator: str) -> tuple[int, ...]:
        """The response order this annotator sees for this item. Reads only.

        An order stored in ``display_orders`` (drawn and kept by earlier versions) comes
        first, then the order the annotator's current label (else adjudication) of the item
        was given in; otherwise :func:`derived_display_order` (the same every time, nothing
        written). ``KeyError`` for an unknown item.
        """
        order = self.display_orders(annotator, [item_id])
        if item_id not in order:
            raise KeyError(f"no item with id {item_id}")
        return order[item_id]

    # -- collections -------------------------------------------------------------------------

    def add_to_collection(self, name: str, item_ids: Iterable[int], description: str = "") -> int:
        """Add items to a named collection (created on first use); returns how many were new."""
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
            coll_id = (
                row[0]
                if row
                else conn.execute(
                    "INSERT INTO collections (name, description, created_at) VALUES (?, ?, ?)",
                    (name, description, utc_now()),
                ).lastrowid
            )
            before = conn.total_changes
            now = utc_now()
            conn.executemany(
                "INSERT OR IGNORE INTO collection_items (collection_id, item_id, added_at) VALUES (?, ?, ?)",
                ((coll_id, i, now) for i in item_ids),
            )
            return conn.total_changes - before

    def collections(self) -> dict[str, int]:
        """Collection name → item count."""
        return dict(
            self.query(
                "SELECT c.name, count(ci.item_id) FROM collections c"
                " LEFT JOIN collection_items ci ON ci.collection_id = c.id GROUP BY c.id ORDER BY c.name"
            )
        )

    def collection_item_ids(self, name: str) -> list[int]:
        return [
            r[0]
            for r in self.query(
                "SELECT ci.item_id FROM collection_items ci JOIN collections c ON c.id = ci.collection_id"
                " WHERE c.name = ? ORDER BY ci.item_id",
                (name,),
            )
        ]
