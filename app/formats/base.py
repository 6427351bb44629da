"""What every dataset format shares: the registry, row access with key aliases and
``--map`` overrides, JSONL reading with line numbers, and media resolution.

A format turns a file into ``ParsedRow`` objects (an :class:`Item` plus the line it came
from) or raises :class:`FormatError` listing every fatal problem with file:line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..records import ImportProblem, Item, MediaKind, MediaRef
from . import media_refs

#: Stop collecting after this many fatal problems: the user fixes the file anyway.
MAX_PROBLEMS = 50

#: What :meth:`RowReader.find` returns as the value of a field the row does not have.
MISSING = object()


class FormatError(Exception):
    """A source file is malformed; nothing from it was imported."""

    def __init__(self, problems: Sequence[ImportProblem]):
        self.problems = list(problems)
        shown = "\n".join(f"  {p}" for p in self.problems[:10])
        more = f"\n  … and {len(self.problems) - 10} more" if len(self.problems) > 10 else ""
        super().__init__(f"{len(self.problems)} problem(s):\n{shown}{more}")


@dataclass(frozen=True)
class ParsedRow:
    line: int | None
    item: Item


@dataclass
class ImportContext:
    """Everything a format needs besides the file: where media live, key overrides.

    ``source_dir`` is the dataset's folder (the file's folder, or the folder given for a
    folder of shards); media references resolve inside it or inside ``media_root``.
    """

    path: Path
    media_root: Path | None = None
    mapping: dict[str, str] = field(default_factory=dict)
    project_media_dir: Path | None = None
    allow_outside_media: bool = False
    source_dir: Path | None = None
    problems: list[ImportProblem] = field(default_factory=list)
    written_files: list[Path] = field(default_factory=list)
    #: References refused (outside the media root, not an image/video): warned per item.
    refused: set[tuple[str, str]] = field(default_factory=set)
    _media_cache: dict[tuple[str, str], MediaRef] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.source_dir is None:
            self.source_dir = self.path if self.path.is_dir() else self.path.parent

    def warn(self, line: int | None, message: str, item_id: str | None = None) -> None:
        """Record a non-fatal problem (the row is still imported)."""
        self.problems.append(ImportProblem(str(self.path), line, message, item_id, fatal=False))

    def media(self, ref: str, kind: MediaKind) -> MediaRef:
        """Resolve a media reference inside the media root, then the dataset's folder.

        A reference that resolves nowhere is kept with ``path=None`` and the places looked
        at in ``problem``; one that leaves those folders (unless ``allow_outside_media``) or
        names a file that is not a ``kind`` file is kept with ``path=None`` and the reason,
        and is listed in ``refused``. Nothing here fails the import.
        """
        key = (ref, kind)
        cached = self._media_cache.get(key)
        if cached is not None:
            return cached
        roots = [r for r in (self.media_root, self.source_dir) if r is not None]
        candidates: list[Path] = []
        if self.allow_outside_media:
            ref_path = Path(os.path.expanduser(ref))
            candidates = [ref_path] if ref_path.is_absolute() else [r / ref_path for r in roots]
        else:
            candidates = [c for c in (media_refs.inside(r, ref) for r in roots) if c is not None]
        result = None
        if not candidates:
            self.refused.add(key)
            where = " or ".join(str(r) for r in roots)
            result = MediaRef(
                kind, ref, None, f"{kind} path leaves the media root ({where}); pass --allow-outside-media to accept it"
            )
        for candidate in dict.fromkeys(candidates):
            why = media_refs.check_file(candidate, kind)
            if why is None:
                result = MediaRef(kind, ref, str(candidate.absolute()))
                break
            if why != "not found":
                self.refused.add(key)
                result = MediaRef(kind, ref, None, f"{kind} {candidate} {why}")
                break
        if result is None:
            looked = ", ".join(str(c) for c in dict.fromkeys(candidates))
            result = MediaRef(kind, ref, None, f"{kind} not found (looked in: {looked})")
        self._media_cache[key] = result
        return result


class RowReader:
    """Read canonical fields from one source row by alias, honouring ``--map`` overrides.

    Overrides name a key (``prompt=question``) or a dotted path into nested objects
    (``prompt=conversation.0.content``).
    """

    def __init__(self, ctx: ImportContext, aliases: Mapping[str, Sequence[str]]):
        self.ctx = ctx
        self.aliases = {k: tuple(v) for k, v in aliases.items()}
        unknown = set(ctx.mapping) - set(self.aliases)
        if unknown:
            known = ", ".join(sorted(self.aliases))
            raise FormatError(
                [
                    ImportProblem(
                        str(ctx.path),
                        None,
                        f"--map names unknown field(s) {sorted(unknown)}; this format knows: {known}",
                    )
                ]
            )

        self._keys = {name: self._resolve(name) for name in self.aliases}
        plain = {name: tuple(k for k in keys if "." not in k) for name, keys in self._keys.items()}
        self._plain_keys = {k for keys in plain.values() for k in keys}
        self._multi_keys = tuple(keys for keys in plain.values() if len(keys) > 1)

    def _resolve(self, name: str) -> tuple[str, ...]:
        if name in self.ctx.mapping:
            return (self.ctx.mapping[name],)
        return self.aliases[name]

    def keys_for(self, name: str) -> tuple[str, ...]:
        return self._keys[name]

    def find(self, row: dict[str, Any], name: str) -> tuple[str | None, Any]:
        """``(key that matched, value)`` for a canonical field, or ``(None, MISSING)``."""
        for key in self._keys[name]:
            if key in row:
                return key, row[key]
            if "." in key:
                found, value = _lookup(row, key)
                if found:
                    return key, value
        return None, MISSING

    def get(self, row: dict[str, Any], name: str, default: Any = None) -> Any:
        for key in self._keys[name]:
            if key in row:
                return row[key]
        found, value = self.find(row, name)  # dotted paths, rare
        return default if found is None else value

    def extra(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row's fields that no canonical field read, verbatim.

        Only the key a field actually read counts as used: an alias that lost to another
        (``video_id`` beside ``id``) and a nested object read only in part through a dotted
        ``--map`` path stay, so an export can write the row back unchanged.
        """
        used = self._plain_keys.intersection(row)
        for keys in self._multi_keys:  # a field with several aliases reads only the first
            hits = [k for k in keys if k in used]
            if len(hits) > 1:
                used.difference_update(hits[1:])
        return {k: v for k, v in row.items() if k not in used}


