"""VL-RewardBench: JSONL rows with image paths, or the Parquet release with image bytes.

A row holds ``id, query, response[N], human_ranking, image_path`` and optionally
``models, judge, rationale, query_source, meta, human_error_analysis, ground_truth``.
``human_ranking`` gives each response's rank, **0 = best** (``[0, 1]``: response 0 is
preferred) — a rank per response, unlike the generic format's ``ranking`` (response indices
best first). Without ties the reference ranking is their order. With ties no reference
preference is recorded (``ranking``/``chosen`` stay empty, as before: VL-RewardBench's ``cal.py``
scores a judge against the one preferred response, and a tie has none) and ``human_ranking``
is kept in the item's fields; the ranking with its ties is stored as ``Reference.ranks``
(``items.ref_ranks``: dense ranks from 1, ``[0, 0, 1]`` → ``(1, 1, 2)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..rankings import dense_ranks
from ..records import Item, MediaRef, Reference, Response
from ..taxonomy import parse_error_tags, strip_image_token, vlrewardbench_category
from .base import (
    ImportContext,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    expect_str_list,
    item_id_of,
    optional_str,
    parse_rows,
    read_jsonl,
    register,
)
from .fields import media_refs, resolve_media, warn_refused
from .messages import shown
from .parquet import image_media, is_parquet, parse_parquet

ALIASES = {
    "id": ("id",),
    "query": ("query",),
    "responses": ("response",),
    "ranking": ("human_ranking",),
    "image": ("image_path", "image"),
    "models": ("models",),
    "query_source": ("query_source",),
    "error_tags": ("human_error_analysis",),
    "ground_truth": ("ground_truth",),
}


def ranks_to_order(ranks: Any, n: int) -> tuple[int, ...] | None:
    """Turn a per-response rank list into response indices best first.

    Returns ``None`` for a tie (equal ranks); raises :class:`RowProblem` for anything
    that is not one integer rank per response.
    """
    if type(ranks) is not list or any(type(r) is not int for r in ranks):
        raise RowProblem(f"human_ranking: expected a list of integers, got {shown(ranks, quote=True)}")
    if len(ranks) != n:
        raise RowProblem(f"human_ranking: has {len(ranks)} ranks for {n} responses")
    if len(set(ranks)) != len(ranks):
        return None
    if n == 2:
        return (0, 1) if ranks[0] < ranks[1] else (1, 0)
    return tuple(sorted(range(n), key=ranks.__getitem__))


def order_to_ranks(order: tuple[int, ...]) -> list[int]:
    """Inverse of :func:`ranks_to_order` (used by exports)."""
    ranks = [0] * len(order)
    for rank, idx in enumerate(order):
        ranks[idx] = rank
    return ranks


def build_item(
    ctx: ImportContext, reader: RowReader, line: int, row: dict, media: tuple[MediaRef, ...] | None = None
) -> Item:
    """Build an :class:`Item` from one VL-RewardBench row (JSONL or Parquet)."""
    ext_id = item_id_of(reader.get(row, "id"), line)
    query = expect_str(reader.get(row, "query"), "query")
    texts = expect_str_list(reader.get(row, "responses"), "response", min_len=2)
    ranking = ranks_to_order(reader.get(row, "ranking"), len(texts))
    if ranking is None:
        ctx.warn(line, "human_ranking has a tie: no reference preference recorded (the ranks are kept)", ext_id)
    models = reader.get(row, "models")
    if not (isinstance(models, list) and len(models) == len(texts)):
        models = [None] * len(texts)
    elif not all(type(m) is str for m in models):
        models = [optional_str(m, f"models[{i}]") for i, m in enumerate(models)]
    responses = tuple(Response(i, t, m or None) for i, (t, m) in enumerate(zip(texts, models)))
    image_refs = media_refs(reader.get(row, "image"), "image_path")
    if media is None:
        media = resolve_media(ctx, line, ext_id, image_refs, "image")
    category, subset = vlrewardbench_category(ext_id, image_refs[0] if image_refs else None)
    source = optional_str(reader.get(row, "query_source"), "query_source")
    if category == "general" and source and not ext_id.lower().startswith("wildvision"):
        subset = source
    human = reader.get(row, "ranking")
    reference = Reference(
        ranking=ranking,
        error_tags=parse_error_tags(reader.get(row, "error_tags")),
        ground_truth=optional_str(reader.get(row, "ground_truth"), "ground_truth"),
        ranks=() if ranking is not None else dense_ranks([r - min(human) + 1 for r in human]),
    )
    extra = reader.extra(row)
    if source is not None:
        extra["query_source"] = source
    if ranking is None:
        extra["human_ranking"] = human
    return Item(
        ext_id=ext_id,
        prompt=strip_image_token(query),
        prompt_raw=query,
        responses=responses,
        media=media,
        category=category,
        subset=subset,
        source_format="vlrewardbench",
        reference=reference,
        extra=extra,
    )


def _sniff(row: dict) -> bool:
    return "human_ranking" in row and "response" in row


@register(
    "vlrewardbench",
    "VL-RewardBench rows (JSONL with image_path, or the Parquet release with image bytes)",
    suffixes=(".jsonl", ".json", ".parquet"),
    sniff=_sniff,
)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    if is_parquet(ctx.path):
        return parse_parquet(ctx, lambda c, line, row: _parquet_item(c, reader, line, row))
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))


def _parquet_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """A Parquet row: the ``image`` column holds ``{"bytes": …, "path": …}``."""
    key = "image" if "image" in row else "images"
    media = image_media(ctx, row.get(key), key)
    row = {k: v for k, v in row.items() if k not in ("image", "images")}
    item = build_item(ctx, reader, line, row, media=media)
    warn_refused(ctx, line, item.ext_id, media)
    return item
