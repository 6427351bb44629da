"""Applied migrations are pinned: each version's schema and each migration module's code have
a committed fingerprint, so editing an applied migration fails here (migration 5 was edited
twice after it shipped; a project made in between opened silently and its first judge run
failed). Files made by those earlier builds open and are repaired by migration 6."""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import sqlite3
from pathlib import Path

import pytest

from helpers import fake_run
from pairscope.app.judge.results import ensure_item_verdicts, record_verdicts
from pairscope.app.records import LABELED_OUTCOMES, Item, Reference, Response
from pairscope.app.store import Store, VerdictRecord
from pairscope.app.store.migrations import m005_label_schemas
from pairscope.app.store.schema import LATEST_VERSION, MIGRATIONS, Migration, expected_objects, migrate

#: sha256 of each version's schema (every object's type, name and SQL, whitespace collapsed),
#: as the migrations up to it create it. A new migration adds its line here.
SCHEMA_FINGERPRINTS = {
    1: "345cb3c0fd0d53dc1da82999e311e1a895b9ebe227f351aebac9982ff620988b",
    2: "056845a79070136e0c1a7372792c75231919a4cf9c4bb113acb41d7596f1b6ab",
    3: "77d877e557b4f828f3d943dfa4797a18c4219b9022f6d4dcc1fb3579cea22038",
    4: "08c031bd18d0cf01b982741e5a3f6dce6967996ea481d8fed8a3856a08f301d9",
    5: "3a560ac72fbc94c3d1b854c2474f41f5e9da93f61d5e0beeff09953c72ea246b",
    6: "3a560ac72fbc94c3d1b854c2474f41f5e9da93f61d5e0beeff09953c72ea246b",
    7: "f6db4601e50e5b6f2205e5ca26ec672b99b70388712cc3a0b0d496da0fa6d3f4",  # m007_reference_reviews (issue 26)
    8: "b0818bab2da871c3e146cc573e5781b8b648d6716c400ba4fd2f120d7be97203",  # m008_assignments (issue 28)
    9: "9048eede9e3b2d8b01e19e91a37be6f106c4de9ca655551e78cd5f2f3e61cab7",  # m009_active_time (issue 28)
    10: "b12eacf80221f9201a969c4fb6c736fb6af28615e12c9340429e4d96c7bae017",  # m010_label_ranks (issue 29)
    11: "a78dfe6efed0b6baadff4ff0145898f6e3783d2ffa5727616f40d3e8e30d0894",  # m011_verdict_reads (issue 30)
    12: "0147d2310b832cc7e4e2c59cb228657f7d77b439e89f8b2c56e3efe1a8f29cd7",  # m012_filter_indexes (issue 30)
}

#: sha256 of each migration module's code (its syntax tree without docstrings: reformatting or
#: rewording a docstring changes nothing, a changed statement does).
CODE_FINGERPRINTS = {
    1: "2ccec15da02d3378cca3c4563fb6da2963f7747ed1f09ecae11836e8e960f2a3",
    2: "1ca867390f84b681d37dcaa394a828c289a916e59f5f7725bdaeee6ee5ce3a47",
    3: "97df206c005537e07d7c2e22f1092f1a4926d84e8c914d30e92563f49dedf3cc",
    4: "780e4c1af10508426ba5c079974fdfc84ec22ccaa46a99fcb777c482e1e0324d",
    5: "f8e59848ee2f56b25c960b2943eaebbc1bbede9a18a873f185bd38194de6da86",
    6: "599488c81ea2689a6bea6b61c3b2d7be88054ab9f89cd98a5936c8c5cffef8f5",
    7: "8cf2b13fb666c3d20396ae7969ab9f05b65b75f5c03d5075790d988955076983",  # m007_reference_reviews (issue 26)
    8: "c5df5a26d1eb6dadf6c3930105d4c9879f581dfed0d59f9efd6799bbc84caa3c",  # m008_assignments (issue 28)
    9: "45c2d1fa566dd890f19e2857d5f5a720e1aafa38ae24b0243a9c8490f4c13d07",  # m009_active_time (issue 28)
    10: "a3da06847e7718a25da195068b36d9f853a1bf066dd3b076c4371b4c1c6b9d0b",  # m010_label_ranks (issue 29)
    11: "526a0806532d1cd4ee31c8aef39ac7cc8d25bad5c1a194dd7c3fe3583acfa763",  # m011_verdict_reads (issue 30)
    12: "e630a58a986b829a1061160d7283416c2af018eb8a11b680eb2a563445336a06",  # m012_filter_indexes (issue 30)
}


