"""Parquet sources: one file, or a folder of shards as the Hugging Face Hub lays them out
(``data/<split>-00000-of-00003.parquet``; older uploads add a hash suffix; some releases
keep ``<name>_000.parquet`` at the top). Image columns hold ``{"bytes": …, "path": …}``
(the 🤗 ``Image`` feature), a list of those, or a path; bytes are extracted into the
project's media folder, content-addressed, and stored relative to the project.

The other columns are kept as they are (``extra``), so they must be what JSON can hold: a
binary, decimal or duration column, or nesting deeper than the limit, is a problem at each
row (:func:`.base.value_problem`). An unreadable or damaged file is one problem naming it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from ..records import Item, MediaRef
from . import media_refs
from .base import FormatError, ImportContext, ParsedRow, RowProblem, parse_rows, value_problem
from .messages import problem, shown

PARQUET = ".parquet"


def dataset_files(path: Path) -> list[Path]:
    """The Parquet shards of a folder in import order (``data/`` first, else the folder
    itself, else anywhere below it); ``[path]`` for a file."""
    if not path.is_dir():
        return [path]
    for pattern in ("data/*.parquet", "*.parquet", "**/*.parquet"):
        found = sorted(p for p in path.glob(pattern) if p.is_file())
        if found:
            return found
    return []


def is_parquet(path: Path) -> bool:
    return path.is_dir() or path.suffix.lower() == PARQUET


def _rows(path: Path) -> Iterator[tuple[int, dict]]:
    import pyarrow as pa  # imported here: only Parquet users pay for it
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        number = 0
        for batch in parquet.iter_batches(batch_size=256):
            for row in batch.to_pylist():
                number += 1
                yield number, row
    except (OSError, ValueError, pa.ArrowException) as exc:  # ArrowInvalid is a ValueError; truncation an OSError
        why = shown(str(exc).strip(), 300)
        raise FormatError([problem(path, None, f"not a readable Parquet file: {why}")]) from exc


def first_row(path: Path) -> dict | None:
    """The first row of a Parquet file or folder (for format detection); ``None`` when
    there is none. An unreadable file raises :class:`FormatError` saying so."""
    files = dataset_files(path)
    if not files:
        return None
    return next((row for _, row in _rows(files[0])), None)


def parse_parquet(ctx: ImportContext, build: Callable[[ImportContext, int, dict], Item]) -> Iterator[ParsedRow]:
    """Build items from every row of every shard; problems name the shard and its row."""
    for shard in dataset_files(ctx.path):
        shard_ctx = ctx if shard == ctx.path else dataclasses.replace(ctx, path=shard)
        yield from parse_rows(shard_ctx, _rows(shard), partial(_build_in, build, shard_ctx))


def _build_in(build: Callable[[ImportContext, int, dict], Item], ctx: ImportContext, line: int, row: dict) -> Item:
    item = build(ctx, line, row)
    why = value_problem(item.extra)  # the columns kept as they are: bytes, decimals, durations…
    if why is not None:
        raise RowProblem(why)
    return item


def image_media(ctx: ImportContext, value: Any, label: str = "image") -> tuple[MediaRef, ...]:
    """Media from an image column: ``{"bytes", "path"}`` structs (or a list of them), raw
    bytes, or paths. Extracted bytes are stored relative to the project's folder."""
    entries = [] if value is None else (list(value) if isinstance(value, list) else [value])
    media = []
    for entry in entries:
        data = entry.get("bytes") if isinstance(entry, dict) else entry
        if isinstance(data, (bytes, bytearray)) and data:
            if ctx.project_media_dir is None:
                raise RowProblem(f"{label}: image bytes need a project media folder")
            target, why = media_refs.store_bytes(ctx.project_media_dir, bytes(data), ctx.written_files)
            ref = (entry.get("path") if isinstance(entry, dict) else None) or target.name
            if why is not None:
                ctx.refused.add((str(ref), "image"))
                media.append(MediaRef("image", str(ref), None, why))
                continue
            relative = os.path.relpath(target, ctx.project_media_dir.parent)
            media.append(MediaRef("image", str(ref), Path(relative).as_posix()))
        elif isinstance(entry, dict) and entry.get("path"):
            media.append(ctx.media(str(entry["path"]), "image"))
        elif isinstance(entry, str) and entry.strip():
            media.append(ctx.media(entry, "image"))
        else:
            raise RowProblem(f"{label}: expected {{'bytes': …}} with image data or a path")
    return tuple(media)
