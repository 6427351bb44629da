"""Copies of a project that hold every commit: SQLite's online backup API, and WAL checkpoints.

While any connection has a project open, committed transactions can sit in its ``-wal``; a
``cp`` of the file alone then misses them. :meth:`CopiesMixin.backup_to` copies through SQLite's
online backup API instead: one read transaction over the whole file, so the copy is the project
as of one moment however other connections and processes write meanwhile. The copy is a file
of its own (no ``-wal`` beside it). :meth:`CopiesMixin.checkpoint` moves what the ``-wal`` holds
into the file (the window does it when idle; closing a store does it too).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from .connection import StoreBase

#: ``PRAGMA wal_checkpoint`` modes: PASSIVE never waits; TRUNCATE waits for readers, empties the -wal.
CHECKPOINT_MODES = ("PASSIVE", "FULL", "RESTART", "TRUNCATE")


class CopiesMixin(StoreBase):
    """Consistent copies and checkpoints. Mixed into :class:`pairscope.app.store.Store`."""

    def backup_to(self, target: str | Path) -> None:
        """Write the whole project, as of one moment, into the new file ``target`` (which must
        not exist: the caller names a temporary file and renames it into place). Consistent
        while other connections write: SQLite's backup API copies every page in one step."""
        target = Path(target)
        if target.exists():
            raise FileExistsError(f"{target} exists; a backup is written to a new file")
        with self._lock, contextlib.closing(sqlite3.connect(str(target), isolation_level=None)) as dest:
            self.conn.backup(dest)  # pages=-1: one step, one read snapshot of the source
            dest.execute("PRAGMA synchronous = FULL")
            found = dest.execute("PRAGMA quick_check").fetchone()[0]
            if found != "ok":
                raise sqlite3.DatabaseError(f"the copy at {target} fails SQLite's quick check: {found}")

    def checkpoint(self, mode: str = "PASSIVE") -> tuple[int, int] | None:
        """Move committed pages from the ``-wal`` into the file; PASSIVE (the default) never
        waits for another connection. Returns (pages in the WAL, pages moved), or ``None``
        when the project is not in WAL mode or is read-only (nothing to do)."""
        if mode not in CHECKPOINT_MODES:
            raise ValueError(f"a checkpoint mode is one of {', '.join(CHECKPOINT_MODES)}, not {mode!r}")
        if self.readonly or getattr(self, "journal_mode", None) != "wal":
            return None
        with self._lock:
            if self._depth:  # inside a transaction: it is not committed yet
                return None
            _busy, pages, moved = self.conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        return int(pages), int(moved)


__all__ = ["CHECKPOINT_MODES", "CopiesMixin"]
