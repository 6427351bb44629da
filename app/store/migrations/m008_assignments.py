"""Migration 8: team assignments and gold items.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """``assignments``: which annotator was given which item, in which round (``batch``: one
    ``pairscope assign`` run, with its strategy and seed), when, and whether as a gold item;
    one row per (item, annotator), never reissued. ``gold_items``: the items a lead marked as
    gold with the expected outcome (``prefer`` with ``preferred``, ``tie`` or ``both_bad``)
    and where it came from (``source``: ``marked`` or ``reference:<collection>``)."""
    run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS assignments (
            item_id      INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            batch        TEXT NOT NULL,
            assigned_at  TEXT NOT NULL,
            strategy     TEXT NOT NULL,
            seed         INTEGER NOT NULL,
            gold         INTEGER NOT NULL DEFAULT 0 CHECK (gold IN (0, 1)),
            PRIMARY KEY (item_id, annotator_id)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS assignments_annotator ON assignments(annotator_id, item_id);
        CREATE TABLE IF NOT EXISTS gold_items (
            item_id    INTEGER PRIMARY KEY REFERENCES items(id),
            outcome    TEXT NOT NULL CHECK (outcome IN ('prefer', 'tie', 'both_bad')),
            preferred  INTEGER CHECK ((outcome = 'prefer') = (preferred IS NOT NULL)),
            source     TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
    """,
    )
