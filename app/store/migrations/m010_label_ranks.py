"""Migration 10: full rankings with ties, of a label and of the dataset's reference.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """``labels.ranks``: a JSON list with one dense rank per response index (1 = best, tied
    responses share a rank; ``app.rankings``), ``[]`` for a label that ranks nothing. With
    ranks, ``ranking`` holds their order and ``preferred`` its first when one response is best.
    ``label_current`` names its row, so the trigger needs no change. ``items.ref_ranks``: the
    dataset's reference ranking in the same form (NULL: the dataset ranks nothing, or its
    ``ref_ranking`` says all), e.g. MR²Bench's ``rankings`` with ties."""
    if any(row[1] == "ranks" for row in conn.execute("PRAGMA table_info(labels)")):
        return  # applied already (a migration is safe to run twice)
    run_script(
        conn,
        """
        ALTER TABLE labels ADD COLUMN ranks TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE items ADD COLUMN ref_ranks TEXT;
    """,
    )
