"""Multimodal RewardBench (facebookresearch/multimodal_rewardbench): one JSON *array*
(``data/all_data.json``) of objects with ``ID, Text, Image, Output1, Output2, Better`` and
``Category``; ``Better`` names the preferred output (``Output1`` or ``Output2``).

The category is the row's ``Category``, refined by the id prefix as the release's
``scripts/2_get_accuracy.py`` does: safety → ``safety/bias`` for ids starting ``pairs``, else
``safety/toxicity``; reasoning → ``reasoning/math`` for ids starting ``math``, else
``reasoning/coding``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..json_guard import MAX_DEPTH, JSONProblem
from ..records import ImportProblem, Item, Reference, Response
from .base import (
    UTF8_BOM,
    FormatError,
    ImportContext,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    item_id_of,
    loads_json,
    optional_str,
    parse_rows,
    register,
    type_name,
)
from .fields import media_refs, resolve_media
from .messages import problem, shown

ALIASES = {
    "id": ("ID", "id"),
    "prompt": ("Text",),
    "output1": ("Output1",),
    "output2": ("Output2",),
    "better": ("Better",),
    "image": ("Image",),
    "category": ("Category",),
}


def _text(path: Path) -> str:
    raw = path.read_bytes()
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise FormatError([problem(path, line, "not UTF-8 text")]) from None


def read_json_array(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line the element starts on, object)`` for each element of a JSON array file.

    A malformed element, one that is not an object or one a project cannot store is a
    file:line problem; after the last element one :class:`FormatError` lists them all."""
    text = _text(path)
    # ``json`` only finds where each element ends; its value is read by the one decoder (loads_json)
    decoder = json.JSONDecoder(parse_int=_skip, parse_float=_skip, parse_constant=_skip)
    problems: list[ImportProblem] = []

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    pos = len(text) - len(text.lstrip())
    if not text.startswith("[", pos):
        raise FormatError([problem(path, line_of(pos), "expected a JSON array of objects")])
    pos += 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            problems.append(problem(path, line_of(pos), "the JSON array is not closed (']' missing)"))
            break
        if text[pos] == "]":
            pos += 1
            break
        start = line_of(pos)
        try:
            _, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, RecursionError):
                why = f"nested deeper than {MAX_DEPTH} levels"
            else:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else shown(str(exc))
            problems.append(problem(path, start, f"not valid JSON: {why}"))
            break
        try:
            obj = loads_json(text[pos:end])
        except JSONProblem as exc:
            problems.append(problem(path, start, str(exc)))
        else:
            if type(obj) is not dict:
                problems.append(problem(path, start, f"expected a JSON object, got {type_name(obj)}"))
            elif not problems:
                yield start, obj
        pos = end
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos < len(text) and text[pos] == "]":
            pos += 1
            break
        else:
            problems.append(problem(path, line_of(pos), "expected ',' or ']' after an array element"))
            break
    rest = text[pos:]
    if not problems and rest.strip():
        where = pos + len(rest) - len(rest.lstrip())
        problems.append(problem(path, line_of(where), "text after the end of the JSON array"))
    if problems:
        raise FormatError(problems)


def _skip(_text: str) -> None:
    """Numbers and constants are not kept while looking for an element's end."""
    return None


def first_array_row(path: Path) -> Any:
    """The first element of a JSON array file (format detection), or ``None``."""
    try:
        for _, row in read_json_array(path):
            return row
    except (FormatError, OSError, JSONProblem):
        return None
    return None


def category_of(raw: str | None, ext_id: str) -> str:
    """The release's category, refined by id prefix as its accuracy script does."""
    category = (raw or "general").strip().lower() or "general"
    lowered = ext_id.lower()
    if category == "safety":
        return "safety/bias" if lowered.startswith("pairs") else "safety/toxicity"
    if category == "reasoning":
        return "reasoning/math" if lowered.startswith("math") else "reasoning/coding"
    return category


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """Build an :class:`Item` from one Multimodal RewardBench element."""
    ext_id = item_id_of(reader.get(row, "id"), line)
    prompt = expect_str(reader.get(row, "prompt"), "Text")
    first = expect_str(reader.get(row, "output1"), "Output1", allow_empty=True)
    second = expect_str(reader.get(row, "output2"), "Output2", allow_empty=True)
    better = reader.get(row, "better")
    if better not in ("Output1", "Output2"):
        raise RowProblem(f"Better: expected 'Output1' or 'Output2', got {shown(better, quote=True)}")
    raw_category = optional_str(reader.get(row, "category"), "Category")
    refs = media_refs(reader.get(row, "image"), "Image")
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        responses=(Response(0, first), Response(1, second)),
        media=resolve_media(ctx, line, ext_id, refs, "image"),
        category=category_of(raw_category, ext_id),
        subset=raw_category,
        source_format="multimodal_rewardbench",
        reference=Reference(ranking=(0, 1) if better == "Output1" else (1, 0)),
        extra=reader.extra(row),
    )


def _sniff(row: dict) -> bool:
    return "Output1" in row and "Output2" in row and "Better" in row


@register(
    "multimodal_rewardbench",
    "Multimodal RewardBench (data/all_data.json): a JSON array of Text, Image, Output1, Output2, Better",
    suffixes=(".json",),
    sniff=_sniff,
)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_json_array(ctx.path), lambda line, row: build_item(ctx, reader, line, row))
