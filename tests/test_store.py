"""The project store: pragmas, migrations, transactions, append-only labels."""

from __future__ import annotations

import sqlite3

import pytest

from pairscope.app.records import (
    ErrorTag,
    Item,
    Label,
    MediaRef,
    Reference,
    Response,
    Step,
)
from pairscope.app.store import LATEST_VERSION, SchemaError, Store
from pairscope.app.store.schema import Migration, migrate


def make_item(ext_id="a1", n=2, **kw) -> Item:
    responses = tuple(Response(i, f"answer {i} for {ext_id}") for i in range(n))
    return Item(
        ext_id=ext_id,
        prompt=f"question {ext_id}",
        responses=responses,
        reference=Reference(ranking=tuple(range(n))),
        **kw,
    )


def test_pragmas_wal_foreign_keys_full_sync(store):
    pragma = lambda name: store.query(f"PRAGMA {name}")[0][0]  # noqa: E731
    assert pragma("journal_mode") == "wal"
    assert pragma("foreign_keys") == 1
    assert pragma("synchronous") == 2  # FULL
    assert pragma("busy_timeout") >= 1000
    assert store.schema_version == LATEST_VERSION
    assert store.query("SELECT name FROM schema_migrations")[0][0] == "initial schema"


def test_item_round_trip_keeps_everything(store):
    item = make_item(
        "x/1",
        n=3,
        media=(MediaRef("image", "imgs/a.png", "/abs/imgs/a.png"), MediaRef("image", "b.png", None, "not found")),
        category="hallucination",
        subset="rlaif-v",
        prompt_raw="<image>\nquestion x/1",
        extra={"judge": "gpt", "meta": {"nested": [1, 2]}},
    )
    item = Item(
        **{
            **item.__dict__,
            "reference": Reference(
                ranking=(2, 0, 1),
                strength="3",
                ground_truth="42",
                error_tags=(ErrorTag("recognition", "text", None, "recognition(text)"),),
            ),
        }
    )
    item_id = store.add_items([item]).ids[0]
    loaded = store.get_item(item_id)
    assert loaded == Item(**{**item.__dict__, "id": item_id})
    assert loaded.reference.chosen == 2
    # /abs/imgs/a.png was found when stored, but is not on this disk: info says how it is now
    assert store.info().missing_media == 2
    assert store.missing_media() == [
        ("x/1", "imgs/a.png", "file not found: /abs/imgs/a.png (it was there when stored)"),
        ("x/1", "b.png", "not found"),
    ]


def test_steps_round_trip(store):
    resp = Response(0, "s1\ns2", steps=(Step("s1", True), Step("s2", False)))
    item = Item(ext_id="st", prompt="p", responses=(resp,))
    item_id = store.add_items([item]).ids[0]
    assert store.get_item(item_id).responses[0].steps == (Step("s1", True), Step("s2", False))


def test_add_items_idempotent_and_conflicts(store):
    first = store.add_items([make_item("a"), make_item("b")])
    assert len(first.added) == 2
    again = store.add_items([make_item("a"), make_item("b")])
    assert again.added == [] and again.unchanged == ["a", "b"]
    changed = Item(**{**make_item("a").__dict__, "category": "different"})
    result = store.add_items([changed])  # same id, prompt and responses: the same item, edited
    assert result.conflicts == ["a"]
    assert store.get_item(store.item_id("a")).category == make_item("a").category
    other = Item(**{**make_item("a").__dict__, "prompt": "different"})
    result = store.add_items([other])  # another prompt under the same id: another item
    assert [i.ext_id for i in result.added] == ["a#2"] and result.added[0].dataset_id == "a"
    assert store.get_item(store.item_id("a#2")).source_id == "a"


