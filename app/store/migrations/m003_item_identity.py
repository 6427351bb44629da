"""Migration 3: item identity = dataset id + content.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """Item identity is the dataset's id *and* its content (real releases repeat ids).

    - ``source_id``: the dataset's id verbatim when the item is shown under another display
      id (``ext_id`` = ``id#2``); ``NULL`` when they are the same.
    - ``identity``: :func:`pairscope.app.store.items.identity_key` (id + prompt as written +
      the responses as a set), unique: re-importing matches items by it.
    """
    from ...records import Item, Response
    from ..items import identity_key  # the one definition; items imports this module's users

    run_script(
        conn,
        """
        ALTER TABLE items ADD COLUMN source_id TEXT;
        ALTER TABLE items ADD COLUMN identity TEXT;
    """,
    )
    texts: dict[int, list[str]] = {}
    for item_id, text in conn.execute("SELECT item_id, text FROM responses ORDER BY item_id, idx"):
        texts.setdefault(item_id, []).append(text)
    rows = []
    for item_id, ext_id, prompt, prompt_raw in conn.execute("SELECT id, ext_id, prompt, prompt_raw FROM items"):
        responses = tuple(Response(i, t) for i, t in enumerate(texts.get(item_id, ())))
        rows.append(
            (identity_key(Item(ext_id=ext_id, prompt=prompt, prompt_raw=prompt_raw, responses=responses)), item_id)
        )
    conn.executemany("UPDATE items SET identity = ? WHERE id = ?", rows)
    conn.execute("CREATE UNIQUE INDEX items_identity ON items(identity)")
