"""Items, responses, steps, media and the dataset's reference: writing and reading."""

from __future__ import annotations

import json
from array import array
from bisect import bisect_left
from collections.abc import Sequence

import orjson

from ..records import (
    ErrorTag,
    Item,
    ItemFilter,
    ItemSummary,
    ProjectInfo,
    Reference,
    Response,
    Step,
)
from .connection import dumps, inserted_id, utc_now
from .filter_sql import _ITEM_CONFIDENCE, _filter_sql, _ids_sql, _order_sql
from .item_rows import AddResult, ItemBatch, ItemBatcher, content_hash, display_id, identity_key
from .media_store import MediaStoreMixin
from .search import index_batch, index_range

__all__ = [
    "AddResult",
    "FilteredItems",
    "ItemBatch",
    "ItemBatcher",
    "ItemsMixin",
    "content_hash",
    "display_id",
    "identity_key",
]


_SUMMARY_SQL = (
    "SELECT i.id, i.ext_id, i.category, i.subset, i.media_kind, i.n_responses, substr(i.prompt, 1, 160),"
    " i.missing_media FROM items i"
)


class FilteredItems:
    """The items a filter selects, in table order, from one query (:meth:`ItemsMixin.filtered_items`):
    the table's row count, pages and an item's row all come from this one result, so they
    agree with each other even while labels change underneath.

    The ids stay the comma-joined text SQLite returned: the count, the first page and the row
    of a selected item are read from it at C speed; only a later page or the row of an item
    the filter does not select parse it into integers (once)."""

    def __init__(self, store: ItemsMixin, item_filter: ItemFilter, text: str | None, in_id_order: bool):
        self.store = store
        self.filter = item_filter
        self.text = text or ""
        self.in_id_order = in_id_order
        self._ids: array | None = None
        self._framed: str | None = None

    @property
    def count(self) -> int:
        return self.text.count(",") + 1 if self.text else 0

    @property
    def ids(self) -> array:
        """Every selected id, in table order."""
        if self._ids is None:
            self._ids = array("q", map(int, self.text.split(","))) if self.text else array("q")
        return self._ids

    def row_of(self, item_id: int) -> int:
        """The item's row; for an item the filter does not select, the row it would have in
        store order (the number of selected items before it), or the row count."""
        if self._framed is None:
            self._framed = f",{self.text},"
        at = self._framed.find(f",{item_id},")
        if at >= 0:
            return self._framed.count(",", 0, at)
        return bisect_left(self.ids, item_id) if self.in_id_order else self.count

    def page(self, offset: int, limit: int) -> list[ItemSummary]:
        """The table rows ``offset`` … ``offset + limit - 1``."""
        if offset == 0 and self._ids is None:
            ids = [int(i) for i in self.text.split(",", limit)[:limit]] if self.text and limit > 0 else []
        else:
            ids = self.ids[offset : offset + limit].tolist()
        if self.in_id_order:
            return self.store.item_summaries_by_id(ids)
        by_id = {s.id: s for s in self.store.item_summaries_by_id(ids)}
        return [by_id[i] for i in ids if i in by_id]


