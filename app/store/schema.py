"""Versioned schema migrations for a PairScope project file.

The schema version lives in ``PRAGMA user_version``; every applied migration is also
recorded in ``schema_migrations`` with its name and time. Migrations only ever move
forward and each runs in its own transaction.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType


class SchemaError(RuntimeError):
    """The file is not a PairScope project this version can open."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Execute DDL statement by statement inside the caller's transaction.

    ``executescript`` would COMMIT first, breaking the one-transaction-per-migration rule.
    """
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        raise SchemaError(f"incomplete SQL statement in migration: {buffer.strip()[:80]}")


def _initial(conn: sqlite3.Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE imports (
            id          INTEGER PRIMARY KEY,
            path        TEXT NOT NULL,
            format      TEXT NOT NULL,
            sha256      TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            added       INTEGER NOT NULL,
            unchanged   INTEGER NOT NULL,
            options     TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE items (
            id            INTEGER PRIMARY KEY,
            ext_id        TEXT NOT NULL UNIQUE,
            source_format TEXT NOT NULL,
            category      TEXT NOT NULL,
            subset        TEXT,
            prompt        TEXT NOT NULL,
            prompt_words  INTEGER NOT NULL DEFAULT 0,
            prompt_raw    TEXT,
            media_kind    TEXT NOT NULL CHECK (media_kind IN ('none', 'image', 'video')),
            n_responses   INTEGER NOT NULL CHECK (n_responses >= 1),
            ref_ranking   TEXT,            -- JSON list of response indices, best first
            ref_chosen    INTEGER,         -- ref_ranking[0], kept as a column for filters
            ref_strength  TEXT,
            ground_truth  TEXT,
            extra         TEXT NOT NULL DEFAULT '{}',  -- unknown source fields, verbatim
            content_hash  TEXT NOT NULL,
            import_id     INTEGER REFERENCES imports(id),
            missing_media INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX items_category ON items(category);
        CREATE TABLE responses (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            idx     INTEGER NOT NULL,
            text    TEXT NOT NULL,
            words   INTEGER NOT NULL DEFAULT 0,
            model   TEXT,
            PRIMARY KEY (item_id, idx)
        );  -- a rowid table: long texts make WITHOUT ROWID slower (SQLite docs, measured)
        CREATE TABLE steps (
            item_id      INTEGER NOT NULL,
            response_idx INTEGER NOT NULL,
            idx          INTEGER NOT NULL,
            text         TEXT NOT NULL,
            ref_correct  INTEGER,          -- 1 correct, 0 erroneous, NULL unknown
            PRIMARY KEY (item_id, response_idx, idx),
            FOREIGN KEY (item_id, response_idx) REFERENCES responses(item_id, idx) ON DELETE CASCADE
        ) WITHOUT ROWID;
        CREATE TABLE media (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            idx     INTEGER NOT NULL,
            kind    TEXT NOT NULL CHECK (kind IN ('image', 'video')),
            ref     TEXT NOT NULL,         -- as the dataset wrote it
            path    TEXT,                  -- where it was found; NULL when missing
            problem TEXT,
            PRIMARY KEY (item_id, idx)
        ) WITHOUT ROWID;
        CREATE TABLE ref_error_tags (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            idx     INTEGER NOT NULL,
            kind    TEXT NOT NULL,
            subkind TEXT,
            note    TEXT,
            raw     TEXT,
            PRIMARY KEY (item_id, idx)
        ) WITHOUT ROWID;
        CREATE TABLE annotators (
            id         INTEGER PRIMARY KEY,
            name       TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        );
        -- Append-only: the newest row per (item, annotator, kind) is current.
        CREATE TABLE labels (
            uuid            TEXT PRIMARY KEY,
            item_id         INTEGER NOT NULL REFERENCES items(id),
            annotator_id    INTEGER NOT NULL REFERENCES annotators(id),
            created_at      TEXT NOT NULL,
            kind            TEXT NOT NULL DEFAULT 'label' CHECK (kind IN ('label', 'adjudication')),
            outcome         TEXT NOT NULL
                            CHECK (outcome IN ('prefer', 'tie', 'both_bad', 'discard', 'unrated', 'cleared')),
            ranking         TEXT NOT NULL DEFAULT '[]',
            preferred       INTEGER,       -- ranking[0] when outcome is 'prefer' (for statistics)
            strength        TEXT,
            error_types     TEXT NOT NULL DEFAULT '[]',
            discard_reasons TEXT NOT NULL DEFAULT '[]',
            note            TEXT NOT NULL DEFAULT '',
            display_order   TEXT NOT NULL DEFAULT '[]',
            step_marks      TEXT NOT NULL DEFAULT '[]'
        );
        -- Covering index for "the newest label per (item, annotator)" (statistics, current label).
        CREATE INDEX labels_current ON labels(kind, item_id, annotator_id, created_at, outcome, preferred);
        CREATE INDEX labels_annotator_item ON labels(annotator_id, kind, item_id, created_at);
        CREATE INDEX labels_item ON labels(item_id);
        CREATE TABLE display_orders (
            item_id      INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            display_order TEXT NOT NULL,
            PRIMARY KEY (item_id, annotator_id)
        ) WITHOUT ROWID;
        CREATE TABLE judge_runs (
            id             INTEGER PRIMARY KEY,
            uuid           TEXT NOT NULL UNIQUE,
            created_at     TEXT NOT NULL,
            backend        TEXT NOT NULL,
            model_path     TEXT NOT NULL,
            weights_hash   TEXT,
            template_name  TEXT,
            template_text  TEXT NOT NULL,
            template_hash  TEXT NOT NULL,
            mode           TEXT NOT NULL CHECK (mode IN ('pairwise', 'pointwise', 'step')),
            k              INTEGER NOT NULL DEFAULT 1,
            both_orders    INTEGER NOT NULL DEFAULT 0,
            frames         INTEGER,
            seed           INTEGER NOT NULL,
            generation     TEXT NOT NULL DEFAULT '{}',
            status         TEXT NOT NULL DEFAULT 'running'
        );
        CREATE TABLE verdicts (
            id          INTEGER PRIMARY KEY,
            run_id      INTEGER NOT NULL REFERENCES judge_runs(id) ON DELETE CASCADE,
            item_id     INTEGER NOT NULL REFERENCES items(id),
            sample_idx  INTEGER NOT NULL,
            order_shown TEXT NOT NULL,
            raw_output  TEXT,
            choice      INTEGER,
            scores      TEXT,
            parsed      INTEGER NOT NULL DEFAULT 0,
            rationale   TEXT,
            tokens_in   INTEGER,
            tokens_out  INTEGER,
            latency_s   REAL,
            error       TEXT,
            media_sent  TEXT,
            created_at  TEXT NOT NULL,
            UNIQUE (run_id, item_id, sample_idx)
        );
        CREATE INDEX verdicts_item ON verdicts(item_id);
        CREATE TABLE collections (
            id          INTEGER PRIMARY KEY,
            name        TEXT NOT NULL UNIQUE,
            description TEXT NOT NULL DEFAULT '',
            created_at  TEXT NOT NULL
        );
        CREATE TABLE collection_items (
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            item_id       INTEGER NOT NULL REFERENCES items(id),
            added_at      TEXT NOT NULL,
            PRIMARY KEY (collection_id, item_id)
        ) WITHOUT ROWID;
        """,
    )


