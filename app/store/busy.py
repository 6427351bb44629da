"""How long a write waits for another process's write lock.

A project waits :data:`~.connection.BUSY_TIMEOUT_MS` for the lock before a write fails with
"database is locked". Retrying labels kept pending (see :mod:`pairscope.app.labeling.pending`) runs on
the window's thread and must not freeze it that long while an import holds the lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .connection import BUSY_TIMEOUT_MS, StoreBase


@contextmanager
def waiting_at_most(store: StoreBase, ms: int) -> Iterator[None]:
    """Writes in the block wait at most ``ms`` milliseconds for the write lock.

    The store's lock is held for the block, so no other thread's statement runs with the
    shorter wait; the usual wait is restored afterwards.
    """
    with store._lock:
        store.conn.execute(f"PRAGMA busy_timeout = {max(0, int(ms))}")
        try:
            yield
        finally:
            store.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


__all__ = ["waiting_at_most"]
