"""Annotators, append-only labels, blind display orders and collections."""

from __future__ import annotations

import json
import random
import uuid as uuidlib
from dataclasses import replace

from ..records import ErrorTag, Label
from .connection import dumps, utc_now

_LABEL_COLUMNS = (
    "l.uuid, l.item_id, a.name, l.created_at, l.kind, l.outcome, l.ranking, l.strength,"
    " l.error_types, l.discard_reasons, l.note, l.display_order, l.step_marks"
)


def _label_from_row(row) -> Label:
    (uid, item_id, name, created, kind, outcome, ranking, strength, errors, reasons, note, order, marks) = row
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
    )


class LabelsMixin:
    """Label storage. Mixed into :class:`pairscope.app.store.Store`."""

    def annotator_id(self, name: str) -> int:
        """The id of an annotator, creating the annotator on first use."""
        name = name.strip()
        if not name:
            raise ValueError("an annotator needs a non-empty name")
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM annotators WHERE name = ?", (name,)).fetchone()
            if row:
                return row[0]
            return conn.execute(
                "INSERT INTO annotators (name, created_at) VALUES (?, ?)", (name, utc_now())
            ).lastrowid

    def annotators(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM annotators ORDER BY id")]

    def add_label(self, label: Label) -> Label:
        """Append a label durably (``synchronous=FULL``); returns it with uuid and time set.

        The ranking must name each response index at most once and only indices the item
        has; anything else raises ``ValueError`` and writes nothing.
        """
        n = self.query("SELECT n_responses FROM items WHERE id = ?", (label.item_id,))
        if not n:
            raise KeyError(f"no item with id {label.item_id}")
        n_responses = n[0][0]
        for seq, what in ((label.ranking, "ranking"), (label.display_order, "display order")):
            if len(set(seq)) != len(seq) or any(not 0 <= i < n_responses for i in seq):
                raise ValueError(f"{what} {list(seq)} is not a list of distinct response indices < {n_responses}")
        if label.outcome == "prefer" and not label.ranking:
            raise ValueError("a 'prefer' label needs the preferred response index")
        stored = replace(label, uuid=label.uuid or str(uuidlib.uuid4()), created_at=label.created_at or utc_now())
        with self.transaction() as conn:
            annotator_id = self.annotator_id(label.annotator)
            conn.execute(
                "INSERT INTO labels (uuid, item_id, annotator_id, created_at, kind, outcome, ranking, preferred,"
                " strength, error_types, discard_reasons, note, display_order, step_marks)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    stored.uuid, stored.item_id, annotator_id, stored.created_at, stored.kind, stored.outcome,
                    json.dumps(list(stored.ranking)), stored.preferred, stored.strength,
                    dumps([e.__dict__ for e in stored.error_types]), json.dumps(list(stored.discard_reasons)),
                    stored.note, json.dumps(list(stored.display_order)), json.dumps([list(m) for m in stored.step_marks]),
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

    def current_label(self, item_id: int, annotator: str, kind: str = "label") -> Label | None:
        """The newest label of this annotator for this item; ``None`` if none or cleared."""
        rows = self.query(
            f"SELECT {_LABEL_COLUMNS} FROM labels l JOIN annotators a ON a.id = l.annotator_id"
            " WHERE l.item_id = ? AND a.name = ? AND l.kind = ? ORDER BY l.created_at DESC, l.rowid DESC LIMIT 1",
            (item_id, annotator, kind),
        )
        if not rows:
            return None
        label = _label_from_row(rows[0])
        return None if label.outcome == "cleared" else label

    def current_labels(self, annotator: str, item_ids: list[int] | None = None) -> dict[int, Label]:
        """The current (newest, not cleared) label per item for one annotator.

        ``item_ids=None`` means every item; otherwise only those (one query either way).
        """
        params: list = [annotator]
        where = ""
        if item_ids is not None:
            if not item_ids:
                return {}
            where = f" AND l.item_id IN ({','.join('?' * len(item_ids))})"
            params += list(item_ids)
        rows = self.query(
            f"SELECT * FROM (SELECT {_LABEL_COLUMNS}, ROW_NUMBER() OVER ("
            "  PARTITION BY l.item_id ORDER BY l.created_at DESC, l.rowid DESC) AS rn"
            " FROM labels l JOIN annotators a ON a.id = l.annotator_id"
            f" WHERE a.name = ? AND l.kind = 'label'{where}) WHERE rn = 1 AND outcome != 'cleared'",
            params,
        )
        return {row[1]: _label_from_row(row[:-1]) for row in rows}

    def labeled_count(self, annotator: str) -> int:
        """How many items this annotator has a current label for."""
        return self.query(
            "SELECT count(*) FROM (SELECT l.outcome, max(l.created_at) FROM labels l"
            " WHERE l.kind = 'label' AND l.annotator_id = (SELECT id FROM annotators WHERE name = ?)"
            " GROUP BY l.item_id) WHERE outcome != 'cleared'",
            (annotator,),
        )[0][0]

    def first_unlabeled(self, annotator: str, after_id: int = 0) -> int | None:
        """The first item (in store order) after ``after_id`` without a current label.

        One index probe per item (covering index ``labels_current``): linear in the items
        skipped, where a join against all current labels was quadratic (76 s to resume
        after 30,000 labels; measured).
        """
        ids = self.query("SELECT id FROM annotators WHERE name = ?", (annotator,))
        if not ids:
            rows = self.query("SELECT id FROM items WHERE id > ? ORDER BY id LIMIT 1", (after_id,))
            return rows[0][0] if rows else None
        rows = self.query(
            "SELECT i.id FROM items i WHERE i.id > ?1 AND NOT EXISTS ("
            " SELECT 1 FROM labels l WHERE l.kind = 'label' AND l.item_id = i.id AND l.annotator_id = ?2"
            "  AND l.outcome != 'cleared' AND l.created_at = (SELECT max(l2.created_at) FROM labels l2"
            "  WHERE l2.kind = 'label' AND l2.item_id = i.id AND l2.annotator_id = ?2))"
            " ORDER BY i.id LIMIT 1",
            (after_id, ids[0][0]),
        )
        return rows[0][0] if rows else None

    def display_orders(self, annotator: str, item_ids: list[int]) -> dict[int, tuple[int, ...]]:
        """Display orders already drawn for these items (items never shown are absent)."""
        if not item_ids:
            return {}
        rows = self.query(
            "SELECT d.item_id, d.display_order FROM display_orders d JOIN annotators a ON a.id = d.annotator_id"
            f" WHERE a.name = ? AND d.item_id IN ({','.join('?' * len(item_ids))})",
            (annotator, *item_ids),
        )
        return {item_id: tuple(json.loads(order)) for item_id, order in rows}

    def display_order(self, item_id: int, annotator: str, seed: int | None = None) -> tuple[int, ...]:
        """The response order this annotator sees for this item, drawn once and kept."""
        with self.transaction() as conn:
            annotator_id = self.annotator_id(annotator)
            row = conn.execute(
                "SELECT display_order FROM display_orders WHERE item_id = ? AND annotator_id = ?",
                (item_id, annotator_id),
            ).fetchone()
            if row:
                return tuple(json.loads(row[0]))
            n = conn.execute("SELECT n_responses FROM items WHERE id = ?", (item_id,)).fetchone()
            if n is None:
                raise KeyError(f"no item with id {item_id}")
            order = list(range(n[0]))
            random.Random(seed).shuffle(order)
            conn.execute(
                "INSERT INTO display_orders (item_id, annotator_id, display_order) VALUES (?, ?, ?)",
                (item_id, annotator_id, json.dumps(order)),
            )
            return tuple(order)

    # -- collections -------------------------------------------------------------------------

    def add_to_collection(self, name: str, item_ids, description: str = "") -> int:
        """Add items to a named collection (created on first use); returns how many were new."""
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
            coll_id = row[0] if row else conn.execute(
                "INSERT INTO collections (name, description, created_at) VALUES (?, ?, ?)",
                (name, description, utc_now()),
            ).lastrowid
            before = conn.total_changes
            now = utc_now()
            conn.executemany(
                "INSERT OR IGNORE INTO collection_items (collection_id, item_id, added_at) VALUES (?, ?, ?)",
                ((coll_id, i, now) for i in item_ids),
            )
            return conn.total_changes - before

    def collections(self) -> dict[str, int]:
        """Collection name → item count."""
        return dict(self.query(
            "SELECT c.name, count(ci.item_id) FROM collections c"
            " LEFT JOIN collection_items ci ON ci.collection_id = c.id GROUP BY c.id ORDER BY c.name"
        ))

    def collection_item_ids(self, name: str) -> list[int]:
        return [r[0] for r in self.query(
            "SELECT ci.item_id FROM collection_items ci JOIN collections c ON c.id = ci.collection_id"
            " WHERE c.name = ? ORDER BY ci.item_id",
            (name,),
        )]
