"""MR²Bench-style ranking rows: ``id, prompt, responses[N], rankings, image, video``.

``rankings`` gives each response's rank, **1 = best**, ties allowed (``[1, 2, 2]``). The
:class:`Reference` holds the ranking itself, ties kept (``Reference.ranks``, the dense ranks:
``[1, 1, 3, 4]`` → ``(1, 1, 2, 3)``; ``items.ref_ranks``), and ``ranking`` their order (tied
responses by index, so ``chosen`` is the first of a tied best). ``rankings`` stays in the
item's fields verbatim too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..rankings import dense_ranks, order_from_ranks
from ..records import Item, Reference, Response
from .base import (
    ImportContext,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    expect_str_list,
    optional_str,
    parse_rows,
    read_jsonl,
    register,
)
from .fields import derived_id, ext_id_or, media_refs, resolve_media
from .messages import shown

ALIASES = {
    "id": ("id",),
    "prompt": ("prompt",),
    "responses": ("responses",),
    "image": ("image",),
    "video": ("video",),
    "category": ("category", "task"),
}


def reference_of(ranks: Any, n: int) -> Reference:
    """The reference of 1-based ``rankings``: their order, and with ties the dense ranks too."""
    if type(ranks) is not list or any(type(r) is not int for r in ranks):
        raise RowProblem(f"rankings: expected a list of integer ranks, got {shown(ranks, quote=True)}")
    if len(ranks) != n:
        raise RowProblem(f"rankings: has {len(ranks)} ranks for {n} responses")
    if any(r < 1 for r in ranks):
        raise RowProblem(f"rankings: ranks start at 1 (= best), got {shown(ranks)}")
    dense = dense_ranks(ranks)
    return Reference(ranking=order_from_ranks(dense), ranks=dense)


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """Build an :class:`Item` from one MR²Bench-style row."""
    prompt = expect_str(reader.get(row, "prompt"), "prompt")
    texts = expect_str_list(reader.get(row, "responses"), "responses", min_len=2)
    images = media_refs(reader.get(row, "image"), "image")
    videos = media_refs(reader.get(row, "video"), "video")
    ext_id = ext_id_or(reader, row, line, derived_id("mr2", prompt, texts, images, videos))
    reference = reference_of(row.get("rankings"), len(texts))
    media = resolve_media(ctx, line, ext_id, images, "image") + resolve_media(ctx, line, ext_id, videos, "video")
    category = optional_str(reader.get(row, "category"), "category")
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        responses=tuple(Response(i, t) for i, t in enumerate(texts)),
        media=media,
        category=(category or "general").lower(),
        subset=category,
        source_format="mr2bench",
        reference=reference,
        extra=reader.extra(row),
    )


def _sniff(row: dict) -> bool:
    return "rankings" in row and "responses" in row


@register(
    "mr2bench",
    "MR²Bench-style rows: prompt, responses[N], rankings (1 = best, ties allowed), image, video",
    sniff=_sniff,
)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))
