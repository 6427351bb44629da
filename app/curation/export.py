"""Curated export: a project's items, with the preference humans settled on, as a folder.

``export_project(store, out_dir, fmt)`` writes ``out_dir/<format file>.jsonl``, copies every
media file into ``out_dir/media/<sha256><suffix>`` (paths in the rows are relative to
``out_dir``) and writes ``out_dir/manifest.json`` last: counts, filters, source project,
tool version and the sha256 of every file written.

Which preference is exported, per item:

1. the newest adjudication (a label of kind ``"adjudication"``), if the item has one;
2. else, with ``only="agreed"``, the preference every annotator's current label agrees on
   (at least two annotators with a decision, none deciding otherwise);
3. else the dataset's reference ranking.

``only="adjudicated"`` keeps adjudicated items only; ``only="agreed"`` keeps items whose
preference humans settled (adjudicated, or agreed). An item whose exported preference is a
discard is skipped, as is one the format cannot hold (a tie or "both bad" has no chosen
response; TRL rows need exactly two responses and no video). Every skip is reported with
its reason.

A media file that is missing (never found at import, or gone since) does not stop the
item: it is exported without that file, and the export reports a warning naming it; the
``jsonl`` format keeps the original reference with ``path: null``.

What round-trips: a ``vlrewardbench`` export of image items re-imports
(``import_file(store, out/"vlrewardbench.jsonl", "vlrewardbench", media_root=out)``) into
the same items: ids, prompts (raw and display), responses and models, reference ranking,
category, subset, error tags, ground truth, extra fields, and media with the same bytes.
A ``jsonl`` export re-imports through the generic importer (``--format jsonl`` with the
``--map`` pairs in ``JSONL_IMPORT_MAP``, also written to the manifest under ``reimport``):
ids, prompts, responses, category, subset, the reference (ranking, strength, error tags,
ground truth) and media; not ``prompt_raw``, models, steps, the source format or labels
(importers never write labels), and the new item's ``extra`` holds every other column of
the row (the original ``extra`` under ``extra``). Single-response step items cannot go
through the generic importer (it needs two responses). Labels and adjudications are in
the row, for reading; a lossless re-import would need a ``pairscope`` import format.

Safety: file names come only from content hashes and fixed names, never from item ids or
media paths; every file is written to a temporary name, fsynced and renamed into place,
the folders holding them are fsynced, and the manifest is written last, so a crash never
leaves a complete-looking export.

Failures leave nothing behind. What an export creates (folders, temporary files, files) is
noted in a journal (``.pairscope-export-journal``) before it is made; a failed export (a
full disk, a read-only folder, a cancel) removes it all and raises :class:`ExportError`
(an ``OSError`` with one clear message), and an export killed midway is swept by the next
export into the same folder (which then needs no ``force``: the leftovers were its own).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..formats.media_refs import check_file, inside
from ..records import Item, Label, MediaRef
from ..store import Store
from ..store.connection import utc_now
from .export_files import MANIFEST, MEDIA_DIR, ExportError, Output, WriteFailed, export_error, prepare_folder, writing
from .export_files import AtomicWriter as _AtomicWriter
from .export_formats import (
    DECISIVE,
    EXPORT_FORMATS,
    ExportedMedia,
    ExportFormat,
    ExportItem,
    Preference,
)

ONLY_CHOICES = ("adjudicated", "agreed")
_SUFFIX_RE = re.compile(r"\.[a-z0-9]{1,8}")
_CHUNK = 1 << 20
_PAGE = 5000


@dataclass
class ExportResult:
    """What an export wrote: ``files`` are paths relative to ``out_dir`` (the manifest
    last); ``skipped`` and ``warnings`` hold ``(item id, reason)``."""

    out_dir: Path
    format: str
    n_items: int
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    per_category: dict[str, int] = field(default_factory=dict)

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / MANIFEST


# -- which preference ---------------------------------------------------------------------------


def current_labels(store: Store, item_id: int) -> tuple[dict[str, Label], Label | None]:
    """An item's current labels per annotator (cleared ones are none) and its adjudication:
    the newest of the current adjudications (``None`` if there is none, or it decides
    nothing). "Current" is the store's one definition (``label_current``)."""
    labels: dict[str, Label] = {}
    adjudication = None
    for label in store.item_current_labels(item_id):  # oldest first
        if label.kind == "adjudication":
            adjudication = label
        else:
            labels[label.annotator] = label
    if adjudication is not None and adjudication.outcome not in DECISIVE:
        adjudication = None
    return labels, adjudication


