"""Opening a project, the one way: every entry point (the window's launch and File menu, each
command of the command line, the research API) calls :func:`open_project`, and what opening
does beyond :class:`~pairscope.app.store.Store` happens there only.

:class:`NewProject` is the one way a project file whose first write failed (a full disk, a
read-only folder, a bad dataset) is removed again, with its side files and media folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from types import TracebackType

from .store import Store, project_media_dir
from .store.connection import SIDE_SUFFIXES


def open_project(
    path: str | Path, *, create: bool = False, readonly: bool = False, fallback_readonly: bool = False
) -> Store:
    """Open the project at ``path``; ``create``: make it (and its folder) when there is none.

    ``readonly`` reads it without ever writing it; ``fallback_readonly`` opens a project that
    cannot be written read-only (``store.readonly``; ``store.note`` says why). A project opened
    for writing whose item verdicts predate the judge layer's vote (schema 4) or an older vote
    rule (``records.ITEM_VERDICT_RULE``) has them decided again first. Raises what the store
    raises: ``FileNotFoundError``, ``SchemaError`` and its kinds (``ReadOnlyError``,
    ``DiskFullError``, ``StoreBusy`` ...).
    """
    store = Store(path, create=create, readonly=readonly, fallback_readonly=fallback_readonly)
    try:
        if not store.readonly and store.item_verdicts_stale():
            from .judge.results import ensure_item_verdicts  # older projects only

            ensure_item_verdicts(store)
    except BaseException:
        store.close()
        raise
    return store


class NewProject:
    """A project file a call is about to create. :meth:`discard` (or leaving the ``with`` block
    with an exception) removes what the call made: the file, its ``-wal``/``-shm``/``-journal``
    files and, with ``media``, its media folder — never what was there before the call.
    ``replace``: an existing project at ``path`` is removed first (``pack --force``)."""

    def __init__(self, path: str | Path, *, media: bool = True, replace: bool = False) -> None:
        self.path = Path(path)
        if replace and os.path.lexists(self.path):
            _remove_project_file(self.path)
        self.new = not os.path.lexists(self.path)
        self.new_media = media and not os.path.lexists(project_media_dir(self.path))

    def discard(self) -> None:
        """Remove the project again if this call created it (never raises)."""
        if self.new:
            _remove_project_file(self.path)
            if self.new_media:
                shutil.rmtree(project_media_dir(self.path), ignore_errors=True)

    def __enter__(self) -> NewProject:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None:
            self.discard()


def _remove_project_file(path: Path) -> None:
    for victim in (path, *(Path(f"{path}{suffix}") for suffix in SIDE_SUFFIXES)):
        with contextlib.suppress(OSError):
            victim.unlink()


__all__ = ["NewProject", "open_project"]
