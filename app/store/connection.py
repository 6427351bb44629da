"""Opening a project file: identity check, pragmas, migrations and explicit transactions.

Nothing writes to a file before it is known to be a PairScope project: the path is
``stat``-ed first (a folder or a FIFO is refused without being opened), then an existing
file is read through a read-only connection and must have PairScope's tables and a schema
version, no schema object PairScope did not create (a planted trigger would run on the
next write) and pass ``PRAGMA quick_check``. The quick check reads the whole file (386 ms at
100,000 items) and the objects are compared with a schema the migrations build in memory
(~10 ms, once per process), so both run once per change of the file: a file that passed them
is remembered in a per-user cache (:mod:`.checked`: device, inode, size, modification and
change times of the file and of its ``-wal``), and is checked again as soon as any of them
differ. A file changed in the last few seconds is not remembered (a change in the same clock
tick as the check would leave the times as they were). Only then is it opened read-write, switched
to WAL and migrated.

A project that cannot be written (read-only file, folder or media) is read through a
read-only connection; when its ``-wal`` holds changes SQLite cannot read there (no
``-shm`` can be made beside it), through a private copy of the file and its ``-wal``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import stat
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, Self

import orjson

from ..durable import is_disk_full, is_read_only
from . import checked
from .clock import utc_now as utc_now  # re-exported: the store's timestamps
from .errors import DiskFullError, ReadOnlyError, StoreCorrupt, damaged, is_damage, is_full, is_readonly, store_error
from .schema import LATEST_VERSION, SchemaError, Shape, current_version, expected_shapes, migrate, normalize_sql

BUSY_TIMEOUT_MS = 5000
CACHE_KIB = 65536
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Tables every PairScope project has had since schema version 1.
IDENTITY_TABLES = frozenset({"schema_migrations", "meta"})
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
#: SQLite's own objects that may appear in any database (autoindexes are matched by prefix).
SQLITE_TABLES = frozenset({"sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4"})
#: Tables PairScope makes only in some files, outside the migrations: a pack's media (media_store.py).
OPTIONAL_TABLES = frozenset({"pack_media"})
#: How long closing waits for readers before it gives up checkpointing the WAL (it never fails).
CLOSE_CHECKPOINT_MS = 200
WAL_HEADER_BYTES = 32


def loads(text: str | bytes) -> Any:
    """A JSON column's value: orjson, else ``json`` for what orjson refuses (a NaN literal
    that ``json.dumps`` wrote in a project of an earlier version)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def dumps(value: object) -> str:
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


def _connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(
        target, uri=uri, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )


def _ro_uri(path: Path, *, immutable: bool = False) -> str:
    return path.absolute().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")


