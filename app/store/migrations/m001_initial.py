"""Migration 1: the initial schema (items, responses, labels, judge runs, collections).

Applied: never edit it (tests/test_migrations.py pins its schema and its code)."""

from __future__ import annotations

import sqlite3

from ..schema_base import run_script


def apply(conn: sqlite3.Connection) -> None:
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
