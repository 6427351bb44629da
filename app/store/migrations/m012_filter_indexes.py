"""Migration 12: covering indexes for the window's filters on large projects (issue 30).

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """``items_ids``: the item ids alone, in order, so that a filter that reads every item
    (none, "unlabeled", "not adjudicated") walks a narrow index instead of the wide items
    table. The status filters' partial indexes of migration 5 did not hold ``labeled``, the
    column of their own condition, so SQLite 3.40 read the whole ``label_current`` primary key
    instead (it does not count a partial index's WHERE columns as held): they are replaced by
    the same indexes with ``labeled`` as the last column, which cover the filters' reads. The
    same for the judge filters "inconsistent" and "failed" (migration 4's partial indexes;
    "failed" tests ``failed > 0``, which ``WHERE failed`` did not match at all)."""
    run_script(
        conn,
        """
        CREATE INDEX IF NOT EXISTS items_ids ON items(id);
        DROP INDEX IF EXISTS label_current_labeled;
        DROP INDEX IF EXISTS label_current_labeled_any;
        CREATE INDEX IF NOT EXISTS label_current_labeled_by
            ON label_current(annotator_id, kind, item_id, labeled) WHERE labeled;
        CREATE INDEX IF NOT EXISTS label_current_labeled_by_any ON label_current(kind, item_id, labeled) WHERE labeled;
        DROP INDEX IF EXISTS judge_items_inconsistent;
        DROP INDEX IF EXISTS judge_items_failed;
        CREATE INDEX IF NOT EXISTS judge_items_inconsistent_by
            ON judge_items(run_id, item_id, inconsistent) WHERE inconsistent;
        CREATE INDEX IF NOT EXISTS judge_items_failed_by ON judge_items(run_id, item_id, failed) WHERE failed > 0;
    """,
    )
