"""Migration 4: item verdicts decided once, in the judge layer.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
    """The verdict of a run on an item is decided in Python, once (``app.judge.votes``).

    ``judge_items`` becomes a table the judge layer writes with the verdicts that change it
    (``app.judge.results.record_verdicts``), no longer SQL triggers repeating the vote rule:
    ``choice``/``verdict`` under the official convention (right, wrong, undecided = no
    majority, unscored = no reference), ``plurality_choice``/``plurality_verdict``,
    ``inconsistent`` (a both-orders pair disagreed), ``unparsed`` and ``failed`` sample counts.
    Rows of earlier projects are rebuilt by the judge layer when it first opens the project
    (``meta.judge_items_stale``). ``judge_runs.parser`` records the verdict parser profile and
    ``derived_from`` the run a reparse or import was made from.
    """
    run_script(
        conn,
        """
        DROP TRIGGER IF EXISTS verdicts_added;
        DROP TRIGGER IF EXISTS verdicts_removed;
        DROP TRIGGER IF EXISTS verdicts_changed;
        DROP TABLE judge_items;
        CREATE TABLE judge_items (
            run_id            INTEGER NOT NULL,
            item_id           INTEGER NOT NULL,
            choice            INTEGER,
            verdict           TEXT NOT NULL CHECK (verdict IN ('right', 'wrong', 'undecided', 'unscored')),
            plurality_choice  INTEGER,
            plurality_verdict TEXT NOT NULL CHECK (plurality_verdict IN ('right', 'wrong', 'undecided', 'unscored')),
            inconsistent      INTEGER NOT NULL,
            unparsed          INTEGER NOT NULL,
            failed            INTEGER NOT NULL,
            PRIMARY KEY (run_id, item_id)
        ) WITHOUT ROWID;
        CREATE INDEX judge_items_verdict ON judge_items(run_id, verdict, item_id);
        CREATE INDEX judge_items_inconsistent ON judge_items(run_id, item_id) WHERE inconsistent;
        CREATE INDEX judge_items_failed ON judge_items(run_id, item_id) WHERE failed;
        ALTER TABLE judge_runs ADD COLUMN parser TEXT NOT NULL DEFAULT 'lenient';
        ALTER TABLE judge_runs ADD COLUMN derived_from INTEGER REFERENCES judge_runs(id);
        INSERT OR REPLACE INTO meta (key, value)
            SELECT 'judge_items_stale', '1' WHERE EXISTS (SELECT 1 FROM verdicts);
    """,
    )