class ItemsMixin(MediaStoreMixin):
    """Item storage. Mixed into :class:`pairscope.app.store.Store`."""

    def add_items(self, items: Sequence[Item], import_id: int | None = None) -> AddResult:
        """Insert items in the caller's transaction (or one of its own).

        An item whose identity (:func:`identity_key`) is stored with identical content is
        skipped (re-import is idempotent); one whose other content differs is a conflict and
        is not written, so labels already given to the stored version keep their meaning.
        An item whose id is stored with another prompt or other responses is a distinct item
        under a display id (``id#2``).
        """
        with self.transaction():
            batch = self.item_batcher(import_id).batch(items)
            self.write_batch(batch)
            return batch.result

    def item_batcher(self, import_id: int | None = None) -> ItemBatcher:
        """A batcher that looks up the stored items batch by batch; use it and
        :meth:`write_batch` inside one transaction so no other writer can slip in between."""

        def lookup(identities: list[str], ext_ids: list[str]) -> tuple[dict[str, tuple[int, str, str]], set[str]]:
            with self._lock:
                stored = {
                    identity: (item_id, digest, ext_id)
                    for identity, item_id, digest, ext_id in self.conn.execute(
                        "SELECT identity, id, content_hash, ext_id FROM items"
                        " WHERE identity IN (SELECT value FROM json_each(?))",
                        (orjson.dumps(identities).decode(),),
                    )
                }
                taken = {
                    ext
                    for (ext,) in self.conn.execute(
                        "SELECT ext_id FROM items WHERE ext_id IN (SELECT value FROM json_each(?))",
                        (orjson.dumps(ext_ids).decode(),),
                    )
                }
            return stored, taken

        def taken(ext_id: str) -> bool:
            return bool(self.query("SELECT 1 FROM items WHERE ext_id = ?", (ext_id,)))

        with self._lock:
            next_id = self.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM items").fetchone()[0]
        return ItemBatcher(lookup, taken, next_id, import_id)

    def write_batch(self, batch: ItemBatch, index: bool = True) -> None:
        """Insert a batch made by :meth:`item_batcher` (in the caller's transaction). With
        ``index=False`` the caller adds the items to the full-text index afterwards, all at
        once (:meth:`index_items`), as an import does."""
        if not batch.items:
            return
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO items (id, ext_id, source_format, category, subset, prompt, prompt_words, prompt_raw,"
                " media_kind, n_responses, ref_ranking, ref_chosen, ref_strength, ground_truth, extra,"
                " content_hash, import_id, missing_media, source_id, identity, ref_ranks)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                batch.items,
            )
            conn.executemany(
                "INSERT INTO responses (item_id, idx, text, words, model) VALUES (?,?,?,?,?)", batch.responses
            )
            conn.executemany("INSERT INTO steps VALUES (?,?,?,?,?)", batch.steps)
            conn.executemany("INSERT INTO media VALUES (?,?,?,?,?,?)", batch.media)
            conn.executemany("INSERT INTO ref_error_tags VALUES (?,?,?,?,?,?)", batch.tags)
            if index:
                index_batch(conn, batch.items, batch.responses)

    def index_items(self, first_id: int, last_id: int) -> None:
        """Add the items with ids ``first_id`` … ``last_id`` to the full-text index, read
        through the index's own source view (in the caller's transaction)."""
        with self.transaction() as conn:
            index_range(conn, first_id, last_id)

    def begin_import(self, path: str, fmt: str, sha256: str, options: dict) -> int:
        """Log an import (call inside the import's transaction); returns its id."""
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO imports (path, format, sha256, imported_at, added, unchanged, options)"
                " VALUES (?,?,?,?,0,0,?)",
                (path, fmt, sha256, utc_now(), dumps(options)),
            )
            return inserted_id(cur)

    def finish_import(self, import_id: int, added: int, unchanged: int) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE imports SET added = ?, unchanged = ? WHERE id = ?", (added, unchanged, import_id))

    # -- reading ---------------------------------------------------------------------------

    def item_count(self, category: str | None = None) -> int:
        if category is None:
            return self.query("SELECT count(*) FROM items")[0][0]
        return self.query("SELECT count(*) FROM items WHERE category = ?", (category,))[0][0]

    def categories(self) -> dict[str, int]:
        """Item count per category, largest first."""
        rows = self.query("SELECT category, count(*) FROM items GROUP BY category ORDER BY count(*) DESC, category")
        return dict(rows)

    def item_summaries(
        self, offset: int = 0, limit: int = 500, category: str | None = None, filter: ItemFilter | None = None
    ) -> list[ItemSummary]:
        """A page of item-table rows in store order, optionally filtered."""
        f = filter or ItemFilter(category=category)
        where, params = _filter_sql(f)
        order, order_params = _order_sql(f)
        rows = self.query(
            f"{_SUMMARY_SQL} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?", (*params, *order_params, limit, offset)
        )
        return [ItemSummary(*row) for row in rows]

    def filtered_items(self, item_filter: ItemFilter | None = None) -> FilteredItems:
        """The ids a filter selects in table order, in one query: what the item table reads
        when its filter changes (count, first page and the current item's row from it)."""
        f = item_filter or ItemFilter()
        ids, params = _ids_sql(f)
        text = self.query(f"SELECT group_concat(id) FROM ({ids})", params)[0][0]
        return FilteredItems(self, f, text, in_id_order=not _order_sql(f)[1])

    def item_confidences(self, run_id: int, item_ids: Sequence[int]) -> dict[int, float | None]:
        """The item confidence (``app.judge.confidence``) of these items in a run, as stored."""
        if not item_ids:
            return {}
        marks = ",".join("?" * len(item_ids))
        rows = self.query(f"SELECT i.id, {_ITEM_CONFIDENCE} FROM items i WHERE i.id IN ({marks})", (run_id, *item_ids))
        return dict(rows)

    def item_summaries_by_id(self, item_ids: list[int]) -> list[ItemSummary]:
        """Item-table rows for these ids, in store order."""
        if not item_ids:
            return []
        marks = ",".join("?" * len(item_ids))
        rows = self.query(f"{_SUMMARY_SQL} WHERE i.id IN ({marks}) ORDER BY i.id", item_ids)
        return [ItemSummary(*row) for row in rows]

    def count_items(self, filter: ItemFilter | None = None, before_id: int | None = None) -> int:
        """How many items a filter selects (only those with ids below ``before_id``, if
        given: that is an item's row in the filtered table)."""
        f = filter or ItemFilter()
        where, params = _filter_sql(f)
        order, order_params = _order_sql(f)
        if before_id is not None and order_params:  # a filter with its own order: the row in it
            ids = [
                r[0]
                for r in self.query(
                    f"SELECT i.id FROM items i WHERE {where} ORDER BY {order}", (*params, *order_params)
                )
            ]
            return ids.index(before_id) if before_id in ids else len(ids)
        if before_id is not None:
            where += " AND i.id < ?"
            params.append(before_id)
        return self.query(f"SELECT count(*) FROM items i WHERE {where}", params)[0][0]

    def item_id(self, ext_id: str) -> int | None:
        row = self.query("SELECT id FROM items WHERE ext_id = ?", (ext_id,))
        return row[0][0] if row else None

    def item_keys(self) -> list[tuple[int, str, str | None]]:
        """``(item id, dataset id, first media ref as written)`` of every item, in id order: the
        keys toolkits group items by (an id's pairs; VL-RewardBench's ``image_path`` folder)."""
        return self.query(
            "SELECT i.id, coalesce(i.source_id, i.ext_id),"
            " (SELECT m.ref FROM media m WHERE m.item_id = i.id ORDER BY m.idx LIMIT 1) FROM items i ORDER BY i.id"
        )

    def get_item(self, item_id: int) -> Item:
        """Load one whole item; raises ``KeyError`` for an unknown id."""
        with self._lock:
            conn = self.conn
            row = conn.execute(
                "SELECT ext_id, source_format, category, subset, prompt, prompt_raw, ref_ranking,"
                " ref_strength, ground_truth, extra, source_id, ref_ranks FROM items WHERE id = ?",
                (item_id,),
            ).fetchone()
            if row is None:
                raise KeyError(f"no item with id {item_id}")
            steps: dict[int, list[Step]] = {}
            for r_idx, text, correct in conn.execute(
                "SELECT response_idx, text, ref_correct FROM steps WHERE item_id = ? ORDER BY response_idx, idx",
                (item_id,),
            ):
                steps.setdefault(r_idx, []).append(Step(text, None if correct is None else bool(correct)))
            responses = tuple(
                Response(idx, text, model, tuple(steps.get(idx, ())))
                for idx, text, model in conn.execute(
                    "SELECT idx, text, model FROM responses WHERE item_id = ? ORDER BY idx", (item_id,)
                )
            )
            rows = conn.execute(
                "SELECT kind, ref, path, problem FROM media WHERE item_id = ? ORDER BY idx", (item_id,)
            ).fetchall()
            # Copied media (Parquet, packs, merges) are in the project's media store: the one rule.
            media = tuple(self.media_ref(kind, ref, path, problem) for kind, ref, path, problem in rows)
            tags = tuple(
                ErrorTag(*t)
                for t in conn.execute(
                    "SELECT kind, subkind, note, raw FROM ref_error_tags WHERE item_id = ? ORDER BY idx", (item_id,)
                )
            )
        ext_id, fmt, category, subset, prompt, prompt_raw, ranking, strength, truth, extra, source_id, ranks = row
        reference = Reference(
            ranking=tuple(json.loads(ranking)) if ranking else None,
            strength=strength,
            error_tags=tags,
            ground_truth=truth,
            ranks=tuple(json.loads(ranks)) if ranks else (),
        )
        return Item(
            ext_id=ext_id,
            prompt=prompt,
            responses=responses,
            media=media,
            category=category,
            subset=subset,
            source_format=fmt,
            prompt_raw=prompt_raw,
            reference=reference,
            extra=json.loads(extra),
            id=item_id,
            source_id=source_id,
        )

    def missing_media(self) -> list[tuple[str, str, str]]:
        """``(item ext_id, media ref, problem)`` for every media file that cannot be used now:
        missing or refused when stored, or not on disk (nor inside the project) any more."""
        rows = self.query(
            "SELECT i.ext_id, m.ref, m.path, m.problem FROM media m JOIN items i ON i.id = m.item_id"
            " ORDER BY i.id, m.idx"
        )
        out = []
        for ext_id, ref, path, problem in rows:
            why = problem or self.media_missing_now(path)
            if why is not None:
                out.append((ext_id, ref, why))
        return out

    def info(self) -> ProjectInfo:
        """The counts ``pairscope info`` prints."""
        q = lambda sql: self.query(sql)[0][0]  # noqa: E731
        return ProjectInfo(
            items=q("SELECT count(*) FROM items"),
            categories=self.categories(),
            responses=q("SELECT count(*) FROM responses"),
            labels=q("SELECT count(*) FROM labels"),
            annotators=q("SELECT count(*) FROM annotators"),
            judge_runs=q("SELECT count(*) FROM judge_runs"),
            missing_media=len(self.missing_media()),  # as the disk is now
            schema_version=self.schema_version,
        )
