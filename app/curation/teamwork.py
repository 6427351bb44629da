"""Offline team work: pack a project for one annotator, merge annotators' projects back.

``pack_project`` writes a self-contained project for one annotator: the chosen items (same
``ext_id`` and ``content_hash``), their media copied into the pack's own media folder, the
annotator's label history and blind display orders for those items, and ``meta`` rows that
say where it came from. ``merge_projects`` unions label histories of several projects into
one, matching items by identity (dataset id + content, ``items.identity``), labels by uuid,
annotators by name.

Media paths: a file PairScope copies into a project's media folder is stored *relative to
the project's folder* (``<stem>_media/ab/ab12….png``, POSIX separators), so a project can be
moved or mailed with its media folder. Read such paths with :func:`resolve_media_path`.

A **conflict** is an item whose identity is in the output with a different
``content_hash``: the output keeps its version, the input's labels are merged onto it.
An input is **unrelated** when the output already holds items, the input shares no
item identity with them, and no project id (``meta`` ``project_id`` or
``pack_source_project_id``) of the input is one of the output's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import uuid as uuidlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..formats.media_refs import check_file
from ..importer import file_sha256
from ..store import LATEST_VERSION, SchemaError, Store
from ..store.connection import SQLITE_MAGIC, discard_new_project, dumps, utc_now
from ..store.items import display_id
from .teamwork_reports import Conflict, InputReport, MergeReport, PackResult
from ..store.search import index_batch

MERGE_FORMAT = "pairscope-merge"
_REQUIRED_TABLES = {"meta", "items", "responses", "steps", "media", "ref_error_tags", "annotators", "labels",
                    "display_orders", "judge_runs", "verdicts", "collections", "collection_items"}

# Columns copied verbatim (``id`` and ``import_id`` are the receiving project's own).
ITEM_COLUMNS = ("ext_id", "source_format", "category", "subset", "prompt", "prompt_words", "prompt_raw",
                "media_kind", "n_responses", "ref_ranking", "ref_chosen", "ref_strength", "ground_truth",
                "extra", "content_hash", "missing_media", "source_id", "identity")
_ITEM_COL = {name: n + 1 for n, name in enumerate(ITEM_COLUMNS)}  # positions in ``SELECT id, ...``
LABEL_COLUMNS = ("uuid", "item_id", "annotator_id", "created_at", "kind", "outcome", "ranking", "preferred",
                 "strength", "error_types", "discard_reasons", "note", "display_order", "step_marks")
RUN_COLUMNS = ("uuid", "created_at", "backend", "model_path", "weights_hash", "template_name", "template_text",
               "template_hash", "mode", "k", "both_orders", "frames", "seed", "generation", "status")
VERDICT_COLUMNS = ("run_id", "item_id", "sample_idx", "order_shown", "raw_output", "choice", "scores", "parsed",
                   "rationale", "tokens_in", "tokens_out", "latency_s", "error", "media_sent", "created_at")
MEDIA_COLUMNS = ("item_id", "idx", "kind", "ref", "path", "problem")
CHILD_TABLES = {  # table -> columns after item_id
    "responses": ("idx", "text", "words", "model"),
    "steps": ("response_idx", "idx", "text", "ref_correct"),
    "ref_error_tags": ("idx", "kind", "subkind", "note", "raw"),
}


class TeamworkError(ValueError):
    """Packing or merging refused; nothing was written. The message names the file."""


class ProjectFileError(TeamworkError):
    """An input is not a usable PairScope project (not SQLite, corrupt, other schema)."""


class UnrelatedProjectsError(TeamworkError):
    """An input shares nothing with the output (see the module's definition)."""


def resolve_media_path(project: Store | str | Path, path: str | Path | None) -> Path | None:
    """Where a stored media ``path`` is on disk: absolute paths as they are, relative ones
    against the folder of ``project`` (a :class:`Store` or a project file path).
    ``None`` (missing media) stays ``None``."""
    if path is None:
        return None
    p = Path(path)
    if p.is_absolute():
        return p
    project_file = Path(project.path if isinstance(project, Store) else project)
    return project_file.absolute().parent / p


def project_id(store: Store) -> str:
    """The project's id (``meta`` ``project_id``), created on first use."""
    if store.meta("project_id") is None:
        with store.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('project_id', ?)", (str(uuidlib.uuid4()),))
    return store.meta("project_id")


def _same_file(a: Path, b: Path) -> bool:
    return a.exists() and b.exists() and os.path.samefile(a, b)


def _remove_files(paths: Iterable[Path]) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink()


class _Source:
    """A project opened read-only (``mode=ro``) and checked, read in one snapshot."""

    def __init__(self, path: Path, *, check_integrity: bool = True):
        self.path = Path(path)
        if not self.path.is_file():
            raise ProjectFileError(f"{self.path}: no such project file")
        with open(self.path, "rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                raise ProjectFileError(f"{self.path} is not a PairScope project (not an SQLite file)")
        self._side_files = [Path(str(self.path) + s) for s in ("-wal", "-shm")]
        self._had_side_files = [p.exists() for p in self._side_files]
        self._tmpdir: str | None = None
        uri = self.path.absolute().as_uri() + "?mode=ro"
        self.conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        try:
            self._check(check_integrity)
            self.conn.execute("BEGIN")  # one consistent snapshot for every read below
            self.meta = dict(self.conn.execute("SELECT key, value FROM meta"))
            self.items = {key: (i, h) for i, key, h in self.conn.execute("SELECT id, identity, content_hash FROM items")}
            self.dataset_ids = {d for (d,) in self.conn.execute("SELECT coalesce(source_id, ext_id) FROM items")}
        except sqlite3.DatabaseError as exc:
            self.close()
            raise ProjectFileError(f"{self.path} is corrupt or not a PairScope project: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def _check(self, check_integrity: bool) -> None:
        conn, path = self.conn, self.path
        if check_integrity:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchmany(5)]
            if rows != ["ok"]:
                raise ProjectFileError(f"{path} is corrupt (integrity check: {'; '.join(rows)})")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > LATEST_VERSION:
            raise ProjectFileError(f"{path} uses schema version {version}, but this PairScope only knows up "
                                   f"to {LATEST_VERSION}; upgrade PairScope to merge it")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version < 1 or not _REQUIRED_TABLES <= tables:
            raise ProjectFileError(f"{path} is an SQLite file but not a PairScope project")
        if version < LATEST_VERSION:
            self._upgraded_copy()

    def _upgraded_copy(self) -> None:
        """Read an older project through an upgraded temporary copy (the file stays as it is)."""
        self._tmpdir = tempfile.mkdtemp(prefix="pairscope-merge-")
        copy = Path(self._tmpdir) / "input.pairscope"
        with contextlib.closing(sqlite3.connect(copy)) as target:
            self.conn.backup(target)
        self.conn.close()
        self._tidy_side_files()
        try:
            Store.open(copy).close()  # runs the migrations on the copy
        except SchemaError as exc:
            raise ProjectFileError(f"{self.path}: upgrading its older schema failed: {exc}") from exc
        self.conn = sqlite3.connect(copy.as_uri() + "?mode=ro", uri=True, isolation_level=None,
                                    check_same_thread=False)

    @property
    def lineage(self) -> set[str]:
        return {v for v in (self.meta.get("project_id"), self.meta.get("pack_source_project_id")) if v}

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            self._tidy_side_files()
            if self._tmpdir:
                shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _tidy_side_files(self) -> None:
        """A read-only connection to a WAL file leaves empty ``-wal``/``-shm`` files. If it
        made them, a plain connection closing as the last one removes them (checkpointing an
        empty WAL writes nothing to the file); SQLite keeps them while others use them."""
        made = [p for p, had in zip(self._side_files, self._had_side_files) if not had and p.exists()]
        if made and not (self._side_files[0].exists() and self._side_files[0].stat().st_size):
            with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(str(self.path))) as conn:
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()


def _insert_sql(table: str, columns: Sequence[str], verb: str = "INSERT") -> str:
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


class _Copier:
    """Copies rows from a read-only source into ``dst`` inside the caller's transaction."""

    def __init__(self, dst: Store, src: _Source, report: InputReport, written: list[Path]):
        self.dst, self.src, self.report, self.written = dst, src, report, written
        self.conn = dst.conn
        self.item_map: dict[int, int] = {}  # source item id -> dst item id
        self._annotators = dict(self.conn.execute("SELECT name, id FROM annotators"))
        self._media_cache: dict[Path, tuple[str | None, str | None]] = {}

    def items(self, selected: set[int] | None, origin: dict[str, str], conflicts: list[Conflict]) -> list[int]:
        """Map every (selected) source item to dst by identity (dataset id + content, as an
        import does), adding missing ones — under a display id of their own when dst shows
        another item under theirs — with their responses, steps, media (files copied) and
        reference tags. Returns new ids."""
        existing = {key: (i, h) for i, key, h in self.conn.execute("SELECT id, identity, content_hash FROM items")}
        taken = {ext for (ext,) in self.conn.execute("SELECT ext_id FROM items")}
        next_id = self.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM items").fetchone()[0]
        new: dict[int, int] = {}
        new_rows = []
        col = _ITEM_COL
        for row in self.src.conn.execute(f"SELECT id, {', '.join(ITEM_COLUMNS)} FROM items ORDER BY id"):
            src_id, ext_id, digest, key = row[0], row[col["ext_id"]], row[col["content_hash"]], row[col["identity"]]
            if selected is not None and src_id not in selected:
                continue
            if key in existing:
                dst_id, dst_hash = existing[key]
                self.item_map[src_id] = dst_id
                self.report.items_matched += 1
                if dst_hash != digest:
                    self.report.conflicts += 1
                    conflicts.append(Conflict(ext_id, str(self.src.path), origin.get(key, "?"), dst_hash, digest))
                continue
            new[src_id] = self.item_map[src_id] = next_id
            origin[key] = str(self.src.path)
            dataset_id = row[col["source_id"]] or ext_id
            shown = display_id(dataset_id, taken)
            taken.add(shown)
            values = [next_id, *row[1:]]
            values[col["ext_id"]], values[col["source_id"]] = shown, None if shown == dataset_id else dataset_id
            new_rows.append(values)
            next_id += 1
        media_rows, missing = self._media_rows(new)
        for r in new_rows:  # missing_media: files not found when copying count too
            r[col["missing_media"]] = missing.get(r[0], 0)
        self.conn.executemany(_insert_sql("items", ("id", *ITEM_COLUMNS)), new_rows)
        children = {}
        for table, columns in CHILD_TABLES.items():
            children[table] = [(new[r[0]], *r[1:]) for r in self.src.conn.execute(
                f"SELECT item_id, {', '.join(columns)} FROM {table} ORDER BY 1, 2") if r[0] in new]
            self.conn.executemany(_insert_sql(table, ("item_id", *columns)), children[table])
        index_batch(self.conn, new_rows, children["responses"])  # the full-text index (schema 2)
        self.conn.executemany(_insert_sql("media", MEDIA_COLUMNS), media_rows)
        self.report.items_added += len(new)
        self.report.missing_media += sum(missing.values())
        return list(new.values())

    def _media_rows(self, new: dict[int, int]) -> tuple[list[tuple], dict[int, int]]:
        rows, missing = [], {}
        for item_id, idx, kind, ref, path, problem in self.src.conn.execute(
            f"SELECT {', '.join(MEDIA_COLUMNS)} FROM media ORDER BY item_id, idx"
        ):
            if item_id not in new:
                continue
            stored, problem = self._copy_media(path, problem, kind)
            if stored is None:
                missing[new[item_id]] = missing.get(new[item_id], 0) + 1
            rows.append((new[item_id], idx, kind, ref, stored, problem))
        return rows, missing

    def _copy_media(self, path: str | None, problem: str | None, kind: str) -> tuple[str | None, str | None]:
        """Copy one media file into dst's media folder (content-addressed); returns the
        stored path (relative to dst's folder) and the problem, if any."""
        if path is None:
            return None, problem
        source = resolve_media_path(self.src.path, path)
        if source not in self._media_cache:
            why = check_file(source, kind)
            if why is None:
                self._media_cache[source] = (self._copy_file(source), None)
            elif why == "not found":
                self._media_cache[source] = (None, f"media file missing when copied from {self.src.path}: {source}")
            else:  # only image and video files travel between projects
                self._media_cache[source] = (None, f"{kind} {source} {why}; not copied")
        stored, why = self._media_cache[source]
        return (stored, problem) if stored is not None else (None, why)

    def _copy_file(self, source: Path) -> str:
        digest = file_sha256(source)
        media_dir = self.dst.media_dir
        name = f"{digest}{source.suffix.lower()}"
        target = media_dir / digest[:2] / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{name}.{uuidlib.uuid4().hex}.tmp")
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
            self.written.append(target)
            self.report.media_files += 1
        return f"{media_dir.name}/{digest[:2]}/{name}"

    def annotator(self, name: str, created_at: str | None = None) -> int:
        if name not in self._annotators:
            self._annotators[name] = self.conn.execute(
                "INSERT INTO annotators (name, created_at) VALUES (?, ?)", (name, created_at or utc_now())
            ).lastrowid
            self.report.annotators_added += 1
        return self._annotators[name]

    def labels(self, annotator: str | None = None) -> None:
        """Every label row of mapped items (optionally one annotator's), matched by uuid,
        in the source's order (time, then row order)."""
        cols = ", ".join(f"l.{c}" for c in LABEL_COLUMNS if c != "annotator_id")
        where, params = ("WHERE a.name = ?", (annotator,)) if annotator is not None else ("", ())
        sql = _insert_sql("labels", LABEL_COLUMNS, "INSERT OR IGNORE")
        for name, a_created, *row in self.src.conn.execute(
            f"SELECT a.name, a.created_at, {cols} FROM labels l JOIN annotators a ON a.id = l.annotator_id"
            f" {where} ORDER BY l.created_at, l.rowid", params
        ):
            if row[1] not in self.item_map:
                continue
            row[1] = self.item_map[row[1]]
            row.insert(2, self.annotator(name, a_created))
            if self.conn.execute(sql, row).rowcount:
                self.report.labels_added += 1
            else:
                self.report.labels_present += 1

    def display_orders(self, annotator: str | None = None) -> None:
        """Blind display orders per (item, annotator name); the first one seen is kept."""
        where, params = ("WHERE a.name = ?", (annotator,)) if annotator is not None else ("", ())
        for item_id, name, a_created, order in self.src.conn.execute(
            "SELECT d.item_id, a.name, a.created_at, d.display_order FROM display_orders d"
            f" JOIN annotators a ON a.id = d.annotator_id {where} ORDER BY d.item_id, a.name", params
        ):
            if item_id not in self.item_map:
                continue
            key = (self.item_map[item_id], self.annotator(name, a_created))
            row = self.conn.execute(
                "SELECT display_order FROM display_orders WHERE item_id = ? AND annotator_id = ?", key
            ).fetchone()
            if row is None:
                self.conn.execute("INSERT INTO display_orders VALUES (?, ?, ?)", (*key, order))
                self.report.display_orders_added += 1
            elif row[0] != order:
                self.report.display_orders_differing += 1

    def judge_runs(self) -> None:
        """Runs matched by uuid; verdicts added where (run, item, sample) is not stored yet."""
        runs = {}
        dst_runs = dict(self.conn.execute("SELECT uuid, id FROM judge_runs"))
        for src_id, *row in self.src.conn.execute(f"SELECT id, {', '.join(RUN_COLUMNS)} FROM judge_runs ORDER BY id"):
            if row[0] not in dst_runs:
                dst_runs[row[0]] = self.conn.execute(_insert_sql("judge_runs", RUN_COLUMNS), row).lastrowid
                self.report.runs_added += 1
            runs[src_id] = dst_runs[row[0]]
        sql = _insert_sql("verdicts", VERDICT_COLUMNS, "INSERT OR IGNORE")
        for row in self.src.conn.execute(f"SELECT {', '.join(VERDICT_COLUMNS)} FROM verdicts ORDER BY id"):
            row = list(row)
            if row[1] not in self.item_map:
                continue
            row[0], row[1] = runs[row[0]], self.item_map[row[1]]
            self.report.verdicts_added += self.conn.execute(sql, row).rowcount

    def collections(self, only_with_items: bool = False) -> None:
        """Collections by name, members by item; with ``only_with_items`` a collection is
        created only when one of its items was copied."""
        members: dict[int, list[tuple]] = {}
        for coll_id, item_id, added_at in self.src.conn.execute(
                "SELECT collection_id, item_id, added_at FROM collection_items ORDER BY 1, 2"):
            if item_id in self.item_map:
                members.setdefault(coll_id, []).append((self.item_map[item_id], added_at))
        for coll_id, name, description, created_at in self.src.conn.execute(
            "SELECT id, name, description, created_at FROM collections ORDER BY id"
        ):
            if only_with_items and coll_id not in members:
                continue
            row = self.conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
            dst_id = row[0] if row else self.conn.execute(
                "INSERT INTO collections (name, description, created_at) VALUES (?, ?, ?)",
                (name, description, created_at)).lastrowid
            self.report.collections_added += row is None
            for item_id, added_at in members.get(coll_id, ()):
                self.report.collection_items_added += self.conn.execute(
                    "INSERT OR IGNORE INTO collection_items VALUES (?, ?, ?)", (dst_id, item_id, added_at)
                ).rowcount


def pack_project(store: Store, out: str | Path, annotator: str, *, collection: str | None = None,
                 item_ids: Iterable[int] | None = None, force: bool = False) -> PackResult:
    """Write a self-contained project for ``annotator`` to ``out``.

    It holds the items (all, a collection's, or ``item_ids``) with the same ``ext_id`` and
    content (so ``content_hash`` matches), their media files copied into ``out``'s media
    folder (paths relative to ``out``'s folder), the annotator's label history and display
    orders for those items, the collections those items belong to (restricted to them),
    and ``meta`` rows ``project_id``, ``pack_source_project_id``, ``pack_source_path``,
    ``pack_annotator``, ``pack_collection`` and ``packed_at``. Other annotators' labels
    and judge runs are not packed (the pack is for blind labeling). The source project
    gets a ``meta`` ``project_id`` if it has none (the only write to it).

    Refuses an existing ``out`` unless ``force``; on failure nothing is left at ``out``.
    """
    name = annotator.strip()
    if not name:
        raise TeamworkError("an annotator needs a non-empty name")
    out = Path(out)
    if _same_file(out, store.path):
        raise TeamworkError(f"{out} is the project being packed; choose another output file")
    if out.exists() and not force:
        raise TeamworkError(f"{out} already exists; use force=True (--force) to replace it")
    if collection is not None and item_ids is not None:
        raise TeamworkError("pack either a collection or a list of items, not both")
    selected: set[int] | None = None
    if collection is not None:
        if collection not in store.collections():
            raise TeamworkError(f"no collection named {collection!r} in {store.path}")
        selected = set(store.collection_item_ids(collection))
    elif item_ids is not None:
        selected = set(item_ids)
        known = {r[0] for r in store.query("SELECT id FROM items")}
        if unknown := sorted(selected - known):
            raise TeamworkError(f"no items with ids {unknown[:10]} in {store.path}")
    if (selected is not None and not selected) or store.item_count() == 0:
        raise TeamworkError(f"nothing to pack: the selection in {store.path} holds no items")
    source_id = project_id(store)
    src = _Source(store.path, check_integrity=False)
    written: list[Path] = []
    new, ok = None, False
    try:
        if out.exists():
            discard_new_project(out, media=False)
        new = Store.create(out)
        result = PackResult(out, name, str(uuidlib.uuid4()), source_id, collection=collection)
        report = InputReport(str(store.path))
        with new.transaction() as conn:
            copier = _Copier(new, src, report, written)
            copier.items(selected, {}, [])
            copier.labels(name)
            copier.display_orders(name)
            copier.annotator(name)  # a new annotator has no rows yet
            copier.collections(only_with_items=True)
            meta = {"project_id": result.project_id, "pack_source_project_id": source_id,
                    "pack_source_path": str(store.path.absolute()), "pack_annotator": name,
                    "pack_collection": collection or "", "packed_at": utc_now()}
            conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", meta.items())
        result.items, result.labels, result.display_orders = report.items_added, report.labels_added, \
            report.display_orders_added
        result.media_files, result.missing_media = report.media_files, report.missing_media
        ok = True
        return result
    finally:
        src.close()
        if new is not None:
            new.close()
        if not ok:
            discard_new_project(out, media=False)
            _remove_files(written)


def _check_related(src: _Source, known_ext: set[str], lineage: set[str], out: Path) -> None:
    if not known_ext or known_ext & src.dataset_ids or lineage & src.lineage:
        return
    raise UnrelatedProjectsError(f"{src.path} looks unrelated to {out}: no item id in common and no common "
                                 "source project; pass allow_unrelated=True (--allow-unrelated) to merge anyway")


def merge_projects(out: str | Path, inputs: Sequence[str | Path], *, allow_unrelated: bool = False) -> MergeReport:
    """Union the label histories of ``inputs`` into ``out`` (created if missing).

    Items are matched by identity (dataset id + content); one missing from ``out`` is added with its media files
    copied. Labels are matched by uuid (merging again adds nothing), annotators by name,
    display orders per (item, annotator) keep the first seen, judge runs are matched by
    uuid and their verdicts by (run, item, sample), collections by name. ``meta`` and the
    import log of inputs are not merged; each input that changed ``out`` is logged in
    ``imports`` (format ``pairscope-merge``, the input's sha256).

    Every input is opened read-only and checked (SQLite header, ``PRAGMA integrity_check``,
    schema version, PairScope tables) and checked for relatedness before ``out`` is
    touched; then all inputs are merged in one transaction on ``out``. Any failure leaves
    ``out`` as it was (a file this call created is removed, media files it copied too).
    An input that is ``out`` itself, or given twice, is skipped and listed in ``skipped``.
    """
    out = Path(out)
    paths = [Path(p) for p in inputs]
    if not paths:
        raise TeamworkError("nothing to merge: no input projects given")
    report = MergeReport(out, created=not out.exists())
    sources: list[_Source] = []
    store, written, ok = None, [], False
    try:
        for path in paths:
            if _same_file(path, out) or any(_same_file(path, s.path) for s in sources):
                report.skipped.append(f"{path}: the output or an earlier input")
                continue
            sources.append(_Source(path))
        if not report.created:
            store = Store.open(out)
        known_ext = {r[0] for r in store.query("SELECT coalesce(source_id, ext_id) FROM items")} if store else set()
        lineage = {v for v in (store.meta("project_id"), store.meta("pack_source_project_id")) if v} if store else set()
        for src in sources:
            if not allow_unrelated:
                _check_related(src, known_ext, lineage, out)
            known_ext |= src.dataset_ids
            lineage |= src.lineage
        if store is None:
            store = Store.create(out)
        origin = {key: str(out) for (key,) in store.query("SELECT identity FROM items")}
        with store.transaction() as conn:
            for src in sources:
                part = InputReport(str(src.path), src.meta.get("project_id"))
                copier = _Copier(store, src, part, written)
                added = copier.items(None, origin, report.conflicts)
                copier.labels()
                copier.display_orders()
                copier.judge_runs()
                copier.collections()
                if part.changed:
                    options = {k: v for k, v in part.__dict__.items() if k != "path"}
                    import_id = conn.execute(
                        "INSERT INTO imports (path, format, sha256, imported_at, added, unchanged, options)"
                        " VALUES (?,?,?,?,?,?,?)",
                        (str(src.path.absolute()), MERGE_FORMAT, file_sha256(src.path), utc_now(),
                         part.items_added, part.items_matched, dumps(options)),
                    ).lastrowid
                    conn.executemany("UPDATE items SET import_id = ? WHERE id = ?", ((import_id, i) for i in added))
                report.inputs.append(part)
        ok = True
        return report
    finally:
        for src in sources:
            src.close()
        if store is not None:
            store.close()
        if not ok:
            _remove_files(written)
            if report.created:
                discard_new_project(out, media=False)
