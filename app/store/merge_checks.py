"""Checking the rows of another project file before a pack or merge copies them.

:func:`check_source` reads every row a copy would take (in the source's read snapshot) and
says what is wrong with each (:class:`RowProblem`): values the receiving schema refuses
(NOT NULL, CHECK, the declared type: each row is tried against an empty in-memory copy of the
receiving tables), ids of rows the source does not hold, items whose responses do not match
``n_responses``, and JSON columns that do not decode through the store's own readers
(``labels._label_from_row``, ``judge._verdict``, ``judge._run``) or have the wrong shape.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, TypeGuard

from ..json_guard import JSONProblem, loads_json
from ..rankings import dense_ranks, order_from_ranks
from ..records import ErrorTag
from .clock import time_problem
from .connection import StoreBase
from .judge import _RUN_COLUMNS, _VERDICT_COLUMNS, _run, _verdict
from .label_schemas import conflict_message, same_schema, schema_rows_of
from .labels import _label_from_row, ranks_problem
from .merge import _OWN_COLUMNS, _REMAPPED
from .merge_source import REQUIRED_TABLES, ProjectSource, _database, _insert_sql, _names, _quoted
from .schema import migrate

#: What the id columns of remapped tables name, in problem messages.
_NOUNS = {"items": "item", "annotators": "annotator", "judge_runs": "judge run", "collections": "collection"}
#: The tables a copy reads from, in the order they are checked.
_ITEM_TABLES = ("items", "responses", "steps", "media", "ref_error_tags")
_JUDGE_TABLES = ("judge_runs", "verdicts")
_ERROR_TAG_FIELDS = frozenset(f.name for f in fields(ErrorTag))
_CHUNK = 500


@dataclass(frozen=True)
class RowProblem:
    """What is wrong with one row of a source: ``row`` is its position in the table (1-based,
    in rowid order, or primary-key order for a table without rowids)."""

    file: str
    table: str
    row: int
    key: str
    problems: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.file}: {self.table} row {self.row} ({self.key}): {'; '.join(self.problems)}"


def _affinity(declared: str) -> str:
    """SQLite's column affinity of a declared type (the rules of section 3.1 of its docs)."""
    d = declared.upper()
    if "INT" in d:
        return "INTEGER"
    if any(s in d for s in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not d or "BLOB" in d:
        return "BLOB"
    return "REAL" if any(s in d for s in ("REAL", "FLOA", "DOUB")) else "NUMERIC"


_TYPES: dict[str, tuple[type, ...]] = {"INTEGER": (int,), "TEXT": (str,), "REAL": (int, float)}
_TYPE_NAMES = {"INTEGER": "a whole number", "TEXT": "text", "REAL": "a number"}


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _indices(value: Any, n: int | None) -> bool:
    """A list of distinct response indices (< ``n`` when known), as ``add_label`` accepts."""
    return (
        isinstance(value, list)
        and all(_is_int(i) and i >= 0 and (n is None or i < n) for i in value)
        and len(set(value)) == len(value)
    )


def _error_tag(value: Any) -> bool:
    """An :class:`ErrorTag` as stored: an object with a text ``kind`` and text (or null) fields."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("kind"), str)
        and set(value) <= _ERROR_TAG_FIELDS
        and all(v is None or isinstance(v, str) for v in value.values())
    )


def _step_mark(value: Any, n: int | None) -> bool:
    """A step mark as stored: ``[response index, step index, correct]``."""
    return (
        isinstance(value, list)
        and len(value) == 3
        and _indices(value[:1], n)
        and _is_int(value[1])
        and value[1] >= 0
        and isinstance(value[2], bool)
    )


def _json(row: dict, column: str, kind: type, problems: list[str], *, nullable: bool = False) -> Any:
    """``row[column]`` decoded; a problem (and ``None``) unless it is JSON of ``kind``."""
    value: Any = row.get(column)
    if value is None and nullable:
        return None
    try:
        decoded = loads_json(value)  # bounded: deep JSON is this row's problem, not a RecursionError
    except JSONProblem as exc:
        problems.append(f"{column} is {'not valid JSON' if str(exc).startswith('not valid') else exc}: {_show(value)}")
        return None
    except (TypeError, ValueError):
        problems.append(f"{column} is not valid JSON: {_show(value)}")
        return None
    if not isinstance(decoded, kind):
        problems.append(f"{column} is not a JSON {'list' if kind is list else 'object'}: {_show(value)}")
        return None
    return decoded


def _time(row: dict, column: str, problems: list[str]) -> None:
    """An ISO-8601 time, not in the future (``clock.time_problem``); ``None`` is the schema's business."""
    value = row.get(column)
    if value is not None and (why := time_problem(value)) is not None:
        problems.append(f"{column} {why}: {_show(value)}")


class _SourceCheck:
    """Checks the rows of one source a copy would take (see :func:`check_source`)."""

    def __init__(
        self,
        src: ProjectSource,
        schema: sqlite3.Connection,
        selected: set[int] | None,
        annotator: str | None,
        judge: bool,
    ):
        self.src, self.selected, self.annotator, self.judge = src, selected, annotator, judge
        self.file = str(src.path)
        self.target = "the receiving project"  # check_source names it
        #: Why a label schema version cannot be stored (``labeling.schema.label_schema_problems``).
        self.schema_check: Callable[[object, object, int], list[str]] | None = None
        self.problems: list[RowProblem] = []
        conn = src.conn
        self.items = {i: (ext, n) for i, ext, n in conn.execute("SELECT id, ext_id, n_responses FROM items")}
        self.responses: dict[int, list[int]] = {}
        for item_id, idx in conn.execute("SELECT item_id, idx FROM responses ORDER BY item_id, idx"):
            self.responses.setdefault(item_id, []).append(idx)
        self.annotators = dict(conn.execute("SELECT id, name FROM annotators"))
        self.ids = {
            "items": set(self.items),
            "annotators": set(self.annotators),
            "judge_runs": {r for (r,) in conn.execute("SELECT id FROM judge_runs")},
            "collections": {c for (c,) in conn.execute("SELECT id FROM collections")},
        }
        self.run_uuids = dict(conn.execute("SELECT id, uuid FROM judge_runs"))
        # the receiving schema, as tables of its own to try each row against (never written)
        self.scratch = sqlite3.connect(":memory:", isolation_level=None)
        self.schema = schema
        ddl = dict(
            schema.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN"
                f" ({', '.join('?' * len(REQUIRED_TABLES))})",
                sorted(REQUIRED_TABLES),
            )
        )
        for table in sorted(REQUIRED_TABLES):
            self.scratch.execute(ddl[table])

    def close(self) -> None:
        self.scratch.close()

    # -- the walk over the tables ------------------------------------------------------------

    def run(self) -> list[RowProblem]:
        collections: set[int] | None = None
        for table in _ITEM_TABLES:
            self._table(table, self._by_item("id" if table == "items" else "item_id"))
        self._table("annotators", lambda row: True)
        self._label_schemas()
        self._table("labels", self._labeled_in_scope)
        self._table("display_orders", self._labeled_in_scope)
        if self.judge:
            self._table("judge_runs", lambda row: True)
            self._table("verdicts", self._by_item("item_id"))
        if self.selected is not None:
            collections = {
                c
                for c, i in self.src.conn.execute("SELECT collection_id, item_id FROM collection_items")
                if i in self.selected
            }
        self._table("collections", lambda row: collections is None or row.get("id") in collections)
        self._table("collection_items", self._by_item("item_id"))
        return self.problems

    def _by_item(self, column: str) -> Callable[[dict], bool]:
        return lambda row: self._item_in_scope(row.get(column))

    def _item_in_scope(self, item_id: Any) -> bool:
        return self.selected is None or item_id in self.selected

    def _labeled_in_scope(self, row: dict) -> bool:
        if not self._item_in_scope(row.get("item_id")):
            return False
        return self.annotator is None or self.annotators.get(row.get("annotator_id")) == self.annotator

    def _table(self, table: str, in_scope: Callable[[dict], bool]) -> None:
        src_columns = self.src.columns(table)
        dst = {c.name: c for c in _database(self.schema).table(table).columns}
        own = _OWN_COLUMNS.get(table, set())
        columns = [c for c in dst if c in src_columns and c not in own]
        read = list(dict.fromkeys([*(["id"] if "id" in src_columns else []), *columns]))
        types = {c: _affinity(dst[c].type) for c in columns}
        refs = self._references(table, columns)
        rows_sql = self._ordered(table, read)
        check = getattr(self, f"_{table}", None)
        chunk: list[tuple[int, dict]] = []
        for position, values in enumerate(self.src.conn.execute(rows_sql), start=1):
            row = dict(zip(read, values))
            if not in_scope(row):
                continue
            chunk.append((position, row))
            if len(chunk) >= _CHUNK:
                self._chunk(table, columns, types, refs, check, chunk)
                chunk = []
        if chunk:
            self._chunk(table, columns, types, refs, check, chunk)

    def _ordered(self, table: str, columns: list[str]) -> str:
        sql = self.src.conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        order = _database(self.src.conn).table(table).pks if "WITHOUT ROWID" in sql.upper() else ["rowid"]
        return f"SELECT {_names(columns)} FROM {_quoted(table)} ORDER BY {', '.join(_quoted(c) for c in order)}"

    def _references(self, table: str, columns: list[str]) -> dict[str, str]:
        """column -> remapped table it names (by the conventional name or a foreign key)."""
        found = {column: target for target, column in _REMAPPED.items()}
        for fk in _database(self.schema).table(table).foreign_keys:
            if fk.column and fk.other_table in _REMAPPED:
                found[fk.column] = fk.other_table
        return {c: t for c, t in found.items() if c in columns}

    def _chunk(
        self,
        table: str,
        columns: list[str],
        types: dict[str, str],
        refs: dict[str, str],
        check: Callable[[dict[str, Any], list[str]], None] | None,
        chunk: list[tuple[int, dict]],
    ) -> None:
        refused = self._schema_refusals(table, columns, chunk)
        for position, row in chunk:
            problems = list(refused.get(position, ()))
            for column, affinity in types.items():
                value = row[column]
                if value is not None and affinity in _TYPES and not isinstance(value, _TYPES[affinity]):
                    problems.append(f"{column} is {_show(value)}, not {_TYPE_NAMES[affinity]}")
            for column, target in refs.items():
                value = row[column]
                if value is not None and value not in self.ids[target]:
                    problems.append(f"{column} names {_NOUNS[target]} {_show(value)}, which is not in the file")
            if check is not None:
                check(row, problems)
            if problems:
                self.problems.append(RowProblem(self.file, table, position, self._key(table, row), tuple(problems)))

    def _schema_refusals(self, table: str, columns: list[str], chunk: list[tuple[int, dict]]) -> dict[int, list[str]]:
        """What the receiving schema's NOT NULL and CHECK constraints say of each row: they are
        inserted into an empty in-memory copy of its tables and rolled back."""
        sql = _insert_sql(table, columns)
        scratch = self.scratch
        scratch.execute("SAVEPOINT chunk")
        try:
            scratch.executemany(sql, [[row[c] for c in columns] for _, row in chunk])
            return {}
        except sqlite3.Error:
            pass
        finally:
            scratch.execute("ROLLBACK TO chunk")
            scratch.execute("RELEASE chunk")
        refused: dict[int, list[str]] = {}
        for position, row in chunk:  # one at a time, to tell which
            scratch.execute("SAVEPOINT one")
            try:
                scratch.execute(sql, [row[c] for c in columns])
            except sqlite3.IntegrityError as exc:
                if "UNIQUE" not in str(exc):  # matching by key is the copier's business
                    refused[position] = [f"the schema refuses it ({exc})"]
            except sqlite3.Error as exc:
                refused[position] = [f"cannot be stored ({exc})"]
            finally:
                scratch.execute("ROLLBACK TO one")
                scratch.execute("RELEASE one")
        return refused

    def _key(self, table: str, row: dict) -> str:
        if table in ("labels", "judge_runs"):
            return f"uuid {row.get('uuid')}"
        if table in ("annotators", "collections"):
            return f"name {_show(row.get('name'))}"
        if table == "items":
            return f"ext_id {row.get('ext_id')}"
        item = self.items.get(row.get("item_id"))
        where = f"item {item[0]}" if item else f"item id {row.get('item_id')}"
        if table == "verdicts":
            run = self.run_uuids.get(row.get("run_id"), row.get("run_id"))
            return f"{where}, run {run}, sample {row.get('sample_idx')}"
        return where

    def _n(self, item_id: Any) -> int | None:
        item = self.items.get(item_id)
        return item[1] if item and _is_int(item[1]) else None

    # -- what each table's rows must be ----------------------------------------------------

    def _items(self, row: dict, problems: list[str]) -> None:
        n = row.get("n_responses")
        _json(row, "extra", dict, problems)
        before = len(problems)
        ranking = _json(row, "ref_ranking", list, problems, nullable=True)
        if ranking is not None and not _indices(ranking, n if _is_int(n) else None):
            problems.append(f"ref_ranking is not a list of distinct response indices < {n}: {_show(ranking)}")
        elif len(problems) == before and row.get("ref_chosen") != (ranking[0] if ranking else None):
            problems.append(f"ref_chosen {_show(row.get('ref_chosen'))} is not the first of ref_ranking")
        if len(problems) == before:
            self._ref_ranks(row, ranking, n, problems)
        if not isinstance(row.get("identity"), str) or not row["identity"]:
            problems.append("identity is empty")
        item_id: Any = row.get("id")
        found = self.responses.get(item_id, [])
        if _is_int(n) and found != list(range(n)):
            problems.append(f"n_responses is {n}, but it has {len(found)} responses")

    def _ref_ranks(self, row: dict, ranking: list | None, n: Any, problems: list[str]) -> None:
        """``ref_ranks``: NULL (a source made before schema 10 has no such column, which reads
        the same) or one dense rank >= 1 per response, with ``ref_ranking`` NULL (a reader that
        records no preference for a tied best, as VL-RewardBench's does), their order, or its
        start (RewardBench 2's ``(0,)``: the chosen response only)."""
        ranks = _json(row, "ref_ranks", list, problems, nullable=True)
        if ranks is None:
            return
        if not all(_is_int(r) and r >= 1 for r in ranks) or dense_ranks(ranks) != tuple(ranks):
            problems.append(f"ref_ranks is not a list of dense ranks >= 1 (1 = best): {_show(row['ref_ranks'])}")
        elif _is_int(n) and len(ranks) != n:
            problems.append(f"ref_ranks gives {len(ranks)} ranks for {n} responses: {_show(row['ref_ranks'])}")
        elif ranking is not None and tuple(ranking) != order_from_ranks(ranks)[: len(ranking)]:
            order = list(order_from_ranks(ranks))
            problems.append(f"ref_ranking {_show(row.get('ref_ranking'))} is not the order {order} of ref_ranks")

    def _steps(self, row: dict, problems: list[str]) -> None:
        if row.get("item_id") in self.items and row.get("response_idx") not in self.responses.get(row["item_id"], []):
            problems.append(f"names response {_show(row.get('response_idx'))}, which the item does not have")

    def _annotators(self, row: dict, problems: list[str]) -> None:
        if not isinstance(row.get("name"), str) or not row["name"].strip():
            problems.append(f"name is empty: {_show(row.get('name'))}")

    _collections = _annotators

    def _labels(self, row: dict, problems: list[str]) -> None:
        if not isinstance(row.get("uuid"), str) or not row["uuid"]:
            problems.append(f"uuid is missing: {_show(row.get('uuid'))}")
        _time(row, "created_at", problems)
        n = self._n(row.get("item_id"))
        before = len(problems)
        indices = "a list of distinct response indices"
        shapes: dict[str, tuple[str, Callable[[list], bool]]] = {
            "ranking": (indices, lambda v: _indices(v, n)),
            "error_types": ("a list of error tags", lambda v: all(_error_tag(e) for e in v)),
            "discard_reasons": ("a list of texts", lambda v: all(isinstance(r, str) for r in v)),
            "display_order": (indices, lambda v: _indices(v, n)),
            "step_marks": ("a list of [response, step, correct]", lambda v: all(_step_mark(m, n) for m in v)),
            "ranks": ("a list of ranks >= 1", lambda v: all(_is_int(r) and r >= 1 for r in v)),
        }
        for column, (what, fits) in shapes.items():
            if column == "ranks" and column not in row:  # a source made before schema 10
                continue
            value = _json(row, column, list, problems)
            if value is not None and not fits(value):
                problems.append(f"{column} is not {what}: {_show(row[column])}")
        if len(problems) > before:
            return
        try:  # the store's own reader, as every later read of the label
            label = _label_from_row(
                [row.get(c) for c in ("uuid", "item_id")]
                + [self.annotators.get(row.get("annotator_id"))]
                + [row.get(c) for c in ("created_at", "kind", "outcome", "ranking", "strength")]
                + [row.get(c) for c in ("error_types", "discard_reasons", "note", "display_order", "step_marks")]
                + [row.get("active_ms"), row.get("ranks")]
            )
        except (TypeError, ValueError) as exc:
            problems.append(f"cannot be read as a label: {exc}")
            return
        if label.outcome == "prefer" and not label.ranking:
            problems.append("a 'prefer' label names no response in ranking")
        if label.ranks and _is_int(n) and (why := ranks_problem(label, n)) is not None:
            problems.append(why)
        if "preferred" in row and row["preferred"] != label.preferred:
            said = label.preferred
            problems.append(f"preferred is {_show(row['preferred'])}, but its ranking and outcome say {said}")

    def _label_schemas(self) -> None:
        """Each label schema version: a JSON object, and, where the receiving project holds the
        same version, the same schema (labels of that version must mean the same there)."""
        theirs = {row.version: row for row in schema_rows_of(self.schema)}
        for position, row in enumerate(schema_rows_of(self.src.conn), start=1):
            problems: list[str] = []
            if not _is_int(row.version) or row.version < 1:
                problems.append(f"version is {_show(row.version)}, not a whole number ≥ 1")
            _json({"schema": row.schema}, "schema", dict, problems)
            if not isinstance(row.guidelines, str):
                problems.append(f"guidelines is {_show(row.guidelines)}, not text")
            _time({"created_at": row.created_at}, "created_at", problems)
            there = theirs.get(row.version)
            if not problems and there is not None and not same_schema(there, row):
                problems.append(conflict_message(self.file, self.target, row.version))
            elif not problems and there is None and self.schema_check is not None:
                problems += self.schema_check(row.schema, row.guidelines, row.version)  # as `schema set` checks
            if problems:
                self.problems.append(
                    RowProblem(self.file, "label_schemas", position, f"version {row.version}", tuple(problems))
                )

    def _display_orders(self, row: dict, problems: list[str]) -> None:
        order = _json(row, "display_order", list, problems)
        if order is not None and not _indices(order, self._n(row.get("item_id"))):
            problems.append(f"display_order is not a list of distinct response indices: {_show(row['display_order'])}")

    def _judge_runs(self, row: dict, problems: list[str]) -> None:
        if not isinstance(row.get("uuid"), str) or not row["uuid"]:
            problems.append(f"uuid is missing: {_show(row.get('uuid'))}")
        _time(row, "created_at", problems)
        if _json(row, "generation", dict, problems) is None:
            return
        if not _is_int(row.get("k")) or row["k"] < 1:
            problems.append(f"k is {_show(row.get('k'))}, not a number of samples ≥ 1")
        try:
            _run([row.get(c) for c in _RUN_COLUMNS.replace(" ", "").split(",")])
        except (TypeError, ValueError) as exc:
            problems.append(f"cannot be read as a judge run: {exc}")

    def _verdicts(self, row: dict, problems: list[str]) -> None:
        n = self._n(row.get("item_id"))
        before = len(problems)
        order = _json(row, "order_shown", list, problems)
        if order is not None and (not order or not _indices(order, n)):
            problems.append(f"order_shown is not a list of distinct response indices: {_show(row['order_shown'])}")
        choice = row.get("choice")
        if choice is not None and not _indices([choice], n):
            problems.append(f"choice {_show(choice)} is not a response index")
        scores = _json(row, "scores", list, problems, nullable=True)
        if scores is not None and not all(
            s is None or (isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s)) for s in scores
        ):
            problems.append(f"scores is not a list of numbers: {_show(row['scores'])}")
        _json(row, "media_sent", dict, problems, nullable=True)
        if row.get("parsed") not in (0, 1):
            problems.append(f"parsed is {_show(row.get('parsed'))}, not 0 or 1")
        _time(row, "created_at", problems)
        if len(problems) > before:
            return
        try:
            _verdict([row.get(c) for c in _VERDICT_COLUMNS.replace(" ", "").split(",")])
        except (TypeError, ValueError) as exc:
            problems.append(f"cannot be read as a verdict: {exc}")