# -- migration 2 ------------------------------------------------------------------------------

# A current label's preference coded as in the statistics (``stats_data``): the response
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
    of ``judging.vote``). Votes per choice are packed as ``n·2^20 + c`` and ``n·2^20 - c``:
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


def _search(conn: sqlite3.Connection) -> None:
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


def _item_identity(conn: sqlite3.Connection) -> None:
    """Item identity is the dataset's id *and* its content (real releases repeat ids).

    - ``source_id``: the dataset's id verbatim when the item is shown under another display
      id (``ext_id`` = ``id#2``); ``NULL`` when they are the same.
    - ``identity``: :func:`pairscope.app.store.items.identity_key` (id + prompt as written +
      the responses as a set), unique: re-importing matches items by it.
    """
    from ..records import Item, Response
    from .items import identity_key  # the one definition; items imports this module's users

    run_script(
        conn,
        """
        ALTER TABLE items ADD COLUMN source_id TEXT;
        ALTER TABLE items ADD COLUMN identity TEXT;
    """,
    )
    texts: dict[int, list[str]] = {}
    for item_id, text in conn.execute("SELECT item_id, text FROM responses ORDER BY item_id, idx"):
        texts.setdefault(item_id, []).append(text)
    rows = []
    for item_id, ext_id, prompt, prompt_raw in conn.execute("SELECT id, ext_id, prompt, prompt_raw FROM items"):
        responses = tuple(Response(i, t) for i, t in enumerate(texts.get(item_id, ())))
        rows.append(
            (identity_key(Item(ext_id=ext_id, prompt=prompt, prompt_raw=prompt_raw, responses=responses)), item_id)
        )
    conn.executemany("UPDATE items SET identity = ? WHERE id = ?", rows)
    conn.execute("CREATE UNIQUE INDEX items_identity ON items(identity)")


