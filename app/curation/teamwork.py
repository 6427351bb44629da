"""Offline team work: pack a project for one annotator, merge annotators' projects back.

``pack_project`` writes a self-contained project for one annotator, **one file**: the chosen
items (same ``ext_id`` and ``content_hash``), their media *inside the file* (``pack_media``,
``store.media_store``), the annotator's label history and blind display orders for those items,
and ``meta`` rows that say where it came from and whose it is; the packed project records that
it issued it (``meta`` ``pack_issued:<pack id>``). ``merge_projects`` unions label histories of
several projects into one, matching items by identity (dataset id + content,
``items.identity``), labels by uuid, annotators by name.

Media paths: a copied file is stored as a name in the project's own media store
(``<stem>_media/ab/ab12….png``, POSIX separators): a blob inside the file, or a file in its
media folder. Every stored path is followed by one rule (``app.media.follow_stored``, through
:func:`resolve_media_path` here): an input's paths stay inside the input's own store (no
absolute paths, no ``..``, no link leading out), checked before anything is copied; what
leaves it is not copied and is reported.

**Provenance.** Labels (and adjudications) by an annotator are taken only from that
annotator's own pack — as the project that packed it recorded it, or, merged elsewhere, as the
pack says — or from any input for a name given in ``trust``. A row dated in the future
(``store.clock.time_problem``) refuses its input.

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
import os
import shlex
import uuid as uuidlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path

from ..durable import file_sha256, is_disk_full
from ..judge.results import ensure_item_verdicts
from ..labeling.schema import label_schema_problems
from ..project import NewProject, open_project
from ..store import SchemaError, Store
from ..store.connection import utc_now
from ..store.merge import CopyCounts, ForeignProjectError, ProjectCopier, ProjectSource
from ..store.merge_checks import RowProblem, check_source
from .team_media import MediaFiles, MediaWriter, PackBlobs, resolve_media_path
from .teamwork_reports import Conflict, InputReport, MergeReport, PackResult

MERGE_FORMAT = "pairscope-merge"
#: ``meta`` key prefix of the packs a project issued: ``pack_issued:<pack id>`` -> the annotator.
ISSUED = "pack_issued:"
#: Problem lines an :class:`InvalidRowsError` message shows (all are in ``problems``).
MAX_PROBLEMS = 20


class TeamworkError(ValueError):
    """Packing or merging refused; nothing was written. The message names the file."""


class ProjectFileError(TeamworkError):
    """An input is not a usable PairScope project (not SQLite, corrupt, other schema)."""


class UnrelatedProjectsError(TeamworkError):
    """An input shares nothing with the output (see the module's definition)."""


class ProvenanceError(TeamworkError):
    """An input holds labels by someone it may not speak for (see the module's provenance rule)."""


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
    """Write a self-contained project for ``annotator`` to ``out``: one file to send.

    It holds the items (all, a collection's, or ``item_ids``) with the same ``ext_id`` and
    content (so ``content_hash`` matches), their media files inside it (``pack_media``), the
    annotator's label history and display orders for those items, the collections those
    items belong to (restricted to them), and ``meta`` rows ``project_id``,
    ``pack_source_project_id``, ``pack_source_path``, ``pack_annotator``, ``pack_collection``
    and ``packed_at``. Other annotators' labels and judge runs are not packed (the pack is for
    blind labeling). The source project records the pack as issued to ``annotator`` (``meta``
    ``pack_issued:<pack id>``; and a ``project_id`` if it has none): its only writes.

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
    result = PackResult(out, name, str(uuidlib.uuid4()), source_id, collection=collection)
    src = _open_source(store.path, check_integrity=False)
    media = MediaWriter(out)  # the folders made for the pack (and leftovers of killed older packs)
    new, created, ok = None, None, False
    try:
        _refuse(check_source(src, None, selected=selected, annotator=name, judge=False), "packed")
        with _writing(f"packing {store.path} into {out}"):
            store.put_meta({ISSUED + result.project_id: name})  # whose pack it is, as this project says
            created = NewProject(out, media=False, replace=True)
            media.mkdir(out.parent)
            new = open_project(out, create=True)
            report = InputReport(path=str(store.path))
            with new.transaction():
                result.leftovers_removed = media.sweep(new.media_paths())
                # the project's own paths (its imports' files too); the media go inside the pack
                copier = new.copier(src, MediaFiles(PackBlobs(new), src, report, outside=True))
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
        result.columns_not_copied, result.media_refused = report.columns_not_copied, report.media_refused
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


def _pack_author(src: ProjectSource, store: Store | None, out: Path) -> tuple[str | None, str]:
    """Whose pack ``src`` is (``None``: nobody's), and, when it is not whose it says, why."""
    claimed = (src.meta.get("pack_annotator") or "").strip()
    if not claimed:
        return None, ""
    pack_id = src.meta.get("project_id") or ""
    issued = store.meta(ISSUED + pack_id) if store is not None and pack_id else None
    if issued is not None:
        return issued, "" if issued == claimed else f"it says it is {claimed}'s pack, but {out} packed it for {issued}"
    own_id = store.meta("project_id") if store is not None else None
    if own_id and own_id == src.meta.get("pack_source_project_id"):
        return None, (
            f"it says it is {claimed}'s pack from {out}, but {out} has no record of packing it"
            " (packed by an earlier PairScope, or edited)"
        )
    return claimed, ""  # packed elsewhere: as the pack says


def _allowed_authors(
    src: ProjectSource, store: Store | None, out: Path, trust: frozenset[str], known: set[str]
) -> frozenset[str]:
    """Whose labels may come from ``src``: its annotator (its own pack) and ``trust``. Raises
    :class:`ProvenanceError` when it holds labels by anyone else that are not in ``out`` yet
    (``known``: the uuids there, and those earlier inputs add, updated here)."""
    author, why = _pack_author(src, store, out)
    allowed = trust | ({author} if author else set())
    others: dict[tuple[str, str], int] = {}
    for (name, kind), uuids in src.authors().items():
        if name in allowed:
            known.update(uuids)
        elif new := [u for u in uuids if u not in known]:
            others[(name, kind)] = len(new)
    if not others:
        return frozenset(allowed)
    if why:
        whose = why + (f"; only {author}'s labels are taken from it" if author else "")
    elif author:
        whose = f"it is {author}'s pack, so only {author}'s labels are taken from it"
    else:
        whose = "it is no annotator's pack, so labels are taken from it only for names given with --trust"
    held = ", ".join(f"{n} {kind}{'s' if n != 1 else ''} by {name!r}" for (name, kind), n in sorted(others.items()))
    names = sorted({name for name, _kind in others})
    flags = " ".join(f"--trust {shlex.quote(name)}" for name in names)
    raise ProvenanceError(
        f"{src.path}: {whose}; it holds {held}. Nothing was merged; to accept them, name who may write: {flags}"
    )


def merge_projects(
    out: str | Path,
    inputs: Sequence[str | Path],
    *,
    allow_unrelated: bool = False,
    trust: Iterable[str] = (),
    allow_outside_media: bool = False,
) -> MergeReport:
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

    Provenance (:func:`_allowed_authors`): labels and adjudications the merge would add are
    taken only from their annotator's own pack, or by a name in ``trust`` from any input; an
    input holding others' is refused (:class:`ProvenanceError`), and only the display orders
    of the annotators it may speak for are taken. Media are followed inside each input's own
    media store only (``allow_outside_media``: also absolute paths, as an import's files are);
    a path leaving it is not copied, and listed in the input's ``media_refused``.
    """
    trusted = frozenset(t.strip() for t in trust if t.strip())
    out = Path(out)
    paths = [Path(p) for p in inputs]
    if not paths:
        raise TeamworkError("nothing to merge: no input projects given")
    report = MergeReport(out, created=not out.exists())
    sources: list[ProjectSource] = []
    created = NewProject(out, media=False)  # media: MediaWriter's
    media = MediaWriter(out)
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
        checks = [check_source(src, store, schema_check=label_schema_problems) for src in sources]  # as `schema set`
        _refuse([p for problems in checks for p in problems], "merged")
        known = store.label_uuids() if store else set()
        allowed = [_allowed_authors(src, store, out, trusted, known) for src in sources]
        with _writing(f"merging into {out}"):
            if store is None:
                media.mkdir(out.parent)
                store = open_project(out, create=True)
            with store.transaction():  # holds the write lock: no other merge is copying now
                report.leftovers_removed = media.sweep(store.media_paths())
                origin = {key: str(out) for key in store.identities()}  # identity -> where its version came from
                for src, authors in zip(sources, allowed):
                    files = MediaFiles(media, src, InputReport(), outside=allow_outside_media)
                    report.inputs.append(_merge_one(store, src, files, report, origin, authors))
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
    store: Store,
    src: ProjectSource,
    files: MediaFiles,
    report: MergeReport,
    origin: dict[str, str],
    authors: frozenset[str],
) -> InputReport:
    """Copy one (checked) input into ``store`` inside its transaction (its media through
    ``files``; the display orders of ``authors``); conflicts go to ``report``, and ``origin``
    (item identity -> the file its version came from) is kept up."""
    part = files.report
    part.path, part.project_id = str(src.path), src.meta.get("project_id")
    copier = store.copier(src, files)
    copied = copier.items()
    for c in copied.conflicts:
        report.conflicts.append(Conflict(c.ext_id, str(src.path), origin.get(c.identity, "?"), c.dst_hash, c.src_hash))
    origin.update((key, str(src.path)) for key in copied.new_identities)
    copier.labels()
    copier.display_orders(only=authors)
    copier.judge_runs()
    copier.collections()
    _add_counts(part, copier.counts)
    part.conflicts += len(copied.conflicts)
    if part.changed:
        options = {k: v for k, v in part.__dict__.items() if k not in ("path", "media_refused")}
        options["media_refused"] = len(part.media_refused)  # the reasons were reported; a count is kept
        store.log_merged_input(
            str(src.path.absolute()), MERGE_FORMAT, file_sha256(src.path), copied.new_ids, part.items_matched, options
        )
    return part


__all__ = [
    "ISSUED",
    "MERGE_FORMAT",
    "InvalidRowsError",
    "ProjectFileError",
    "ProvenanceError",
    "TeamworkError",
    "UnrelatedProjectsError",
    "merge_projects",
    "pack_project",
    "project_id",
    "resolve_media_path",
]
