"""Curated export: a project's items, with a named preference source, as a folder.

``export_project(store, out_dir, fmt)`` writes ``out_dir/<format file>.jsonl``, with
``media="copy"`` (the default) copies every media file into ``out_dir/media/<sha256><suffix>``
(``vlrewardbench``: under the dataset's ``images/<subset>/…``; paths in the rows are relative
to ``out_dir``) and writes ``out_dir/manifest.json`` last: the preference source, the filters
that were applied (and only those), counts per preference source and per skip reason, the
skipped items, the source of every row, the project (by name), its schema version, the tool version
and the sha256 of every file written.

Which preference is exported is chosen explicitly (``source``, :class:`PreferenceSource`):

- ``"human"`` (the default): the human decision where one exists — the newest current
  adjudication, else the annotators' consensus;
- ``"adjudicated"``: the adjudication only;
- ``"consensus"``: the preference that every annotator's current label stating one (a
  response, a tie, both bad) states; one annotator's label is a consensus of one, labels
  that state different preferences are "annotators disagree" (the store's own rule,
  ``label_disagreements``); adjudications are not used;
- ``"annotator:NAME"``: that annotator's current label;
- ``"reference"``: the dataset's reference ranking.

Where the source gives no preference the item has none (``"no human preference"``,
``"not adjudicated"``, ``"no label by alice"`` ...): formats that need a chosen/rejected pair
skip it with that reason, ``jsonl`` keeps it with ``preference.source = "none"``. With
``fallback_reference=True`` such an item takes the dataset's reference instead (never over
a disagreement: humans disputing a pair is not "no decision"). Each row records which
source gave its preference (``preference.source`` in ``jsonl``, ``preference_source`` in
``trl``; the manifest's ``rows`` for every format, ``vlrewardbench`` rows keep the
benchmark's schema exactly).

An item a human discarded is left out (``"discarded by alice (both_wrong)"``) unless
``include_discarded=True``: discarded means its current adjudication is a discard, or, when it
has no adjudication, some annotator's current label is (an adjudication is final, so one that
decides a preference keeps the item). "Current" is the store's one definition
(``label_current``, read by :meth:`Store.item_current_labels`).

``only="adjudicated"`` keeps adjudicated items; ``only="agreed"`` those humans settled
(adjudicated, or two or more annotators agree). Every skip is reported with its reason.

A missing media file (never found at import, or gone since) never erases its reference: the
row names the dataset's own path (VL-RewardBench's ``images/<subset>/<file>``), and the
missing files are counted once (the result's ``media_summary``, the manifest's ``media``),
never warned per item. ``media="reference"`` copies nothing: rows name the dataset's paths.

What round-trips (tested; details in docs/EXPORT.md): a ``vlrewardbench`` export with
``source="reference"`` re-imports (``media_root=out``) into the same items, media bytes
included; a ``jsonl`` export re-imports the items and their references through the generic
importer with the ``--map`` pairs of ``JSONL_IMPORT_MAP`` (also in the manifest's
``reimport``), not labels (importers never write labels).

Safety: file names come only from content hashes and fixed names, never from item ids or
media paths; every file is written to a temporary name, fsynced and renamed into place,
the folders holding them are fsynced, and the manifest is written last, so a crash never
leaves a complete-looking export.

Failures leave nothing behind: what an export creates is noted in a journal
(``.pairscope-export-journal``) before it is made; a failed export (a full disk, a read-only
folder, a cancel) removes it all and raises :class:`ExportError` (an ``OSError`` with one
clear message), and an export killed midway is swept by the next one into the same folder.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..rankings import top_is_tied
from ..records import LABELED_OUTCOMES, STATED_OUTCOMES, Item, Label
from ..store import Store
from ..store.connection import utc_now
from . import export_select as _select
from .export_files import (
    MANIFEST,
    MEDIA_CHOICES,
    MEDIA_DIR,
    ExportError,
    JsonlRows,
    MediaCopier,
    Output,
    WriteFailed,
    export_error,
    prepare_folder,
)
from .export_files import AtomicWriter as _AtomicWriter
from .export_formats import EXPORT_FORMATS, ExportFormat, ExportItem, Preference
from .export_select import describe_table_filter, select_items

ONLY_CHOICES = ("adjudicated", "agreed")
SOURCE_KINDS = ("human", "adjudicated", "consensus", "annotator", "reference")
#: ``--media`` when not given, per format (every other format: ``copy``).
MEDIA_DEFAULTS: dict[str, str] = {}
MANIFEST_PATHS = ("name", "absolute")


def default_media(fmt: str) -> str:
    """The format's own media choice: ``copy`` unless :data:`MEDIA_DEFAULTS` says otherwise."""
    return MEDIA_DEFAULTS.get(fmt, "copy")


