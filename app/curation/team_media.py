"""Media of packs and merges: where they go (the receiving project's media folder, journaled;
or inside a pack file) and how an input's stored paths are followed (the one rule,
``app.media.follow_stored``: inside the input's own media store)."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import uuid as uuidlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from ..durable import TMP_NAME, Made, fsync_dir, remove_made, store_content
from ..formats.media_refs import check_file, sniff_media
from ..media import follow_stored
from ..store import Store, project_media_dir
from ..store.merge import ProjectSource
from .teamwork_reports import InputReport

#: A media copy in progress, as earlier versions named it (``durable.TMP_NAME`` now).
_OLD_TMP_NAME = re.compile(r"\.[0-9a-f]{64}[^/]*\.[0-9a-f]{32}\.tmp")


def resolve_media_path(project: Store | str | Path, path: str | Path | None) -> Path | None:
    """Where a stored media ``path`` of ``project`` (a :class:`Store` or a project file path) is
    on disk, by the one rule (``app.media.follow_stored``): an absolute path as it is, a
    relative one in the project's media folder. ``None`` for missing media (``path`` None) or a
    path the rule refuses (it leaves the media folder)."""
    if path is None:
        return None
    project_file = Path(project.path if isinstance(project, Store) else project)
    return follow_stored(project_media_dir(project_file), str(path)).file


class MediaWriter(Made):
    """What one pack or merge makes: the folders of the output and the media files it copies
    into the output's media folder (``durable.store_content``, content-addressed). Each folder
    and file inside the media folder is journaled before it is made (a killed run's are found
    again), all is fsynced before the commit (:meth:`sync`) and removed again by :meth:`undo`."""

    def __init__(self, project: Path):
        super().__init__()
        self.project = project
        self.folder = project.absolute().parent
        self.media_dir = self.folder / (project.stem + "_media")
        self._journal: IO[str] | None = None
        self._journal_path: Path | None = None

    def put(self, source: Path | bytes, suffix: str) -> tuple[str, bool]:
        """The stored path (relative to the project's folder) of ``source``'s copy, and
        whether this call wrote it (a file with its content may be there already)."""
        target, _digest, written = store_content(source, self.media_dir, suffix, fanout=True, made=self)
        return target.relative_to(self.folder).as_posix(), written

    def note(self, kind: str, path: Path) -> None:
        super().note(kind, path)
        if kind != "t" and (path == self.media_dir or self.media_dir in path.parents):  # temporary files: by name
            self._journal_line("dir" if kind == "d" else "file", path)

    def _journal_line(self, kind: str, path: Path) -> None:
        if self._journal is None:
            self._journal_path = self.folder / f".{self.media_dir.name}.{uuidlib.uuid4().hex}.journal"
            self._journal = open(self._journal_path, "x", encoding="utf-8")  # noqa: SIM115 (closed by done/undo)
            fsync_dir(self.folder)
        self._journal.write(f"{kind} {path.relative_to(self.folder).as_posix()}\n")
        self._journal.flush()
        os.fsync(self._journal.fileno())

    def done(self) -> None:
        """After the commit: the journal is no longer needed."""
        self._close_journal()

    def undo(self) -> None:
        """Remove every file this call made, its journal, then its folders (call it after the
        output project file is gone: a folder goes only when empty)."""
        remove_made([entry for entry in self.made if entry[0] != "d"])
        self._close_journal()
        remove_made([entry for entry in self.made if entry[0] == "d"])

    def _close_journal(self) -> None:
        if self._journal is not None:
            with contextlib.suppress(OSError):
                self._journal.close()
        if self._journal_path is not None:
            with contextlib.suppress(OSError):
                self._journal_path.unlink()
        self._journal = self._journal_path = None

    def sweep(self, stored_paths: Iterable[str]) -> int:
        """Remove what killed earlier runs left: temporary copies, and files their journals
        list that no media row of the project names (``stored_paths``). Run it holding the
        project's write lock. Returns how many files it removed."""
        named = {os.path.normpath(f) for p in stored_paths if (f := resolve_media_path(self.project, p)) is not None}
        removed = 0
        if self.media_dir.is_dir():
            for tmp in self.media_dir.glob("*/.*"):
                if (TMP_NAME.fullmatch(tmp.name) or _OLD_TMP_NAME.fullmatch(tmp.name)) and tmp.is_file():
                    tmp.unlink()
                    removed += 1
        for journal in sorted(self.folder.glob(f".{glob.escape(self.media_dir.name)}.*.journal")):
            folders = []
            for line in journal.read_text(encoding="utf-8", errors="replace").splitlines():
                kind, _, relative = line.partition(" ")
                parts = Path(relative).parts
                if not parts or parts[0] != self.media_dir.name or ".." in parts:
                    continue  # only ever inside the media folder
                path = self.folder / relative
                if kind == "dir":
                    folders.append(path)
                elif kind == "file" and path.is_file() and os.path.normpath(path) not in named:
                    path.unlink()
                    removed += 1
            for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only when empty
            journal.unlink()
        return removed


class PackBlobs:
    """Where a pack's media go: inside the pack file (``Store.add_media_blob``), named as
    PairScope names every copied file (``<stem>_media/ab/<sha256>.<ext>``)."""

    def __init__(self, pack: Store):
        self.pack = pack
        self.prefix = project_media_dir(pack.path).name

    def put(self, source: Path | bytes, suffix: str) -> tuple[str, bool]:
        data = source if isinstance(source, bytes) else source.read_bytes()
        name, written = self.pack.add_media_blob(data, suffix)
        return f"{self.prefix}/{name}", written


def _bytes_problem(data: bytes, kind: str) -> str | None:
    """Why ``data`` is not a ``kind`` file, by its header (as ``check_file`` says of a file)."""
    found = sniff_media(data[:16])
    if found is None:
        return "is not an image or a video file (by its header)"
    return None if found[0] == kind else f"is a {found[0]} file, not a{'n' if kind == 'image' else ''} {kind}"


class MediaFiles:
    """Copies the media of one source into the receiving project (``target``: its media folder
    or, for a pack, the pack file). The source's paths are followed by the one rule
    (``follow_stored``): inside its own media store only unless ``outside`` (the project being
    packed: its imports' files); a blob inside it first, else its media folder."""

    def __init__(self, target: MediaWriter | PackBlobs, src: ProjectSource, report: InputReport, *, outside: bool):
        self.target, self.src, self.report, self.outside = target, src, report, outside
        self.media_dir = project_media_dir(src.path)
        self._cache: dict[str, tuple[str | None, str | None]] = {}

    def __call__(self, path: str | None, problem: str | None, kind: str) -> tuple[str | None, str | None]:
        """Copy one media file; returns the stored path (relative to dst's folder) and the
        problem, if any."""
        if path is None:
            return None, problem
        if path not in self._cache:
            self._cache[path] = self._copy(path, kind)
        stored, why = self._cache[path]
        return (stored, problem) if stored is not None else (None, why)

    def _copy(self, path: str, kind: str) -> tuple[str | None, str | None]:
        src = self.src.path
        found = follow_stored(self.media_dir, path, outside=self.outside)
        if found.problem is not None:
            hint = " (an import's file: pass --allow-outside-media to copy it)" if os.path.isabs(path) else ""
            return self._refused(f"{kind} path {found.problem} of {src}; not copied{hint}")
        if found.name is not None and found.name in self.src.blobs:
            try:
                data = self.src.media_blob(found.name)
            except (OSError, KeyError) as exc:
                return self._refused(f"{kind} {found.name} inside {src}: {exc}; not copied")
            why = _bytes_problem(data, kind)
            if why is not None:
                return self._refused(f"{kind} {found.name} inside {src} {why}; not copied")
            stored, written = self.target.put(data, Path(found.name).suffix.lower())
            self.report.media_files += written
            return stored, None
        assert found.file is not None
        why = check_file(found.file, kind)
        if why == "not found":
            return None, f"media file missing when copied from {src}: {found.file}"
        if why is not None:  # only image and video files travel between projects
            return self._refused(f"{kind} {found.file} {why}; not copied")
        stored, written = self.target.put(found.file, found.file.suffix.lower())
        self.report.media_files += written
        return stored, None

    def _refused(self, why: str) -> tuple[None, str]:
        self.report.media_refused.append(why)
        return None, why


__all__ = ["MediaFiles", "MediaWriter", "PackBlobs", "resolve_media_path"]
