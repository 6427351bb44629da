"""Row writers for the curated export: one function per output format, in a registry.

:mod:`pairscope.app.curation.export` decides which items go out, with which preference, and copies
their media; the writers here only turn one :class:`ExportItem` into one row (``expand``:
several, a ranking's induced pairs; :mod:`.export_rankings`) or say why the format cannot
hold it: a JSONL line, or for ``hf`` a Parquet row that
:mod:`.hf_dataset` writes (its ``sink``). Adding a format is one :class:`ExportFormat` in
``EXPORT_FORMATS``: nothing else branches on format names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..formats.vlrewardbench import order_to_ranks
from ..records import ErrorTag, Item, Label
from ..taxonomy import vlrewardbench_category
from .export_rankings import (
    induced_pair_items,
    mr2bench_rejects,
    mr2bench_row,
    rewardbench2_rejects,
    rewardbench2_row,
    trl_rank_rejects,
)

if TYPE_CHECKING:
    from ..durable import Made


@dataclass(frozen=True)
class Preference:
    """The preference an export writes for one item, and where it came from.

    ``source`` is ``"adjudication"`` (the newest current adjudication), ``"consensus"``
    (every annotator's current label that states a preference states the same one),
    ``"annotator"`` (one named annotator's current label), ``"reference"`` (the dataset's
    own ranking) or ``"none"`` (the chosen source gave none: ``missing`` says why, e.g.
    ``"no human preference"``). ``annotators`` name whose labels decided it.
    ``ranking`` holds response indices best first; ``ranks`` the full ranking with ties (one
    dense rank per response, 1 = best: ``Label.ranks``, ``Reference.ranks``), ``()`` when none.
    """

    source: str
    outcome: str | None = None
    ranking: tuple[int, ...] = ()
    ranks: tuple[int, ...] = ()
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
    """One media file of an exported item. ``path`` is what the row names, never ``None``:
    the copy's path relative to the export folder, else (not copied: ``--media reference``,
    or the file is missing) the dataset's own reference. ``sha256`` is the copy's; ``source``
    the file on disk (``None``: missing, and ``problem`` says why, without machine paths)."""

    kind: str
    ref: str
    path: str | None
    sha256: str | None = None
    problem: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class ExportItem:
    """Everything a row writer may use for one item."""

    item: Item
    preference: Preference
    labels: dict[str, Label] = field(default_factory=dict)  # annotator → current label
    adjudication: Label | None = None
    media: tuple[ExportedMedia, ...] = ()
    row_id: str | None = None  # the row's id when not the item's (an induced pair's)

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


def _hf_rejects(x: ExportItem) -> str | None:
    if len(x.item.responses) != 2:
        return f"preference rows need exactly 2 responses, the item has {len(x.item.responses)}"
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


def _text_part(text: Any) -> dict[str, Any] | None:
    return {"type": "text", "text": text} if isinstance(text, str) else None


def _media_part(kind: str) -> dict[str, Any]:
    """A placeholder part; ``text`` is null as in TRL's own sets, so every part has one shape
    (``datasets`` then reads ``content`` as a struct list, in JSONL as in Parquet)."""
    return {"type": kind, "text": None}


def _parts(content: Any) -> list[dict[str, Any]] | None:
    """Content as TRL's parts (``{"type": "text", "text": …}``, ``{"type": "image"}``); ``None``
    for a shape those cannot hold (another part type, a part without its text)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return None
    parts = []
    for part in content:
        kind = part.get("type", "text") if isinstance(part, dict) else None
        parsed = _media_part("image") if kind == "image" else _text_part(part.get("text")) if kind == "text" else None
        if parsed is None:
            return None
        parts.append(parsed)
    return parts