@dataclass(frozen=True)
class PreferenceSource:
    """Where the exported preference comes from: one of :data:`SOURCE_KINDS`; ``annotator``
    names the annotator for ``kind="annotator"``. Written ``"annotator:alice"``."""

    kind: str = "human"
    annotator: str | None = None

    @classmethod
    def parse(cls, value: str | PreferenceSource) -> PreferenceSource:
        if isinstance(value, PreferenceSource):
            return cls.parse(str(value))
        kind, sep, name = str(value).strip().partition(":")
        if kind == "annotator" and name.strip():
            return cls("annotator", name.strip())
        if sep or kind not in SOURCE_KINDS or kind == "annotator":
            raise ValueError(
                f"unknown preference source {value!r}; one of human, adjudicated, consensus, annotator:NAME, reference"
            )
        return cls(kind)

    def __str__(self) -> str:
        return f"annotator:{self.annotator}" if self.kind == "annotator" else self.kind

    def describe(self, fallback_reference: bool = False) -> str:
        """What this source exports, in words (the CLI, the dialog and the manifest say it)."""
        text = {
            "human": "the human decision: the newest adjudication, else the preference all annotators' labels share",
            "adjudicated": "the adjudication",
            "consensus": "the annotators' consensus: the preference all annotators' labels share",
            "annotator": f"{self.annotator}'s label",
            "reference": "the dataset's reference ranking",
        }[self.kind]
        if self.kind == "reference":
            return text
        if fallback_reference:
            return f"{text}; where there is none, the dataset's reference"
        return f"{text}; items without one are left out (jsonl keeps them, marked)"


@dataclass
class ExportResult:
    """What an export wrote: ``files`` are paths relative to ``out_dir`` (the manifest
    last); ``skipped`` and ``warnings`` hold ``(item id, reason)``; ``per_source`` counts
    the exported rows per preference source."""

    out_dir: Path
    format: str
    n_items: int
    source: str = "human"
    source_description: str = ""
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    per_category: dict[str, int] = field(default_factory=dict)
    per_source: dict[str, int] = field(default_factory=dict)
    media: str = "copy"  # the media choice: copy or reference
    media_files: int = 0  # files copied
    missing_media: int = 0  # media the rows name that are not on disk (counted once, not warned)
    items_missing_media: int = 0
    media_summary: str = ""  # one line: the choice, the copies, the missing
    corrections: dict[str, dict[str, Any]] = field(default_factory=dict)  # display id → its provenance

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / MANIFEST

    def skipped_by_reason(self) -> dict[str, list[str]]:
        """Skipped item ids per reason, the most frequent reason first."""
        by_reason: dict[str, list[str]] = {}
        for item_id, reason in self.skipped:
            by_reason.setdefault(reason, []).append(item_id)
        return dict(sorted(by_reason.items(), key=lambda kv: -len(kv[1])))

    def skip_lines(self, max_ids: int | None = 20) -> list[str]:
        """``"4 no human preference: id1, id2, …"``, one line per reason."""
        lines = []
        for reason, ids in self.skipped_by_reason().items():
            shown = ids if max_ids is None else ids[:max_ids]
            more = f", … and {len(ids) - len(shown)} more" if len(shown) < len(ids) else ""
            lines.append(f"{len(ids)} {reason}: {', '.join(shown)}{more}")
        return lines

    def sources_text(self) -> str:
        """``"adjudication 2, consensus 1"``: exported rows per preference source."""
        return ", ".join(f"{name} {n}" for name, n in sorted(self.per_source.items())) or "none"


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
    if adjudication is not None and adjudication.outcome not in LABELED_OUTCOMES:
        adjudication = None
    return labels, adjudication


def _union(groups: Iterable[Iterable]) -> tuple:
    seen: dict = {}
    for group in groups:
        for value in group:
            seen.setdefault(value, None)
    return tuple(seen)


def _reasons(reasons: Sequence[str]) -> str:
    return f" ({', '.join(reasons)})" if reasons else ""


def discarded_by(labels: dict[str, Label], adjudication: Label | None) -> str | None:
    """Why the item counts as discarded (``"discarded by alice (both_wrong)"``), or ``None``.

    The adjudication is final: a discarding one discards the item, one that decides
    anything else keeps it. Without one, any annotator's current discard discards it.
    """
    if adjudication is not None:
        if adjudication.outcome != "discard":
            return None
        return f"discarded by {adjudication.annotator}'s adjudication{_reasons(adjudication.discard_reasons)}"
    who = [labels[name] for name in sorted(labels) if labels[name].outcome == "discard"]
    if not who:
        return None
    names = ", ".join(label.annotator for label in who)
    return f"discarded by {names}{_reasons(_union(label.discard_reasons for label in who))}"


