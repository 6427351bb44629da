"""Row helpers the formats share: required fields with clear messages, derived ids,
media lists and preference strengths."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..records import MediaKind, MediaRef
from .base import MISSING, ImportContext, RowProblem, RowReader, item_id_of, type_name
from .messages import shown


def require(reader: RowReader, row: dict, name: str) -> tuple[str, Any]:
    """Like :meth:`RowReader.find`, but a missing field is a :class:`RowProblem` that says what to map."""
    key, value = reader.find(row, name)
    if key is None:
        raise RowProblem(f"{name}: {no_keys(reader, name)} in this row (use --map {name}=KEY)")
    return key, value


def no_keys(reader: RowReader, name: str) -> str:
    keys = reader.keys_for(name)
    if len(keys) == 1:
        return f"no key {shown(keys[0], quote=True)}"
    return "none of the keys " + ", ".join(shown(k, quote=True) for k in keys)


def what(name: str, key: str) -> str:
    """How messages name a field: ``prompt`` or ``prompt (key 'question')``."""
    return name if name == key else f"{name} (key {shown(key, quote=True)})"


def derived_id(prefix: str, *parts: Any) -> str:
    """A stable id from an item's content, so re-importing a file without ids is idempotent."""
    blob = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return f"{prefix}-{hashlib.sha1(blob.encode('utf-8')).hexdigest()[:12]}"


def media_refs(value: Any, label: str) -> list[str]:
    """A media field as a list of paths: absent/empty → ``[]``, a string → one path."""
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise RowProblem(f"{label}: expected a path or a list of paths, got {type_name(value)}")
    for i, ref in enumerate(value):
        if not isinstance(ref, str) or not ref.strip():
            raise RowProblem(f"{label}[{i}]: expected a file path, got {shown(ref, quote=True)}")
    return value


def resolve_media(ctx: ImportContext, line: int, ext_id: str, refs: list[str], kind: MediaKind) -> tuple[MediaRef, ...]:
    """Resolve paths with ``ctx.media``. A refused reference (outside the media root, not an
    image/video) is a warning naming the item; files simply not found are summarised once
    by the import report, not warned per item."""
    media = tuple(ctx.media(r, kind) for r in refs)
    warn_refused(ctx, line, ext_id, media)
    return media


def warn_refused(ctx: ImportContext, line: int, ext_id: str, media: tuple[MediaRef, ...]) -> None:
    """A warning naming the item for each refused media reference."""
    for m in media:
        if m.missing and (m.ref, m.kind) in ctx.refused:
            ctx.warn(line, m.problem or f"{m.kind} refused: {m.ref}", ext_id)


def strength_of(value: Any, label: str) -> str | None:
    """A preference strength (string or number) as text; ``None`` when absent."""
    if value is MISSING or value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RowProblem(f"{label}: expected a string or number, got {type_name(value)}")
    return str(value).strip() or None


def ext_id_or(reader: RowReader, row: dict, line: int, fallback: str) -> str:
    """The row's own id, or ``fallback`` (a derived id) when it has none."""
    _, value = reader.find(row, "id")
    if value is MISSING or value is None:
        return fallback
    return item_id_of(value, line)