def test_failed_transaction_writes_nothing(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.add_items([make_item("a")])
            raise RuntimeError("boom")
    assert store.item_count() == 0
    # and the connection is usable afterwards
    store.add_items([make_item("a")])
    assert store.item_count() == 1


def test_labels_are_append_only_and_newest_is_current(store):
    item_id = store.add_items([make_item("a")]).ids[0]
    first = store.add_label(Label(item_id, "ann", "prefer", ranking=(1, 0), strength="clearly", display_order=(1, 0)))
    second = store.add_label(
        Label(item_id, "ann", "tie", display_order=(1, 0), error_types=(ErrorTag("counting"),), note="on reflection")
    )
    assert first.uuid != second.uuid
    history = store.label_history(item_id, "ann")
    assert [label.outcome for label in history] == ["prefer", "tie"]
    assert history[0].preferred == 1 and history[0].display_order == (1, 0)
    current = store.current_label(item_id, "ann")
    assert current.outcome == "tie" and current.error_types == (ErrorTag("counting"),)
    store.add_label(Label(item_id, "ann", "cleared"))
    assert store.current_label(item_id, "ann") is None
    assert store.query("SELECT count(*) FROM labels")[0][0] == 3


@pytest.mark.parametrize(
    "label, message",
    [
        (Label(1, "ann", "prefer", ranking=(5,)), "distinct response indices"),
        (Label(1, "ann", "prefer", ranking=(0, 0)), "distinct response indices"),
        (Label(1, "ann", "prefer"), "preferred response"),
        (Label(1, "ann", "tie", display_order=(0, 2)), "display order"),
    ],
)
def test_invalid_labels_are_refused(store, label, message):
    store.add_items([make_item("a")])
    with pytest.raises(ValueError, match=message):
        store.add_label(label)
    assert store.query("SELECT count(*) FROM labels")[0][0] == 0


def test_label_for_unknown_item_is_refused(store):
    with pytest.raises(KeyError):
        store.add_label(Label(99, "ann", "tie"))


def test_display_order_is_drawn_once_per_annotator(store):
    ids = store.add_items([make_item(f"i{n}", n=4) for n in range(30)]).ids
    orders = {i: store.display_order(i, "ann") for i in ids}
    assert all(store.display_order(i, "ann") == orders[i] for i in ids)  # persisted
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders.values())
    assert len(set(orders.values())) > 1  # randomized, not always identity


def test_collections(store):
    ids = store.add_items([make_item("a"), make_item("b")]).ids
    assert store.add_to_collection("hard-v1", ids) == 2
    assert store.add_to_collection("hard-v1", ids) == 0
    assert store.collections() == {"hard-v1": 2}
    assert store.collection_item_ids("hard-v1") == ids


def test_open_missing_file_and_non_sqlite(tmp_path):
    with pytest.raises(FileNotFoundError):
        Store.open(tmp_path / "nope.pairscope")
    bogus = tmp_path / "bogus.pairscope"
    bogus.write_text("this is not a database")
    with pytest.raises(SchemaError, match="not an SQLite file"):
        Store.open(bogus)


@pytest.mark.parametrize("readonly", [False, True])
def test_newer_schema_is_refused(tmp_path, readonly):
    path = tmp_path / "p.pairscope"
    Store.create(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaError, match="upgrade PairScope"):
        Store.open(path, readonly=readonly)


def test_failed_migration_rolls_back(tmp_path):
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    migrate(conn)

    def broken(c):
        c.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("migration bug")

    from pairscope.app.store.schema import MIGRATIONS

    with pytest.raises(RuntimeError):
        migrate(conn, MIGRATIONS + (Migration(LATEST_VERSION + 1, "broken", broken),))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
    assert not conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchall()
    good = Migration(LATEST_VERSION + 1, "add column", lambda c: c.execute("ALTER TABLE items ADD COLUMN note TEXT"))
    assert migrate(conn, MIGRATIONS + (good,)) == ["add column"]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION + 1