def _lookup(row: Any, dotted: str) -> tuple[bool, Any]:
    node = row
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def loads_line(raw: bytes) -> Any:
    """Parse one JSON document: orjson (fast), falling back to ``json`` for what orjson
    refuses but Python's JSON reader accepts (NaN, Infinity, integers beyond 64 bits)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for every non-blank line, as the file is read.

    Malformed lines (bad JSON, not an object, bad UTF-8) are collected; after the last
    line one :class:`FormatError` names each file:line.
    """
    problems: list[ImportProblem] = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = loads_line(raw)
            except UnicodeDecodeError as exc:
                problems.append(ImportProblem(str(path), number, f"not valid UTF-8 ({exc.reason})"))
            except json.JSONDecodeError as exc:
                problems.append(ImportProblem(str(path), number, f"not valid JSON: {exc.msg} at column {exc.colno}"))
            else:
                if type(obj) is dict:
                    if not problems:
                        yield number, obj
                else:
                    problems.append(ImportProblem(str(path), number, f"expected a JSON object, got {type_name(obj)}"))
            if len(problems) >= MAX_PROBLEMS:
                break
    if problems:
        raise FormatError(problems)


class RowErrors:
    """Collects fatal per-row problems while a format walks a file."""

    def __init__(self, path: Path):
        self.path = path
        self.problems: list[ImportProblem] = []

    def add(self, line: int | None, message: str, item_id: str | None = None) -> None:
        self.problems.append(ImportProblem(str(self.path), line, message, item_id))

    def raise_if_any(self) -> None:
        if self.problems:
            raise FormatError(self.problems)

    @property
    def full(self) -> bool:
        return len(self.problems) >= MAX_PROBLEMS


class RowProblem(Exception):
    """Raised inside a row parser; becomes a fatal problem at that row's line."""


def expect_str(value: Any, what: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise RowProblem(f"{what}: expected a string, got {type_name(value)}")
    if not allow_empty and not value.strip():
        raise RowProblem(f"{what}: expected a non-empty string")
    return value


def expect_str_list(value: Any, what: str, *, min_len: int = 0) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RowProblem(f"{what}: expected a list of strings, got {type_name(value)}")
    if len(value) < min_len:
        raise RowProblem(f"{what}: expected at least {min_len} entries, got {len(value)}")
    return value


def optional_str(value: Any, what: str) -> str | None:
    if type(value) is str:
        return value or None
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return expect_str(value, what, allow_empty=True) or None


def item_id_of(value: Any, line: int | None) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RowProblem(f"id: expected a string or integer, got {type_name(value)}")
    text = str(value).strip()
    if not text:
        raise RowProblem("id: expected a non-empty id")
    return text


def type_name(value: Any) -> str:
    """How messages name a value's JSON type."""
    return "null" if value is None else type(value).__name__


def parse_rows(
    ctx: ImportContext,
    rows: Iterator[tuple[int, dict]],
    build: Callable[[int, dict], Item],
) -> Iterator[ParsedRow]:
    """Run ``build`` over every row, yielding items as they are built.

    :class:`RowProblem` becomes a fatal file:line problem; once there is one, nothing more
    is yielded, and after the last row one :class:`FormatError` lists them all (together
    with any the row source raised).
    """
    errors = RowErrors(ctx.path)
    try:
        for line, row in rows:
            try:
                parsed = ParsedRow(line, build(line, row))
            except RowProblem as exc:
                rid = row.get("id") if isinstance(row.get("id"), (str, int)) else None
                errors.add(line, str(exc), None if rid is None else str(rid))
                if errors.full:
                    break
            else:
                if not errors.problems:
                    yield parsed
    except FormatError as exc:
        errors.problems.extend(exc.problems)
        errors.problems.sort(key=lambda p: (p.line is None, p.line or 0))
    errors.raise_if_any()


# -- registry -------------------------------------------------------------------------------

FormatParser = Callable[[ImportContext], Iterator[ParsedRow]]


@dataclass(frozen=True)
class DatasetFormat:
    name: str
    description: str
    parse: FormatParser
    suffixes: tuple[str, ...] = (".jsonl",)
    sniff: Callable[[dict], bool] | None = None


FORMATS: dict[str, DatasetFormat] = {}


def register(name: str, description: str, *, suffixes=(".jsonl",), sniff=None):
    """Decorator: register a parser under a format name (no if-chains elsewhere)."""

    def wrap(fn: FormatParser) -> FormatParser:
        if name in FORMATS:
            raise ValueError(f"format {name!r} registered twice")
        FORMATS[name] = DatasetFormat(name, description, fn, tuple(suffixes), sniff)
        return fn

    return wrap