def _existing_folder(path: Path) -> Path:
    """The nearest folder above ``path`` that exists (the one a new file or folder goes in)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _remove_folder(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _has_frames(wal: Path) -> bool:
    """Whether a ``-wal`` file may hold changes (anything past its header)."""
    try:
        return wal.stat().st_size > WAL_HEADER_BYTES
    except OSError:
        return False


# Project files open in this process (real path → how many stores). POSIX file locks belong to
# the process: closing *any* descriptor of a file drops every lock SQLite holds on it, so a
# plain open()/close() of a file another connection here is using can let a second process
# delete its -wal/-shm under it. Identity is read from the raw header only for files not open.
_OPEN_FILES: dict[str, int] = {}
_OPEN_FILES_LOCK = threading.Lock()


def _register_open(path: Path, delta: int) -> None:
    key = os.path.realpath(path)
    with _OPEN_FILES_LOCK:
        count = _OPEN_FILES.get(key, 0) + delta
        if count > 0:
            _OPEN_FILES[key] = count
        else:
            _OPEN_FILES.pop(key, None)


def _open_here(path: Path) -> bool:
    with _OPEN_FILES_LOCK:
        return os.path.realpath(path) in _OPEN_FILES


class StoreBase:
    """The connection and its transaction discipline, shared by the store's parts.

    The connection runs in autocommit mode (``isolation_level=None``) so that every
    transaction is explicit: ``with store.transaction(): ...`` commits or rolls back
    as a whole. With ``readonly=True`` the file is opened through a read-only connection
    (no WAL switch, no migration, no writes); writing raises :class:`ReadOnlyError`.
    A project that cannot be written is refused read-write with :class:`ReadOnlyError`,
    or, with ``fallback_readonly=True``, opened read-only. ``note`` then says why (and
    whether a private copy is read); it is ``None`` for a plain opening.
    """

    def __init__(
        self, path: str | Path, *, create: bool = False, readonly: bool = False, fallback_readonly: bool = False
    ) -> None:
        if create and readonly:
            raise ValueError("a project cannot be created read-only")
        self.path = Path(path)
        self.readonly = readonly
        self.note: str | None = None
        self._lock = threading.RLock()
        self._depth = 0
        self._made_side_files: list[Path] = []
        self._copy: Path | None = None  # the private copy read instead of the file, if any
        self._drop_copy: Callable[[], object] = weakref.finalize(self, lambda: None)
        try:
            self._open(create, fallback_readonly)
        except BaseException:
            self._drop_copy()
            raise
        _register_open(self.path, +1)
        self._registered = True

    def _open(self, create: bool, fallback_readonly: bool) -> None:
        version = self._identify(create)
        if version and not self.readonly and not self._writable():
            if not fallback_readonly:
                raise ReadOnlyError(
                    f"{self.path} cannot be written (the file, its folder or its disk is read-only);"
                    " it can only be opened read-only"
                )
            self.readonly = True
        if self.readonly:
            if version < LATEST_VERSION:
                self._upgrade(version)
            if self.note is None and not self._writable():
                self.note = (
                    f"{self.path} cannot be written (the file, its folder or its disk is read-only): opened read-only"
                )
            self._open_readonly()
        else:
            if create:
                self._make_folder()
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
        """Read the file through a read-only connection: PairScope's tables and a schema
        version, nothing PairScope did not create, no damage. Nothing can run or be written."""
        if _open_here(self.path):
            header = SQLITE_MAGIC  # identified when first opened here; see _OPEN_FILES
            wal_mode = True
        else:
            with open(self.path, "rb") as fh:  # a regular file (checked): open() cannot block
                header = fh.read(100)
            wal_mode = len(header) > 18 and header[18] == 2
        self._wal_mode = wal_mode  # for an upgraded copy's read (_upgrade)
        if header[:16] != SQLITE_MAGIC:
            raise SchemaError(f"{self.path} is not a PairScope project (not an SQLite file)")
        try:
            with contextlib.closing(self._inspection_connection(wal_mode)) as conn:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                version = current_version(conn)
                if version < 1 or not IDENTITY_TABLES <= tables:
                    raise SchemaError(f"{self.path} is not a PairScope project (an SQLite file with other tables)")
                if version <= LATEST_VERSION:  # a newer schema is refused by migrate() with its own message
                    self._refuse_foreign_or_damaged(conn, version)
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise StoreCorrupt(damaged(self.path, str(exc))) from exc
            raise SchemaError(f"{self.path} is not a usable PairScope project: {exc}") from exc
        return version

    def _inspection_connection(self, wal_mode: bool) -> sqlite3.Connection:
        """A read-only connection for :meth:`_check_identity` that leaves nothing beside the file."""
        wal = Path(f"{self.path}-wal")
        # A WAL-mode file that nobody has open has no -wal: read it as immutable, so that this
        # look leaves no -wal/-shm files beside what may be someone else's database.
        if wal_mode and not wal.exists():
            return _connect(_ro_uri(self.path, immutable=True), uri=True)
        conn = _connect(_ro_uri(self.path), uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opening errors show on the first read
            return conn
        except sqlite3.OperationalError:
            conn.close()
            if self._writable():
                raise
        # Read-only media: SQLite cannot make the -shm a WAL reader needs beside the file.
        if wal_mode and _has_frames(wal):
            return _connect(_ro_uri(self._private_copy()), uri=True)
        return _connect(_ro_uri(self.path, immutable=True), uri=True)

    def _private_copy(self) -> Path:
        """Copy the file and its ``-wal`` to a private temporary folder (removed on close) and
        return the copy: changes still in the ``-wal`` of a read-only project are read there."""
        if self._copy is not None:
            return self._copy
        folder = Path(tempfile.mkdtemp(prefix="pairscope-readonly-"))
        self._drop_copy = weakref.finalize(self, _remove_folder, str(folder))
        copy = folder / self.path.name
        try:
            shutil.copyfile(self.path, copy)
            shutil.copyfile(f"{self.path}-wal", f"{copy}-wal")
        except OSError as exc:
            self._drop_copy()
            raise SchemaError(
                f"{self.path} is read-only and holds changes in {self.path.name}-wal that only a copy can read,"
                f" and copying it to {folder.parent} failed: {exc}"
            ) from exc
        self._copy = copy
        self.note = (
            f"{self.path} is read-only and holds changes not yet in the file (in {self.path.name}-wal):"
            " reading a private copy of both"
        )
        return copy

    def _refuse_foreign_objects(self, conn: sqlite3.Connection, version: int) -> None:
        """Refuse a file holding triggers, views or tables the migrations up to ``version`` do not
        create (or create differently): a planted trigger would run on PairScope's next write.
        Indexes and columns added by hand are accepted (they run no code). A file made by a build
        that shipped an earlier form of its version's migration is PairScope's own too."""
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").fetchall()
        rows = [r for r in rows if not (r[0] == "table" and r[1] in OPTIONAL_TABLES)]
        first, *earlier = expected_shapes(version)
        if any(self._foreign_and_missing(rows, shape) == ([], []) for shape in earlier):
            return
        foreign, missing = self._foreign_and_missing(rows, first)
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise SchemaError(
                f"{self.path}: this project holds a {shown} PairScope did not create; refusing to open it"
                " (objects added outside PairScope could run on its next write)"
            )
        if missing:
            raise SchemaError(
                f"{self.path}: this project lacks the {', '.join(missing[:5])} of PairScope's schema version"
                f" {version} (it was changed outside PairScope); refusing to open it"
            )

    @staticmethod
    def _foreign_and_missing(rows: list[tuple[str, str, str | None]], expected: Shape) -> tuple[list[str], list[str]]:
        """The objects of ``rows`` (``sqlite_master``) that ``expected`` lacks or has otherwise,
        and the tables, views and triggers of ``expected`` that ``rows`` lacks."""
        foreign, seen = [], set()
        for kind, name, sql in rows:
            seen.add(name)
            if (kind == "index" and name.startswith("sqlite_autoindex_")) or (
                kind == "table" and name in SQLITE_TABLES
            ):
                continue
            known = expected.get(name)
            if known is None:
                if kind != "index":
                    foreign.append(f"{kind} '{name}'")
                continue
            known_kind, known_sql = known
            virtual = (normalize_sql(sql) or "").upper().startswith("CREATE VIRTUAL")
            exact = kind in ("trigger", "view") or virtual or (known_sql or "").upper().startswith("CREATE VIRTUAL")
            if kind != known_kind or (exact and normalize_sql(sql) != known_sql):
                foreign.append(f"{kind} '{name}'")
        missing = [f"{kind} '{name}'" for name, (kind, _) in expected.items() if name not in seen and kind != "index"]
        return foreign, missing

    def _refuse_foreign_or_damaged(self, conn: sqlite3.Connection, version: int) -> None:
        """:meth:`_refuse_foreign_objects`, then ``PRAGMA quick_check``; neither when this very
        file, exactly as it is now, passed both before (:func:`.checked.was_checked`: only a file
        that passed both is remembered, under a key taken before the checks). So an unchanged
        file costs neither the whole-file read nor the reference schema built in memory."""
        if checked.was_checked(self.path):
            return
        key = checked.checked_key(self.path, settled=True)
        self._refuse_foreign_objects(conn, version)
        problems = self._quick_check(conn)
        if problems != ["ok"]:
            raise StoreCorrupt(damaged(self.path, "SQLite's quick check reports: " + "; ".join(problems)))
        checked.remember_checked(self.path, key)

    @staticmethod
    def _quick_check(conn: sqlite3.Connection) -> list[str]:
        return [" ".join(str(r[0]).split()) for r in conn.execute("PRAGMA quick_check(5)")]

    def _make_folder(self) -> None:
        """Create the folder of a new project; a read-only place or a full disk is said plainly."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._os_failure(exc, f"cannot create {self.path}") from exc
        if not self.path.exists() and not os.access(self.path.parent, os.W_OK):
            raise ReadOnlyError(
                f"cannot create {self.path}: the folder {self.path.parent} is read-only (or on read-only media)"
            )

    def _os_failure(self, exc: OSError, what: str) -> OSError:
        if is_disk_full(exc):
            return DiskFullError(f"the disk is full ({what}: {exc.strerror})")
        if is_read_only(exc):
            folder = _existing_folder(Path(exc.filename)) if exc.filename else self.path.parent
            return ReadOnlyError(f"{what}: the folder {folder} is read-only ({exc.strerror})")
        return exc

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
        if is_full(exc):
            return DiskFullError(f"the disk is full ({self.path} could not be opened or upgraded: {exc})")
        if not self.readonly and (is_readonly(exc) or not self._writable()):
            return ReadOnlyError(f"{self.path} cannot be written (the file or its folder is read-only): {exc}")
        if is_damage(exc):
            return StoreCorrupt(damaged(self.path, str(exc)))
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

        if self._copy is not None:
            self._connected(_ro_uri(self._copy), setup, uri=True)
            return
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
        """Read an older project through an upgraded private copy (removed on close): opening
        read-only never writes the file, so it is not upgraded in place (opening it for writing is)."""
        if self._copy is None:
            folder = Path(tempfile.mkdtemp(prefix="pairscope-upgraded-"))
            self._drop_copy = weakref.finalize(self, _remove_folder, str(folder))
            copy = folder / self.path.name
            try:  # SQLite's backup API: a consistent copy while others read and write the file
                with contextlib.closing(self._inspection_connection(self._wal_mode)) as source:
                    with contextlib.closing(sqlite3.connect(copy)) as target:
                        source.backup(target)
            except (sqlite3.Error, OSError) as exc:
                self._drop_copy()
                raise SchemaError(f"{self.path} could not be copied to {folder.parent} to read it: {exc}") from exc
            self._copy = copy
        try:
            StoreBase(self._copy).close()  # the migrations, on the copy
        except (SchemaError, OSError) as exc:
            self._drop_copy()
            raise SchemaError(
                f"{self.path} has schema version {version}; upgrading a copy of it to {LATEST_VERSION} failed: {exc}"
            ) from exc
        self.note = (
            f"{self.path} was made by an earlier PairScope (schema version {version}, now {LATEST_VERSION}): read"
            " through an upgraded private copy, the file left as it is; open it in PairScope once to upgrade it"
        )

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

        A failure is raised as the store's error (:mod:`.errors`): :class:`ReadOnlyError` when
        the block writes to a project that cannot be written, :class:`DiskFullError` when the
        disk is full (SQLite may already have rolled back by itself; the transaction is rolled
        back once and the cause is kept), ``StoreBusy`` ...
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            try:
                self.conn.execute("BEGIN" if self.readonly else "BEGIN IMMEDIATE")
            except sqlite3.Error as exc:  # SQLITE_BUSY: another process held the write lock too long
                self._raise_failure(exc)
            self._depth = 1
            try:
                yield self.conn
            except BaseException as exc:
                self._depth = 0
                self._rollback()
                self._raise_failure(exc)
            self._depth = 0
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                self._raise_failure(exc)

    def _raise_failure(self, exc: BaseException) -> NoReturn:
        """Raise ``exc`` as the store's own error (:mod:`.errors`), or as it is."""
        failure = store_error(exc, self.path, readonly=self.readonly)
        if failure is None:
            raise exc
        raise failure from exc

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already done so (it does after
        SQLITE_FULL, SQLITE_IOERR ...); a failing ROLLBACK must not hide the error that caused it."""
        if self.conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
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
        """Close the connection; a writable project's WAL is checkpointed into the file first
        (a ``cp`` of it then holds every commit; SQLite removes ``-wal``/``-shm`` when this was
        the last connection). A checkpoint other connections hold up is left to SQLite."""
        with self._lock:
            if not self.readonly and getattr(self, "journal_mode", None) == "wal":
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute(f"PRAGMA busy_timeout = {CLOSE_CHECKPOINT_MS}")
                    self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            self.conn.close()
            self._tidy_side_files()
            self._drop_copy()
            if getattr(self, "_registered", False):
                self._registered = False
                _register_open(self.path, -1)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "StoreBase",
    "SchemaError",
    "ReadOnlyError",
    "DiskFullError",
    "utc_now",
    "dumps",
    "inserted_id",
    "project_media_dir",
]
