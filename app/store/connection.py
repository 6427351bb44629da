"""Opening a project file: identity check, pragmas, migrations and explicit transactions.

Nothing writes to a file before it is known to be a PairScope project: the path is
``stat``-ed first (a folder or a FIFO is refused without being opened), then an existing
file is read through a read-only connection and must have PairScope's tables and a schema
version. Only then is it opened read-write, switched to WAL and migrated.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import orjson

from .schema import LATEST_VERSION, SchemaError, current_version, migrate

BUSY_TIMEOUT_MS = 5000
CACHE_KIB = 65536
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Tables every PairScope project has had since schema version 1.
IDENTITY_TABLES = frozenset({"schema_migrations", "meta"})
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")


class ReadOnlyError(SchemaError, PermissionError):
    """A write was attempted on a project that is open read-only (or cannot be written)."""


def utc_now() -> str:
    """ISO-8601 UTC timestamp with microseconds (sortable as text)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def dumps(value) -> str:
    """Compact, key-sorted UTF-8 JSON as stored in the project's JSON columns.

    orjson writes NaN/Infinity as null, where ``json`` would write invalid JSON.
    """
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode("utf-8")


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The rowid of the row an ``INSERT`` just made through ``cursor`` (its ``lastrowid``)."""
    rowid = cursor.lastrowid
    assert rowid is not None, "sqlite3 sets lastrowid on every INSERT that inserts a row"
    return rowid


def project_media_dir(path: str | Path) -> Path:
    """The media folder that belongs to the project file at ``path`` (``<stem>_media``)."""
    path = Path(path)
    return path.with_name(path.stem + "_media")


def discard_new_project(path: str | Path, *, media: bool) -> None:
    """Remove a project file this process has just created, with its ``-wal``/``-shm``/
    ``-journal`` files and, when ``media``, its media folder (e.g. after a failed first import)."""
    path = Path(path)
    for victim in (path, *(Path(f"{path}{suffix}") for suffix in SIDE_SUFFIXES)):
        with contextlib.suppress(OSError):
            victim.unlink()
    if media:
        shutil.rmtree(project_media_dir(path), ignore_errors=True)


def _connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(
        target, uri=uri, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )


def _ro_uri(path: Path, *, immutable: bool = False) -> str:
    return path.absolute().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")


def _is_readonly_error(exc: sqlite3.Error) -> bool:
    return (getattr(exc, "sqlite_errorname", "") or "").startswith("SQLITE_READONLY")


class StoreBase:
    """The connection and its transaction discipline, shared by the store's parts.

    The connection runs in autocommit mode (``isolation_level=None``) so that every
    transaction is explicit: ``with store.transaction(): ...`` commits or rolls back
    as a whole. With ``readonly=True`` the file is opened through a read-only connection
    (no WAL switch, no migration, no writes); writing raises :class:`ReadOnlyError`.
    """

    def __init__(self, path: str | Path, *, create: bool = False, readonly: bool = False) -> None:
        if create and readonly:
            raise ValueError("a project cannot be created read-only")
        self.path = Path(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        self._depth = 0
        self._made_side_files: list[Path] = []
        version = self._identify(create)
        if readonly:
            if version < LATEST_VERSION:
                self._upgrade(version)
            self._open_readonly()
        else:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open_readwrite()

    # -- opening ---------------------------------------------------------------------

    def _identify(self, create: bool) -> int:
        """Check, before anything opens it for writing, that the path is a PairScope project.

        Returns its schema version; 0 for a missing or empty file, accepted only with ``create``.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise SchemaError(f"{self.path} is a folder, not a PairScope project file")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise SchemaError(f"{self.path} is not a regular file, so not a PairScope project")
        if st is not None and st.st_size > 0:
            return self._check_identity()
        if create:
            return 0
        if st is None:
            raise FileNotFoundError(f"no project file at {self.path}")
        raise SchemaError(f"{self.path} is an empty file, not a PairScope project")

    def _check_identity(self) -> int:
        with open(self.path, "rb") as fh:  # a regular file (checked): open() cannot block
            header = fh.read(100)
        if header[:16] != SQLITE_MAGIC:
            raise SchemaError(f"{self.path} is not a PairScope project (not an SQLite file)")
        # A WAL-mode file that nobody has open has no -wal: read it as immutable, so that this
        # look leaves no -wal/-shm files beside what may be someone else's database.
        immutable = len(header) > 18 and header[18] == 2 and not Path(f"{self.path}-wal").exists()
        try:
            with contextlib.closing(_connect(_ro_uri(self.path, immutable=immutable), uri=True)) as conn:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                version = current_version(conn)
        except sqlite3.DatabaseError as exc:
            raise SchemaError(f"{self.path} is not a usable PairScope project: {exc}") from exc
        if version < 1 or not IDENTITY_TABLES <= tables:
            raise SchemaError(f"{self.path} is not a PairScope project (an SQLite file with other tables)")
        return version

    def _pragmas(self) -> None:
        self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # A 64 MB page cache (a ceiling, not an allocation) keeps a bulk import's index
        # pages in memory instead of spilling them to the WAL mid-transaction.
        self.conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
        self.conn.execute("PRAGMA foreign_keys = ON")

    def _connected(self, target: str, setup: Callable[[], None], *, uri: bool = False) -> None:
        """Connect to ``target`` and run ``setup``; a failure closes the connection again."""
        try:
            self.conn = _connect(target, uri=uri)
        except sqlite3.DatabaseError as exc:
            raise self._open_error(exc) from exc
        try:
            setup()
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise self._open_error(exc) from exc
        except BaseException:
            self.conn.close()
            raise

    def _open_error(self, exc: sqlite3.DatabaseError) -> SchemaError:
        if not self.readonly and (_is_readonly_error(exc) or not self._writable()):
            return ReadOnlyError(f"{self.path} cannot be written (the file or its folder is read-only): {exc}")
        return SchemaError(f"{self.path} is not a usable PairScope project: {exc}")

    def _open_readwrite(self) -> None:
        def setup() -> None:
            self._pragmas()
            # WAL can be refused (e.g. network filesystems); SQLite then keeps its mode.
            self.journal_mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            # Labels must survive power loss the moment the user sees them saved.
            self.conn.execute("PRAGMA synchronous = FULL")
            migrate(self.conn)

        self._connected(str(self.path), setup)

    def _open_readonly(self) -> None:
        def setup() -> None:
            self._pragmas()
            self.journal_mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
            migrate(self.conn)  # up to date by now: only refuses a newer schema, writes nothing

        side = [Path(f"{self.path}{suffix}") for suffix in ("-wal", "-shm")]
        had = [p.exists() for p in side]
        try:
            self._connected(_ro_uri(self.path), setup, uri=True)
        except SchemaError:
            if self._writable():
                raise
            # Read-only media: no -shm can be made beside the file, and nobody can write it either.
            self._connected(_ro_uri(self.path, immutable=True), setup, uri=True)
        self._made_side_files = [p for p, existed in zip(side, had) if not existed and p.exists()]

    def _upgrade(self, version: int) -> None:
        """Migrate an older project read-write (it is a PairScope project) before reading it."""
        needs = f"{self.path} has schema version {version} and needs upgrading to {LATEST_VERSION}"
        try:
            StoreBase(self.path).close()
        except ReadOnlyError as exc:
            raise SchemaError(f"{needs} by a PairScope that can write to it; it cannot be written here") from exc
        except (SchemaError, OSError) as exc:
            raise SchemaError(f"{needs}, and upgrading it failed: {exc}") from exc

    def _writable(self) -> bool:
        """Whether SQLite can write the file and make its -wal/-shm files beside it."""
        if self.path.exists() and not os.access(self.path, os.W_OK):
            return False
        return os.access(self.path.parent, os.W_OK)

    def _tidy_side_files(self) -> None:
        """A read-only connection to a WAL file leaves the empty ``-wal``/``-shm`` files it made;
        a plain connection closing as the last one removes them (an empty WAL writes nothing)."""
        made, self._made_side_files = self._made_side_files, []
        wal = Path(f"{self.path}-wal")
        if not made or (wal.exists() and wal.stat().st_size):
            return
        with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(str(self.path))) as conn:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()

    # -- use -------------------------------------------------------------------------

    @property
    def media_dir(self) -> Path:
        """The project's own media folder (extracted and content-addressed files)."""
        return project_media_dir(self.path)

    @property
    def schema_version(self) -> int:
        return current_version(self.conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run the block as one IMMEDIATE transaction (nested blocks join the outer one).

        Raises :class:`ReadOnlyError` when the block writes to a project that cannot be written.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN" if self.readonly else "BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException as exc:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error) and _is_readonly_error(exc):
                    how = "open read-only" if self.readonly else "read-only"
                    raise ReadOnlyError(f"project {self.path} is {how}; nothing was written ({exc})") from exc
                raise
            self._depth = 0
            self.conn.execute("COMMIT")

    def query(self, sql: str, params=()) -> list[tuple]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def meta(self, key: str, default: str | None = None) -> str | None:
        row = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0][0] if row else default

    def all_meta(self) -> dict[str, str]:
        """Every project metadata entry (key → value)."""
        return dict(self.query("SELECT key, value FROM meta ORDER BY key"))

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def integrity_check(self) -> str:
        return self.query("PRAGMA integrity_check")[0][0]

    def close(self) -> None:
        with self._lock:
            self.conn.close()
            self._tidy_side_files()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = [
    "StoreBase",
    "SchemaError",
    "ReadOnlyError",
    "utc_now",
    "dumps",
    "inserted_id",
    "project_media_dir",
    "discard_new_project",
]
