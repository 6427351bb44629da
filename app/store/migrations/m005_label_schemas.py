"""Migration 5: label schemas, verdict log-probabilities and confidence.

Applied: never edit it (tests/test_migrations.py pins its schema and its code). It *was*
edited twice after it had shipped, so three builds made three different version-5 files;
:data:`SHIPPED_EARLIER` reproduces the two earlier ones, which the store accepts on open and
migration 6 repairs.
"""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script

#: The rule "this label makes its item labeled" as the trigger states it. Frozen with the
#: migration; tests/test_migrations.py holds it equal to ``records.LABELED_OUTCOMES`` (a change
#: there needs a new migration that recreates the trigger).
LABELED_SQL = (
    "(l.outcome IN ('prefer', 'tie', 'both_bad', 'discard') OR (l.outcome = 'unrated' AND l.step_marks != '[]'))"
)


def apply(conn: sqlite3.Connection) -> None:
    """``label_schemas``: each version of the project's label schema (JSON) and guidelines;
    ``labels.schema_version`` the one a label was given under (NULL: the built-in default).
    ``verdicts.logprobs``/``confidence``: a sample's log-probabilities and its verdict's
    probability; ``judge_items.confidence`` the item's (decided in Python). ``label_current.labeled``:
    the label makes its item labeled (``records.Label.is_labeled``'s twin).
    """
    schemas_and_logprobs(conn)
    labeled_column(conn)
    item_confidence_column(conn)


def schemas_and_logprobs(conn: sqlite3.Connection) -> None:
    """The first build's migration 5 (commit f0f4dde)."""
    run_script(
        conn,
        """
        CREATE TABLE label_schemas (
            version    INTEGER PRIMARY KEY,
            schema     TEXT NOT NULL,
            guidelines TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            note       TEXT NOT NULL DEFAULT ''
        );
        ALTER TABLE labels ADD COLUMN schema_version INTEGER;
        ALTER TABLE verdicts ADD COLUMN logprobs TEXT;
        ALTER TABLE verdicts ADD COLUMN confidence REAL;
    """,
    )


def labeled_column(conn: sqlite3.Connection) -> None:
    """``label_current.labeled``, kept by the trigger (added to migration 5 in a0a4a1d)."""
    run_script(
        conn,
        f"""
        ALTER TABLE label_current ADD COLUMN labeled INTEGER NOT NULL DEFAULT 0;
        UPDATE label_current SET labeled = (SELECT {LABELED_SQL} FROM labels l WHERE l.rowid = label_rowid);
        CREATE INDEX label_current_labeled ON label_current(annotator_id, kind, item_id) WHERE labeled;
        CREATE INDEX label_current_labeled_any ON label_current(kind, item_id) WHERE labeled;
        DROP TRIGGER labels_keep_current;
        CREATE TRIGGER labels_keep_current AFTER INSERT ON labels BEGIN
            INSERT INTO label_current (kind, item_id, annotator_id, label_rowid, created_at, outcome, preferred,
                                       against_ref, error_types, discard_reasons, labeled)
            VALUES (new.kind, new.item_id, new.annotator_id, new.rowid, new.created_at, new.outcome, new.preferred,
                    coalesce(new.outcome = 'prefer' AND new.preferred != (
                        SELECT ref_chosen FROM items WHERE id = new.item_id), 0),
                    new.error_types, new.discard_reasons, {LABELED_SQL.replace("l.", "new.")})
            ON CONFLICT (kind, item_id, annotator_id) DO UPDATE SET
                label_rowid = excluded.label_rowid, created_at = excluded.created_at, outcome = excluded.outcome,
                preferred = excluded.preferred, against_ref = excluded.against_ref,
                error_types = excluded.error_types, discard_reasons = excluded.discard_reasons,
                labeled = excluded.labeled
            WHERE excluded.created_at >= label_current.created_at;
        END;
    """,
    )


def item_confidence_column(conn: sqlite3.Connection) -> None:
    """``judge_items.confidence`` (added to migration 5 in 1610115)."""
    conn.execute("ALTER TABLE judge_items ADD COLUMN confidence REAL")


def _second_build(conn: sqlite3.Connection) -> None:
    schemas_and_logprobs(conn)
    labeled_column(conn)


#: Migration 5 as the two earlier builds applied it (f0f4dde, then a0a4a1d).
SHIPPED_EARLIER = (schemas_and_logprobs, _second_build)
