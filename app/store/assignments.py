"""Team assignments and gold items (tables ``assignments`` and ``gold_items``, schema
migration 8 — see its docstring): who was given which item, in which round, when; and the
items a lead marked as gold with the expected outcome.

An assignment is never reissued: one row per (item, annotator). A project older than the
tables has none (reads return nothing; a write raises ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records import STATED_OUTCOMES
from .connection import utc_now

if TYPE_CHECKING:  # pragma: no cover
    from .connection import StoreBase

#: Outcomes a gold item may expect: those that state a preference.
GOLD_OUTCOMES = STATED_OUTCOMES


@dataclass(frozen=True)
class Assignment:
    """One item given to one annotator in one round (``batch``)."""

    item_id: int
    annotator: str
    batch: str
    assigned_at: str
    strategy: str
    seed: int
    gold: bool = False


@dataclass(frozen=True)
class GoldItem:
    """An item with the label it is expected to get (``preferred``: the response, for ``prefer``)."""

    item_id: int
    outcome: str
    preferred: int | None = None
    source: str = "marked"
    created_at: str | None = None


def has_assignments(store: StoreBase) -> bool:
    """Whether the project has the tables (schema 8 and later)."""
    return bool(store.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'assignments'"))


def any_assigned(store: StoreBase) -> bool:
    """Whether any item was ever assigned (``pairscope assign``)."""
    return has_assignments(store) and bool(store.query("SELECT 1 FROM assignments LIMIT 1"))


def _require(store: StoreBase) -> None:
    if not has_assignments(store):
        raise ValueError(f"{store.path} predates assignments: open it writable once to upgrade it")


def assignments(store: StoreBase, annotator: str | None = None) -> list[Assignment]:
    """Every assignment (or one annotator's), by item then annotator name."""
    if not has_assignments(store):
        return []
    sql = (
        "SELECT s.item_id, a.name, s.batch, s.assigned_at, s.strategy, s.seed, s.gold"
        " FROM assignments s JOIN annotators a ON a.id = s.annotator_id"
    )
    params: tuple[str, ...] = ()
    if annotator is not None:
        sql += " WHERE a.name = ?"
        params = (annotator.strip(),)
    rows = store.query(sql + " ORDER BY s.item_id, a.name", params)
    return [Assignment(r[0], r[1], r[2], r[3], r[4], int(r[5]), bool(r[6])) for r in rows]


def add_assignments(store: StoreBase, rows: Sequence[Assignment]) -> int:
    """Store new assignments in one transaction (annotators created as needed); returns how
    many. ``ValueError`` (nothing written) when one is already stored or names no item."""
    _require(store)
    if not rows:
        return 0
    now = utc_now()
    with store.transaction() as conn:
        ids: dict[str, int] = {}
        for name in sorted({r.annotator.strip() for r in rows}):
            if not name:
                raise ValueError("an annotator needs a non-empty name")
            conn.execute("INSERT OR IGNORE INTO annotators (name, created_at) VALUES (?, ?)", (name, now))
            ids[name] = conn.execute("SELECT id FROM annotators WHERE name = ?", (name,)).fetchone()[0]
        known = {r[0] for r in conn.execute("SELECT id FROM items")}
        taken = {(r[0], r[1]) for r in conn.execute("SELECT item_id, annotator_id FROM assignments")}
        for r in rows:
            if r.item_id not in known:
                raise ValueError(f"no item with id {r.item_id}")
            if (r.item_id, ids[r.annotator.strip()]) in taken:
                raise ValueError(f"item {r.item_id} is already assigned to {r.annotator.strip()}; never reissued")
        conn.executemany(
            "INSERT INTO assignments (item_id, annotator_id, batch, assigned_at, strategy, seed, gold)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (r.item_id, ids[r.annotator.strip()], r.batch, r.assigned_at or now, r.strategy, r.seed, int(r.gold))
                for r in rows
            ],
        )
    return len(rows)


