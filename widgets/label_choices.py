"""The label panel's plain parts (no Qt): the label schema's entries as the panel reads them,
the built-in ones, the key hints for an item, and the panel's look."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pairscope.app.records import Choice

#: The window binds a key to each of the first responses (1–4); a "1 / 2" hint is continued
#: up to this many.
NUMBERED_RESPONSE_KEYS = 4
_SLASHED = re.compile(r"\s*/\s*")


def read_choices(entries: Iterable[Any]) -> tuple[Choice, ...]:
    """Schema entries (objects with ``name``, ``label``, ``key``, ``description`` and maybe
    ``subkinds``, ``free_text``; ``app.labeling.schema.Choice``) as the panel keeps them."""
    return tuple(
        Choice(
            str(e.name),
            str(e.label or e.name),
            str(e.key) if getattr(e, "key", None) else None,
            str(getattr(e, "description", "") or e.label or e.name),
            tuple(str(s) for s in getattr(e, "subkinds", ()) or ()),
            bool(getattr(e, "free_text", False)),
        )
        for e in entries
    )


def keys_text(keys: Sequence[str]) -> str:
    """Keys as a hint: a run of numbered keys as ``Ctrl+1…6``, others as ``A / S / D``."""
    if len(keys) >= 3:
        split = [re.fullmatch(r"(.*?)(\d)", k) for k in keys]
        if all(split) and len({m.group(1) for m in split if m}) == 1:
            digits = [int(m.group(2)) for m in split if m]
            if digits == list(range(digits[0], digits[0] + len(digits))):
                return f"{keys[0]}…{digits[-1]}"
    return " / ".join(keys)


def prefer_hint(hint: Any, n: int) -> str:
    """The preference keys for ``n`` responses: a sequence gives one key per response; a
    ``"1 / 2"`` hint is continued with 3, 4 … up to :data:`NUMBERED_RESPONSE_KEYS`; other
    text stays as it is."""
    if not hint or n < 2:
        return ""
    if isinstance(hint, (list, tuple)):
        return " / ".join(str(k) for k in hint[:n])
    keys = _SLASHED.split(str(hint).strip())
    if len(keys) > 1 and keys == [str(i) for i in range(1, len(keys) + 1)]:
        return " / ".join(str(i) for i in range(1, min(n, NUMBERED_RESPONSE_KEYS) + 1))
    return str(hint)


#: Which hint keys each section shows, with what they do; other keys go to the footer.
HINT_SECTIONS = {
    "preference": (("prefer", "response"), ("tie", "tie"), ("both_bad", "both bad"), ("discard", "discard")),
    "strength": (("strength", ""),),
    "errors": (("errors", ""),),
    "discard": (("discard_reasons", ""),),
    "note": (("note", ""),),
    "steps": (
        ("step_correct", "correct"),
        ("step_incorrect", "incorrect"),
        ("step_unmark", "unmark"),
        ("step_prev", "previous"),
        ("step_next", "next"),
    ),
}
STEPS_PER_ROW = 8

ACCENT, ACCENT_DARK, DISCARD_ACCENT, MUTED = "#2563eb", "#1d4ed8", "#c2410c", "#6b7280"
STYLE = f"""
QPushButton {{ padding: 5px 2px; border: 1px solid #9ca3af; border-radius: 4px; background: palette(button); }}
QPushButton:hover {{ border-color: {ACCENT}; }}
QPushButton:checked {{ background: {ACCENT}; color: white; border-color: {ACCENT_DARK}; font-weight: bold; }}
QPushButton#discard:checked {{ background: {DISCARD_ACCENT}; border-color: #9a3412; }}
QPushButton:disabled {{ color: #a3a3a3; background: transparent; border-color: #d4d4d4; }}
QPushButton:checked:disabled {{ background: #d4d4d4; color: #737373; }}
QLabel[role="heading"] {{ font-weight: bold; margin-top: 6px; }}
QLabel[role="hint"] {{ color: {MUTED}; font-size: 8pt; }}
"""
NEXT_MARK = {None: True, True: False, False: None}  # a click cycles unmarked → correct → incorrect
STEP_GLYPH = {None: "", True: "✓", False: "✗"}
STEP_STATE = {None: "unmarked", True: "correct", False: "incorrect"}
STEP_STYLE = {
    None: "background: transparent;",
    True: "background: #16a34a; color: white;",
    False: "background: #dc2626; color: white;",
}


def hint_texts(
    given: dict[str, Any], n: int, has_steps: bool, schema_keys: dict[str, list[str]] | None
) -> tuple[dict[str, str], str]:
    """Each section's hint and the footer for an item with ``n`` responses: the window's
    ``given`` hints, a schema's keys (``schema_keys`` per section, when set) for strength,
    errors and discard reasons, the preference keys for ``n`` responses, and on a step-wise
    item (one response) the step keys in their place."""
    hints = dict(given)
    if schema_keys is not None:
        for hint, section in (
            ("strength", "strengths"),
            ("errors", "error_types"),
            ("discard_reasons", "discard_reasons"),
        ):
            hints[hint] = keys_text(schema_keys[section])
    prefer = prefer_hint(hints.get("prefer"), n)
    if n < 2:  # a step-wise item: no preference; its keys are the step keys
        hints.pop("tie", None)
        hints.pop("both_bad", None)
        steps = " / ".join(k for k in (hints.get("step_correct"), hints.get("step_incorrect")) if k)
        prefer = f"{steps} steps" if steps and has_steps else ""
    hints["prefer"] = prefer
    texts: dict[str, str] = {}
    used: set[str] = set()
    for section, entries in HINT_SECTIONS.items():
        if section == "preference":
            entries = (("prefer", "response" if n > 1 else ""), *entries[1:])
        texts[section] = " · ".join(f"{hints[k]} {what}".strip() for k, what in entries if hints.get(k))
        used.update(k for k, _ in entries)
    rest = [f"{key} {name.replace('_', ' ')}" for name, key in hints.items() if name not in used and key]
    return texts, ("Keys: " + " · ".join(rest) if rest else "")
