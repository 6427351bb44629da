"""Reading another project file for a pack or merge: :class:`ProjectSource` opens it read-only,
checks it and reads it in one snapshot (an older one through an upgraded temporary copy), with
the media inside it (a pack's) and who wrote its labels."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .connection import SQLITE_MAGIC, StoreBase
from .media_store import blob_names, read_blob
from .schema import LATEST_VERSION, SchemaError

if TYPE_CHECKING:
    from sqlite_utils import Database

#: Tables every PairScope project has (and a merge reads).
REQUIRED_TABLES = frozenset(
    {
        "meta",
        "items",
        "responses",
        "steps",
        "media",
        "ref_error_tags",
        "annotators",
        "labels",
        "display_orders",
        "judge_runs",
        "verdicts",
        "collections",
        "collection_items",
    }
)


class ForeignProjectError(SchemaError):
    """A file to copy from is not a readable PairScope project. The message names the file."""


def table_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """The columns of ``table`` as the file's live schema has them, in table order."""
    return [c.name for c in _database(conn).table(table).columns]


def _database(conn: sqlite3.Connection) -> Database:
    # sqlite-utils would otherwise switch recursive triggers on for the store's connection.
    # sqlite-utils pulls in pandas when present (~0.4 s): only when a merge needs the schema
    from sqlite_utils import Database

    return Database(conn, recursive_triggers=False, execute_plugins=False)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _names(columns: Sequence[str]) -> str:
    return ", ".join(_quoted(c) for c in columns)


def _insert_sql(table: str, columns: Sequence[str], verb: str = "INSERT") -> str:
    return f"{verb} INTO {_quoted(table)} ({_names(columns)}) VALUES ({', '.join('?' * len(columns))})"


class ProjectSource:
    """A project file opened read-only (``mode=ro``) and checked, read in one snapshot.

    An older project is read through an upgraded temporary copy (the file stays as it is).
    Raises :class:`ForeignProjectError` for anything that is not a usable PairScope project.
    """

    def __init__(self, path: str | Path, *, check_integrity: bool = True):
        self.path = Path(path)
        if not self.path.is_file():
            raise ForeignProjectError(f"{self.path}: no such project file")
        with open(self.path, "rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                raise ForeignProjectError(f"{self.path} is not a PairScope project (not an SQLite file)")
        self._side_files = [Path(str(self.path) + s) for s in ("-wal", "-shm")]
        self._had_side_files = [p.exists() for p in self._side_files]
        self._tmpdir: str | None = None
        self.conn = self._connect(self.path)
        try:
            self._check(check_integrity)
            self.conn.execute("BEGIN")  # one consistent snapshot for every read below and later
            self.meta: dict[str, str] = dict(self.conn.execute("SELECT key, value FROM meta"))
            #: identity -> (item id, content hash)
            self.items = {
                key: (i, h) for i, key, h in self.conn.execute("SELECT id, identity, content_hash FROM items")
            }
            #: the dataset ids of its items
            self.dataset_ids = {d for (d,) in self.conn.execute("SELECT coalesce(source_id, ext_id) FROM items")}
            #: the media files inside it (a pack's): name -> sha256
            self.blobs = blob_names(self.conn)
        except sqlite3.DatabaseError as exc:
            self.close()
            raise ForeignProjectError(f"{self.path} is corrupt or not a PairScope project: {exc}") from exc
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        return sqlite3.connect(
            path.absolute().as_uri() + "?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )

    def _check(self, check_integrity: bool) -> None:
        conn, path = self.conn, self.path
        if check_integrity:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchmany(5)]
            if rows != ["ok"]:
                raise ForeignProjectError(f"{path} is corrupt (integrity check: {'; '.join(rows)})")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > LATEST_VERSION:
            raise ForeignProjectError(
                f"{path} uses schema version {version}, but this PairScope only knows up "
                f"to {LATEST_VERSION}; upgrade PairScope to merge it"
            )
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version < 1 or not REQUIRED_TABLES <= tables:
            raise ForeignProjectError(f"{path} is an SQLite file but not a PairScope project")
        if version < LATEST_VERSION:
            self._upgraded_copy()

    def _upgraded_copy(self) -> None:
        self._tmpdir = tempfile.mkdtemp(prefix="pairscope-merge-")
        copy = Path(self._tmpdir) / "input.pairscope"
        with contextlib.closing(sqlite3.connect(copy)) as target:
            self.conn.backup(target)
        self.conn.close()
        self._tidy_side_files()
        try:
            StoreBase(copy).close()  # runs the migrations on the copy
        except SchemaError as exc:
            raise ForeignProjectError(f"{self.path}: upgrading its older schema failed: {exc}") from exc
        self.conn = self._connect(copy)

    @property
    def lineage(self) -> set[str]:
        """Its project id and the id of the project it was packed from."""
        return {v for v in (self.meta.get("project_id"), self.meta.get("pack_source_project_id")) if v}

    def columns(self, table: str) -> list[str]:
        return table_columns(self.conn, table)

    def media_blob(self, name: str) -> bytes:
        """The bytes of a media file inside it (``OSError`` when damaged; ``KeyError``: none)."""
        return read_blob(self.conn, name)

    def authors(self) -> dict[tuple[str, str], list[str]]:
        """Who wrote its labels: (annotator name, kind) -> the uuids of those label rows."""
        found: dict[tuple[str, str], list[str]] = {}
        rows = self.conn.execute(
            "SELECT a.name, l.kind, l.uuid FROM labels l JOIN annotators a ON a.id = l.annotator_id ORDER BY l.rowid"
        )
        for name, kind, uid in rows:
            found.setdefault((str(name), str(kind)), []).append(str(uid))
        return found

    def rows(self, table: str, columns: Sequence[str], order_by: Sequence[str]) -> Iterator[tuple]:
        return self.conn.execute(f"SELECT {_names(columns)} FROM {_quoted(table)} ORDER BY {_names(order_by)}")

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
