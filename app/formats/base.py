"""What every dataset format shares: the registry, row access with key aliases and
``--map`` overrides, JSONL reading with line numbers, and media resolution.

A format turns a file into ``ParsedRow`` objects (an :class:`Item` plus the line it came
from) or raises :class:`FormatError` listing every fatal problem with file:line.

What a row may hold is explicit (:func:`loads_json`, :func:`value_problem`): nesting up to
:data:`MAX_DEPTH` levels, Unicode text (a lone UTF-16 surrogate such as ``"\\ud800"`` is
refused: it is not text, and a project cannot store it), NaN and ±Infinity (stored as
null); an integer beyond 64 bits is read as the nearest float, as orjson reads it. A UTF-8
byte-order mark may start the file. Media paths are checked in :mod:`.media_refs` (a name
over 255 bytes, a path over 4,096, a NUL).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import json_guard
from ..json_guard import INT_MAX, INT_MIN, MAX_DEPTH, JSONProblem
from ..records import ImportProblem, Item, MediaKind, MediaRef
from . import media_refs
from .messages import problem, shown, shown_path, summarise

#: Stop collecting after this many fatal problems: the user fixes the file anyway.
MAX_PROBLEMS = 50

#: What :meth:`RowReader.find` returns as the value of a field the row does not have.
MISSING = object()

UTF8_BOM = b"\xef\xbb\xbf"


class FormatError(Exception):
    """A source file is malformed; nothing from it was imported."""

    def __init__(self, problems: Sequence[ImportProblem]):
        self.problems = list(problems)
        lines = "\n".join(f"  {line}" for line in summarise(self.problems, max_lines=10))
        super().__init__(f"{len(self.problems)} problem(s):\n{lines}")


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
        self.problems.append(problem(self.path, line, message, item_id, fatal=False))

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
        unusable = media_refs.unusable(ref)
        if unusable is not None:  # a name or path no file system holds, a NUL: never looked up
            self.refused.add(key)
            refused = MediaRef(kind, ref, None, f"{kind} path {shown(ref, quote=True, keep_end=True)} {unusable}")
            self._media_cache[key] = refused
            return refused
        candidates: list[Path] = []
        if self.allow_outside_media:
            ref_path = Path(os.path.expanduser(ref))
            candidates = [ref_path] if ref_path.is_absolute() else [r / ref_path for r in roots]
        else:
            candidates = [c for c in (media_refs.inside(r, ref) for r in roots) if c is not None]
        result: MediaRef | None = None
        if not candidates:
            self.refused.add(key)
            where = " or ".join(shown_path(r) for r in roots)
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
                result = MediaRef(kind, ref, None, f"{kind} '{shown_path(candidate)}' {why}")
                break
        if result is None:
            looked = ", ".join(shown_path(c) for c in dict.fromkeys(candidates))
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
                    problem(
                        ctx.path,
                        None,
                        f"--map names unknown field(s) {shown(sorted(unknown), 200)}; this format knows: {known}",
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


def loads_json(raw: bytes | str) -> Any:
    """Parse one JSON row: the one decoder (:func:`pairscope.app.json_guard.loads_json`) with
    what a project cannot store refused too. Raises :class:`JSONProblem`, and nothing else, for
    text that is not UTF-8 or not JSON, nesting deeper than :data:`MAX_DEPTH` and a lone
    surrogate (see :func:`value_problem`)."""
    return json_guard.loads_json(raw, value_problem)


_PLAIN = (str, bool, int, float, type(None))
_STORABLE = (datetime.date, datetime.time)  # orjson writes these; nothing else beyond JSON's own


def value_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why ``value`` (a row, or a value read from one) cannot be stored in a project, or
    ``None``: nesting deeper than ``max_depth``, a string or key holding a lone surrogate, an
    integer beyond 64 bits, or a value JSON has no form for (bytes, decimals, durations…
    from Parquet). The message names where in the value it is."""
    stack: list[tuple[Any, int, tuple]] = [(value, 1, ())]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, dict | list | tuple):
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels{_at(where)}"
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in reversed(list(items)):  # popped in document order: the first problem is named
                if isinstance(key, str) and _lone_surrogate(key):
                    return f"a key holds a lone surrogate {shown(_lone_surrogate(key))}{_at(where)}: not Unicode text"
                if not isinstance(child, _PLAIN) or isinstance(child, str) and not child.isascii():
                    stack.append((child, depth + 1, (*where, key)))
                elif type(child) is int and not INT_MIN <= child <= INT_MAX:
                    stack.append((child, depth + 1, (*where, key)))
        elif isinstance(node, str):
            char = _lone_surrogate(node)
            if char:
                return f"a string holds a lone surrogate {shown(char)}{_at(where)}: not Unicode text"
        elif isinstance(node, bool) or node is None or isinstance(node, (float, *_STORABLE)):
            continue
        elif isinstance(node, int):
            if not INT_MIN <= node <= INT_MAX:
                return f"an integer beyond 64 bits{_at(where)}; a project stores 64-bit integers"
        else:
            return f"a {type(node).__name__} value{_at(where)}, which a project cannot store"
    return None


def _lone_surrogate(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None


def _at(where: tuple) -> str:
    if not where:
        return ""
    path = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in where).lstrip(".")
    return f" (at {shown(path, 60, keep_end=True)})"


def read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for every non-blank line, as the file is read.

    Malformed lines (bad JSON, not an object, bad UTF-8, see :func:`loads_json`) are
    collected; after the last line one :class:`FormatError` names each file:line. A UTF-8
    byte-order mark at the start of the file is skipped.
    """
    problems: list[ImportProblem] = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1 and raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM) :]
            if not raw or raw.isspace():  # blank (without the copy of each line strip() makes)
                continue
            try:
                obj = loads_json(raw)
            except JSONProblem as exc:
                problems.append(problem(path, number, str(exc)))
            else:
                if type(obj) is dict:
                    if not problems:
                        yield number, obj
                else:
                    problems.append(problem(path, number, f"expected a JSON object, got {type_name(obj)}"))
            if len(problems) >= MAX_PROBLEMS:
                break
    if problems:
        raise FormatError(problems)


class RowErrors:
    """Collects fatal per-row problems while a format walks a file."""

    def __init__(self, path: Path):
        self.path = path
        self.problems: list[ImportProblem] = []

    def add(self, line: int | None, message: str, item_id: str | int | None = None) -> None:
        self.problems.append(problem(self.path, line, message, item_id))

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
                errors.add(line, str(exc), rid)
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