def _item_verdicts(conn: sqlite3.Connection) -> None:
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


_LABELED = "(l.outcome IN ('prefer', 'tie', 'both_bad', 'discard') OR (l.outcome = 'unrated' AND l.step_marks != '[]'))"


def _schema_and_confidence(conn: sqlite3.Connection) -> None:
    """``label_schemas``: each version of the project's label schema (JSON) and guidelines;
    ``labels.schema_version`` the one a label was given under (NULL: the built-in default).
    ``verdicts.logprobs``/``confidence``: a sample's log-probabilities and its verdict's
    probability; ``judge_items.confidence`` the item's (decided in Python). ``label_current.labeled``:
    the label makes its item labeled (``records.Label.is_labeled``'s twin).
    """
    run_script(
        conn,
        f"""
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
        ALTER TABLE judge_items ADD COLUMN confidence REAL;
        ALTER TABLE label_current ADD COLUMN labeled INTEGER NOT NULL DEFAULT 0;
        UPDATE label_current SET labeled = (SELECT {_LABELED} FROM labels l WHERE l.rowid = label_rowid);
        CREATE INDEX label_current_labeled ON label_current(annotator_id, kind, item_id) WHERE labeled;
        CREATE INDEX label_current_labeled_any ON label_current(kind, item_id) WHERE labeled;
        DROP TRIGGER labels_keep_current;
        CREATE TRIGGER labels_keep_current AFTER INSERT ON labels BEGIN
            INSERT INTO label_current (kind, item_id, annotator_id, label_rowid, created_at, outcome, preferred,
                                       against_ref, error_types, discard_reasons, labeled)
            VALUES (new.kind, new.item_id, new.annotator_id, new.rowid, new.created_at, new.outcome, new.preferred,
                    coalesce(new.outcome = 'prefer' AND new.preferred != (
                        SELECT ref_chosen FROM items WHERE id = new.item_id), 0),
                    new.error_types, new.discard_reasons, {_LABELED.replace("l.", "new.")})
            ON CONFLICT (kind, item_id, annotator_id) DO UPDATE SET
                label_rowid = excluded.label_rowid, created_at = excluded.created_at, outcome = excluded.outcome,
                preferred = excluded.preferred, against_ref = excluded.against_ref,
                error_types = excluded.error_types, discard_reasons = excluded.discard_reasons,
                labeled = excluded.labeled
            WHERE excluded.created_at >= label_current.created_at;
        END;
    """,
    )


#: Every migration in order. Append new ones; never edit an applied one.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _initial),
    Migration(2, "full-text search and filter indexes", _search),
    Migration(3, "item identity: dataset id + content", _item_identity),
    Migration(4, "item verdicts decided once, in the judge layer", _item_verdicts),
    Migration(5, "label schemas, verdict log-probabilities and confidence", _schema_and_confidence),
)

LATEST_VERSION = MIGRATIONS[-1].version


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def current_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[str]:
    """Bring the schema up to the newest version; return the names applied.

    Raises :class:`SchemaError` when the file was written by a newer PairScope.
    """
    version = current_version(conn)
    latest = migrations[-1].version
    if version > latest:
        raise SchemaError(
            f"this project uses schema version {version}, but this PairScope only knows "
            f"up to {latest}; upgrade PairScope to open it"
        )
    applied = []
    for migration in migrations:
        if migration.version <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if migration.version == 1:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
            migration.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, _now()),
            )
            conn.execute(f"PRAGMA user_version = {int(migration.version)}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite rolls back by itself after e.g. SQLITE_FULL
                conn.execute("ROLLBACK")
            raise
        applied.append(migration.name)
    return applied


def normalize_sql(sql: str | None) -> str | None:
    """Schema SQL as compared between files: whitespace runs collapsed to one space."""
    return None if sql is None else " ".join(sql.split())


@functools.cache
def expected_objects(version: int) -> Mapping[str, tuple[str, str | None]]:
    """Every schema object the migrations up to ``version`` create: name → (type, SQL with
    whitespace collapsed), as ``sqlite_master`` lists them (made once, in memory)."""
    with contextlib.closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        migrate(conn, tuple(m for m in MIGRATIONS if m.version <= version))
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return MappingProxyType({name: (kind, normalize_sql(sql)) for kind, name, sql in rows})
