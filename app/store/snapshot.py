"""Read transactions: several reads that must see the project as of one moment."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from .connection import StoreBase


class SnapshotMixin(StoreBase):
    """Mixed into :class:`pairscope.app.store.Store`."""

    @contextmanager
    def read_snapshot(self) -> Iterator[sqlite3.Connection]:
        """Run the block's reads inside one deferred read transaction (``BEGIN`` … ``COMMIT``).

        In WAL mode every read in the block sees the project as of its first read, whatever
        other connections commit meanwhile, and no write lock is taken (writers are not
        blocked). Inside a :meth:`transaction` the block joins it. Not for writing.
        """
        with self._lock:
            if self._depth:
                yield self.conn
                return
            self.conn.execute("BEGIN DEFERRED")
            self._depth = 1  # a nested transaction() or read_snapshot() joins this one
            try:
                yield self.conn
            except BaseException:
                self._depth = 0
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self.conn.execute("COMMIT")  # ends the read; there is nothing to write
