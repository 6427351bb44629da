"""The SQLite project store: one file per project, the only place with SQL.

>>> with Store.create("project.pairscope") as store:
...     store.add_items(items)
"""

from __future__ import annotations

from pathlib import Path

from .connection import StoreBase, project_media_dir
from .copies import CopiesMixin
from .errors import (
    DiskFullError,
    ReadOnlyError,
    StoreBusy,
    StoreConflict,
    StoreCorrupt,
    StoreError,
    StoreIOError,
    translating,
)
from .items import AddResult, ItemsMixin, content_hash
from .judge import JudgeMixin, RunRecord, VerdictRecord
from .labels import LabelsMixin
from .merge import MergeMixin
from .schema import LATEST_VERSION, MIGRATIONS, SchemaError
from .snapshot import SnapshotMixin
from .stats_queries import StatsMixin


# Each part subclasses StoreBase and the parts it calls (MergeMixin: ItemsMixin; StatsMixin:
# JudgeMixin, SnapshotMixin; ItemsMixin: MediaStoreMixin), so it is listed before them. A sqlite3
# error leaving any public method is raised as the store's own (errors.py).
@translating
class Store(MergeMixin, ItemsMixin, LabelsMixin, StatsMixin, JudgeMixin, SnapshotMixin, CopiesMixin, StoreBase):
    """A PairScope project file. Safe to share between threads (calls are serialized)."""

    @classmethod
    def create(cls, path: str | Path) -> Store:
        """Open a project, creating the file (and its folder) when it does not exist."""
        return cls(path, create=True)

    @classmethod
    def open(cls, path: str | Path, *, readonly: bool = False, fallback_readonly: bool = False) -> Store:
        """Open an existing project; ``FileNotFoundError`` when there is none.

        ``readonly=True`` reads it without ever writing it (an older project is upgraded
        first); any write then raises :class:`ReadOnlyError`. A project that cannot be
        written raises :class:`ReadOnlyError`, or with ``fallback_readonly=True`` opens
        read-only (``store.readonly``; ``store.note`` says why).
        """
        return cls(path, create=False, readonly=readonly, fallback_readonly=fallback_readonly)


__all__ = [
    "Store",
    "RunRecord",
    "VerdictRecord",
    "SchemaError",
    "ReadOnlyError",
    "DiskFullError",
    "StoreBusy",
    "StoreConflict",
    "StoreCorrupt",
    "StoreError",
    "StoreIOError",
    "AddResult",
    "content_hash",
    "LATEST_VERSION",
    "MIGRATIONS",
    "project_media_dir",
]
