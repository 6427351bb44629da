"""Files that survive a crash or a power cut, and what a failure to write one means.

A file is made durable in three steps: written under a temporary name beside its target
(``.pairscope-tmp-<32 hex>``), fsynced and renamed into place (:class:`AtomicWriter`), and its
folder fsynced before anything (a commit, a manifest) names it (:meth:`Made.sync`). A copy
named by its content is :func:`store_content`.

**The error policy, one for every caller:**

* A failure to write, rename or fsync raises its ``OSError``; the caller removes what it made
  (:meth:`Made.undo`) and says why (:func:`is_disk_full`, :func:`is_read_only`).
* One failure is not raised: a folder that cannot be opened (Windows opens no folders; a
  folder one may write but not read) or whose file system has no folder fsync (``EINVAL``,
  ``EBADF``). A rename there is as durable as the platform makes it; failing would not help.
* Removing what a failed write made (:meth:`AtomicWriter.discard`, :meth:`Made.undo`) never
  raises: it must not hide the error that caused it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: ``errno`` values that mean the disk (or the user's quota) is full.
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: ``errno`` values that mean the file or folder cannot be written.
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
TMP_PREFIX = ".pairscope-tmp-"
#: The name of a temporary file :class:`AtomicWriter` writes (a leftover of a killed run).
TMP_NAME = re.compile(re.escape(TMP_PREFIX) + r"[0-9a-f]{32}")
CHUNK = 1 << 20
_NO_FOLDER_SYNC = frozenset({errno.EINVAL, errno.EBADF})


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk or the quota is full (the store's ``DiskFullError`` too)."""
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def is_read_only(exc: BaseException) -> bool:
    """Whether ``exc`` says a file or folder cannot be written (read-only media, permissions)."""
    return isinstance(exc, OSError) and exc.errno in READ_ONLY_ERRNOS


def fsync_dir(folder: Path) -> None:
    """Make the creations, renames and removals in ``folder`` durable (see the policy above)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows, or a folder without read permission: nothing can be synced
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_FOLDER_SYNC:
            raise
    finally:
        os.close(fd)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def tmp_path(folder: Path) -> Path:
    """A fresh temporary file name in ``folder`` (matches :data:`TMP_NAME`)."""
    return folder / f"{TMP_PREFIX}{uuid.uuid4().hex}"


def content_name(digest: str, suffix: str = "", *, fanout: bool = False) -> str:
    """A content-addressed file's name: ``<sha256><suffix>``, under ``<sha256[:2]>/`` with ``fanout``."""
    return f"{digest[:2]}/{digest}{suffix}" if fanout else f"{digest}{suffix}"


def remove_made(made: Sequence[tuple[str, Path]]) -> None:
    """Remove ``("d" | "t" | "f", path)`` entries newest first: a folder only when empty, a
    file only when it is a regular file (never what a link points to). Never raises."""
    for kind, path in reversed(made):
        with contextlib.suppress(OSError):
            if kind == "d":
                path.rmdir()
            elif not path.is_symlink() and path.is_file():
                path.unlink()


class Made:
    """What one write of several files makes (folders, temporary files, new files) in order:
    :meth:`sync` makes it durable before anything names it, :meth:`undo` removes exactly it.
    A subclass that journals each entry in :meth:`note` (before it is made) lets the next run
    find what a killed one left."""

    def __init__(self) -> None:
        self.made: list[tuple[str, Path]] = []  # ("d" | "t" | "f", path), oldest first
        self.filled: set[Path] = set()  # folders a file was renamed into

    def note(self, kind: str, path: Path) -> None:
        self.made.append((kind, path))

    def mkdir(self, folder: Path) -> None:
        """Create ``folder`` and the folders above it that are missing, each noted first."""
        missing = []
        for p in (folder, *folder.parents):
            if p.exists():
                break
            missing.append(p)
        for p in reversed(missing):
            self.note("d", p)
            p.mkdir()

    def tmp(self, folder: Path) -> Path:
        path = tmp_path(folder)
        self.note("t", path)
        return path

    def placing(self, target: Path) -> None:
        """``target`` is about to be renamed into place: a new file is noted as made."""
        if not target.exists():
            self.note("f", target)
        self.filled.add(target.parent)

    def sync(self) -> None:
        """fsync every folder a file was renamed into and the parent of every folder made,
        deepest first."""
        folders = self.filled | {path.parent for kind, path in self.made if kind == "d"}
        for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
            fsync_dir(folder)

    def undo(self) -> None:
        """Remove everything made, newest first; never raises."""
        remove_made(self.made)


