"""Row writers for the curated export: one function per output format, in a registry.

:mod:`pairscope.app.curation.export` decides which items go out, with which preference, and copies
their media; the writers here only turn one :class:`ExportItem` into one JSON row (or say
why the format cannot hold it). Adding a format is one :class:`ExportFormat` in
``EXPORT_FORMATS``: nothing else branches on format names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..formats.vlrewardbench import order_to_ranks
from ..records import ErrorTag, Item, Label
from ..taxonomy import vlrewardbench_category


@dataclass(frozen=True)
class Preference:
    """The preference an export writes for one item, and where it came from.

    ``source`` is ``"adjudication"`` (the newest current adjudication), ``"consensus"``
    (every annotator's current label that states a preference states the same one),
    ``"annotator"`` (one named annotator's current label), ``"reference"`` (the dataset's
    own ranking) or ``"none"`` (the chosen source gave none: ``missing`` says why, e.g.
    ``"no human preference"``). ``annotators`` name whose labels decided it.
    ``ranking`` holds response indices best first.
    """

    source: str
    outcome: str | None = None
    ranking: tuple[int, ...] = ()
    strength: str | None = None
    error_tags: tuple[ErrorTag, ...] = ()
    discard_reasons: tuple[str, ...] = ()
    annotators: tuple[str, ...] = ()
    missing: str | None = None

    @property
    def preferred(self) -> int | None:
        return self.ranking[0] if self.outcome == "prefer" and self.ranking else None


@dataclass(frozen=True)
class ExportedMedia:
    """One media file of an exported item: ``path`` is relative to the export folder
    (``media/<sha256><suffix>``), ``None`` when the file could not be copied."""

    kind: str
    ref: str
    path: str | None
    sha256: str | None = None
    problem: str | None = None


@dataclass(frozen=True)
class ExportItem:
    """Everything a row writer may use for one item."""

    item: Item
    preference: Preference
    labels: dict[str, Label] = field(default_factory=dict)  # annotator → current label
    adjudication: Label | None = None
    media: tuple[ExportedMedia, ...] = ()

    def media_paths(self, kind: str | None = None) -> list[str]:
        return [m.path for m in self.media if m.path is not None and (kind is None or m.kind == kind)]


def tag_text(tag: ErrorTag) -> str:
    """An error tag as a dataset writes it: the raw text if it has one (re-imports to the
    same tag), else PairScope's own form, e.g. ``recognition(text): note``."""
    return tag.raw or tag.label()


def full_ranks(ranking: tuple[int, ...], n: int) -> list[int]:
    """VL-RewardBench's per-response ranks (``[0, 1]``: response 0 preferred).

    A ranking naming all but one response is completed with the last one; responses a
    partial ranking leaves out share the next rank (they are not ordered among
    themselves).
    """
    ranking = tuple(ranking)
    if len(ranking) == n - 1:
        ranking += tuple(i for i in range(n) if i not in ranking)
    if len(ranking) == n:
        return order_to_ranks(ranking)
    ranks = [len(ranking)] * n
    for rank, idx in enumerate(ranking):
        ranks[idx] = rank
    return ranks


def _needs_preference(x: ExportItem) -> str | None:
    """Why an item has no exportable preference (``None``: it has one)."""
    pref = x.preference
    if pref.outcome == "prefer" and pref.ranking:
        return None
    if pref.source == "none":
        return pref.missing or "no preference"
    what = {"tie": "tie", "both_bad": "both responses bad", "discard": "discarded"}.get(
        pref.outcome or "", "no ranking"
    )
    return f"{what} — the format needs a chosen/rejected pair"


def _trl_rejects(x: ExportItem) -> str | None:
    if len(x.item.responses) != 2:
        return f"TRL rows need exactly 2 responses, the item has {len(x.item.responses)}"
    if any(m.kind == "video" for m in x.item.media):
        return "TRL rows hold images only; the item has a video"
    return _needs_preference(x)


def _vlrewardbench_rejects(x: ExportItem) -> str | None:
    if len(x.item.responses) < 2:
        return f"VL-RewardBench rows need at least 2 responses, the item has {len(x.item.responses)}"
    return _needs_preference(x)


def _query_text(item: Item) -> str:
    """The query as the benchmark writes it: the original (``<image>\\n…``) when the
    dataset kept one; a TRL conversational prompt's raw form is a message list, not a query."""
    if item.prompt_raw is not None and item.source_format != "trl":
        return item.prompt_raw
    return item.prompt


def _tags_of(x: ExportItem) -> tuple[ErrorTag, ...]:
    """The exported preference's error tags, or the dataset's when the deciding label has none."""
    return x.preference.error_tags or x.item.reference.error_tags


def vlrewardbench_row(x: ExportItem) -> dict[str, Any]:
    """A VL-RewardBench row: ``id, query, response, human_ranking, image_path, query_source,
    human_error_analysis, models, ground_truth`` plus the item's unknown fields verbatim.

    ``image_path`` is one relative path, a list when there are several, ``null`` when none.
    The benchmark has images only: a video goes to ``video_path``, and ``category`` is
    added when the id prefix (which the benchmark's scripts categorise by) says otherwise.
    """
    item = x.item
    images = x.media_paths("image")
    row: dict[str, Any] = {
        "id": item.dataset_id,
        "query": _query_text(item),
        "response": [r.text for r in item.responses],
        "human_ranking": full_ranks(x.preference.ranking, len(item.responses)),
        "image_path": images[0] if len(images) == 1 else (images or None),
        "query_source": item.extra.get("query_source"),
        "human_error_analysis": [tag_text(t) for t in _tags_of(x)],
        "models": [r.model for r in item.responses],
        "ground_truth": item.reference.ground_truth,
    }
    videos = x.media_paths("video")
    if videos:  # not part of the benchmark's schema (images only), but not dropped either
        row["video_path"] = videos[0] if len(videos) == 1 else videos
    # The benchmark derives the category from the id prefix; keep ours when that disagrees.
    original = next((m.ref for m in item.media if m.kind == "image"), None)
    if vlrewardbench_category(item.dataset_id, original)[0] != item.category:
        row["category"] = item.category
    for key, value in item.extra.items():
        row.setdefault(key, value)
    return row


def trl_row(x: ExportItem) -> dict[str, Any]:
    """A TRL preference row with plain strings: ``id, prompt, chosen, rejected, images`` and
    ``preference_source`` (where the preference came from; trainers ignore extra columns)."""
    item = x.item
    chosen = x.preference.preferred
    assert chosen is not None, "_trl_rejects turns away items without a preferred response"
    texts = [r.text for r in item.responses]
    return {
        "id": item.dataset_id,
        "prompt": item.prompt,
        "chosen": texts[chosen],
        "rejected": texts[1 - chosen],
        "images": x.media_paths("image"),
        "preference_source": x.preference.source,
    }


def _tag_dict(tag: ErrorTag) -> dict[str, Any]:
    return {"kind": tag.kind, "subkind": tag.subkind, "note": tag.note, "raw": tag.raw}


def label_dict(label: Label) -> dict[str, Any]:
    """A stored label as JSON (response indices, never screen sides)."""
    return {
        "annotator": label.annotator,
        "kind": label.kind,
        "outcome": label.outcome,
        "preferred": label.preferred,
        "ranking": list(label.ranking),
        "strength": label.strength,
        "error_types": [_tag_dict(t) for t in label.error_types],
        "discard_reasons": list(label.discard_reasons),
        "note": label.note,
        "display_order": list(label.display_order),
        "step_marks": [list(m) for m in label.step_marks],
        "created_at": label.created_at,
        "uuid": label.uuid,
    }


def jsonl_row(x: ExportItem) -> dict[str, Any]:
    """PairScope's own row: the whole item, its reference, the labels and the exported
    preference. ``image``/``video`` (relative paths) and ``reference.*`` use the generic
    JSONL importer's field names, so ``JSONL_IMPORT_MAP`` re-imports the items."""
    item, ref, pref = x.item, x.item.reference, x.preference
    return {
        "id": item.dataset_id,
        "prompt": item.prompt,
        "prompt_raw": item.prompt_raw,
        "responses": [r.text for r in item.responses],
        "models": [r.model for r in item.responses],
        "steps": [[{"text": s.text, "correct": s.correct} for s in r.steps] for r in item.responses]
        if item.is_stepwise
        else None,
        "category": item.category,
        "subset": item.subset,
        "source_format": item.source_format,
        "image": x.media_paths("image"),
        "video": x.media_paths("video"),
        "media": [
            {"kind": m.kind, "path": m.path, "ref": m.ref, "sha256": m.sha256, "problem": m.problem} for m in x.media
        ],
        "reference": {
            "ranking": list(ref.ranking) if ref.ranking else None,
            "strength": ref.strength,
            "error_tags": [tag_text(t) for t in ref.error_tags],
            "error_tags_parsed": [_tag_dict(t) for t in ref.error_tags],
            "ground_truth": ref.ground_truth,
        },
        "preference": {
            "source": pref.source,
            "outcome": pref.outcome,
            "preferred": pref.preferred,
            "ranking": list(pref.ranking),
            "strength": pref.strength,
            "error_types": [_tag_dict(t) for t in pref.error_tags],
            "discard_reasons": list(pref.discard_reasons),
            "annotators": list(pref.annotators),
            "missing": pref.missing,
        },
        "labels": [label_dict(x.labels[name]) for name in sorted(x.labels)],
        "adjudication": label_dict(x.adjudication) if x.adjudication is not None else None,
        "extra": item.extra,
    }


#: ``pairscope import FILE --format jsonl --map …`` for a ``jsonl`` export (the dataset
#: reference lives under ``reference``; id, prompt, responses, category, subset, image and
#: video need no mapping).
JSONL_IMPORT_MAP = {
    "ranking": "reference.ranking",
    "strength": "reference.strength",
    "error_tags": "reference.error_tags",
    "ground_truth": "reference.ground_truth",
}


@dataclass(frozen=True)
class ExportFormat:
    """An output format: the JSONL file name, the row writer, and a check that returns
    why an item cannot be written in this format (``None``: it can)."""

    name: str
    filename: str
    description: str
    row: Callable[[ExportItem], dict[str, Any]]
    rejects: Callable[[ExportItem], str | None] = lambda x: None
    reimport: dict[str, Any] | None = None
    #: Write media under the dataset's own relative paths (where they stay inside the folder).
    keep_media_paths: bool = False


EXPORT_FORMATS: dict[str, ExportFormat] = {
    f.name: f
    for f in (
        ExportFormat(
            "vlrewardbench",
            "vlrewardbench.jsonl",
            "VL-RewardBench rows (id, query, response, human_ranking, image_path, …) for its evaluation scripts",
            vlrewardbench_row,
            _vlrewardbench_rejects,
            reimport={"format": "vlrewardbench", "media_root": "."},
            keep_media_paths=True,
        ),
        ExportFormat(
            "trl",
            "trl.jsonl",
            "TRL preference rows (prompt, chosen, rejected, images) for DPO/reward trainers",
            trl_row,
            _trl_rejects,
            reimport={"format": "trl", "media_root": "."},
        ),
        ExportFormat(
            "jsonl",
            "items.jsonl",
            "PairScope rows: item, media, reference, every annotator's current label, adjudication",
            jsonl_row,
            reimport={"format": "jsonl", "media_root": ".", "map": JSONL_IMPORT_MAP},
        ),
    )
}
