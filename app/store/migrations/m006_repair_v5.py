"""Migration 6: repair the version-5 files made by the builds that applied an earlier form of
migration 5 (``m005_label_schemas.SHIPPED_EARLIER``): add what they lack, nothing else.

A file made by the first build lacks ``label_current.labeled`` (with its indexes and the
trigger that keeps it); one made by the first or second lacks ``judge_items.confidence``,
whose values the judge layer decides again (``meta.judge_items_stale``) on next open.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from . import m005_label_schemas as m005


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def apply(conn: sqlite3.Connection) -> None:
    """Bring any shipped version-5 file to the final version-5 shape."""
    if "labeled" not in _columns(conn, "label_current"):
        m005.labeled_column(conn)
    if "confidence" not in _columns(conn, "judge_items"):
        m005.item_confidence_column(conn)
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value)"
            " SELECT 'judge_items_stale', '1' WHERE EXISTS (SELECT 1 FROM verdicts)"
        )