def _decision(label: Label) -> tuple[str, int | None]:
    return label.outcome, label.preferred


def _union(groups) -> tuple:
    seen: dict = {}
    for group in groups:
        for value in group:
            seen.setdefault(value, None)
    return tuple(seen)


def agreed_preference(labels: dict[str, Label]) -> tuple[Preference | None, str]:
    """The preference all current labels with a decision share (at least two of them),
    or ``(None, why not)``. Strength is kept when all agree on it; error types and
    discard reasons are the union of the agreeing labels'."""
    decided = [labels[name] for name in sorted(labels) if labels[name].outcome in DECISIVE]
    if not decided:
        return None, "no annotator decided"
    if len(decided) < 2:
        return None, f"only one annotator decided ({decided[0].annotator})"
    if len({_decision(label) for label in decided}) > 1:
        return None, "annotators disagree"
    first = decided[0]
    rankings = {label.ranking for label in decided}
    strengths = {label.strength for label in decided}
    return Preference(
        source="agreed",
        outcome=first.outcome,
        ranking=first.ranking if len(rankings) == 1 else ((first.preferred,) if first.preferred is not None else ()),
        strength=strengths.pop() if len(strengths) == 1 else None,
        error_tags=_union(label.error_types for label in decided),
        discard_reasons=_union(label.discard_reasons for label in decided),
        annotators=tuple(label.annotator for label in decided),
    ), ""


def _from_label(label: Label, source: str) -> Preference:
    return Preference(
        source=source,
        outcome=label.outcome,
        ranking=label.ranking,
        strength=label.strength,
        error_tags=label.error_types,
        discard_reasons=label.discard_reasons,
        annotators=(label.annotator,),
    )


def reference_preference(item: Item) -> Preference:
    ref = item.reference
    if not ref.ranking:
        return Preference(source="none")
    return Preference(source="reference", outcome="prefer", ranking=ref.ranking, strength=ref.strength)


def resolve_preference(
    item: Item, labels: dict[str, Label], adjudication: Label | None, only: str | None
) -> tuple[Preference, None] | tuple[None, str]:
    """``(preference to export, None)`` or ``(None, why the item is skipped)``."""
    if adjudication is not None:
        pref = _from_label(adjudication, "adjudication")
    elif only == "adjudicated":
        return None, "not adjudicated"
    elif only == "agreed":
        agreed, why = agreed_preference(labels)
        if agreed is None:
            return None, f"not agreed: {why}"
        pref = agreed
    else:
        pref = reference_preference(item)
    if pref.outcome == "discard":
        reasons = f" ({', '.join(pref.discard_reasons)})" if pref.discard_reasons else ""
        return None, f"discarded by {pref.source}{reasons}"
    return pref, None


# -- files -------------------------------------------------------------------------------------


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    return suffix if _SUFFIX_RE.fullmatch(suffix) else ""


