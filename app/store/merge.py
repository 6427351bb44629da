"""Copying rows between project files, for packing a project and merging projects (``curation.teamwork``).

:class:`ProjectSource` (``merge_source``) opens another project file read-only and reads it in
one snapshot; :class:`ProjectCopier` copies its rows into a store inside the caller's transaction.

Which columns travel is read from both files' live schema (sqlite-utils' ``Table.columns``),
never from a list kept here: every column both files have is copied, except the ids the
receiving project assigns itself (``_OWN_COLUMNS``). A column only the source has is named in
:attr:`CopyCounts.columns_not_copied`. Columns holding ids of remapped rows (items,
annotators, judge runs, collections) are found by name and by the schema's foreign keys and
are translated to the receiving project's ids.

Every row is checked before anything is copied (``merge_checks.check_source``); the copier
itself never lets a constraint decide silently: a row already there is looked up, everything
else is a plain ``INSERT``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .connection import inserted_id, utc_now
from .items import ItemsMixin, display_id
from .label_schemas import copy_label_schemas, schema_rows_of
from .merge_source import (
    REQUIRED_TABLES,
    ForeignProjectError,
    ProjectSource,
    _database,
    _insert_sql,
    _quoted,
    table_columns,
)
from .search import index_batch

#: Columns that belong to the receiving project: the ids it assigns, its own import log.
_OWN_COLUMNS = {
    "items": {"id", "import_id"},
    "annotators": {"id"},
    "judge_runs": {"id"},
    "verdicts": {"id"},
    "collections": {"id"},
}
#: Tables whose row ids differ between projects, and the columns that conventionally hold them.
_REMAPPED = {"items": "item_id", "annotators": "annotator_id", "judge_runs": "run_id", "collections": "collection_id"}
#: Rows that belong to one item and travel with a new item (media apart: files are copied).
_ITEM_CHILDREN = ("responses", "steps", "ref_error_tags")

#: ``copy_media(path, problem, kind) -> (stored path, problem)`` for one media row of a new item.
MediaCopier = Callable[[str | None, str | None, str], tuple[str | None, str | None]]


@dataclass
class CopyCounts:
    """Rows one :class:`ProjectCopier` wrote (``*_present``/``*_differing``: already there)."""

    items_added: int = 0
    items_matched: int = 0
    annotators_added: int = 0
    labels_added: int = 0
    labels_present: int = 0
    display_orders_added: int = 0
    display_orders_differing: int = 0
    runs_added: int = 0
    verdicts_added: int = 0
    verdicts_present: int = 0
    collections_added: int = 0
    collection_items_added: int = 0
    collection_items_present: int = 0
    label_schemas_added: int = 0
    label_schemas_present: int = 0
    missing_media: int = 0
    #: ``table.column`` of source columns the receiving project lacks (their values stay behind)
    columns_not_copied: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ItemConflict:
    """A source item whose identity the receiving project holds with other content."""

    ext_id: str
    identity: str
    dst_hash: str
    src_hash: str


@dataclass
class CopiedItems:
    """What :meth:`ProjectCopier.items` did: new item ids and identities, and conflicts."""

    new_ids: list[int] = field(default_factory=list)
    new_identities: list[str] = field(default_factory=list)
    conflicts: list[ItemConflict] = field(default_factory=list)


class ProjectCopier:
    """Copies rows from ``src`` into ``dst`` inside the caller's transaction on ``dst``.

    Items are matched by identity, annotators and collections by name, judge runs and labels
    by uuid; call :meth:`items` first (the other rows follow the items it mapped).
    """

    def __init__(self, dst: MergeMixin, src: ProjectSource, copy_media: MediaCopier) -> None:
        self.dst, self.src, self.copy_media = dst, src, copy_media
        self.conn: sqlite3.Connection = dst.conn
        self.counts = CopyCounts()
        self.maps: dict[str, dict[int, int]] = {table: {} for table in _REMAPPED}  # source id -> dst id
        self.item_map = self.maps["items"]
        self._columns_of: dict[str, list[str]] = {}
        self._schemas_copied = False
        self._remaps: dict[str, dict[str, dict[int, int]]] = {}
        self._annotators = dict(self.conn.execute("SELECT name, id FROM annotators"))
        self._src_annotators = {
            row["id"]: row for row in self._source_rows("annotators", ["id", *self._columns("annotators")], ["id"])
        }

    # -- columns ---------------------------------------------------------------------------

    def _columns(self, table: str) -> list[str]:
        """The columns of ``table`` both files have (in the receiving file's order), less its own."""
        if table not in self._columns_of:
            src = self.src.columns(table)
            dst = table_columns(self.conn, table)
            self.counts.columns_not_copied += [f"{table}.{c}" for c in src if c not in dst]
            own = _OWN_COLUMNS.get(table, set())
            self._columns_of[table] = [c for c in dst if c in src and c not in own]
        return self._columns_of[table]

    def _remap(self, table: str) -> dict[str, dict[int, int]]:
        """column -> id map for the columns of ``table`` that hold ids of remapped rows."""
        if table not in self._remaps:
            found = {column: self.maps[target] for target, column in _REMAPPED.items()}
            for fk in _database(self.conn).table(table).foreign_keys:
                if fk.column and fk.other_table in self.maps:
                    found[fk.column] = self.maps[fk.other_table]
            columns = set(table_columns(self.conn, table))
            self._remaps[table] = {c: m for c, m in found.items() if c in columns}
        return self._remaps[table]

    def _translate(self, table: str, row: dict) -> dict:
        """``row`` with its ids of remapped rows as the receiving project's (unknown: ``None``)."""
        annotators = self.maps["annotators"]
        for column, mapping in self._remap(table).items():
            value = row.get(column)
            if value is None:
                continue
            if mapping is annotators and value not in annotators and value in self._src_annotators:
                self.annotator(self._src_annotators[value]["name"], value)  # added when first referred to
            row[column] = mapping.get(value)
        return row

    def _insert(self, table: str, columns: Sequence[str], rows: Sequence[dict], verb: str = "INSERT") -> sqlite3.Cursor:
        return self.conn.executemany(_insert_sql(table, columns, verb), [[r[c] for c in columns] for r in rows])

    def _insert_row(self, table: str, columns: Sequence[str], row: dict, verb: str = "INSERT") -> sqlite3.Cursor:
        return self.conn.execute(_insert_sql(table, columns, verb), [row[c] for c in columns])

    def _source_rows(self, table: str, columns: Sequence[str], order_by: Sequence[str]) -> Iterator[dict]:
        for row in self.src.rows(table, columns, order_by):
            yield dict(zip(columns, row))

    # -- items -----------------------------------------------------------------------------

    def items(self, selected: set[int] | None = None) -> CopiedItems:
        """Map every (selected) source item to dst by identity (dataset id + content, as an
        import does), adding missing ones (under a display id of their own when dst shows
        another item under theirs) with their responses, steps, reference tags and media
        (each file through ``copy_media``)."""
        existing = {key: (i, h) for i, key, h in self.conn.execute("SELECT id, identity, content_hash FROM items")}
        taken = {ext for (ext,) in self.conn.execute("SELECT ext_id FROM items")}
        next_id = self.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM items").fetchone()[0]
        columns = self._columns("items")
        result, new_rows = CopiedItems(), []
        for row in self._source_rows("items", ["id", *columns], ["id"]):
            src_id, key = row["id"], row["identity"]
            if selected is not None and src_id not in selected:
                continue
            if key in existing:
                dst_id, dst_hash = existing[key]
                self.item_map[src_id] = dst_id
                self.counts.items_matched += 1
                if dst_hash != row["content_hash"]:
                    result.conflicts.append(ItemConflict(row["ext_id"], key, dst_hash, row["content_hash"]))
                continue
            self.item_map[src_id] = row["id"] = next_id
            dataset_id = row["source_id"] or row["ext_id"]
            shown = display_id(dataset_id, taken)
            taken.add(shown)
            row["ext_id"], row["source_id"] = shown, None if shown == dataset_id else dataset_id
            new_rows.append(row)
            result.new_ids.append(next_id)
            result.new_identities.append(key)
            next_id += 1
        new = set(result.new_ids)
        media_columns, media_rows, missing = self._media_rows(new)
        for row in new_rows:  # missing_media: files not found when copying count too
            row["missing_media"] = missing.get(row["id"], 0)
        self._insert("items", ["id", *columns], new_rows)
        self._insert("media", media_columns, media_rows)
        responses = []
        for table in _ITEM_CHILDREN:
            child_columns = self._columns(table)
            rows = [
                self._translate(table, r)
                for r in self._source_rows(table, child_columns, _database(self.src.conn).table(table).pks)
            ]
            rows = [r for r in rows if r["item_id"] in new]
            self._insert(table, child_columns, rows)
            if table == "responses":
                responses = [(r["item_id"], r["idx"], r["text"]) for r in rows]
        # index_batch reads an item's id at position 0 and its prompt at position 5
        index_batch(self.conn, [(r["id"], None, None, None, None, r["prompt"]) for r in new_rows], responses)
        self.counts.items_added += len(new_rows)
        self.counts.missing_media += sum(missing.values())
        return result

    def _media_rows(self, new: set[int]) -> tuple[list[str], list[dict], dict[int, int]]:
        """The media rows of new items, their files copied through ``copy_media``: columns,
        rows and the number of missing files per new item."""
        columns = self._columns("media")
        rows: list[dict] = []
        missing: dict[int, int] = {}
        for row in self._source_rows("media", columns, ["item_id", "idx"]):
            row = self._translate("media", row)
            if row["item_id"] not in new:
                continue
            row["path"], row["problem"] = self.copy_media(row["path"], row["problem"], row["kind"])
            if row["path"] is None:
                missing[row["item_id"]] = missing.get(row["item_id"], 0) + 1
            rows.append(row)
        return columns, rows, missing

    # -- annotators and labels -------------------------------------------------------------

    def annotator(self, name: str, src_id: int | None = None) -> int:
        """dst's id of an annotator by name, added (with the source's row, if any) when missing."""
        if name not in self._annotators:
            row = self._src_annotators.get(src_id) or {"name": name, "created_at": utc_now()}
            columns = [c for c in self._columns("annotators") if c in row]
            self._annotators[name] = self._insert_row("annotators", columns, row).lastrowid
            self.counts.annotators_added += 1
        if src_id is not None:
            self.maps["annotators"][src_id] = self._annotators[name]
        return self._annotators[name]

    def _present(self, table: str, key: dict[str, Any]) -> bool:
        where = " AND ".join(f"{_quoted(c)} = ?" for c in key)
        found = self.conn.execute(f"SELECT 1 FROM {_quoted(table)} WHERE {where}", list(key.values())).fetchone()
        return found is not None

    def label_schemas(self) -> None:
        """The source's label schema versions the receiving project lacks (once per copier);
        a version it holds with another schema raises ``LabelSchemaConflict``."""
        if self._schemas_copied:
            return
        self._schemas_copied = True
        added, present = copy_label_schemas(
            self.conn, schema_rows_of(self.src.conn), str(self.src.path), str(self.dst.path)
        )
        self.counts.label_schemas_added += added
        self.counts.label_schemas_present += present

    def labels(self, annotator: str | None = None) -> None:
        """Every label row of mapped items (optionally one annotator's), matched by uuid, in
        the source's order (time, then row order), after the label schemas they were given
        under (:meth:`label_schemas`)."""
        self.label_schemas()
        columns = self._columns("labels")
        for row in self._labels_of("labels", columns, annotator, ["created_at", "rowid"]):
            if self._present("labels", {"uuid": row["uuid"]}):
                self.counts.labels_present += 1
            else:
                self._insert_row("labels", columns, row)
                self.counts.labels_added += 1

    def display_orders(self, annotator: str | None = None, *, only: frozenset[str] | None = None) -> None:
        """Blind display orders per (item, annotator name); the first one seen is kept.
        ``only``: the orders of these annotators only (those a merge takes labels from)."""
        columns = self._columns("display_orders")
        for row in self._labels_of("display_orders", columns, annotator, ["item_id", "annotator_id"], only):
            stored = self.conn.execute(
                "SELECT display_order FROM display_orders WHERE item_id = ? AND annotator_id = ?",
                (row["item_id"], row["annotator_id"]),
            ).fetchone()
            if stored is None:
                self._insert_row("display_orders", columns, row)
                self.counts.display_orders_added += 1
            elif stored[0] != row["display_order"]:
                self.counts.display_orders_differing += 1

    def _labels_of(
        self,
        table: str,
        columns: list[str],
        annotator: str | None,
        order_by: list[str],
        only: frozenset[str] | None = None,
    ) -> Iterator[dict]:
        """Rows of an annotator-and-item table for mapped items (of ``annotator``, or of the
        names in ``only``), annotator and item translated."""
        for row in self._source_rows(table, columns, order_by):
            known = self._src_annotators.get(row["annotator_id"])
            name = None if known is None else known["name"]
            if (
                (annotator is not None and name != annotator)
                or (only is not None and name not in only)
                or row["item_id"] not in self.item_map
            ):
                continue
            yield self._translate(table, row)

    # -- judge runs and collections ----------------------------------------------------------

    def judge_runs(self) -> None:
        """Runs matched by uuid; verdicts added where (run, item, sample) is not stored yet."""
        runs = self.maps["judge_runs"]
        dst_runs = dict(self.conn.execute("SELECT uuid, id FROM judge_runs"))
        columns = self._columns("judge_runs")
        for row in self._source_rows("judge_runs", ["id", *columns], ["id"]):
            src_id = row.pop("id")
            if row["uuid"] not in dst_runs:
                row = self._translate("judge_runs", row)
                dst_runs[row["uuid"]] = self._insert_row("judge_runs", columns, row).lastrowid
                self.counts.runs_added += 1
            runs[src_id] = dst_runs[row["uuid"]]
        columns = self._columns("verdicts")
        for row in self._source_rows("verdicts", columns, ["id"]):
            if row["item_id"] not in self.item_map:
                continue
            row = self._translate("verdicts", row)
            if self._present("verdicts", {c: row[c] for c in ("run_id", "item_id", "sample_idx")}):
                self.counts.verdicts_present += 1
            else:
                self._insert_row("verdicts", columns, row)
                self.counts.verdicts_added += 1
        if self.counts.verdicts_added:  # the judge layer recomputes its per-item verdicts
            self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('judge_items_stale', '1')")

    def collections(self, only_with_items: bool = False) -> None:
        """Collections by name, members by item; with ``only_with_items`` a collection is
        created only when one of its items was copied."""
        member_columns = self._columns("collection_items")
        members: dict[int, list[dict]] = {}
        for row in self._source_rows("collection_items", member_columns, ["collection_id", "item_id"]):
            if row["item_id"] in self.item_map:
                members.setdefault(row["collection_id"], []).append(row)
        columns = self._columns("collections")
        for row in self._source_rows("collections", ["id", *columns], ["id"]):
            src_id = row.pop("id")
            if only_with_items and src_id not in members:
                continue
            found = self.conn.execute("SELECT id FROM collections WHERE name = ?", (row["name"],)).fetchone()
            self.maps["collections"][src_id] = (
                found[0] if found else inserted_id(self._insert_row("collections", columns, row))
            )
            self.counts.collections_added += found is None
            for member in members.get(src_id, ()):
                member = self._translate("collection_items", dict(member))
                if self._present("collection_items", {c: member[c] for c in ("collection_id", "item_id")}):
                    self.counts.collection_items_present += 1
                else:
                    self._insert_row("collection_items", member_columns, member)
                    self.counts.collection_items_added += 1


class MergeMixin(ItemsMixin):
    """What packing and merging ask of the receiving (or packed) project. Mixed into
    :class:`pairscope.app.store.Store`."""

    def copier(self, src: ProjectSource, copy_media: MediaCopier) -> ProjectCopier:
        """A :class:`ProjectCopier` from ``src`` into this project (use inside :meth:`transaction`)."""
        return ProjectCopier(self, src, copy_media)

    def media_paths(self) -> list[str]:
        """Every stored media path (relative to the project's folder, or absolute)."""
        return [r[0] for r in self.query("SELECT path FROM media WHERE path IS NOT NULL")]

    def label_uuids(self) -> set[str]:
        """The uuid of every label row."""
        return {r[0] for r in self.query("SELECT uuid FROM labels")}

    def item_ids(self) -> set[int]:
        """The ids of every item."""
        return {r[0] for r in self.query("SELECT id FROM items")}

    def dataset_ids(self) -> set[str]:
        """The dataset's id of every item (``source_id``, else ``ext_id``)."""
        return {r[0] for r in self.query("SELECT coalesce(source_id, ext_id) FROM items")}

    def identities(self) -> list[str]:
        """Every item's identity (dataset id + content)."""
        return [r[0] for r in self.query("SELECT identity FROM items")]

    def ensure_meta(self, key: str, value: str) -> str:
        """The ``meta`` value of ``key``, set to ``value`` first when it has none."""
        with self.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        stored = self.meta(key)
        assert stored is not None  # the row exists now, and meta.value is NOT NULL
        return stored

    def put_meta(self, values: dict[str, str]) -> None:
        """Set several ``meta`` values (joins the caller's transaction)."""
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", values.items())

    def log_merged_input(
        self, path: str, fmt: str, sha256: str, added: Sequence[int], matched: int, options: dict
    ) -> int:
        """Log a merged input in ``imports`` and mark the items it added as imported by it."""
        with self.transaction() as conn:
            import_id = self.begin_import(path, fmt, sha256, options)
            self.finish_import(import_id, len(added), matched)
            conn.executemany("UPDATE items SET import_id = ? WHERE id = ?", ((import_id, i) for i in added))
        return import_id


__all__ = [
    "REQUIRED_TABLES",
    "CopiedItems",
    "CopyCounts",
    "ForeignProjectError",
    "ItemConflict",
    "MediaCopier",
    "MergeMixin",
    "ProjectCopier",
    "ProjectSource",
    "table_columns",
]