def schema_fingerprint(migrations: tuple[Migration, ...]) -> str:
    """The fingerprint of the schema ``migrations`` create in an empty file."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn, migrations)
        rows = sorted(
            (kind, name, " ".join((sql or "").split()))
            for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master")
        )
    finally:
        conn.close()
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def code_fingerprint(path: Path) -> str:
    """The fingerprint of a module's code: its syntax tree with every docstring removed."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def module_path(migration: Migration) -> Path:
    return Path(importlib.import_module(migration.apply.__module__).__file__)


def fingerprint_problems(migrations: tuple[Migration, ...]) -> list[str]:
    """What differs from the committed fingerprints, one line per version."""
    problems = []
    for n, migration in enumerate(migrations, start=1):
        v = migration.version
        schema = schema_fingerprint(migrations[:n])
        code = code_fingerprint(module_path(migration))
        if v not in SCHEMA_FINGERPRINTS:
            problems.append(f"version {v} is new: pin it as {v}: {schema!r} and code {v}: {code!r}")
            continue
        if schema != SCHEMA_FINGERPRINTS[v]:
            problems.append(f"the schema of applied version {v} changed ({schema}); add a migration instead")
        if code != CODE_FINGERPRINTS[v]:
            problems.append(f"the code of applied migration {v} changed ({code}); add a migration instead")
    return problems


def test_applied_migrations_are_unchanged():
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST_VERSION + 1))
    assert fingerprint_problems(MIGRATIONS) == []


def test_an_edited_applied_migration_fails_the_fingerprint(tmp_path):
    five = MIGRATIONS[4]

    def edited(conn):  # migration 5 with one more column, as 1610115 did to it
        five.apply(conn)
        conn.execute("ALTER TABLE judge_items ADD COLUMN note TEXT")

    edited.__module__ = five.apply.__module__
    planted = (*MIGRATIONS[:4], Migration(5, five.name, edited), *MIGRATIONS[5:])
    problems = fingerprint_problems(planted)
    changed = range(5, LATEST_VERSION + 1)  # 5 and every version after it
    assert [p.split(" (")[0] for p in problems] == [f"the schema of applied version {v} changed" for v in changed]

    # an edit that changes code but not the schema (a data fix, say) is caught as well
    source = module_path(five).read_text(encoding="utf-8")
    changed = tmp_path / "m005.py"
    changed.write_text(source.replace("DEFAULT ''", "DEFAULT 'x'", 1), encoding="utf-8")
    assert code_fingerprint(changed) != CODE_FINGERPRINTS[5]
    reformatted = tmp_path / "m005_reformatted.py"
    reformatted.write_text(source.replace('"""Migration 5', '"""Reworded: migration 5', 1), encoding="utf-8")
    assert code_fingerprint(reformatted) == CODE_FINGERPRINTS[5]


def test_a_new_migration_asks_for_its_fingerprint():
    extra = Migration(LATEST_VERSION + 1, "add a column", MIGRATIONS[-1].apply)
    [problem] = fingerprint_problems((*MIGRATIONS, extra))
    assert problem.startswith(f"version {LATEST_VERSION + 1} is new: pin it as")


def test_the_frozen_labeled_rule_is_the_records_rule():
    sql = m005_label_schemas.LABELED_SQL
    listed = sql.split("IN (")[1].split(")")[0]
    assert {o.strip(" '") for o in listed.split(",")} | {"unrated"} == set(LABELED_OUTCOMES) | {"unrated"}


