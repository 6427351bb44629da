"""TRL preference rows (``DPOTrainer``'s dataset format): ``prompt``, ``chosen``, ``rejected``
and optional ``images``; and the Hugging Face multimodal preference layouts built the same
way (``hf-preference``): RLAIF-V (``idx, question, chosen, rejected, image`` with the image
as ``{"bytes", "path"}``, ``image_path, ds_name, origin_dataset, origin_split``; Parquet
shards) and MM-RLHF (``prompt, chosen, rejected, image``), as JSONL or Parquet.

Each field is a plain string, or TRL's conversational form: a list of ``{"role", "content"}``
messages whose content is a string or a list of parts (``{"type": "text", "text": …}``,
``{"type": "image"}``). The original conversational prompt is kept in ``prompt_raw``; a
chosen/rejected message list that a single assistant message cannot rebuild is kept in
``extra`` so an export loses nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from ..records import Item, MediaRef, Reference, Response
from .base import (
    ImportContext,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    optional_str,
    parse_rows,
    read_jsonl,
    register,
    type_name,
    value_problem,
)
from .fields import derived_id, ext_id_or, media_refs, require, resolve_media, warn_refused, what
from .parquet import image_media, is_parquet, parse_parquet

ALIASES = {
    "id": ("id",),
    "prompt": ("prompt",),
    "chosen": ("chosen",),
    "rejected": ("rejected",),
    "images": ("images", "image"),
    "category": ("category",),
}


def _content_text(content: Any, label: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RowProblem(f"{label}: expected a string or a list of parts, got {type_name(content)}")
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise RowProblem(f"{label}[{j}]: expected a part like {{'type': 'text', 'text': …}}, got {type_name(part)}")
        if part.get("type", "text") == "text":
            texts.append(expect_str(part.get("text"), f"{label}[{j}].text", allow_empty=True))
    return "\n".join(texts)


def message_text(value: Any, label: str) -> tuple[str, bool]:
    """``(text, conversational)`` of a plain string or a list of chat messages.

    One message gives its text; several give ``role: text`` lines.
    """
    if isinstance(value, str):
        return value, False
    if not isinstance(value, list) or not value:
        raise RowProblem(f"{label}: expected a string or a non-empty list of messages, got {type_name(value)}")
    turns = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or "content" not in message:
            raise RowProblem(
                f"{label}[{i}]: expected a message like {{'role': …, 'content': …}}, got {type_name(message)}"
            )
        role = expect_str(message.get("role"), f"{label}[{i}].role")
        turns.append((role, _content_text(message["content"], f"{label}[{i}].content")))
    if len(turns) == 1:
        return turns[0][1], True
    return "\n".join(f"{role}: {text}" for role, text in turns), True


def _image_refs(value: Any, label: str) -> list[str]:
    """Paths from ``images``: strings, or ``{"path": …}`` objects as 🤗 datasets write them."""
    if isinstance(value, list):
        value = [v["path"] if isinstance(v, dict) and isinstance(v.get("path"), str) else v for v in value]
    elif isinstance(value, dict) and isinstance(value.get("path"), str):
        value = value["path"]
    return media_refs(value, label)


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict, fmt: str = "trl") -> Item:
    """Build an :class:`Item` from one TRL (or Hugging Face) preference row."""
    values, texts, conversational = {}, {}, False
    for name in ("prompt", "chosen", "rejected"):
        key, value = require(reader, row, name)
        texts[name], conv = message_text(value, what(name, key))
        values[name] = value
        conversational = conversational or conv
    if isinstance(values["prompt"], str) and not texts["prompt"].strip():  # image-only chat prompts are fine
        raise RowProblem("prompt: expected a non-empty prompt")
    why = value_problem(values["prompt"]) if conversational else None  # kept as JSON text (Parquet: any value)
    if why is not None:
        raise RowProblem(f"prompt: {why}")
    i_key, i_value = reader.find(row, "images")
    embedded = i_key is not None and _has_bytes(i_value)
    refs = [] if i_key is None or embedded else _image_refs(i_value, what("images", i_key))
    ext_id = ext_id_or(
        reader,
        row,
        line,
        derived_id(
            fmt, values["prompt"], values["chosen"], values["rejected"], refs if not embedded else _digest(i_value)
        ),
    )
    extra = reader.extra(row)
    if conversational:
        extra["conversational"] = True
        for name in ("chosen", "rejected"):
            if values[name] != [{"role": "assistant", "content": texts[name]}]:
                extra[f"{name}_raw"] = values[name]
    c_key, c_value = reader.find(row, "category")
    return Item(
        ext_id=ext_id,
        prompt=texts["prompt"],
        prompt_raw=json.dumps(values["prompt"], ensure_ascii=False) if conversational else None,
        responses=(Response(0, texts["chosen"]), Response(1, texts["rejected"])),
        media=(
            _embedded(ctx, line, ext_id, i_value, i_key)
            if embedded
            else resolve_media(ctx, line, ext_id, refs, "image")
        ),
        category=(None if c_key is None else optional_str(c_value, what("category", c_key))) or "general",
        source_format=fmt,
        reference=Reference(ranking=(0, 1)),
        extra=extra,
    )


def _sniff(row: dict) -> bool:
    video_keys = ("video", "video_path", "video_file", "videos")
    return all(k in row for k in ("prompt", "chosen", "rejected")) and not any(k in row for k in video_keys)


@register("trl", "TRL preference rows: prompt, chosen, rejected (plain or conversational), images", sniff=_sniff)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))


def _has_bytes(value: Any) -> bool:
    first = value[0] if isinstance(value, list) and value else value
    return isinstance(first, (bytes, bytearray)) or (
        isinstance(first, dict) and isinstance(first.get("bytes"), (bytes, bytearray))
    )


def _digest(value: Any) -> str:
    entries = value if isinstance(value, list) else [value]
    data = [e.get("bytes") if isinstance(e, dict) else e for e in entries]
    return hashlib.sha1(b"".join(bytes(d or b"") for d in data)).hexdigest()


def _embedded(ctx: ImportContext, line: int, ext_id: str, value: Any, key: str | None) -> tuple[MediaRef, ...]:
    media = image_media(ctx, value, key or "image")
    warn_refused(ctx, line, ext_id, media)
    return media


HF_ALIASES = {
    **ALIASES,
    "id": ("id", "idx", "uid"),
    "prompt": ("prompt", "question", "query"),
    "images": ("image", "images", "image_path"),
}


def _sniff_hf(row: dict) -> bool:
    video_keys = ("video", "video_path", "video_file", "videos")
    has_prompt = any(k in row for k in ("question", "query", "prompt"))
    return has_prompt and "chosen" in row and "rejected" in row and not any(k in row for k in video_keys)


@register(
    "hf-preference",
    "Hugging Face multimodal preference rows (RLAIF-V, MM-RLHF): question/prompt, chosen, rejected,"
    " image bytes or path; JSONL, Parquet or a folder of Parquet shards",
    suffixes=(".jsonl", ".parquet"),
    sniff=_sniff_hf,
)
def parse_hf(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, HF_ALIASES)
    if is_parquet(ctx.path):
        return parse_parquet(ctx, lambda c, line, row: build_item(c, reader, line, row, "hf-preference"))
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row, "hf-preference"))