def consensus_preference(labels: dict[str, Label]) -> tuple[Preference | None, str]:
    """The preference every current label that states one states, or ``(None, why not)``
    (``"annotators disagree"`` or ``"nobody decided"``). Strength is kept when all agree
    on it; error types are the union of the agreeing labels'. Labels that only discard
    give a ``discard`` consensus when no label states a preference."""
    stated = [labels[name] for name in sorted(labels) if labels[name].outcome in STATED_OUTCOMES]
    if not stated:
        discards = [labels[name] for name in sorted(labels) if labels[name].outcome == "discard"]
        if not discards:
            return None, "nobody decided"
        return Preference(
            source="consensus",
            outcome="discard",
            discard_reasons=_union(label.discard_reasons for label in discards),
            annotators=tuple(label.annotator for label in discards),
        ), ""
    if len({(label.outcome, label.preferred) for label in stated}) > 1:
        return None, "annotators disagree"
    first = stated[0]
    rankings = {(label.ranking, label.ranks) for label in stated}  # a full ranking: equal ranks, ties included
    strengths = {label.strength for label in stated}
    return Preference(
        source="consensus",
        outcome=first.outcome,
        ranking=first.ranking if len(rankings) == 1 else ((first.preferred,) if first.preferred is not None else ()),
        ranks=first.ranks if len(rankings) == 1 else (),
        strength=strengths.pop() if len(strengths) == 1 else None,
        error_tags=_union(label.error_types for label in stated),
        annotators=tuple(label.annotator for label in stated),
    ), ""


def _from_label(label: Label, source: str) -> Preference:
    return Preference(
        source=source,
        outcome=label.outcome,
        ranking=label.ranking,
        ranks=label.ranks,
        strength=label.strength,
        error_tags=label.error_types,
        discard_reasons=label.discard_reasons,
        annotators=(label.annotator,),
    )


def reference_preference(item: Item) -> Preference:
    ref = item.reference
    if not ref.ranking:
        return Preference(source="none", missing="no dataset reference")
    outcome = "tie" if top_is_tied(ref.ranks) else "prefer"
    return Preference(source="reference", outcome=outcome, ranking=ref.ranking, ranks=ref.ranks, strength=ref.strength)


def resolve_preference(
    item: Item,
    labels: dict[str, Label],
    adjudication: Label | None,
    source: PreferenceSource,
    fallback_reference: bool = False,
) -> Preference:
    """The preference ``source`` gives the item; ``source="none"`` with ``missing`` (why)
    when it gives none (then the reference, with ``fallback_reference``, unless the
    annotators disagree)."""
    kind = source.kind
    if kind == "reference":
        return reference_preference(item)
    if kind in ("human", "adjudicated") and adjudication is not None:
        return _from_label(adjudication, "adjudication")
    if kind == "adjudicated":
        missing = "not adjudicated"
    elif kind == "annotator":
        label = labels.get(source.annotator or "")
        if label is not None and label.outcome in LABELED_OUTCOMES:
            return _from_label(label, "annotator")
        missing = f"no label by {source.annotator}"
    else:
        consensus, why = consensus_preference(labels)
        if consensus is not None:
            return consensus
        if why == "annotators disagree":
            return Preference(source="none", missing=why)
        missing = "no human preference" if kind == "human" else "no annotator preference"
    if fallback_reference:
        reference = reference_preference(item)
        if reference.source == "reference":
            return reference
        missing += " and no dataset reference"
    return Preference(source="none", missing=missing)


def only_rejects(only: str | None, labels: dict[str, Label], adjudication: Label | None) -> str | None:
    """Why the ``only`` filter leaves the item out (``None``: it keeps it)."""
    if only is None or adjudication is not None:
        return None
    if only == "adjudicated":
        return "not adjudicated"
    consensus, why = consensus_preference(labels)
    if consensus is None:
        return f"not agreed: {'annotators disagree' if why == 'annotators disagree' else 'no annotator decided'}"
    if len(consensus.annotators) < 2:
        return f"not agreed: only one annotator decided ({consensus.annotators[0]})"
    return None