def fresh_schema() -> sqlite3.Connection:
    """An in-memory database with a new project's schema (to check rows against)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    return conn


def check_source(
    src: ProjectSource,
    dst: StoreBase | None,
    *,
    selected: set[int] | None = None,
    annotator: str | None = None,
    judge: bool = True,
    schema_check: Callable[[object, object, int], list[str]] | None = None,
) -> list[RowProblem]:
    """Every row of ``src`` a copy into ``dst`` (``None``: a new project) would take, checked;
    the rows with problems, in table order. Writes nothing anywhere.

    The rows are those of the items in ``selected`` (all when ``None``), of ``annotator``'s
    labels and display orders (everyone's when ``None``), judge runs and verdicts when
    ``judge``, and the collections of those items. Checked: the receiving schema's NOT NULL
    and CHECK constraints and declared types, that every id names a row the source holds
    (item, annotator, judge run, collection, a step's response), that items' responses match
    ``n_responses``, and that JSON columns decode to the shape the store's readers expect.
    ``schema_check`` says why a label schema version ``dst`` lacks cannot be stored.
    """
    schema = dst.conn if dst is not None else fresh_schema()
    check = _SourceCheck(src, schema, selected, annotator, judge)
    check.schema_check = schema_check
    if dst is not None:
        check.target = str(dst.path)
    try:
        return check.run()
    finally:
        check.close()
        if dst is None:
            schema.close()
