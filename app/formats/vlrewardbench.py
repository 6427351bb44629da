"""VL-RewardBench: JSONL rows with image paths, or the Parquet release with image bytes.

A row holds ``id, query, response[N], human_ranking, image_path`` and optionally
``models, judge, rationale, query_source, meta, human_error_analysis, ground_truth``.
``human_ranking`` gives each response's rank (``[0, 1]``: response 0 is preferred).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator

from ..records import ImportProblem, Item, MediaRef, Reference, Response
from ..taxonomy import parse_error_tags, strip_image_token, vlrewardbench_category
from .base import (
    FormatError,
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
from .fields import media_refs, resolve_media

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
        raise RowProblem(f"human_ranking: expected a list of integers, got {ranks!r}"[:200])
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


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict, media: tuple[MediaRef, ...] | None = None) -> Item:
    """Build an :class:`Item` from one VL-RewardBench row (JSONL or Parquet)."""
    ext_id = item_id_of(reader.get(row, "id"), line)
    query = expect_str(reader.get(row, "query"), "query")
    texts = expect_str_list(reader.get(row, "responses"), "response", min_len=2)
    ranking = ranks_to_order(reader.get(row, "ranking"), len(texts))
    if ranking is None:
        ctx.warn(line, "human_ranking has a tie: no reference preference recorded", ext_id)
    models = reader.get(row, "models")
    if not (isinstance(models, list) and len(models) == len(texts)):
        models = [None] * len(texts)
    elif not all(type(m) is str for m in models):
        models = [optional_str(m, f"models[{i}]") for i, m in enumerate(models)]
    responses = tuple(Response(i, t, m or None) for i, (t, m) in enumerate(zip(texts, models)))
    if media is None:
        media = resolve_media(ctx, line, ext_id, media_refs(reader.get(row, "image"), "image_path"), "image")
    category, subset = vlrewardbench_category(ext_id)
    source = optional_str(reader.get(row, "query_source"), "query_source")
    if category == "general" and source and not ext_id.lower().startswith("wildvision"):
        subset = source
    reference = Reference(
        ranking=ranking,
        error_tags=parse_error_tags(reader.get(row, "error_tags")),
        ground_truth=optional_str(reader.get(row, "ground_truth"), "ground_truth"),
    )
    extra = reader.extra(row)
    if source is not None:
        extra["query_source"] = source
    if ranking is None:
        extra["human_ranking"] = reader.get(row, "ranking")
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
    if ctx.path.suffix.lower() == ".parquet":
        return _parse_parquet(ctx, reader)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))


# -- Parquet ------------------------------------------------------------------------------------

_MAGIC = ((b"\x89PNG", ".png"), (b"\xff\xd8\xff", ".jpg"), (b"GIF8", ".gif"), (b"RIFF", ".webp"), (b"BM", ".bmp"))


def _suffix_for(data: bytes) -> str:
    for magic, suffix in _MAGIC:
        if data.startswith(magic):
            return suffix
    return ".img"


def store_media_bytes(ctx: ImportContext, data: bytes) -> Path:
    """Write image bytes into the project's media folder under their sha256 (once)."""
    if ctx.project_media_dir is None:
        raise RowProblem("image bytes need a project media folder")
    digest = hashlib.sha256(data).hexdigest()
    target = ctx.project_media_dir / digest[:2] / f"{digest}{_suffix_for(data)}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(target.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(target)
        ctx.written_files.append(target)
    return target


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict]]:
    import pyarrow.parquet as pq  # imported here: only Parquet users pay for it

    try:
        parquet = pq.ParquetFile(path)
        number = 0
        for batch in parquet.iter_batches(batch_size=256):
            for row in batch.to_pylist():
                number += 1
                yield number, row
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError; truncation an OSError
        raise FormatError([ImportProblem(str(path), None, f"not a readable Parquet file: {exc}")]) from exc


def _image_entries(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _parse_parquet(ctx: ImportContext, reader: RowReader) -> Iterator[ParsedRow]:
    def build(line: int, row: dict) -> Item:
        media = []
        for entry in _image_entries(row.get("image") if "image" in row else row.get("images")):
            data = entry.get("bytes") if isinstance(entry, dict) else entry
            if isinstance(data, (bytes, bytearray)) and data:
                target = store_media_bytes(ctx, bytes(data))
                ref = (entry.get("path") if isinstance(entry, dict) else None) or target.name
                media.append(MediaRef("image", str(ref), str(target.resolve())))
            elif isinstance(entry, dict) and entry.get("path"):
                media.append(ctx.media(str(entry["path"]), "image"))
            else:
                raise RowProblem("image: expected {'bytes': ...} with image data")
        row = {k: v for k, v in row.items() if k not in ("image", "images")}
        return build_item(ctx, reader, line, row, media=tuple(media))

    return parse_rows(ctx, _parquet_rows(ctx.path), build)

