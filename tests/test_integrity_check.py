"""The quick check of a project file runs once per change of the file, and a file changed
after it passed is checked (and refused, when damaged) again."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from pairscope.app.records import Item, Response
from pairscope.app.store import Store, checked, connection
from pairscope.app.store.schema import SchemaError


@pytest.fixture
def checks(tmp_path, monkeypatch) -> list[Path]:
    """Every quick check run (a private cache; files count as settled at once)."""
    monkeypatch.setenv(checked.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(checked, "SETTLED_S", 0.0)
    ran: list[Path] = []
    original = connection.StoreBase._quick_check

    def counting(conn):
        ran.append(Path(conn.execute("PRAGMA database_list").fetchone()[2]))
        return original(conn)

    monkeypatch.setattr(connection.StoreBase, "_quick_check", staticmethod(counting))
    return ran


def make(path: Path, n: int = 30) -> Path:
    with Store.create(path) as store:
        store.add_items(
            [
                Item(ext_id=f"i{k}", prompt=f"prompt {k}", responses=(Response(0, "a " * 50), Response(1, "b")))
                for k in range(n)
            ]
        )
    return path


def damage_header(db: Path) -> None:
    """The freelist count in the header: same size, quick_check reports it, reads still work."""
    data = bytearray(db.read_bytes())
    data[36:40] = struct.pack(">I", 7)
    db.write_bytes(bytes(data))


def test_an_unchanged_file_is_checked_once(tmp_path, checks):
    db = make(tmp_path / "p.pairscope")
    for _ in range(3):
        with Store.open(db) as store:
            assert store.item_count() == 30
    assert len(checks) == 1


def test_a_file_damaged_after_a_passed_check_is_refused(tmp_path, checks):
    db = make(tmp_path / "p.pairscope")
    with Store.open(db):
        pass
    with Store.open(db, readonly=True):
        pass
    assert len(checks) == 1  # remembered
    time.sleep(0.05)  # the next change lands in a later clock tick
    size = db.stat().st_size
    damage_header(db)
    assert db.stat().st_size == size  # same size: the change time tells
    for opener in (Store.open, lambda p: Store.open(p, readonly=True)):
        with pytest.raises(SchemaError, match="is damaged"):
            opener(db)
    assert len(checks) == 3


def test_a_file_replaced_by_a_damaged_copy_is_refused(tmp_path, checks):
    db = make(tmp_path / "p.pairscope")
    with Store.open(db):
        pass
    copy = make(tmp_path / "q.pairscope")
    damage_header(copy)
    copy.replace(db)  # another file (inode) at the same path
    with pytest.raises(SchemaError, match="is damaged"):
        Store.open(db)


def test_a_file_changed_just_before_its_check_is_checked_again(tmp_path, checks, monkeypatch):
    monkeypatch.setattr(checked, "SETTLED_S", 3600.0)  # every file counts as just changed
    db = make(tmp_path / "p.pairscope")
    for _ in range(2):
        with Store.open(db):
            pass
    assert len(checks) == 2


def test_writing_the_project_means_a_new_check(tmp_path, checks):
    db = make(tmp_path / "p.pairscope")
    with Store.open(db):
        pass
    time.sleep(0.05)
    with Store.open(db) as store:
        store.set_meta("note", "changed")
    with Store.open(db):
        pass
    assert len(checks) == 2  # the second opening was remembered; the write changed the file


def test_forgetting_runs_the_check_again(tmp_path, checks):
    db = make(tmp_path / "p.pairscope")
    with Store.open(db):
        pass
    checked.forget_checked(db)
    with Store.open(db):
        pass
    assert len(checks) == 2


def test_an_unchanged_file_builds_no_reference_schema_and_a_planted_trigger_is_refused(tmp_path, checks, monkeypatch):
    """The objects check is remembered with the quick check: an unchanged file is compared with
    no reference schema, and a trigger planted after a passed check changes the file, so the
    next opening compares (and refuses) it."""
    import sqlite3

    compared: list[int] = []
    original = connection.expected_shapes
    monkeypatch.setattr(connection, "expected_shapes", lambda v: compared.append(v) or original(v))
    db = make(tmp_path / "p.pairscope")
    with Store.open(db):
        pass
    time.sleep(0.05)
    with Store.open(db, readonly=True) as store:
        assert store.item_count() == 30
    assert len(compared) == 1 and len(checks) == 1
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TRIGGER planted AFTER INSERT ON labels BEGIN SELECT 1; END")
    conn.close()
    with pytest.raises(SchemaError, match="trigger 'planted'"):
        Store.open(db)
    assert len(compared) == 2
