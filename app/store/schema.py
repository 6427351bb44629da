"""Versioned schema migrations for a PairScope project file.

The schema version lives in ``PRAGMA user_version``; every applied migration is also
recorded in ``schema_migrations`` with its name and time. Migrations only ever move
forward and each runs in its own transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable


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
            outcome         TEXT NOT NULL CHECK (outcome IN ('prefer', 'tie', 'both_bad', 'discard', 'unrated', 'cleared')),
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
        """
    )


def _search(conn: sqlite3.Connection) -> None:
    """Full-text search over prompts and responses, and indexes for the item filters.

    ``item_text`` is an FTS5 index whose rowid is the item id. It stores no text of its own
    (external content: the view ``item_text_source`` gives the prompt and the responses,
    joined by newlines in index order), so ``'rebuild'`` re-reads every item and
    ``'integrity-check'`` compares the index with the items. New items are added to it by
    the import, in the import's transaction (``search.index_batch``).
    """
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.fts5_probe")
    except sqlite3.OperationalError as exc:
        raise SchemaError(f"the SQLite of this Python ({sqlite3.sqlite_version}) lacks FTS5, which PairScope's "
                          f"search needs: {exc}") from exc
    run_script(
        conn,
        """
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
        -- The judge filters: a run's samples, covering (no table lookups).
        CREATE INDEX verdicts_run_vote ON verdicts(run_id, item_id, sample_idx, parsed, choice);
        -- The current row per (kind, item, annotator) of the append-only labels table, kept by
        -- a trigger: a new row replaces the current one unless it is older (created_at; at
        -- equal times the later insert wins, as ORDER BY created_at DESC, rowid DESC).
        -- 'cleared' rows stay here (a later, older row must not resurrect a label); filters
        -- skip them.
        CREATE TABLE label_current (
            kind            TEXT NOT NULL,
            item_id         INTEGER NOT NULL,
            annotator_id    INTEGER NOT NULL,
            label_rowid     INTEGER NOT NULL,
            created_at      TEXT NOT NULL,
            outcome         TEXT NOT NULL,
            preferred       INTEGER,
            error_types     TEXT NOT NULL,
            discard_reasons TEXT NOT NULL,
            PRIMARY KEY (kind, item_id, annotator_id)
        ) WITHOUT ROWID;
        CREATE INDEX label_current_annotator ON label_current(annotator_id, kind, item_id, outcome, preferred);
        CREATE TRIGGER labels_keep_current AFTER INSERT ON labels BEGIN
            INSERT INTO label_current (kind, item_id, annotator_id, label_rowid, created_at, outcome, preferred,
                                       error_types, discard_reasons)
            VALUES (new.kind, new.item_id, new.annotator_id, new.rowid, new.created_at, new.outcome, new.preferred,
                    new.error_types, new.discard_reasons)
            ON CONFLICT (kind, item_id, annotator_id) DO UPDATE SET
                label_rowid = excluded.label_rowid, created_at = excluded.created_at, outcome = excluded.outcome,
                preferred = excluded.preferred, error_types = excluded.error_types,
                discard_reasons = excluded.discard_reasons
            WHERE excluded.created_at >= label_current.created_at;
        END;
        INSERT INTO label_current (kind, item_id, annotator_id, label_rowid, created_at, outcome, preferred,
                                   error_types, discard_reasons)
            SELECT kind, item_id, annotator_id, label_rowid, created_at, outcome, preferred, error_types, discard_reasons
            FROM (SELECT l.*, l.rowid AS label_rowid, ROW_NUMBER() OVER (
                      PARTITION BY l.kind, l.item_id, l.annotator_id ORDER BY l.created_at DESC, l.rowid DESC) AS rn
                  FROM labels l)
            WHERE rn = 1;
        """
    )


#: Every migration in order. Append new ones; never edit an applied one.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _initial),
    Migration(2, "full-text search and filter indexes", _search),
)

LATEST_VERSION = MIGRATIONS[-1].version


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


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
            conn.execute("ROLLBACK")
            raise
        applied.append(migration.name)
    return applied