def _messages(raw: Any) -> list[dict[str, Any]] | None:
    """A stored conversational field (a JSON message list) in TRL's parts form, or ``None``."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, list) or not raw:
        return None
    messages = []
    for message in raw:
        role = message.get("role") if isinstance(message, dict) else None
        parts = _parts(message.get("content")) if isinstance(role, str) and isinstance(message, dict) else None
        if parts is None:
            return None
        messages.append({"role": role, "content": parts})
    return messages


def _placeholders(messages: list[dict[str, Any]], kind: str = "image") -> int:
    return sum(1 for m in messages for part in m["content"] if part["type"] == kind)


def prompt_messages(x: ExportItem, n_images: int, n_videos: int = 0) -> list[dict[str, Any]]:
    """The prompt as TRL's vision sets write it: one user message holding one ``{"type":
    "image"}`` per image (in order; ``{"type": "video"}`` per video), then the text.

    A prompt imported in conversational form (TRL, Hugging Face) keeps its own messages
    (system turns, several turns) when they place exactly one image placeholder per image;
    a message list without placeholders gets them before its first user text, as TRL's
    ``prepare_multimodal_messages`` would place them."""
    item = x.item
    original = _messages(item.prompt_raw) if item.source_format in _CONVERSATIONAL_SOURCES and not n_videos else None
    if original is not None and _placeholders(original) == 0 and n_images:
        first_user = next((m for m in original if m["role"] == "user"), None)
        if first_user is not None:
            first_user["content"][:0] = [_media_part("image") for _ in range(n_images)]
    if original is not None and _placeholders(original) == n_images:
        return original
    videos = [_media_part("video") for _ in range(n_videos)]
    return [{"role": "user", "content": [*videos, *_text_and_images(_query_text(item), n_images)]}]


IMAGE_TOKEN = "<image>"


def _text_and_images(text: str, n_images: int) -> list[dict[str, Any]]:
    """The text's parts with one image placeholder per image: where the text's own
    ``<image>`` tokens stand when it has one per image, else all before the text. The tokens
    never stay in the text (a LLaVA-style processor would count them as images too)."""
    pieces = text.split(IMAGE_TOKEN)
    if n_images and len(pieces) == n_images + 1:
        parts: list[dict[str, Any]] = []
        for i, piece in enumerate(pieces):
            if i:
                parts.append(_media_part("image"))
            if piece.strip():
                parts.append({"type": "text", "text": piece.strip()})
        return parts
    clean = " ".join(piece.strip() for piece in pieces if piece.strip()) if len(pieces) > 1 else text
    return [*(_media_part("image") for _ in range(n_images)), {"type": "text", "text": clean}]


def response_messages(x: ExportItem, index: int) -> list[dict[str, Any]]:
    """Response ``index`` as an assistant message (the original message list when a
    conversational import kept one: ``chosen_raw`` for response 0, ``rejected_raw`` for 1)."""
    item = x.item
    if item.source_format in _CONVERSATIONAL_SOURCES and index in (0, 1):
        original = _messages(item.extra.get(("chosen_raw", "rejected_raw")[index]))
        if original is not None and not _placeholders(original):
            return original
    return [{"role": "assistant", "content": [{"type": "text", "text": item.responses[index].text}]}]


#: Formats whose prompts PairScope keeps as the original message list (``prompt_raw``).
_CONVERSATIONAL_SOURCES = ("trl", "hf-preference")


def _pair(x: ExportItem) -> tuple[int, int]:
    chosen, ranking = x.preference.preferred, x.preference.ranking
    assert chosen is not None, "the format's check turns away items without a preferred response"
    return chosen, ranking[1] if len(ranking) > 1 else 1 - chosen


def trl_row(x: ExportItem) -> dict[str, Any]:
    """A TRL vision preference row, as TRL's own sets (``trl-lib/rlaif-v``) write it:
    ``prompt`` a user message with one image placeholder per image then the text,
    ``chosen``/``rejected`` assistant messages, ``images`` in order; plus ``id`` and
    ``preference_source`` (where the preference came from; trainers ignore extra columns)."""
    chosen, rejected = _pair(x)
    images = x.media_paths("image")
    return {
        "id": x.row_id or x.item.dataset_id,
        "prompt": prompt_messages(x, len(images)),
        "chosen": response_messages(x, chosen),
        "rejected": response_messages(x, rejected),
        "images": images,
        "preference_source": x.preference.source,
    }


def trl_plain_row(x: ExportItem) -> dict[str, Any]:
    """A TRL preference row with plain strings (text-only trainers); TRL's vision collator
    refuses these rows with images ("0 <|image_pad|> tokens and N images")."""
    chosen, rejected = _pair(x)
    texts = [r.text for r in x.item.responses]
    return {
        "id": x.row_id or x.item.dataset_id,
        "prompt": x.item.prompt,
        "chosen": texts[chosen],
        "rejected": texts[rejected],
        "images": x.media_paths("image"),
        "preference_source": x.preference.source,
    }


def hf_row(x: ExportItem) -> dict[str, Any]:
    """A Hugging Face dataset row: the TRL row's columns (``images`` as media entries, which
    :mod:`.hf_dataset` embeds as the ``Image`` feature's bytes), ``videos`` (relative paths;
    a ``{"type": "video"}`` placeholder each), ``category`` and ``preference_source``."""
    chosen, rejected = _pair(x)
    images = [m for m in x.media if m.kind == "image"]
    videos = x.media_paths("video")
    return {
        "id": x.item.dataset_id,
        "prompt": prompt_messages(x, len(images), len(videos)),
        "chosen": response_messages(x, chosen),
        "rejected": response_messages(x, rejected),
        "images": images,
        "videos": videos,
        "category": x.item.category,
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
        "ranks": list(label.ranks),
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
            "ranks": list(ref.ranks) if ref.ranks else None,
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
            "ranks": list(pref.ranks),
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
    "ranks": "reference.ranks",
    "strength": "reference.strength",
    "error_tags": "reference.error_tags",
    "ground_truth": "reference.ground_truth",
}


class RowSink(Protocol):
    """Where a format's rows go: :meth:`commit` places the data files and returns them
    (relative name → ``{"sha256", "bytes"}``); :meth:`finish` writes the files made from
    the finished manifest (a dataset card) before the manifest itself."""

    def write(self, row: dict[str, Any]) -> None: ...
    def commit(self) -> dict[str, dict[str, Any]]: ...
    def discard(self) -> None: ...
    def finish(self, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]: ...


def _hf_sink(out_dir: Path, made: Made) -> RowSink:
    from .hf_dataset import ParquetRows  # pyarrow is loaded by this format only

    return ParquetRows(out_dir, made)


@dataclass(frozen=True)
class ExportFormat:
    """An output format: its data file (a glob for sharded ones), the row writer, and a
    check that returns why an item cannot be written in this format (``None``: it can).
    ``sink`` writes the rows (``None``: one JSONL file, ``filename``)."""

    name: str
    filename: str
    description: str
    row: Callable[[ExportItem], dict[str, Any]]
    rejects: Callable[[ExportItem], str | None] = lambda x: None
    reimport: dict[str, Any] | None = None
    #: Write media under the dataset's own relative paths (where they stay inside the folder).
    keep_media_paths: bool = False
    sink: Callable[[Path, Made], RowSink] | None = None
    #: The items an item's rows are written from (a ranking's induced pairs); ``None``: itself.
    expand: Callable[[ExportItem], list[ExportItem]] | None = None

    def rows_of(self, x: ExportItem) -> list[dict[str, Any]]:
        """The item's rows: one, or one per item :attr:`expand` makes of it."""
        return [self.row(part) for part in (self.expand(x) if self.expand is not None else [x])]