class MediaCopier:
    """Copies media into ``out_dir/media/<sha256><suffix>``, each distinct file once; with
    ``keep_paths``, under the dataset's own relative path when it stays inside ``out_dir``
    (VL-RewardBench's scripts read the subset from ``images/<subset>/…``). Only files whose
    header says they are an image or a video of their kind are copied."""

    def __init__(self, out_dir: Path, project_dir: Path, keep_paths: bool = False, output: Output | None = None):
        self.out_dir = out_dir
        self.dir = out_dir / MEDIA_DIR
        self.project_dir = project_dir
        self.keep_paths = keep_paths
        self.output = output
        self.files: dict[str, dict[str, Any]] = {}
        self._by_source: dict[str, tuple[str, str]] = {}

    def copy(self, ref: MediaRef) -> ExportedMedia:
        if ref.path is None:
            return ExportedMedia(ref.kind, ref.ref, None, None, ref.problem or f"{ref.kind} missing")
        source = Path(ref.path)
        if not source.is_absolute():  # stored relative to the project's folder
            source = self.project_dir / source
        key = os.path.abspath(source)
        if key not in self._by_source:
            why = check_file(source, ref.kind)
            if why == "not found":
                return ExportedMedia(ref.kind, ref.ref, None, None, f"{ref.kind} no longer at {source}")
            if why is not None:
                return ExportedMedia(ref.kind, ref.ref, None, None, f"{ref.kind} {source} {why}; not exported")
            try:
                self._by_source[key] = self._copy(source, self._kept(ref.ref))
            except OSError as exc:  # reading the source; writing the export raises WriteFailed
                return ExportedMedia(ref.kind, ref.ref, None, None, f"could not copy {source}: {exc}")
        rel, digest = self._by_source[key]
        return ExportedMedia(ref.kind, ref.ref, rel, digest, None)

    def _kept(self, ref: str) -> str | None:
        """The dataset's relative path to write a file under, or ``None`` (content-addressed)."""
        if not self.keep_paths:
            return None
        target = inside(self.out_dir, ref)
        if target is None or target.parent == self.out_dir:
            return None  # outside, or beside the JSONL and the manifest
        rel = target.relative_to(self.out_dir).as_posix()
        return None if rel in self.files or rel.split("/")[0] == MEDIA_DIR else rel

    def _copy(self, source: Path, kept: str | None = None) -> tuple[str, str]:
        with open(source, "rb") as fh:  # a source that cannot be read costs that file only
            with writing():
                folder = (self.out_dir / kept).parent if kept is not None else self.dir
                if self.output is not None:
                    self.output.mkdir(folder)
                else:
                    folder.mkdir(parents=True, exist_ok=True)
                writer = _AtomicWriter(self.out_dir / kept if kept is not None else self.dir / "pending", self.output)
            try:
                for block in iter(lambda: fh.read(_CHUNK), b""):
                    with writing():
                        writer.write(block)
                digest = writer.digest.hexdigest()
                rel = kept or f"{MEDIA_DIR}/{digest}{_suffix(source)}"
                if rel in self.files:  # same bytes under another source path: one file
                    writer.discard()
                else:
                    writer.target = self.out_dir / rel
                    with writing():
                        self.files[rel] = writer.commit()
            except BaseException:
                writer.discard()
                raise
        return rel, digest


