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
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid as uuidlib
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import overload

from ..formats.media_refs import check_file
from ..importer import file_sha256
from ..judge.results import ensure_item_verdicts
from ..store import Store
from ..store.connection import discard_new_project, utc_now
from ..store.merge import CopyCounts, ForeignProjectError, ProjectCopier, ProjectSource
from .teamwork_reports import Conflict, InputReport, MergeReport, PackResult

MERGE_FORMAT = "pairscope-merge"


class TeamworkError(ValueError):
    """Packing or merging refused; nothing was written. The message names the file."""


class ProjectFileError(TeamworkError):
    """An input is not a usable PairScope project (not SQLite, corrupt, other schema)."""


class UnrelatedProjectsError(TeamworkError):
    """An input shares nothing with the output (see the module's definition)."""


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


def _remove_files(paths: Iterable[Path]) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink()


def _open_source(path: Path, *, check_integrity: bool = True) -> ProjectSource:
    try:
        return ProjectSource(path, check_integrity=check_integrity)
    except ForeignProjectError as exc:
        raise ProjectFileError(str(exc)) from exc


class _MediaFiles:
    """Copies media files of one source into dst's media folder (content-addressed)."""

    def __init__(self, dst: Store, src_path: Path, report: InputReport, written: list[Path]):
        self.dst, self.src_path, self.report, self.written = dst, src_path, report, written
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
                self._cache[source] = (self._copy_file(source), None)
            elif why == "not found":
                self._cache[source] = (None, f"media file missing when copied from {self.src_path}: {source}")
            else:  # only image and video files travel between projects
                self._cache[source] = (None, f"{kind} {source} {why}; not copied")
        stored, why = self._cache[source]
        return (stored, problem) if stored is not None else (None, why)

    def _copy_file(self, source: Path) -> str:
        digest = file_sha256(source)
        media_dir = self.dst.media_dir
        name = f"{digest}{source.suffix.lower()}"
        target = media_dir / digest[:2] / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{name}.{uuidlib.uuid4().hex}.tmp")
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
            self.written.append(target)
            self.report.media_files += 1
        return f"{media_dir.name}/{digest[:2]}/{name}"


def _copier(dst: Store, src: ProjectSource, report: InputReport, written: list[Path]) -> ProjectCopier:
    return dst.copier(src, _MediaFiles(dst, src.path, report, written))


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
        raise TeamworkError(f"{out} already exists; use force=True (--force) to replace it")
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
    written: list[Path] = []
    new, ok = None, False
    try:
        if out.exists():
            discard_new_project(out, media=False)
        new = Store.create(out)
        result = PackResult(out, name, str(uuidlib.uuid4()), source_id, collection=collection)
        report = InputReport(str(store.path))
        with new.transaction():
            copier = _copier(new, src, report, written)
            copier.items(selected)
            copier.labels(name)
            copier.display_orders(name)
            copier.annotator(name)  # a new annotator has no rows yet
            copier.collections(only_with_items=True)
            new.put_meta(
                {
                    "project_id": result.project_id,
                    "pack_source_project_id": source_id,
                    "pack_source_path": str(store.path.absolute()),
                    "pack_annotator": name,
                    "pack_collection": collection or "",
                    "packed_at": utc_now(),
                }
            )
            _add_counts(report, copier.counts)
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
        if not ok:
            discard_new_project(out, media=False)
            _remove_files(written)


def _check_related(src: ProjectSource, known_ext: set[str], lineage: set[str], out: Path) -> None:
    if not known_ext or known_ext & src.dataset_ids or lineage & src.lineage:
        return
    raise UnrelatedProjectsError(
        f"{src.path} looks unrelated to {out}: no item id in common and no common "
        "source project; pass allow_unrelated=True (--allow-unrelated) to merge anyway"
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
    written: list[Path] = []
    store, ok = None, False
    try:
        for path in paths:
            if _same_file(path, out) or any(_same_file(path, s.path) for s in sources):
                report.skipped.append(f"{path}: the output or an earlier input")
                continue
            sources.append(_open_source(path))
        if not report.created:
            store = Store.open(out)
        known_ext = store.dataset_ids() if store else set()
        lineage = {v for v in (store.meta("project_id"), store.meta("pack_source_project_id")) if v} if store else set()
        for src in sources:
            if not allow_unrelated:
                _check_related(src, known_ext, lineage, out)
            known_ext |= src.dataset_ids
            lineage |= src.lineage
        if store is None:
            store = Store.create(out)
        origin = {key: str(out) for key in store.identities()}  # identity -> where the output's version came from
        with store.transaction():
            for src in sources:
                part = InputReport(str(src.path), src.meta.get("project_id"))
                copier = _copier(store, src, part, written)
                copied = copier.items()
                for c in copied.conflicts:
                    report.conflicts.append(
                        Conflict(c.ext_id, str(src.path), origin.get(c.identity, "?"), c.dst_hash, c.src_hash)
                    )
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
                        str(src.path.absolute()),
                        MERGE_FORMAT,
                        file_sha256(src.path),
                        copied.new_ids,
                        part.items_matched,
                        options,
                    )
                report.inputs.append(part)
            ensure_item_verdicts(store)  # merged samples: their runs' item verdicts are decided again
        ok = True
        return report
    finally:
        for src in sources:
            src.close()
        if store is not None:
            store.close()
        if not ok:
            _remove_files(written)
            if report.created:
                discard_new_project(out, media=False)
