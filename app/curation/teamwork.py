"""Offline team work: pack a project for one annotator, merge annotators' projects back.

``pack_project`` writes a self-contained project for one annotator: the chosen items (same
``ext_id`` and ``content_hash``), their media copied into the pack's own media folder, the
annotator's label history and blind display orders for those items, and ``meta`` rows that
say where it came from. ``merge_projects`` unions label histories of several projects into
one, matching items by identity (dataset id + content, ``items.identity``), labels by uuid,
annotators by name.

Media paths: a file PairScope copies into a project's media folder is stored *relative to
the project's folder* (``<stem>_media/ab/ab12….png``, POSIX separators), so a project can be
moved or mailed with its media folder. Read such paths with :func:`resolve_media_path`.

A **conflict** is an item whose identity is in the output with a different
``content_hash``: the output keeps its version, the input's labels are merged onto it.
An input is **unrelated** when the output already holds items, the input shares no
item identity with them, and no project id (``meta`` ``project_id`` or
``pack_source_project_id``) of the input is one of the output's.

**Checked first, written whole or not at all.** Every row a pack or merge would copy is
checked before anything is written (``store.merge_checks.check_source``); one bad row refuses the
whole input with :class:`InvalidRowsError` listing what is wrong. Media files are copied
through a temporary file (:mod:`pairscope.app.durable`), fsynced with their folders before the
commit that names them, and listed before they are renamed into place in a journal beside
the media folder (``.<stem>_media.<id>.journal``). A
failure (a full disk included) removes everything the call wrote and raises
:class:`TeamworkError` with a plain message; a run killed outright leaves its journal, and
the next merge or pack into the same place removes what it lists that no item names, and any
temporary copies, before it writes (holding the output's write lock, so never a live run's).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import uuid as uuidlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import IO, overload

from ..durable import TMP_NAME, Made, file_sha256, fsync_dir, is_disk_full, remove_made, store_content
from ..formats.media_refs import check_file
from ..judge.results import ensure_item_verdicts
from ..project import NewProject, open_project
from ..store import SchemaError, Store
from ..store.connection import utc_now
from ..store.merge import CopyCounts, ForeignProjectError, ProjectCopier, ProjectSource
from ..store.merge_checks import RowProblem, check_source
from .teamwork_reports import Conflict, InputReport, MergeReport, PackResult

MERGE_FORMAT = "pairscope-merge"
#: Problem lines an :class:`InvalidRowsError` message shows (all are in ``problems``).
MAX_PROBLEMS = 20
#: A media copy in progress, as earlier versions named it (``durable.TMP_NAME`` now).
_OLD_TMP_NAME = re.compile(r"\.[0-9a-f]{64}[^/]*\.[0-9a-f]{32}\.tmp")


class TeamworkError(ValueError):
    """Packing or merging refused; nothing was written. The message names the file."""


class ProjectFileError(TeamworkError):
    """An input is not a usable PairScope project (not SQLite, corrupt, other schema)."""


class UnrelatedProjectsError(TeamworkError):
    """An input shares nothing with the output (see the module's definition)."""


class InvalidRowsError(TeamworkError):
    """Rows of an input break the project's rules; the input is refused whole.

    ``problems`` holds every ``file: table row N (key): problem`` line, ``refused`` the
    number of bad rows per file; the message shows the first :data:`MAX_PROBLEMS`."""

    def __init__(self, problems: Sequence[RowProblem], action: str):
        self.problems = [str(p) for p in problems]
        self.refused = dict(Counter(p.file for p in problems))
        files = ", ".join(f"{n} in {f}" for f, n in self.refused.items())
        shown = self.problems[:MAX_PROBLEMS]
        more = [f"… and {len(self.problems) - len(shown)} more"] if len(self.problems) > len(shown) else []
        super().__init__(
            "\n".join([f"nothing was {action}: rows that break the project's rules ({files}):", *shown, *more])
        )


@overload
def resolve_media_path(project: Store | str | Path, path: str | Path) -> Path: ...
@overload
def resolve_media_path(project: Store | str | Path, path: None) -> None: ...
@overload
def resolve_media_path(project: Store | str | Path, path: str | Path | None) -> Path | None: ...
def resolve_media_path(project: Store | str | Path, path: str | Path | None) -> Path | None:
    """Where a stored media ``path`` is on disk: absolute paths as they are, relative ones
    against the folder of ``project`` (a :class:`Store` or a project file path).
    ``None`` (missing media) stays ``None``."""
    if path is None:
        return None
    p = Path(path)
    if p.is_absolute():
        return p
    project_file = Path(project.path if isinstance(project, Store) else project)
    return project_file.absolute().parent / p


def project_id(store: Store) -> str:
    """The project's id (``meta`` ``project_id``), created on first use."""
    return store.meta("project_id") or store.ensure_meta("project_id", str(uuidlib.uuid4()))


def _same_file(a: Path, b: Path) -> bool:
    return a.exists() and b.exists() and os.path.samefile(a, b)


def _open_source(path: Path, *, check_integrity: bool = True) -> ProjectSource:
    try:
        return ProjectSource(path, check_integrity=check_integrity)
    except ForeignProjectError as exc:
        raise ProjectFileError(str(exc)) from exc


class _MediaWriter(Made):
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

    def copy(self, source: Path) -> tuple[str, bool]:
        """The stored path (relative to the project's folder) of ``source``'s copy, and
        whether this call wrote it (a file with its content may be there already)."""
        target, _digest, written = store_content(source, self.media_dir, source.suffix.lower(), fanout=True, made=self)
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
        named = {os.path.normpath(resolve_media_path(self.project, p)) for p in stored_paths}
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


class _MediaFiles:
    """Copies media files of one source into dst's media folder, through a :class:`_MediaWriter`."""

    def __init__(self, writer: _MediaWriter, src_path: Path, report: InputReport):
        self.writer, self.src_path, self.report = writer, src_path, report
        self._cache: dict[Path, tuple[str | None, str | None]] = {}

    def __call__(self, path: str | None, problem: str | None, kind: str) -> tuple[str | None, str | None]:
        """Copy one media file; returns the stored path (relative to dst's folder) and the
        problem, if any."""
        if path is None:
            return None, problem
        source = resolve_media_path(self.src_path, path)
        if source not in self._cache:
            why = check_file(source, kind)
            if why is None:
                copy, written = self.writer.copy(source)
                self.report.media_files += written
                self._cache[source] = (copy, None)
            elif why == "not found":
                self._cache[source] = (None, f"media file missing when copied from {self.src_path}: {source}")
            else:  # only image and video files travel between projects
                self._cache[source] = (None, f"{kind} {source} {why}; not copied")
        stored, why = self._cache[source]
        return (stored, problem) if stored is not None else (None, why)


def _refuse(problems: Sequence[RowProblem], action: str) -> None:
    if problems:
        raise InvalidRowsError(problems, action)


def _why(exc: BaseException) -> str:
    """A failed write, in words."""
    if is_disk_full(exc):
        where = f" writing {exc.filename}" if isinstance(exc, OSError) and exc.filename else ""
        return f"the disk is full (no space left on device{where})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f": {exc.filename}" if exc.filename else "")
    return str(exc)


@contextlib.contextmanager
def _writing(action: str) -> Iterator[None]:
    """Turn a failed write (a full disk, a read-only folder, SQLite refusing) into a
    :class:`TeamworkError`; the caller has removed what it wrote by the time it is seen."""
    try:
        yield
    except (OSError, SchemaError) as exc:
        raise TeamworkError(f"{action} failed: {_why(exc)}; nothing was written") from exc


def _add_counts(report: InputReport, counts: CopyCounts) -> None:
    for f in fields(CopyCounts):
        setattr(report, f.name, getattr(report, f.name) + getattr(counts, f.name))


def pack_project(
    store: Store,
    out: str | Path,
    annotator: str,
    *,
    collection: str | None = None,
    item_ids: Iterable[int] | None = None,
    force: bool = False,
) -> PackResult:
    """Write a self-contained project for ``annotator`` to ``out``.

    It holds the items (all, a collection's, or ``item_ids``) with the same ``ext_id`` and
    content (so ``content_hash`` matches), their media files copied into ``out``'s media
    folder (paths relative to ``out``'s folder), the annotator's label history and display
    orders for those items, the collections those items belong to (restricted to them),
    and ``meta`` rows ``project_id``, ``pack_source_project_id``, ``pack_source_path``,
    ``pack_annotator``, ``pack_collection`` and ``packed_at``. Other annotators' labels
    and judge runs are not packed (the pack is for blind labeling). The source project
    gets a ``meta`` ``project_id`` if it has none (the only write to it).

    Refuses an existing ``out`` unless ``force``; on failure nothing is left at ``out``.
    """
    name = annotator.strip()
    if not name:
        raise TeamworkError("an annotator needs a non-empty name")
    out = Path(out)
    if _same_file(out, store.path):
        raise TeamworkError(f"{out} is the project being packed; choose another output file")
    if out.exists() and not force:
        raise TeamworkError(f"{out} already exists; choose another path or replace it (pairscope pack --force)")
    if collection is not None and item_ids is not None:
        raise TeamworkError("pack either a collection or a list of items, not both")
    selected: set[int] | None = None
    if collection is not None:
        if collection not in store.collections():
            raise TeamworkError(f"no collection named {collection!r} in {store.path}")
        selected = set(store.collection_item_ids(collection))
    elif item_ids is not None:
        selected = set(item_ids)
        if unknown := sorted(selected - store.item_ids()):
            raise TeamworkError(f"no items with ids {unknown[:10]} in {store.path}")
    if (selected is not None and not selected) or store.item_count() == 0:
        raise TeamworkError(f"nothing to pack: the selection in {store.path} holds no items")
    source_id = project_id(store)
    src = _open_source(store.path, check_integrity=False)
    media = _MediaWriter(out)
    new, created, ok = None, None, False
    try:
        _refuse(check_source(src, None, selected=selected, annotator=name, judge=False), "packed")
        with _writing(f"packing {store.path} into {out}"):
            created = NewProject(out, media=False, replace=True)  # media: _MediaWriter's, swept below
            media.mkdir(out.parent)
            new = open_project(out, create=True)
            result = PackResult(out, name, str(uuidlib.uuid4()), source_id, collection=collection)
            report = InputReport(path=str(store.path))
            with new.transaction():
                result.leftovers_removed = media.sweep(new.media_paths())
                copier = new.copier(src, _MediaFiles(media, src.path, report))
                _pack_rows(new, copier, selected, result, store.path)
                _add_counts(report, copier.counts)
                media.sync()  # the files on disk before the commit that names them
            media.done()
        result.items, result.labels, result.display_orders = (
            report.items_added,
            report.labels_added,
            report.display_orders_added,
        )
        result.media_files, result.missing_media = report.media_files, report.missing_media
        result.columns_not_copied = report.columns_not_copied
        ok = True
        return result
    finally:
        src.close()
        if new is not None:
            new.close()
        if not ok and created is not None:
            created.discard()
            media.undo()


def _pack_rows(new: Store, copier: ProjectCopier, selected: set[int] | None, result: PackResult, source: Path) -> None:
    """The rows of a pack: its items, the annotator's labels and display orders, the
    collections of its items, and the ``meta`` rows that say where it came from."""
    name = result.annotator
    copier.items(selected)
    copier.labels(name)
    copier.display_orders(name)
    copier.annotator(name)  # a new annotator has no rows yet
    copier.collections(only_with_items=True)
    new.put_meta(
        {
            "project_id": result.project_id,
            "pack_source_project_id": result.source_project_id,
            "pack_source_path": str(source.absolute()),
            "pack_annotator": name,
            "pack_collection": result.collection or "",
            "packed_at": utc_now(),
        }
    )


def _check_related(src: ProjectSource, known_ext: set[str], lineage: set[str], out: Path) -> None:
    if not known_ext or known_ext & src.dataset_ids or lineage & src.lineage:
        return
    raise UnrelatedProjectsError(
        f"{src.path} looks unrelated to {out}: no item id in common and no common "
        "source project; merge them anyway with pairscope merge --allow-unrelated"
    )


def merge_projects(out: str | Path, inputs: Sequence[str | Path], *, allow_unrelated: bool = False) -> MergeReport:
    """Union the label histories of ``inputs`` into ``out`` (created if missing).

    Items are matched by identity (dataset id + content); one missing from ``out`` is added with its media files
    copied. Labels are matched by uuid (merging again adds nothing), annotators by name,
    display orders per (item, annotator) keep the first seen, judge runs are matched by
    uuid and their verdicts by (run, item, sample), collections by name. ``meta`` and the
    import log of inputs are not merged; each input that changed ``out`` is logged in
    ``imports`` (format ``pairscope-merge``, the input's sha256).

    Every input is opened read-only and checked (SQLite header, ``PRAGMA integrity_check``,
    schema version, PairScope tables) and checked for relatedness before ``out`` is
    touched; then all inputs are merged in one transaction on ``out``. Any failure leaves
    ``out`` as it was (a file this call created is removed, media files it copied too).
    An input that is ``out`` itself, or given twice, is skipped and listed in ``skipped``.
    """
    out = Path(out)
    paths = [Path(p) for p in inputs]
    if not paths:
        raise TeamworkError("nothing to merge: no input projects given")
    report = MergeReport(out, created=not out.exists())
    sources: list[ProjectSource] = []
    created = NewProject(out, media=False)  # media: _MediaWriter's
    media = _MediaWriter(out)
    store, ok = None, False
    try:
        for path in paths:
            if _same_file(path, out) or any(_same_file(path, s.path) for s in sources):
                report.skipped.append(f"{path}: the output or an earlier input")
                continue
            sources.append(_open_source(path))
        if not report.created:
            store = open_project(out)
        known_ext = store.dataset_ids() if store else set()
        lineage = {v for v in (store.meta("project_id"), store.meta("pack_source_project_id")) if v} if store else set()
        for src in sources:
            if not allow_unrelated:
                _check_related(src, known_ext, lineage, out)
            known_ext |= src.dataset_ids
            lineage |= src.lineage
        _refuse([p for src in sources for p in check_source(src, store)], "merged")
        with _writing(f"merging into {out}"):
            if store is None:
                media.mkdir(out.parent)
                store = open_project(out, create=True)
            with store.transaction():  # holds the write lock: no other merge is copying now
                report.leftovers_removed = media.sweep(store.media_paths())
                origin = {key: str(out) for key in store.identities()}  # identity -> where its version came from
                for src in sources:
                    report.inputs.append(_merge_one(store, src, media, report, origin))
                ensure_item_verdicts(store)  # merged samples: their runs' item verdicts are decided again
                media.sync()  # the files on disk before the commit that names them
            media.done()
        ok = True
        return report
    finally:
        for src in sources:
            src.close()
        if store is not None:
            store.close()
        if not ok:
            created.discard()
            media.undo()


def _merge_one(
    store: Store, src: ProjectSource, media: _MediaWriter, report: MergeReport, origin: dict[str, str]
) -> InputReport:
    """Copy one (checked) input into ``store`` inside its transaction; conflicts go to
    ``report``, and ``origin`` (item identity -> the file its version came from) is kept up."""
    part = InputReport(path=str(src.path), project_id=src.meta.get("project_id"))
    copier = store.copier(src, _MediaFiles(media, src.path, part))
    copied = copier.items()
    for c in copied.conflicts:
        report.conflicts.append(Conflict(c.ext_id, str(src.path), origin.get(c.identity, "?"), c.dst_hash, c.src_hash))
    origin.update((key, str(src.path)) for key in copied.new_identities)
    copier.labels()
    copier.display_orders()
    copier.judge_runs()
    copier.collections()
    _add_counts(part, copier.counts)
    part.conflicts += len(copied.conflicts)
    if part.changed:
        options = {k: v for k, v in part.__dict__.items() if k != "path"}
        store.log_merged_input(
            str(src.path.absolute()), MERGE_FORMAT, file_sha256(src.path), copied.new_ids, part.items_matched, options
        )
    return part
