"""How import messages echo what a file holds: bounded, escaped, and summarised.

A dataset can hold a 100,000-character id, a 6 MB path, an id that retitles the terminal
(``ESC ]0;…BEL``) or the same problem on every one of its 10,000 rows. Every message the
formats, the importer and the command line print goes through :func:`shown` (one value) and
:func:`summarise` (a list of problems), so what reaches the terminal is short, one line per
problem, and free of control characters.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Iterable
from typing import Any

from ..records import ImportProblem

#: How many characters of an echoed value a message shows (ids, keys, values).
VALUE_LIMIT = 80
#: How many characters of a path a message shows (its start and its end, the file name).
PATH_LIMIT = 160
#: Longest message text one problem carries.
MESSAGE_LIMIT = 600
#: Problems of one kind shown before "… and N more like this".
PER_KIND = 3

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(text: str) -> str:
    """Control, format and other non-printable characters (lone surrogates, bidi overrides,
    NUL, ESC…) as ``\\x1b``-style escapes; everything printable as is."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable():
            out.append(char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


class _Repr(reprlib.Repr):
    """``reprlib`` with every case bounded: huge integers and bytes are never rendered whole."""

    def __init__(self, limit: int):
        super().__init__()
        self.maxlevel = 3
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 5
        self.maxdict = 4
        self.maxstring = self.maxother = limit
        self.maxlong = 40

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:  # str() of a huge integer is slow, and refused past 4,300 digits
            return f"<integer of {x.bit_length():,} bits>"
        return super().repr_int(x, level)

    def repr_bytes(self, x: bytes, level: int) -> str:
        return repr(x[: self.maxstring]) + (f"…<{len(x):,} bytes>" if len(x) > self.maxstring else "")

    repr_bytearray = repr_bytes


def shown(value: Any, limit: int = VALUE_LIMIT, *, quote: bool = False, keep_end: bool = False) -> str:
    """``value`` as a message shows it: at most about ``limit`` characters (cut with ``…``),
    control and other non-printable characters escaped.

    A string is shown as its text (``quote=True``: in single quotes, as ``repr`` would);
    anything else as a bounded ``repr`` (nesting, lengths and integers cut short).
    ``keep_end`` keeps the start and the end of a long value (paths: the file name stays).
    """
    if not isinstance(value, str):
        text = _Repr(limit).repr(value)
        quote = False
    else:
        text = value
    if len(text) <= limit and text.isprintable():
        clipped = text
    elif len(text) <= limit and len(_escape(text)) <= limit:
        clipped = _escape(text)
    elif keep_end:
        half = max((limit - 1) // 2, 1)
        clipped = _escape(text[:half])[:half] + "…" + _escape(text[-half:])[-half:]
    else:
        clipped = _escape(text[:limit])[: max(limit - 1, 1)] + "…"
    return f"'{clipped}'" if quote else clipped


def shown_path(path: Any) -> str:
    """A path as messages show it: its start and its end, escaped."""
    return shown(str(path), PATH_LIMIT, keep_end=True)


def problem(file: Any, line: int | None, message: str, item_id: Any = None, *, fatal: bool = True) -> ImportProblem:
    """An :class:`ImportProblem` whose file, item id and message are all bounded and escaped."""
    return ImportProblem(
        shown_path(file),
        line,
        shown(message, MESSAGE_LIMIT),
        None if item_id is None or item_id == "" else shown(str(item_id)),
        fatal=fatal,
    )


_VARIABLE = re.compile(r"'(?:[^'\\]|\\.)*'|\d[\d,.]*")


def template_of(message: str) -> str:
    """What a message says with its quoted values and numbers taken out: problems with the same
    template are "the same problem" on different rows."""
    return _VARIABLE.sub("…", message)


def summarise(problems: Iterable[ImportProblem], per_kind: int = PER_KIND, max_lines: int = 40) -> list[str]:
    """One line per problem, grouped by message template: the first ``per_kind`` of each kind,
    then "… and 9,997 more like this"; never more than about ``max_lines`` lines."""
    groups: dict[str, list[ImportProblem]] = {}
    for p in problems:
        groups.setdefault(template_of(p.message), []).append(p)
    lines: list[str] = []
    kinds = list(groups.values())
    for i, group in enumerate(kinds):
        if len(lines) >= max_lines:
            rest = sum(len(g) for g in kinds[i:])
            lines.append(f"… and {rest:,} more problem{'s' if rest != 1 else ''} of {len(kinds) - i:,} other kinds")
            break
        lines.extend(str(p) for p in group[:per_kind])
        if len(group) > per_kind:
            lines.append(f"… and {len(group) - per_kind:,} more like this")
    return lines
