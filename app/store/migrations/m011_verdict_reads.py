"""Migration 11: a covering index for reading a run's verdicts (issue 30).

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """``verdicts_run_read``: every column the statistics read of a run's samples (item,
    sample, parsed, choice, error, the order shown, scores, confidence), so that
    ``app.store.stats_queries`` walks this index alone instead of looking each sample up in
    the wide verdicts table (raw outputs, rationales). It begins with the columns of
    migration 2's ``verdicts_run_vote`` (run, item, sample, parsed, choice), which it replaces:
    every read that used that index is covered by this one."""
    run_script(
        conn,
        """
        CREATE INDEX IF NOT EXISTS verdicts_run_read ON verdicts(
            run_id, item_id, sample_idx, parsed, choice, error, order_shown, scores, confidence);
        DROP INDEX IF EXISTS verdicts_run_vote;
    """,
    )
