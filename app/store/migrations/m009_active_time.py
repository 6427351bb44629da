"""Migration 9: the active time of a label.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """``labels.active_ms``: how long, in milliseconds, the item was on screen with the window
    focused and the annotator active (idle gaps past ``labeling.active_time.IDLE_S`` left out)
    before this label was saved; NULL when not measured (labels made before version 9, by
    the research API, or imported without a time). ``label_current`` names its row, so the
    trigger needs no change."""
    if any(row[1] == "active_ms" for row in conn.execute("PRAGMA table_info(labels)")):
        return  # applied already (a migration is safe to run twice)
    run_script(
        conn,
        """
        ALTER TABLE labels ADD COLUMN active_ms INTEGER CHECK (active_ms IS NULL OR active_ms >= 0);
    """,
    )
