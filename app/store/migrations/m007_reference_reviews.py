"""Migration 7: reviews of the dataset's reference ("reference is wrong"), audited.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """``reference_reviews``: one append-only row per decision a reviewer takes on an item's
    reference — ``wrong`` (with the response the reviewer names as the better one, or none),
    ``confirmed``, or ``withdrawn`` (an earlier decision taken back) — with who
    (``annotator_id``), when (``created_at``, ISO 8601 UTC) and why (``reason``). The newest
    row per item is its current review (``app/store/references.py``); rows are never updated
    or deleted (the triggers refuse it), so the table is the audit trail.
    """
    run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS reference_reviews (
            uuid         TEXT PRIMARY KEY,
            item_id      INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            created_at   TEXT NOT NULL,
            verdict      TEXT NOT NULL CHECK (verdict IN ('wrong', 'confirmed', 'withdrawn')),
            corrected    INTEGER CHECK (corrected IS NULL OR (verdict = 'wrong' AND corrected >= 0)),
            original     INTEGER,
            reason       TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX IF NOT EXISTS reference_reviews_item ON reference_reviews(item_id, created_at);
        CREATE TRIGGER IF NOT EXISTS reference_reviews_no_update BEFORE UPDATE ON reference_reviews BEGIN
            SELECT RAISE(ABORT, 'reference reviews are append-only: add a new review instead');
        END;
        CREATE TRIGGER IF NOT EXISTS reference_reviews_no_delete BEFORE DELETE ON reference_reviews BEGIN
            SELECT RAISE(ABORT, 'reference reviews are append-only: add a new review instead');
        END;
    """,
    )