def labeled_by(store: StoreBase, item_ids: Iterable[int] | None = None) -> dict[int, set[str]]:
    """Per item, the annotators whose current label of it makes it labeled."""
    rows = store.query(
        "SELECT lc.item_id, a.name FROM label_current lc JOIN annotators a ON a.id = lc.annotator_id"
        " WHERE lc.kind = 'label' AND lc.labeled"
    )
    wanted = None if item_ids is None else set(item_ids)
    out: dict[int, set[str]] = {}
    for item_id, name in rows:
        if wanted is None or item_id in wanted:
            out.setdefault(item_id, set()).add(name)
    return out


def item_categories(store: StoreBase, item_ids: Iterable[int] | None = None) -> dict[int, str]:
    """Each item's category (all items, or these)."""
    rows = store.query("SELECT id, category FROM items ORDER BY id")
    wanted = None if item_ids is None else set(item_ids)
    return {i: c for i, c in rows if wanted is None or i in wanted}


def gold_items(store: StoreBase) -> dict[int, GoldItem]:
    """Every gold item, by item id."""
    if not has_assignments(store):
        return {}
    rows = store.query("SELECT item_id, outcome, preferred, source, created_at FROM gold_items ORDER BY item_id")
    return {r[0]: GoldItem(r[0], r[1], r[2], r[3], r[4]) for r in rows}


def set_gold_items(store: StoreBase, gold: Sequence[GoldItem]) -> int:
    """Mark items as gold (replacing an earlier expectation of the same item), in one
    transaction; ``ValueError``/``KeyError`` (nothing written) for a bad outcome, a response the
    item lacks or an unknown item."""
    _require(store)
    now = utc_now()
    with store.transaction() as conn:
        for g in gold:
            if g.outcome not in GOLD_OUTCOMES:
                raise ValueError(f"a gold item expects one of {', '.join(GOLD_OUTCOMES)}, not {g.outcome!r}")
            found = conn.execute("SELECT n_responses FROM items WHERE id = ?", (g.item_id,)).fetchone()
            if found is None:
                raise KeyError(f"no item with id {g.item_id}")
            if (g.outcome == "prefer") != (g.preferred is not None):
                raise ValueError(f"item {g.item_id}: only a 'prefer' gold item names a response")
            if g.preferred is not None and not 0 <= g.preferred < found[0]:
                raise ValueError(f"item {g.item_id} has no response {g.preferred} (it has {found[0]})")
            conn.execute(
                "INSERT OR REPLACE INTO gold_items (item_id, outcome, preferred, source, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (g.item_id, g.outcome, g.preferred, g.source, g.created_at or now),
            )
    return len(gold)


def unset_gold_items(store: StoreBase, item_ids: Iterable[int]) -> int:
    """Take items off the gold list; returns how many were on it."""
    _require(store)
    with store.transaction() as conn:
        before = conn.total_changes
        conn.executemany("DELETE FROM gold_items WHERE item_id = ?", [(i,) for i in item_ids])
        return conn.total_changes - before


def drop_collections_with(store: StoreBase, item_ids: Iterable[int]) -> list[str]:
    """Remove every collection that holds one of these items (with its memberships); returns
    their names. Used on a fresh pack, so no collection there marks its gold items."""
    wanted = set(item_ids)
    with store.transaction() as conn:
        rows = conn.execute(
            "SELECT DISTINCT c.id, c.name FROM collections c JOIN collection_items ci ON ci.collection_id = c.id"
            " ORDER BY c.name"
        ).fetchall()
        hit = []
        for cid, name in rows:
            members = {
                r[0] for r in conn.execute("SELECT item_id FROM collection_items WHERE collection_id = ?", (cid,))
            }
            if members & wanted:
                conn.execute("DELETE FROM collection_items WHERE collection_id = ?", (cid,))
                conn.execute("DELETE FROM collections WHERE id = ?", (cid,))
                hit.append(name)
    return hit


def references(store: StoreBase, item_ids: Iterable[int]) -> dict[int, int | None]:
    """The dataset reference's chosen response of these items (``None``: no reference)."""
    wanted = set(item_ids)
    return {i: c for i, c in store.query("SELECT id, ref_chosen FROM items") if i in wanted}


__all__ = [
    "GOLD_OUTCOMES",
    "Assignment",
    "GoldItem",
    "add_assignments",
    "assignments",
    "drop_collections_with",
    "gold_items",
    "has_assignments",
    "item_categories",
    "labeled_by",
    "references",
    "set_gold_items",
    "unset_gold_items",
]
