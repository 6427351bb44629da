"""VideoRewardBench: a video, a prompt, a chosen and a rejected response, an evaluation
dimension (long-form / short-form perception, knowledge, reasoning, safety) and optionally a
preference strength. Common key spellings are accepted; ``--map`` overrides them.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..records import Item, Reference, Response
from ..taxonomy import video_dimension
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
)
from .fields import (
    derived_id,
    ext_id_or,
    media_refs,
    require,
    resolve_media,
    strength_of,
    what,
)

ALIASES = {
    "id": ("id", "idx", "uid", "sample_id"),  # not video_id: several pairs share a video
    "video": ("video", "video_path", "video_file", "videos"),
    "prompt": ("prompt", "query", "question", "instruction"),
    "chosen": ("chosen", "chosen_response", "response_chosen", "preferred"),
    "rejected": ("rejected", "rejected_response", "response_rejected", "dispreferred"),
    "dimension": ("dimension", "category", "task_type", "task", "aspect"),
    "strength": ("preference_strength", "strength", "margin", "preference_level"),
}


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """Build an :class:`Item` from one VideoRewardBench row."""
    v_key, v_value = require(reader, row, "video")
    refs = media_refs(v_value, what("video", v_key))
    if not refs:
        raise RowProblem(f"{what('video', v_key)}: empty; a VideoRewardBench row needs a video path")
    p_key, p_value = require(reader, row, "prompt")
    prompt = expect_str(p_value, what("prompt", p_key))
    c_key, c_value = require(reader, row, "chosen")
    chosen = expect_str(c_value, what("chosen", c_key), allow_empty=True)
    r_key, r_value = require(reader, row, "rejected")
    rejected = expect_str(r_value, what("rejected", r_key), allow_empty=True)
    ext_id = ext_id_or(reader, row, line, derived_id("vrb", prompt, refs, chosen, rejected))

    d_key, d_value = reader.find(row, "dimension")
    raw_dimension = None if d_key is None else optional_str(d_value, what("dimension", d_key))
    s_key, s_value = reader.find(row, "strength")
    strength = strength_of(s_value, what("strength", s_key or "strength"))
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        responses=(Response(0, chosen), Response(1, rejected)),
        media=resolve_media(ctx, line, ext_id, refs, "video"),
        category=video_dimension(raw_dimension),
        subset=raw_dimension,
        source_format="videorewardbench",
        reference=Reference(ranking=(0, 1), strength=strength),
        extra=reader.extra(row),
    )


def _sniff(row: dict) -> bool:
    return any(k in row for k in ALIASES["chosen"]) and any(k in row for k in ALIASES["video"])


@register(
    "videorewardbench",
    "VideoRewardBench pairs: video, prompt, chosen/rejected, dimension, preference strength",
    suffixes=(".jsonl",),
    sniff=_sniff,
)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))