def _trl_ranked_rejects(x: ExportItem) -> str | None:
    return trl_rank_rejects(x, _trl_rejects)


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
            "TRL vision preference rows (conversational prompt with image placeholders, chosen, rejected, images)"
            " for DPO/reward trainers",
            trl_row,
            _trl_ranked_rejects,
            reimport={"format": "trl", "media_root": "."},
            expand=induced_pair_items,
        ),
        ExportFormat(
            "trl-plain",
            "trl.jsonl",
            "TRL preference rows with plain strings (prompt, chosen, rejected, images) for text-only trainers",
            trl_plain_row,
            _trl_ranked_rejects,
            reimport={"format": "trl", "media_root": "."},
            expand=induced_pair_items,
        ),
        ExportFormat(
            "hf",
            "data/train-*.parquet",
            "a Hugging Face dataset: Parquet shards (TRL's conversational columns, images embedded as the Image"
            " feature, videos as paths) and a dataset card (README.md)",
            hf_row,
            _hf_rejects,
            reimport={"format": "hf-preference", "path": "."},
            sink=_hf_sink,
        ),
        ExportFormat(
            "jsonl",
            "items.jsonl",
            "PairScope rows: item, media, reference, every annotator's current label, adjudication",
            jsonl_row,
            reimport={"format": "jsonl", "media_root": ".", "map": JSONL_IMPORT_MAP},
        ),
        ExportFormat(
            "mr2bench",
            "mr2bench.jsonl",
            "MR²Bench-style ranking rows (id, prompt, responses, rankings: 1 = best, ties shared, image, video)"
            " for items with a full ranking",
            mr2bench_row,
            mr2bench_rejects,
            reimport={"format": "mr2bench", "media_root": "."},
        ),
        ExportFormat(
            "rewardbench2",
            "rewardbench2.jsonl",
            "RewardBench 2 rows (prompt, chosen and rejected lists, num_correct, total_completions, subset)"
            " for items ranked in two levels (chosen = rank 1)",
            rewardbench2_row,
            rewardbench2_rejects,
            reimport={"format": "rewardbench2", "media_root": "."},
        ),
    )
}
