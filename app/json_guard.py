"""Reading untrusted JSON, bounded: the one decoder every reader of outside JSON uses (dataset
rows in ``formats``, the label journal, a merged pack's JSON columns).

orjson first (fast); what it refuses but Python's JSON reader accepts (NaN, Infinity, a number
too large for a float) is read by ``json``. An integer beyond 64 bits becomes the nearest float
either way (orjson's reading). Text that is not UTF-8 or not JSON and nesting deeper than
:data:`MAX_DEPTH` (100,000 brackets raise ``RecursionError`` in ``json``) are one error,
:class:`JSONProblem`, a ``ValueError``, and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

#: Deepest nesting of arrays and objects PairScope reads. Real rows nest a few levels; the
#: project's JSON writer (orjson) stops at 255 levels and Python's ``json`` near 1,000.
MAX_DEPTH = 100

#: The integers a project's JSON columns hold (orjson: signed and unsigned 64-bit).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


class JSONProblem(ValueError):
    """A JSON document (one line) that PairScope does not read; ``str()`` says why."""


def nesting_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """``"nested deeper than N levels"`` when ``value`` is, else ``None`` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels"
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return None


def loads_json(raw: bytes | str, problem: Callable[[Any], str | None] = nesting_problem) -> Any:
    """One JSON document; :class:`JSONProblem` for anything PairScope does not read.

    ``problem`` says why a decoded value is refused (default: nesting deeper than
    :data:`MAX_DEPTH`); it runs on what ``json`` read, and on what orjson read when the text
    holds more than :data:`MAX_DEPTH` brackets (orjson's text is valid, its integers 64-bit).
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = _loads_slowly(raw)
        why = problem(value)
    else:
        brackets = raw.count(b"[") + raw.count(b"{") if isinstance(raw, bytes) else raw.count("[") + raw.count("{")
        why = problem(value) if brackets > MAX_DEPTH else None
    if why is not None:
        raise JSONProblem(why)
    return value


def _loads_slowly(raw: bytes | str) -> Any:
    if isinstance(raw, bytes):
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise JSONProblem("the file is UTF-16 (it starts with a UTF-16 byte-order mark); PairScope reads UTF-8")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONProblem(f"not valid UTF-8 ({exc.reason} at byte {exc.start + 1:,})") from None
    else:
        text = raw
    if text.startswith("\ufeff"):
        raise JSONProblem("a byte-order mark (U+FEFF) starts this line; only the file's first line may have one")
    try:
        return json.loads(text, parse_int=_int64)
    except RecursionError:
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        # json's own wording ends some messages with "at" ("Unterminated string starting at")
        raise JSONProblem(f"not valid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno:,}") from None


def _int64(digits: str) -> int | float:
    """An integer as orjson reads it: beyond 64 bits, the nearest float (never ``int()`` of
    thousands of digits, which Python refuses past 4,300)."""
    if len(digits) <= 20:
        number = int(digits)
        if INT_MIN <= number <= INT_MAX:
            return number
    return float(digits)


__all__ = ["INT_MAX", "INT_MIN", "MAX_DEPTH", "JSONProblem", "loads_json", "nesting_problem"]
