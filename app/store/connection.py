"""Opening a project file: pragmas, migrations and explicit transactions."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import orjson

from .schema import SchemaError, current_version, migrate

BUSY_TIMEOUT_MS = 5000
CACHE_KIB = 65536


def utc_now() -> str:
    """ISO-8601 UTC timestamp with microseconds (sortable as text)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def dumps(value) -> str:
    """Compact, key-sorted UTF-8 JSON as stored in the project's JSON columns.

    orjson writes NaN/Infinity as null, where ``json`` would write invalid JSON.
    """
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode("utf-8")


class StoreBase:
    """The connection and its transaction discipline, shared by the store's parts.

    The connection runs in autocommit mode (``isolation_level=None``) so that every
    transaction is explicit: ``with store.transaction(): ...`` commits or rolls back
    as a whole.
    """

    def __init__(self, path: str | Path, *, create: bool = False) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise FileNotFoundError(f"no project file at {self.path}")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._check_header()
        self.conn = sqlite3.connect(
            str(self.path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # A 64 MB page cache (a ceiling, not an allocation) keeps a bulk import's index
            # pages in memory instead of spilling them to the WAL mid-transaction.
            self.conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
            # WAL can be refused (e.g. network filesystems); SQLite then keeps its mode.
            self.journal_mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self.conn.execute("PRAGMA foreign_keys = ON")
            # Labels must survive power loss the moment the user sees them saved.
            self.conn.execute("PRAGMA synchronous = FULL")
            migrate(self.conn)
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise SchemaError(f"{self.path} is not a usable PairScope project: {exc}") from exc
        except BaseException:
            self.conn.close()
            raise

    def _check_header(self) -> None:
        if self.path.exists() and self.path.stat().st_size > 0:
            with open(self.path, "rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    raise SchemaError(f"{self.path} is not a PairScope project (not an SQLite file)")

    @property
    def media_dir(self) -> Path:
        """The project's own media folder (extracted and content-addressed files)."""
        return self.path.with_name(self.path.stem + "_media")

    @property
    def schema_version(self) -> int:
        return current_version(self.conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run the block as one IMMEDIATE transaction (nested blocks join the outer one)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self.conn.execute("COMMIT")

    def query(self, sql: str, params=()) -> list[tuple]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def meta(self, key: str, default: str | None = None) -> str | None:
        row = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0][0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def integrity_check(self) -> str:
        return self.query("PRAGMA integrity_check")[0][0]

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["StoreBase", "SchemaError", "utc_now", "dumps"]
