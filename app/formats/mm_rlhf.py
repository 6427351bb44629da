"""MM-RLHF-RewardBench (yfzhang114/MM-RLHF-RewardBench; scored by the MM-RLHF / r1_reward code):
JSONL rows ``id, image | video, prompt, chosen, rejected, chosen_reason, rejected_reason``.

The same ``id`` repeats across several pairs of one prompt. Each row is one item (chosen is
response 0); the project keeps the release id as the item's dataset id (``source_id``; later
pairs are shown as ``id#2``, ``id#3``…), which is the group the ``mm-rlhf`` convention's ACC+
counts (an id is right only if all its pairs are). ``chosen_reason``/``rejected_reason`` (the
reference's rationale) stay in the item's fields verbatim. The category is the first keyword
of the media path among mcq, long, short, safety, video.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..records import Item, Reference, Response
from .base import (
    ImportContext,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    item_id_of,
    parse_rows,
    read_jsonl,
    register,
)
from .fields import media_refs, resolve_media

ALIASES = {
    "id": ("id",),
    "prompt": ("prompt",),
    "chosen": ("chosen",),
    "rejected": ("rejected",),
    "image": ("image",),
    "video": ("video",),
}

#: The media-path keywords that name a category, in the order they are tried.
CATEGORY_KEYWORDS = ("mcq", "long", "short", "safety", "video")


def category_of(paths: list[str]) -> str:
    """The first of :data:`CATEGORY_KEYWORDS` found in the media path(s); else ``general``."""
    text = " ".join(paths).lower()
    for word in CATEGORY_KEYWORDS:
        if word in text:
            return word
    return "general"


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """Build an :class:`Item` from one MM-RLHF-RewardBench row."""
    ext_id = item_id_of(reader.get(row, "id"), line)
    prompt = expect_str(reader.get(row, "prompt"), "prompt")
    chosen = expect_str(reader.get(row, "chosen"), "chosen", allow_empty=True)
    rejected = expect_str(reader.get(row, "rejected"), "rejected", allow_empty=True)
    images = media_refs(reader.get(row, "image"), "image")
    videos = media_refs(reader.get(row, "video"), "video")
    if not images and not videos:
        raise RowProblem("image/video: the row names no media; an MM-RLHF-RewardBench row has one")
    media = resolve_media(ctx, line, ext_id, images, "image") + resolve_media(ctx, line, ext_id, videos, "video")
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        responses=(Response(0, chosen), Response(1, rejected)),
        media=media,
        category=category_of(images + videos),
        source_format="mm_rlhf",
        reference=Reference(ranking=(0, 1)),
        extra=reader.extra(row),
    )


def _sniff(row: dict) -> bool:
    return "chosen" in row and "rejected" in row and ("chosen_reason" in row or "rejected_reason" in row)


@register(
    "mm_rlhf",
    "MM-RLHF-RewardBench: id (repeated per prompt), image|video, prompt, chosen, rejected, *_reason",
    sniff=_sniff,
)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))
