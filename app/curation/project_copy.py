"""A safe copy of a project: ``pairscope copy`` and the window's File → Save a copy….

The project file is copied through SQLite's online backup API (``Store.backup_to``): the copy
holds every committed label even while the window, or another process, writes — ``cp`` of the
file alone misses what still sits in its ``-wal``. The files of its media folder that its rows
name (Parquet images, merged media) are copied into the copy's media folder under the same
names; media inside the file (a pack's) travel with it; absolute paths (an import's files in
the dataset's folder) are kept as they are. Written under temporary names and renamed into
place last: a failure leaves nothing, and an existing copy is replaced only with ``force``.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..durable import Made, copy_file, is_disk_full, place
from ..store import SchemaError, Store, project_media_dir
from ..store.connection import SIDE_SUFFIXES


class CopyError(ValueError):
    """A copy was refused or failed; nothing was written. The message says why."""


@dataclass(frozen=True)
class CopyResult:
    """What :func:`copy_project` wrote."""

    path: Path
    bytes: int
    media_files: int

    def message(self) -> str:
        media = (
            f" and {self.media_files} media files (in {project_media_dir(self.path).name}/)" if self.media_files else ""
        )
        return f"copied to {self.path}: {self.bytes:,} bytes{media}, every committed label included"


def copy_project(store: Store, out: str | Path, *, force: bool = False) -> CopyResult:
    """Copy ``store``'s project to ``out`` as of one moment (see the module)."""
    out = Path(out)
    if out.exists() and os.path.samefile(out, store.path):
        raise CopyError(f"{out} is the project being copied; choose another file")
    if out.is_dir():
        raise CopyError(f"{out} is a folder; name the copy's file (e.g. {out / store.path.name})")
    if out.exists() and not force:
        raise CopyError(f"{out} already exists; choose another path or replace it (pairscope copy --force)")
    if side := [s for s in SIDE_SUFFIXES if Path(f"{out}{s}").exists()]:
        raise CopyError(f"{out} is open in another program ({out.name}{side[0]} is beside it); close it first")
    made = Made()
    tmp: Path | None = None
    try:
        made.mkdir(out.parent)
        tmp = made.tmp(out.parent)
        store.backup_to(tmp)
        files = _copy_media(store, project_media_dir(out), made)
        size = tmp.stat().st_size
        place(tmp, out, made)
        made.sync()
    except (OSError, SchemaError) as exc:
        made.undo()
        if tmp is not None:
            with contextlib.suppress(OSError):
                Path(f"{tmp}-journal").unlink(missing_ok=True)
        why = "the disk is full" if is_disk_full(exc) else str(exc)
        raise CopyError(f"copying {store.path} to {out} failed: {why}; nothing was written") from exc
    return CopyResult(out, size, files)


def _copy_media(store: Store, media_dir: Path, made: Made) -> int:
    """Copy the media-folder files the project names into ``media_dir``; how many."""
    blobs, done = store.media_blobs(), set()
    for stored in store.media_paths():
        found = store.locate_media(stored)
        if found.name is None or found.name in blobs or found.name in done or found.file is None:
            continue  # an import's file (absolute path), one inside the file, or one refused
        done.add(found.name)
        if found.file.is_file():
            copy_file(found.file, media_dir / found.name, made)
        else:
            done.discard(found.name)  # missing here: missing in the copy too
    return len(done)


__all__ = ["CopyError", "CopyResult", "copy_project"]