def _version_5_file(path: Path, variant) -> None:
    """A project as a build that shipped ``variant`` of migration 5 left it: items, labels and
    a judge run's samples written at version 1, then upgraded by that build."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, MIGRATIONS[:1])
    conn.execute("BEGIN")
    for item_id, ext, ref in [(1, "o1", 0), (2, "o2", 1)]:
        conn.execute(
            "INSERT INTO items (id, ext_id, source_format, category, prompt, media_kind, n_responses,"
            " ref_chosen, content_hash) VALUES (?, ?, 'jsonl', 'general', 'Which?', 'none', 2, ?, ?)",
            (item_id, ext, ref, ext),
        )
        for idx, text in enumerate(("yes", "no")):
            conn.execute("INSERT INTO responses (item_id, idx, text) VALUES (?, ?, ?)", (item_id, idx, text))
    conn.execute("INSERT INTO annotators (id, name, created_at) VALUES (1, 'ann', 'x')")
    conn.execute(
        "INSERT INTO labels (uuid, item_id, annotator_id, created_at, outcome, preferred, ranking)"
        " VALUES ('u1', 1, 1, '2025-01-01T00:00:01', 'prefer', 0, '[0, 1]')"
    )
    conn.execute(
        "INSERT INTO judge_runs (id, uuid, created_at, backend, model_path, template_text, template_hash,"
        " mode, k, both_orders, seed) VALUES (1, 'r', 'x', 'fake', 'm', 't', 'h', 'pairwise', 1, 0, 0)"
    )
    conn.execute(
        "INSERT INTO verdicts (run_id, item_id, sample_idx, order_shown, choice, parsed, created_at)"
        " VALUES (1, 1, 0, '[0, 1]', 0, 1, 'x')"
    )
    conn.execute("COMMIT")
    migrate(conn, (*MIGRATIONS[:4], Migration(5, MIGRATIONS[4].name, variant)))
    conn.close()


def _columns(store: Store) -> dict[str, list[str]]:
    tables = [r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {t: sorted(r[1] for r in store.query(f"PRAGMA table_info({t})")) for t in tables}


@pytest.mark.parametrize("variant", m005_label_schemas.SHIPPED_EARLIER, ids=["f0f4dde", "a0a4a1d"])
def test_a_project_made_by_an_earlier_migration_5_opens_repaired(tmp_path, variant):
    old = tmp_path / "old.pairscope"
    _version_5_file(old, variant)
    with Store.create(tmp_path / "fresh.pairscope") as fresh:
        want = _columns(fresh)
    with Store.open(old) as store:
        assert store.schema_version == LATEST_VERSION
        assert _columns(store) == want  # every column of today's schema, none missing
        objects = store.query("SELECT type, name, sql FROM sqlite_master")
        shape = {n: (k, " ".join((s or "").split()) or None) for k, n, s in objects}
        assert shape == dict(expected_objects(LATEST_VERSION))
        # the labeled column was filled for the label already there, and the trigger keeps it
        assert store.labeled_count("ann") == 1
        ensure_item_verdicts(store)  # the stale item verdicts are decided again, with confidence
        assert [r[0] for r in store.query("SELECT verdict FROM judge_items")] == ["right"]
        # the first judge run after the upgrade writes item confidence (it failed before)
        store.add_items([Item("o3", "q", (Response(0, "x"), Response(1, "y")), reference=Reference(ranking=(1, 0)))])
        run = fake_run(store)
        item_id = store.item_id("o3")
        record_verdicts(
            store, run, [VerdictRecord(run.id, item_id, 0, (0, 1), "[[B]]", 1, None, True, "", confidence=0.9)]
        )
        assert store.query("SELECT verdict, confidence FROM judge_items WHERE run_id = ?", (run.id,)) == [
            ("right", pytest.approx(0.9))
        ]