def test_labels_survive_reopen(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as s:
        item_id = s.add_items([make_item("a")]).ids[0]
        s.add_label(Label(item_id, "ann", "prefer", ranking=(0, 1)))
    with Store.open(path) as s:
        assert s.current_label(item_id, "ann").preferred == 0
        assert s.integrity_check() == "ok"


def test_a_write_on_a_full_disk_is_rolled_back_once_and_says_so(store):
    from pairscope.app.store.connection import DiskFullError

    store.add_items([make_item("a")])
    pages = store.query("PRAGMA page_count")[0][0]
    store.conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL as soon as the file must grow
    many = [make_item(f"b{i}", n=4) for i in range(300)]
    with pytest.raises(DiskFullError, match="the disk is full") as raised:
        store.add_items(many)
    assert "cannot rollback" not in str(raised.value) and isinstance(raised.value, OSError)
    assert raised.value.__cause__.sqlite_errorname == "SQLITE_FULL"
    assert not store.conn.in_transaction and store.item_count() == 1
    with pytest.raises(DiskFullError, match="the disk is full"), store.transaction(), store.transaction():
        store.add_items(many)  # nested blocks: the outer one rolls back, once
    assert not store.conn.in_transaction and store.item_count() == 1
    store.conn.execute(f"PRAGMA max_page_count = {pages * 1000}")
    assert len(store.add_items(many).ids) == 300 and store.integrity_check() == "ok"


def test_a_migration_on_a_full_disk_reports_the_full_disk(tmp_path):
    from pairscope.app.store.schema import MIGRATIONS

    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    migrate(conn, MIGRATIONS[:1])
    conn.execute("BEGIN")
    for i in range(1, 3001):
        conn.execute(
            "INSERT INTO items (id, ext_id, source_format, category, prompt, media_kind, n_responses, content_hash)"
            " VALUES (?, ?, 'jsonl', 'general', ?, 'none', 2, ?)",
            (i, f"x{i}", "word " * 50, f"h{i}"),
        )
        conn.executemany(
            "INSERT INTO responses (item_id, idx, text) VALUES (?, ?, ?)", [(i, 0, "an answer " * 40), (i, 1, "no")]
        )
    conn.execute("COMMIT")
    conn.execute("PRAGMA cache_size = 10")  # pages spill mid-migration: SQLite rolls back by itself
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0] + 5}")
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        migrate(conn)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1 and not conn.in_transaction


def test_a_second_store_on_an_open_file_keeps_the_first_ones_locks(tmp_path):
    """Closing any descriptor of a file drops every POSIX lock this process holds on it: opening
    and closing a second Store used to read the raw header with open()/close(), so another
    process closing its connection deleted the -wal/-shm under the first store ("disk I/O
    error" on its next read)."""
    import subprocess
    import sys
    import textwrap

    from pairscope.app.records import Item, Response

    path = tmp_path / "p.pairscope"
    with Store.create(path) as s:
        s.add_items(
            [Item(ext_id=f"i{k}", prompt="p", responses=(Response(0, "a"), Response(1, "b"))) for k in range(3)]
        )
    holder = textwrap.dedent("""
        import sqlite3, sys
        conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO annotators (name, created_at) VALUES ('other', '2025-01-01')")
        print("locked", flush=True)
        sys.stdin.readline()
        conn.execute("COMMIT")
        conn.close()
        print("released", flush=True)
    """)
    window = Store.open(path)
    try:
        assert window.annotators() == []
        proc = subprocess.Popen(
            [sys.executable, "-c", holder, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "locked"
        Store.open(path).close()  # e.g. a dialog or a command opening the same project
        proc.stdin.write("release\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        proc.wait(timeout=10)
        # the other process saw the window's locks, so it left the -wal/-shm the window uses
        assert (tmp_path / "p.pairscope-wal").exists() and (tmp_path / "p.pairscope-shm").exists()
        assert window.annotators() == ["other"]  # the first store still reads, and sees the write
    finally:
        window.close()
