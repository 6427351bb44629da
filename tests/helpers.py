"""Small helpers shared by the tests (pytest puts this folder on sys.path)."""

from __future__ import annotations

import json


def write_jsonl(path, rows):
    """Write rows (dicts, or raw strings for malformed lines) as a JSONL file; return the path."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def item(store, ext_id):
    """The stored item with this dataset id."""
    return store.get_item(store.item_id(ext_id))