@dataclass(frozen=True)
class _Choice:
    """What the caller chose: the preference rules, and the filters as they were applied."""

    source: PreferenceSource
    fallback_reference: bool
    include_discarded: bool
    only: str | None
    filters: dict[str, Any]
    media: str = "copy"
    manifest_paths: str = "name"
    corrections: str | None = None  # REFERENCE_CORRECTIONS, or None
    reviews: dict[int, Any] = field(default_factory=dict)  # item id → its current "wrong" review

    def preference_record(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "description": self.source.describe(self.fallback_reference),
            "fallback_reference": self.fallback_reference,
            "include_discarded": self.include_discarded,
        }


def export_project(
    store: Store,
    out_dir: str | Path,
    fmt: str,
    *,
    source: str | PreferenceSource = "human",
    fallback_reference: bool = False,
    include_discarded: bool = False,
    collection: str | None = None,
    only: str | None = None,
    item_ids: Sequence[int] | None = None,
    table_filter: dict | None = None,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    media: str | None = None,
    manifest_paths: str = "name",
    reference_corrections: str | None = None,
) -> ExportResult:
    """Export a project's items as ``fmt`` into ``out_dir`` (see the module docstring).

    ``item_ids`` limits the export to those items; ``table_filter`` describes the table
    filter that selected them (:func:`describe_table_filter`) and is recorded with them.
    Raises ``ValueError`` for an unknown format, source, annotator, ``only`` value or
    collection, or a ``table_filter`` without the ``item_ids`` it selected;
    ``FileExistsError`` when ``out_dir`` is not empty and ``force`` is false, and
    :class:`ExportError` when the export cannot be written (what it wrote is removed).
    ``progress(done, total)`` is called after each item. ``media``: ``copy`` or ``reference``
    (``None``: the format's default); ``manifest_paths="absolute"`` records the project's path.
    ``reference_corrections`` (``export_select.REFERENCE_CORRECTIONS``): references a reviewer marked wrong
    exported corrected, with provenance, or left out (docs/STATISTICS.md, "Suspect references").
    """
    try:
        export_format: ExportFormat = EXPORT_FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(sorted(EXPORT_FORMATS))}") from None
    chosen = PreferenceSource.parse(source)
    if chosen.kind == "annotator" and store.find_annotator(chosen.annotator or "") is None:
        raise ValueError(
            f"no annotator named {chosen.annotator!r}; annotators: {', '.join(store.annotators()) or 'none'}"
        )
    if only is not None and only not in ONLY_CHOICES:
        raise ValueError(f"only must be one of {', '.join(ONLY_CHOICES)} (or None), got {only!r}")
    if table_filter is not None and item_ids is None:
        raise ValueError("a table filter is recorded with the item ids it selected: pass item_ids too")
    media = default_media(fmt) if media is None else media
    if media not in MEDIA_CHOICES or manifest_paths not in MANIFEST_PATHS:
        choices = f"media: {', '.join(MEDIA_CHOICES)}; manifest_paths: {', '.join(MANIFEST_PATHS)}"
        raise ValueError(f"unknown media ({media!r}) or manifest_paths ({manifest_paths!r}) choice; {choices}")
    reviews = _select.reference_reviews_for_export(store, reference_corrections)
    ids = select_items(store, collection, item_ids)
    filters: dict[str, Any] = {}
    if reference_corrections is not None:
        filters["reference_corrections"] = reference_corrections
    if collection is not None:
        filters["collection"] = collection
    if only is not None:
        filters["only"] = only
    if item_ids is not None:
        n = len(set(item_ids))
        if table_filter is not None:
            filters["table"] = {"filter": table_filter, "items": n}
        else:
            filters["item_ids"] = n
    choice = _Choice(chosen, fallback_reference, include_discarded, only, filters, media, manifest_paths)
    choice = replace(choice, corrections=reference_corrections, reviews=reviews)
    shown_dir = Path(out_dir)
    out_dir = Path(os.path.abspath(shown_dir))  # a relative --out works like an absolute one
    output = prepare_folder(out_dir, force)
    try:
        result = _write_export(store, out_dir, fmt, export_format, ids, output, choice, progress)
    except BaseException as exc:
        output.undo()
        cause = exc.error if isinstance(exc, WriteFailed) else exc
        if isinstance(cause, OSError) and not isinstance(cause, ExportError):
            raise export_error(cause, out_dir) from cause
        raise
    output.finish()
    result.out_dir = shown_dir
    return result


