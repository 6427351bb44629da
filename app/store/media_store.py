"""A project's own media store: files inside the project file (a pack's ``pack_media`` table)
and in its media folder, reached from a stored path by the one rule (``app.media.follow_stored``).

A pack keeps its media inside itself, so it is one file to send: ``pack_media`` holds each
file's bytes under its content name (``ab/<sha256>.<ext>``), and the pack's ``media`` rows name
it as PairScope names every copied file (``<stem>_media/ab/<sha256>.<ext>``). Reading such a
path takes the blob when the file holds one, else the file of that name in the media folder.
A blob is unpacked, checked against its sha256, into a private temporary folder the first time
an item needs it (removed when the store closes): nothing is written beside the pack, and a
read-only pack shows its media too.

The table is made only by packing (:meth:`MediaStoreMixin.add_media_blob`); the store's check of
a file's objects knows it (``connection.OPTIONAL_TABLES``).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..durable import content_name, copy_file
from ..records import MediaKind, MediaRef
from .connection import OPTIONAL_TABLES, StoreBase, project_media_dir

if TYPE_CHECKING:
    from ..media import StoredPath

PACK_MEDIA = "pack_media"
#: The largest file a pack can hold (SQLite's default limit on one value, SQLITE_MAX_LENGTH).
MAX_BLOB_BYTES = 1_000_000_000
assert PACK_MEDIA in OPTIONAL_TABLES
PACK_MEDIA_DDL = (
    f"CREATE TABLE IF NOT EXISTS {PACK_MEDIA} (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, data BLOB NOT NULL)"
)


def follow(media_dir: Path, stored: str, *, outside: bool = True) -> StoredPath:
    """``app.media.follow_stored`` (imported when a path is first followed: Pillow loads with it)."""
    from ..media import follow_stored

    return follow_stored(media_dir, stored, outside=outside)


def blob_names(conn: sqlite3.Connection) -> dict[str, str]:
    """The media inside a project file: name → sha256 (empty when it has no ``pack_media``)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (PACK_MEDIA,)).fetchone()
    if found is None:
        return {}
    try:
        return {str(n): str(h) for n, h in conn.execute(f"SELECT name, sha256 FROM {PACK_MEDIA}")}
    except sqlite3.Error:  # edited by hand so that it cannot be read: no media inside
        return {}


def read_blob(conn: sqlite3.Connection, name: str) -> bytes:
    """The bytes of the media file ``name`` inside a project file, checked against its sha256
    (``OSError`` when they do not match: the file was damaged or edited)."""
    try:
        row = conn.execute(f"SELECT sha256, data FROM {PACK_MEDIA} WHERE name = ?", (name,)).fetchone()
    except sqlite3.Error as exc:  # a pack_media table edited by hand
        raise OSError(f"the media inside the project cannot be read ({exc})") from exc
    if row is None:
        raise KeyError(name)
    digest, data = row
    if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != digest:
        raise OSError(f"the media file {name} inside the project does not match its sha256 (damaged or edited)")
    return data


class MediaStoreMixin(StoreBase):
    """Following stored media paths, and media kept inside the project file. Mixed into
    :class:`pairscope.app.store.Store` (through ``ItemsMixin``, whose ``get_item`` uses it)."""

    _blobs: dict[str, str] | None = None
    _unpacked: Path | None = None
    _drop_unpacked: Callable[[], object] | None = None

    def media_blobs(self) -> dict[str, str]:
        """The media files inside the project file: name → sha256 (read once)."""
        if self._blobs is None:
            with self._lock:
                self._blobs = blob_names(self.conn)
        return self._blobs

    def locate_media(self, stored: str) -> StoredPath:
        """Where a stored media path points (the one rule, ``app.media.follow_stored``)."""
        return follow(project_media_dir(self.path), stored)

    def media_ref(self, kind: MediaKind, ref: str, stored: str | None, problem: str | None) -> MediaRef:
        """A media row as readers get it: ``path`` the file to read (a blob unpacked first),
        ``None`` with the reason when it is missing or may not be followed."""
        if stored is None:
            return MediaRef(kind, ref, None, problem)
        found = self.locate_media(stored)
        if found.problem is not None:
            return MediaRef(kind, ref, None, f"{kind} path {found.problem}; not shown")
        if found.name is not None and found.name in self.media_blobs():
            try:
                return MediaRef(kind, ref, str(self._unpack(found.name)), problem)
            except (OSError, KeyError) as exc:
                return MediaRef(kind, ref, None, f"{kind} {found.name} inside the project: {exc}")
        return MediaRef(kind, ref, str(found.file), problem)

    def media_missing_now(self, stored: str | None) -> str | None:
        """Why the media row with path ``stored`` has no file now (``None``: it has one)."""
        if stored is None:
            return "missing"
        found = self.locate_media(stored)
        if found.problem is not None:
            return found.problem
        if found.name is not None and found.name in self.media_blobs():
            return None
        assert found.file is not None
        return None if found.file.is_file() else f"file not found: {found.file} (it was there when stored)"

    def _unpack(self, name: str) -> Path:
        if self._unpacked is None:
            folder = Path(tempfile.mkdtemp(prefix="pairscope-pack-media-"))
            self._drop_unpacked = weakref.finalize(self, shutil.rmtree, str(folder), True)
            self._unpacked = folder
        target = self._unpacked / name
        if not target.is_file():
            with self._lock:
                data = read_blob(self.conn, name)
            copy_file(data, target)
        return target

    def add_media_blob(self, data: bytes, suffix: str) -> tuple[str, bool]:
        """Keep ``data`` inside the project file (joins the caller's transaction); its name
        (``ab/<sha256><suffix>``) and whether this call stored it."""
        if len(data) > MAX_BLOB_BYTES:
            raise ValueError(
                f"a media file of {len(data):,} bytes is more than a pack holds ({MAX_BLOB_BYTES:,} bytes per file)"
            )
        digest = hashlib.sha256(data).hexdigest()
        name = content_name(digest, suffix, fanout=True)
        with self.transaction() as conn:
            conn.execute(PACK_MEDIA_DDL)
            cursor = conn.execute(
                f"INSERT OR IGNORE INTO {PACK_MEDIA} (name, sha256, bytes, data) VALUES (?, ?, ?, ?)",
                (name, digest, len(data), data),
            )
        self._blobs = None
        return name, cursor.rowcount == 1

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._drop_unpacked is not None:
                self._drop_unpacked()


__all__ = ["MAX_BLOB_BYTES", "PACK_MEDIA", "MediaStoreMixin", "blob_names", "follow", "read_blob"]
