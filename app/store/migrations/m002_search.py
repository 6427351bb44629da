"""Migration 2: full-text search and the tables the item filters read.

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import SchemaError, run_script

# A current label's preference coded as in the statistics (``app.stats.data``): the response
# index, -1 tie, -2 both bad; discard, unrated and cleared labels state none.
_PREFERENCE_CODE = "CASE outcome WHEN 'prefer' THEN preferred WHEN 'tie' THEN -1 WHEN 'both_bad' THEN -2 END"


def _refresh_disagreement(item: str) -> str:
    """Trigger body: recompute whether the current labels of ``item`` disagree."""
    return f"""
            DELETE FROM label_disagreements WHERE item_id = {item};
            INSERT INTO label_disagreements (item_id) SELECT {item} WHERE (
                SELECT min({_PREFERENCE_CODE}) != max({_PREFERENCE_CODE}) FROM label_current
                WHERE kind = 'label' AND item_id = {item} AND outcome IN ('prefer', 'tie', 'both_bad'));"""


def _refresh_judge_item(run: str, item: str) -> str:
    """Trigger body: recompute one (run, item) row of ``judge_items`` from its verdicts.

    The majority is the strict plurality of parsed samples that name a response (the rule
    of ``app.judge.votes`` then). Votes per choice are packed as ``n·2^20 + c`` and ``n·2^20 - c``:
    the max of each gives the top count with its highest and its lowest choice, which are
    equal exactly when one response has the most votes.
    """
    return f"""
            DELETE FROM judge_items WHERE run_id = {run} AND item_id = {item};
            INSERT INTO judge_items (run_id, item_id, choice, verdict, inconsistent)
            SELECT {run}, {item}, m.choice,
                   CASE WHEN m.choice IS NULL THEN 'unparsed'
                        WHEN r.ref_chosen IS NULL THEN 'unscored'
                        WHEN m.choice = r.ref_chosen THEN 'right' ELSE 'wrong' END,
                   coalesce((SELECT both_orders FROM judge_runs WHERE id = {run}), 0) AND EXISTS (
                       SELECT 1 FROM verdicts a JOIN verdicts b ON b.run_id = a.run_id AND b.item_id = a.item_id
                           AND b.sample_idx = a.sample_idx + 1
                       WHERE a.run_id = {run} AND a.item_id = {item} AND a.sample_idx % 2 = 0
                           AND a.parsed AND b.parsed AND a.choice IS NOT b.choice)
            FROM (SELECT CASE WHEN (hi & 1048575) = ((hi >> 20 << 20) - lo) THEN hi & 1048575 END AS choice
                  FROM (SELECT max(n * 1048576 + c) AS hi, max(n * 1048576 - c) AS lo
                        FROM (SELECT choice AS c, count(*) AS n FROM verdicts
                              WHERE run_id = {run} AND item_id = {item} AND parsed AND choice IS NOT NULL
                              GROUP BY choice))) m,
                 (SELECT ref_chosen FROM items WHERE id = {item}) r
            WHERE EXISTS (SELECT 1 FROM verdicts WHERE run_id = {run} AND item_id = {item});"""


def apply(conn: sqlite3.Connection) -> None:
    """Full-text search over prompts and responses, and what the item filters read.

    - ``item_text``: FTS5 index, rowid = item id, columns ``prompt`` and ``responses``. It
      stores no text (external content: the view ``item_text_source`` gives the prompt and
      the responses joined by newlines in index order), so ``'rebuild'`` re-reads every item
      and ``'integrity-check'`` compares the index with them. The import adds new items to
      it in its own transaction (``search.index_batch``).
    - ``label_current``: the current row per (kind, item, annotator) of the append-only
      ``labels`` (newest ``created_at``; at equal times the later insert, as ``ORDER BY
      created_at DESC, rowid DESC``), kept by a trigger on ``labels``. ``cleared`` rows stay
      (an older label inserted later must not come back); readers skip them.
      ``against_ref``: a ``prefer`` label naming another response than the item's
      ``ref_chosen``.
    - ``label_disagreements``: items whose current labels state different preferences
      (response, tie, both bad), kept by triggers on ``label_current``.
    - ``judge_items``: per judge run and judged item, the majority choice, the ``verdict``
      against the reference (right, wrong, unparsed = no majority, unscored = no reference)
      and whether a both-orders pair disagreed, kept by triggers on ``verdicts``.

    The derived tables assume what the store guarantees: items never change once stored and
    labels are never updated or deleted; verdicts may be deleted (``clear_failed``).
    """
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.fts5_probe")
    except sqlite3.OperationalError as exc:
        raise SchemaError(
            f"the SQLite of this Python ({sqlite3.sqlite_version}) lacks FTS5, which PairScope's search needs: {exc}"
        ) from exc
    run_script(
        conn,
        f"""
        CREATE VIEW item_text_source AS
            SELECT i.id AS id, i.prompt AS prompt,
                   (SELECT group_concat(text, char(10)) FROM
                       (SELECT r.text FROM responses r WHERE r.item_id = i.id ORDER BY r.idx)) AS responses
            FROM items i;
        CREATE VIRTUAL TABLE item_text USING fts5(
            prompt, responses,
            content = 'item_text_source', content_rowid = 'id',
            tokenize = 'unicode61 remove_diacritics 2'
        );
        INSERT INTO item_text (item_text) VALUES ('rebuild');

        CREATE TABLE label_current (
            kind            TEXT NOT NULL,
            item_id         INTEGER NOT NULL,
            annotator_id    INTEGER NOT NULL,
            label_rowid     INTEGER NOT NULL,
            created_at      TEXT NOT NULL,
            outcome         TEXT NOT NULL,
            preferred       INTEGER,
            against_ref     INTEGER NOT NULL,
            error_types     TEXT NOT NULL,
            discard_reasons TEXT NOT NULL,
            PRIMARY KEY (kind, item_id, annotator_id)
        ) WITHOUT ROWID;
        -- Covering indexes of the filters (a partial index must hold every column the query
        -- reads, or SQLite prefers the primary key).
        CREATE INDEX label_current_annotator ON label_current(annotator_id, kind, item_id, outcome);
        CREATE INDEX label_current_outcome ON label_current(kind, item_id, outcome);
        CREATE INDEX label_current_against_ref ON label_current(kind, annotator_id, item_id, against_ref)
            WHERE against_ref;
        CREATE INDEX label_current_errors ON label_current(kind, item_id, error_types) WHERE error_types != '[]';
        CREATE INDEX label_current_discards ON label_current(kind, item_id, discard_reasons)
            WHERE discard_reasons != '[]';
        CREATE TRIGGER labels_keep_current AFTER INSERT ON labels BEGIN
            INSERT INTO label_current (kind, item_id, annotator_id, label_rowid, created_at, outcome, preferred,
                                       against_ref, error_types, discard_reasons)
            VALUES (new.kind, new.item_id, new.annotator_id, new.rowid, new.created_at, new.outcome, new.preferred,
                    coalesce(new.outcome = 'prefer' AND new.preferred != (
                        SELECT ref_chosen FROM items WHERE id = new.item_id), 0),
                    new.error_types, new.discard_reasons)
            ON CONFLICT (kind, item_id, annotator_id) DO UPDATE SET
                label_rowid = excluded.label_rowid, created_at = excluded.created_at, outcome = excluded.outcome,
                preferred = excluded.preferred, against_ref = excluded.against_ref,
                error_types = excluded.error_types, discard_reasons = excluded.discard_reasons
            WHERE excluded.created_at >= label_current.created_at;
        END;
        INSERT INTO label_current (kind, item_id, annotator_id, label_rowid, created_at, outcome, preferred,
                                   against_ref, error_types, discard_reasons)
            SELECT l.kind, l.item_id, l.annotator_id, l.label_rowid, l.created_at, l.outcome, l.preferred,
                   coalesce(l.outcome = 'prefer' AND l.preferred != i.ref_chosen, 0), l.error_types, l.discard_reasons
            FROM (SELECT labels.*, labels.rowid AS label_rowid, ROW_NUMBER() OVER (
                      PARTITION BY kind, item_id, annotator_id ORDER BY created_at DESC, labels.rowid DESC) AS rn
                  FROM labels) l JOIN items i ON i.id = l.item_id
            WHERE l.rn = 1;

        CREATE TABLE label_disagreements (item_id INTEGER PRIMARY KEY);
        CREATE TRIGGER label_current_added AFTER INSERT ON label_current WHEN new.kind = 'label' BEGIN
            {_refresh_disagreement("new.item_id")}
        END;
        CREATE TRIGGER label_current_changed AFTER UPDATE ON label_current WHEN new.kind = 'label' BEGIN
            {_refresh_disagreement("new.item_id")}
        END;
        INSERT INTO label_disagreements (item_id)
            SELECT item_id FROM label_current WHERE kind = 'label' AND outcome IN ('prefer', 'tie', 'both_bad')
            GROUP BY item_id HAVING min({_PREFERENCE_CODE}) != max({_PREFERENCE_CODE});

        CREATE TABLE judge_items (
            run_id       INTEGER NOT NULL,
            item_id      INTEGER NOT NULL,
            choice       INTEGER,
            verdict      TEXT NOT NULL CHECK (verdict IN ('right', 'wrong', 'unparsed', 'unscored')),
            inconsistent INTEGER NOT NULL,
            PRIMARY KEY (run_id, item_id)
        ) WITHOUT ROWID;
        CREATE INDEX judge_items_verdict ON judge_items(run_id, verdict, item_id);
        CREATE INDEX judge_items_inconsistent ON judge_items(run_id, item_id) WHERE inconsistent;
        CREATE TRIGGER verdicts_added AFTER INSERT ON verdicts BEGIN
            {_refresh_judge_item("new.run_id", "new.item_id")}
        END;
        CREATE TRIGGER verdicts_removed AFTER DELETE ON verdicts BEGIN
            {_refresh_judge_item("old.run_id", "old.item_id")}
        END;
        CREATE TRIGGER verdicts_changed AFTER UPDATE ON verdicts BEGIN
            {_refresh_judge_item("old.run_id", "old.item_id")}
            {_refresh_judge_item("new.run_id", "new.item_id")}
        END;
        -- Covering index for the triggers above and for backfilling.
        CREATE INDEX verdicts_run_vote ON verdicts(run_id, item_id, sample_idx, parsed, choice);
        CREATE INDEX ref_error_tags_kind ON ref_error_tags(kind, item_id);
        """,
    )
    _backfill_judge_items(conn)


def _backfill_judge_items(conn: sqlite3.Connection) -> None:
    """``judge_items`` for the verdicts already stored (the triggers' rule, set-wise)."""
    run_script(
        conn,
        """
        INSERT INTO judge_items (run_id, item_id, choice, verdict, inconsistent)
        SELECT j.run_id, j.item_id, m.choice,
               CASE WHEN m.choice IS NULL THEN 'unparsed' WHEN i.ref_chosen IS NULL THEN 'unscored'
                    WHEN m.choice = i.ref_chosen THEN 'right' ELSE 'wrong' END,
               coalesce(p.inconsistent, 0)
        FROM (SELECT DISTINCT run_id, item_id FROM verdicts) j
        JOIN items i ON i.id = j.item_id
        LEFT JOIN (
            SELECT run_id, item_id,
                   CASE WHEN (hi & 1048575) = ((hi >> 20 << 20) - lo) THEN hi & 1048575 END AS choice
            FROM (SELECT run_id, item_id, max(n * 1048576 + c) AS hi, max(n * 1048576 - c) AS lo
                  FROM (SELECT run_id, item_id, choice AS c, count(*) AS n FROM verdicts
                        WHERE parsed AND choice IS NOT NULL GROUP BY run_id, item_id, choice)
                  GROUP BY run_id, item_id)
        ) m ON m.run_id = j.run_id AND m.item_id = j.item_id
        LEFT JOIN (
            SELECT DISTINCT a.run_id, a.item_id, 1 AS inconsistent
            FROM verdicts a JOIN verdicts b ON b.run_id = a.run_id AND b.item_id = a.item_id
                AND b.sample_idx = a.sample_idx + 1
            JOIN judge_runs r ON r.id = a.run_id AND r.both_orders
            WHERE a.sample_idx % 2 = 0 AND a.parsed AND b.parsed AND a.choice IS NOT b.choice
        ) p ON p.run_id = j.run_id AND p.item_id = j.item_id;
        """,
    )