def _dump_row(row: dict[str, Any]) -> bytes:
    try:
        return (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape it rather than write invalid UTF-8
        return (json.dumps(row) + "\n").encode("ascii")


# -- selection and the export ------------------------------------------------------------------


def _all_item_ids(store: Store) -> Iterator[int]:
    offset = 0
    while True:
        page = store.item_summaries(offset, _PAGE)
        yield from (s.id for s in page)
        if len(page) < _PAGE:
            return
        offset += _PAGE


def select_items(store: Store, collection: str | None, item_ids: Sequence[int] | None) -> list[int]:
    """Store ids to consider, in store order: the collection's (or every item), limited
    to ``item_ids`` when given."""
    if collection is not None:
        known = store.collections()
        if collection not in known:
            raise ValueError(f"no collection named {collection!r}; collections: {', '.join(sorted(known)) or 'none'}")
        ids = store.collection_item_ids(collection)
        if item_ids is not None:
            wanted = set(item_ids)
            ids = [i for i in ids if i in wanted]
        return ids
    if item_ids is not None:
        return sorted(set(item_ids))
    return list(_all_item_ids(store))


def _source_meta(store: Store) -> dict[str, str]:
    return store.all_meta()


def export_project(
    store: Store,
    out_dir: str | Path,
    fmt: str,
    *,
    collection: str | None = None,
    only: str | None = None,
    item_ids: Sequence[int] | None = None,
    force: bool = False,
    filters_description: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExportResult:
    """Export a project's items as ``fmt`` into ``out_dir`` (see the module docstring).

    Raises ``ValueError`` for an unknown format, ``only`` value or collection,
    ``FileExistsError`` when ``out_dir`` is not empty and ``force`` is false, and
    :class:`ExportError` when the export cannot be written (what it wrote is removed).
    ``progress(done, total)`` is called after each item.
    """
    try:
        export_format: ExportFormat = EXPORT_FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(sorted(EXPORT_FORMATS))}") from None
    if only is not None and only not in ONLY_CHOICES:
        raise ValueError(f"only must be one of {', '.join(ONLY_CHOICES)} (or None), got {only!r}")
    ids = select_items(store, collection, item_ids)
    out_dir = Path(out_dir)
    output = prepare_folder(out_dir, force)
    try:
        result = _write_export(
            store, out_dir, fmt, export_format, ids, output, collection, only, item_ids, filters_description, progress
        )
    except BaseException as exc:
        output.undo()
        cause = exc.error if isinstance(exc, WriteFailed) else exc
        if isinstance(cause, OSError) and not isinstance(cause, ExportError):
            raise export_error(cause, out_dir) from cause
        raise
    output.finish()
    return result


def _write_export(
    store: Store,
    out_dir: Path,
    fmt: str,
    export_format: ExportFormat,
    ids: list[int],
    output: Output,
    collection: str | None,
    only: str | None,
    item_ids: Sequence[int] | None,
    filters_description: dict | None,
    progress: Callable[[int, int], None] | None,
) -> ExportResult:
    result = ExportResult(out_dir=out_dir, format=fmt, n_items=0)
    copier = MediaCopier(out_dir, store.path.parent, keep_paths=export_format.keep_media_paths, output=output)
    sources: Counter = Counter()
    missing_media = 0
    writer = _AtomicWriter(out_dir / export_format.filename, output)
    try:
        for done, item_id in enumerate(ids, start=1):
            entry = _export_item(store, item_id, only, export_format, copier, result)
            if entry is not None:
                writer.write(_dump_row(export_format.row(entry)))
                result.n_items += 1
                category = entry.item.category
                result.per_category[category] = result.per_category.get(category, 0) + 1
                sources[entry.preference.source] += 1
                missing_media += sum(1 for m in entry.media if m.path is None)
            if progress is not None:
                progress(done, len(ids))
        files = {export_format.filename: writer.commit()}
    except BaseException:
        writer.discard()
        raise
    files.update(sorted(copier.files.items()))

    manifest = {
        "pairscope_export": 1,
        "format": fmt,
        "description": export_format.description,
        "data_file": export_format.filename,
        "created_at": utc_now(),
        "tool": {"name": "pairscope", "version": __version__},
        "source": {
            "project": str(store.path.resolve()),
            "schema_version": store.schema_version,
            "meta": _source_meta(store),
        },
        "filters": {
            "collection": collection,
            "only": only,
            "item_ids": None if item_ids is None else len(set(item_ids)),
            "description": filters_description,
        },
        "counts": {
            "items": result.n_items,
            "per_category": dict(sorted(result.per_category.items())),
            "per_preference_source": dict(sorted(sources.items())),
            "skipped": len(result.skipped),
            "skipped_by_reason": dict(Counter(reason for _, reason in result.skipped).most_common()),
            "media_files": len(copier.files),
            "missing_media": missing_media,
        },
        "skipped": [{"id": i, "reason": r} for i, r in result.skipped],
        "warnings": [{"id": i, "message": m} for i, m in result.warnings],
        "reimport": export_format.reimport,
        "files": files,
    }
    output.sync()  # every file (fsynced at commit) and every rename is on disk before the manifest
    manifest_writer = _AtomicWriter(out_dir / MANIFEST, output)
    try:
        manifest_writer.write(json.dumps(manifest, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
        manifest_writer.commit()
    except BaseException:
        manifest_writer.discard()
        raise
    result.files = [*files, MANIFEST]
    return result


def _export_item(
    store: Store,
    item_id: int,
    only: str | None,
    export_format: ExportFormat,
    copier: MediaCopier,
    result: ExportResult,
) -> ExportItem | None:
    """Load one item and decide its preference; copy its media if it is exported."""
    try:
        item = store.get_item(item_id)
    except KeyError:
        result.skipped.append((f"#{item_id}", "no such item in the project"))
        return None
    labels, adjudication = current_labels(store, item_id)
    resolved = resolve_preference(item, labels, adjudication, only)
    if resolved[0] is None:
        result.skipped.append((item.ext_id, resolved[1]))
        return None
    preference = resolved[0]
    entry = ExportItem(item, preference, labels, adjudication)
    why = export_format.rejects(entry)
    if why is not None:
        result.skipped.append((item.ext_id, why))
        return None
    media = tuple(copier.copy(m) for m in item.media)
    for m in media:
        if m.path is None:
            result.warnings.append((item.ext_id, f"exported without {m.kind} {m.ref!r}: {m.problem}"))
    return ExportItem(item, preference, labels, adjudication, media)


__all__ = [
    "EXPORT_FORMATS",
    "ONLY_CHOICES",
    "ExportError",
    "ExportItem",
    "ExportResult",
    "Preference",
    "agreed_preference",
    "current_labels",
    "export_project",
    "reference_preference",
    "resolve_preference",
    "select_items",
]