def _write_export(
    store: Store,
    out_dir: Path,
    fmt: str,
    export_format: ExportFormat,
    ids: list[int],
    output: Output,
    choice: _Choice,
    progress: Callable[[int, int], None] | None,
) -> ExportResult:
    description = choice.source.describe(choice.fallback_reference)
    result = ExportResult(out_dir, fmt, 0, source=str(choice.source), source_description=description)
    keep = export_format.keep_media_paths
    copier = MediaCopier(out_dir, store.path.parent, keep_paths=keep, output=output, mode=choice.media)
    sources: Counter = Counter()
    rows: list[dict[str, Any]] = []
    sink = export_format.sink
    writer = sink(out_dir, output) if sink is not None else JsonlRows(out_dir, export_format.filename, output)
    try:
        for done, item_id in enumerate(ids, start=1):
            entry = _export_item(store, item_id, choice, export_format, copier, result)
            if entry is not None:
                pref = entry.preference
                for row in export_format.rows_of(entry):  # one, or one per induced pair of a ranking
                    if fmt == "jsonl" and entry.item.ext_id in result.corrections:
                        row["reference_corrected"] = result.corrections[entry.item.ext_id]
                    writer.write(row)
                    rows.append({"id": row["id"], "source": pref.source, "annotators": list(pref.annotators)})
                result.n_items += 1
                category = entry.item.category
                result.per_category[category] = result.per_category.get(category, 0) + 1
                sources[entry.preference.source] += 1
            if progress is not None:
                progress(done, len(ids))
        files = writer.commit()
    except BaseException:
        writer.discard()
        raise
    files.update(sorted(copier.files.items()))
    result.per_source = dict(sorted(sources.items()))
    result.media, result.media_files, result.media_summary = choice.media, len(copier.files), copier.summary()
    result.missing_media, result.items_missing_media = copier.missing, copier.items_missing
    by_reason = result.skipped_by_reason()

    manifest = {
        "pairscope_export": 2,
        "format": fmt,
        "description": export_format.description,
        "data_file": export_format.filename,
        "created_at": utc_now(),
        "tool": {"name": "pairscope", "version": __version__},
        "source": {
            "project": str(store.path.resolve()) if choice.manifest_paths == "absolute" else store.path.name,
            "schema_version": store.schema_version,
            "meta": store.all_meta(),
        },
        "preference": choice.preference_record(),
        "filters": choice.filters,
        "counts": {
            "considered": len(ids),
            "items": result.n_items,
            "per_category": dict(sorted(result.per_category.items())),
            "per_preference_source": result.per_source,
            "skipped": len(result.skipped),
            "skipped_by_reason": {reason: len(item_ids) for reason, item_ids in by_reason.items()},
            "media_files": len(copier.files),
            "missing_media": copier.missing,
            "items_missing_media": copier.items_missing,
        },
        "media": copier.record(),
        "skipped": [{"id": i, "reason": r} for i, r in result.skipped],
        "skipped_ids_by_reason": by_reason,
        "warnings": [{"id": i, "message": m} for i, m in result.warnings],
        "rows": rows,
        **_select.corrections_record(choice.corrections, result.corrections),
        "reimport": export_format.reimport,
        "files": files,
    }
    files.update(writer.finish(manifest))  # a dataset card, from the manifest
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
    choice: _Choice,
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
    if (review := choice.reviews.get(item_id)) is not None and item.reference.ranking:
        corrected, result.corrections[item.ext_id], left_out = _select.corrected_item(
            item, review, choice.corrections or ""
        )
        if corrected is None:
            result.skipped.append((item.ext_id, left_out))
            return None
        item = corrected
    labels, adjudication = current_labels(store, item_id)
    why = None if choice.include_discarded else discarded_by(labels, adjudication)
    why = why or only_rejects(choice.only, labels, adjudication)
    if why is not None:
        result.skipped.append((item.ext_id, why))
        return None
    preference = resolve_preference(item, labels, adjudication, choice.source, choice.fallback_reference)
    entry = ExportItem(item, preference, labels, adjudication)
    why = export_format.rejects(entry)
    if why is not None:
        result.skipped.append((item.ext_id, why))
        return None
    return ExportItem(item, preference, labels, adjudication, copier.item_media(item))


__all__ = [
    "EXPORT_FORMATS",
    "MEDIA_CHOICES",
    "MEDIA_DEFAULTS",
    "MEDIA_DIR",
    "ONLY_CHOICES",
    "SOURCE_KINDS",
    "ExportError",
    "ExportItem",
    "ExportResult",
    "Preference",
    "PreferenceSource",
    "consensus_preference",
    "current_labels",
    "default_media",
    "describe_table_filter",
    "discarded_by",
    "export_project",
    "reference_preference",
    "resolve_preference",
    "select_items",
]