class AtomicWriter:
    """A file written under a temporary name beside ``target``, hashed as it goes:
    :meth:`commit` fsyncs and renames it into place, :meth:`discard` removes it (never
    raises). With ``made``, the temporary file and a new target are noted there."""

    def __init__(self, target: Path, made: Made | None = None):
        self.target = target
        self.made = made
        self.tmp = made.tmp(target.parent) if made is not None else tmp_path(target.parent)
        self.fh = open(self.tmp, "xb")  # noqa: SIM115 (closed by commit or discard)
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.digest.update(data)
        self.size += len(data)

    def commit(self) -> dict[str, Any]:
        """fsync, rename into place; the sha256 and size of what was written."""
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        if self.made is not None:
            self.made.placing(self.target)
        os.replace(self.tmp, self.target)
        return {"sha256": self.digest.hexdigest(), "bytes": self.size}

    def discard(self) -> None:
        with contextlib.suppress(OSError):  # closing flushes: on a full disk that fails again
            self.fh.close()
        with contextlib.suppress(OSError):
            self.tmp.unlink(missing_ok=True)


def place(tmp: Path, target: Path, made: Made) -> None:
    """fsync a finished temporary file (from :meth:`Made.tmp`, written by another writer: SQLite's
    backup) and rename it into place at ``target``; its folder's fsync is ``made.sync()``'s."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    made.placing(target)
    os.replace(tmp, target)


def copy_file(source: Path | bytes, target: Path, made: Made | None = None, *, expect: str | None = None) -> str:
    """Write ``source`` (a file, or bytes) durably at ``target`` (its folders made, noted in
    ``made``); returns the sha256 written. ``expect``: the sha256 it must have (a file that
    changed while it was copied raises ``OSError`` and leaves nothing)."""
    made = made if made is not None else Made()
    made.mkdir(target.parent)
    writer = AtomicWriter(target, made)
    try:
        if isinstance(source, bytes):
            writer.write(source)
        else:
            with open(source, "rb") as fh:
                for block in iter(lambda: fh.read(CHUNK), b""):
                    writer.write(block)
        digest = writer.digest.hexdigest()
        if expect is not None and digest != expect:
            raise OSError(f"the file copied to {target} changed while it was copied")
        writer.commit()
    except BaseException:
        writer.discard()
        raise
    return digest


def store_content(
    source: Path | bytes,
    folder: Path,
    suffix: str = "",
    *,
    fanout: bool = False,
    made: Made | None = None,
    digest: str | None = None,
) -> tuple[Path, str, bool]:
    """Copy ``source`` (a file, or bytes) into ``folder`` under its sha256 (:func:`content_name`),
    once: a file of that name already there is kept. Returns the file, its sha256 and whether
    this call wrote it. ``digest``: the sha256 when the caller has it already. The folders'
    fsync is ``made.sync()``'s, before anything names the file."""
    if digest is None:
        digest = hashlib.sha256(source).hexdigest() if isinstance(source, bytes) else file_sha256(source)
    target = folder / content_name(digest, suffix, fanout=fanout)
    if target.exists():
        return target, digest, False
    copy_file(source, target, made, expect=digest)
    return target, digest, True


__all__ = [
    "FULL_ERRNOS",
    "READ_ONLY_ERRNOS",
    "TMP_NAME",
    "AtomicWriter",
    "Made",
    "content_name",
    "copy_file",
    "file_sha256",
    "fsync_dir",
    "is_disk_full",
    "is_read_only",
    "place",
    "remove_made",
    "store_content",
    "tmp_path",
]
