"""Foreign files are never rewritten: what is not a PairScope project is refused unopened-for-writing."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
from pathlib import Path

import pytest

from pairscope.app.cli.main import main
from pairscope.app.store import LATEST_VERSION, MIGRATIONS, ReadOnlyError, SchemaError, Store
from pairscope.app.store.schema import migrate

SIDE = ("-wal", "-shm", "-journal")


def vl_row(i, **kw):
    return {"id": f"RLAIF-V-{i}", "query": "Q?", "response": ["a", "b"], "human_ranking": [1, 0], **kw}


@pytest.fixture
def dataset(tmp_path):
    src = tmp_path / "vl.jsonl"
    src.write_text("".join(json.dumps(vl_row(i)) + "\n" for i in range(2)))
    return src


def foreign_sqlite(path: Path, journal_mode: str = "delete") -> Path:
    """Someone else's SQLite database: a table ``t`` with a few rows, nothing of PairScope's."""
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal_mode}")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO t (name) VALUES (?)", [(f"row {i}",) for i in range(50)])
    conn.commit()
    conn.close()
    return path


def side_files(path: Path) -> list[str]:
    return [s for s in SIDE if Path(f"{path}{s}").exists()]


def run_cli(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def commands(target: Path, dataset: Path, out: Path) -> list[list]:
    return [
        ["info", "--db", target],
        ["stats", "--db", target],
        ["export", "--db", target, "--format", "jsonl", "--out", out],
        ["import", dataset, "--db", target],
    ]


# -- the CLI ---------------------------------------------------------------------------------


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_foreign_sqlite_file_stays_byte_identical(tmp_path, dataset, capsys, journal_mode):
    other = foreign_sqlite(tmp_path / "other.db", journal_mode)
    before = other.read_bytes()
    for argv in commands(other, dataset, tmp_path / "out"):
        code, err = run_cli(capsys, *argv)
        assert code == 1 and "is not a PairScope project" in err, (argv[0], err)
        assert other.read_bytes() == before, argv[0]
        assert side_files(other) == [], argv[0]
    conn = sqlite3.connect(f"file:{other}?mode=ro", uri=True)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 50
    conn.close()


def test_foreign_file_is_refused_by_the_store_without_side_files(tmp_path):
    other = foreign_sqlite(tmp_path / "other.sqlite")
    before = other.read_bytes()
    for opener in (Store.open, Store.create, lambda p: Store.open(p, readonly=True)):
        with pytest.raises(SchemaError, match="an SQLite file with other tables"):
            opener(other)
    assert other.read_bytes() == before and side_files(other) == []


def test_corrupt_and_empty_files(tmp_path, capsys):
    corrupt = tmp_path / "corrupt.pairscope"
    corrupt.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    code, err = run_cli(capsys, "info", "--db", corrupt)
    assert code == 1 and ("not a usable PairScope project" in err or "not a PairScope project" in err)
    empty = tmp_path / "empty.pairscope"
    empty.touch()
    with pytest.raises(SchemaError, match="empty file"):
        Store.open(empty)
    code, err = run_cli(capsys, "info", "--db", empty)
    assert code == 1 and "not a PairScope project" in err and empty.stat().st_size == 0
    Store.create(empty).close()  # an empty file may become a new project when asked to create one
    with Store.open(empty, readonly=True) as store:
        assert store.schema_version == LATEST_VERSION


def test_folder_as_db_says_it_is_a_folder(tmp_path, dataset, capsys):
    folder = tmp_path / "a-folder.pairscope"
    folder.mkdir()
    for argv in commands(folder, dataset, tmp_path / "out"):
        code, err = run_cli(capsys, *argv)
        assert code == 1 and "is a folder" in err and str(folder) in err, (argv[0], err)
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.timeout(10)
def test_fifo_as_db_is_refused_without_blocking(tmp_path, dataset, capsys):
    fifo = tmp_path / "pipe.pairscope"
    os.mkfifo(fifo)
    for argv in commands(fifo, dataset, tmp_path / "out"):
        code, err = run_cli(capsys, *argv)
        assert code == 1 and "not a regular file" in err, (argv[0], err)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# -- a failed first import leaves nothing behind -------------------------------------------------


def test_failed_import_into_new_project_leaves_no_file(tmp_path, capsys):
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(vl_row(0)) + "\n{not json\n")
    db = tmp_path / "new.pairscope"
    code, err = run_cli(capsys, "import", src, "--db", db)
    assert code == 1 and "nothing imported" in err
    assert not db.exists() and side_files(db) == []
    assert not (tmp_path / "new_media").exists()


def test_failed_import_removes_the_media_folder_it_made_but_keeps_others(tmp_path, dataset, capsys, monkeypatch):
    from pairscope.app import importer

    def half_import(store, *args, **kw):
        (store.media_dir / "ab").mkdir(parents=True)
        (store.media_dir / "ab" / "abcd.png").write_bytes(b"\x89PNG")
        raise ValueError("broken at line 7")  # any failure, not only a FormatError

    monkeypatch.setattr(importer, "import_file", half_import)
    db = tmp_path / "fresh.pairscope"
    code, err = run_cli(capsys, "import", dataset, "--db", db)
    assert code == 1 and "broken at line 7" in err
    assert not db.exists() and side_files(db) == [] and not (tmp_path / "fresh_media").exists()

    kept = tmp_path / "other_media"
    kept.mkdir()
    (kept / "mine.txt").write_text("keep")
    code, _ = run_cli(capsys, "import", dataset, "--db", tmp_path / "other.pairscope")
    assert code == 1 and (kept / "mine.txt").read_text() == "keep"
    assert not (tmp_path / "other.pairscope").exists()


def test_failed_import_into_existing_project_keeps_it(tmp_path, dataset, capsys):
    db = tmp_path / "p.pairscope"
    assert main(["import", str(dataset), "--db", str(db)]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    code, _ = run_cli(capsys, "import", bad, "--db", db)
    assert code == 1
    with Store.open(db) as store:
        assert store.item_count() == 2


# -- read-only opening -------------------------------------------------------------------------


def test_real_project_reads_read_only_and_writes_raise(tmp_path, dataset, capsys):
    db = tmp_path / "p.pairscope"
    assert main(["import", str(dataset), "--db", str(db)]) == 0
    before = db.read_bytes()
    with Store.open(db, readonly=True) as store:
        assert store.readonly and store.item_count() == 2 and store.schema_version == LATEST_VERSION
        with pytest.raises(ReadOnlyError, match="open read-only") as raised:
            store.set_meta("touched", "yes")
        assert isinstance(raised.value, PermissionError)
        assert store.meta("touched") is None and store.item_count() == 2
    assert db.read_bytes() == before and side_files(db) == []
    capsys.readouterr()
    for argv in (["info", "--db", db], ["stats", "--db", db]):
        code, _ = run_cli(capsys, *argv)
        assert code == 0
    assert db.read_bytes() == before and side_files(db) == []
    with Store.open(db) as store:
        assert not store.readonly


def old_project(path: Path, version: int) -> Path:
    """A project made by an earlier PairScope (schema ``version``) with one item and one label."""
    from pairscope.app.records import Item, Response
    from pairscope.app.store.items import content_hash

    item = Item(ext_id="a5", prompt="Which?", responses=(Response(0, "yes"), Response(1, "no")))
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, MIGRATIONS[:version])
    conn.execute(
        "INSERT INTO items (id, ext_id, source_format, category, prompt, media_kind, n_responses,"
        " content_hash) VALUES (1, 'a5', 'jsonl', 'general', ?, 'none', 2, ?)",
        (item.prompt, content_hash(item)),
    )
    conn.executemany("INSERT INTO responses (item_id, idx, text) VALUES (1, ?, ?)", [(0, "yes"), (1, "no")])
    conn.execute("INSERT INTO annotators VALUES (1, 'olga', '2024-01-01T00:00:00+00:00')")
    conn.execute(
        "INSERT INTO labels (uuid, item_id, annotator_id, created_at, outcome) VALUES"
        " ('old-uuid', 1, 1, '2024-01-01T00:00:00+00:00', 'tie')"
    )
    conn.close()
    return path


@pytest.mark.parametrize("version", [1, LATEST_VERSION - 1])
def test_reading_an_older_project_never_writes_it(tmp_path, capsys, version):
    """``pairscope.open()`` and ``info`` upgraded an older project in place (RESEARCH_API.md says
    the file is never written): now they read an upgraded private copy, the file's bytes and
    mtime unchanged, and say how to upgrade it."""
    import pairscope

    old = old_project(tmp_path / "old.pairscope", version)
    before = (old.read_bytes(), os.stat(old).st_mtime_ns, sorted(p.name for p in tmp_path.iterdir()))
    with Store.open(old, readonly=True) as store:
        assert store.readonly and store.schema_version == LATEST_VERSION and store.item_count() == 1
        assert "open it in PairScope once to upgrade it" in store.note
    with pairscope.open(old) as project:
        assert len(project.items()) == 1 and len(project.labels()) == 1
        assert "upgrade" in project.note
    for argv in (["info", "--db", old], ["stats", "--db", old]):
        code, err = run_cli(capsys, *argv)
        assert code == 0 and "open it in PairScope once to upgrade it" in err, err
    after = (old.read_bytes(), os.stat(old).st_mtime_ns, sorted(p.name for p in tmp_path.iterdir()))
    assert after == before and side_files(old) == []
    with Store.open(old) as store:  # the app opening it for writing upgrades it, as before
        assert not store.readonly and store.schema_version == LATEST_VERSION
    with Store.open(old, readonly=True) as store:
        assert store.note is None


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0,
    reason="root ignores file permissions, so a read-only copy cannot be made",
)
def test_project_on_read_only_media(tmp_path, dataset):
    folder = tmp_path / "ro"
    db = folder / "p.pairscope"
    assert main(["import", str(dataset), "--db", str(db)]) == 0
    old = folder / "old.pairscope"
    conn = sqlite3.connect(old, isolation_level=None)
    migrate(conn, MIGRATIONS[:1])
    conn.close()
    before = db.read_bytes()
    for path in (db, old):
        path.chmod(0o444)
    folder.chmod(0o555)
    try:
        with Store.open(db, readonly=True) as store:
            assert store.item_count() == 2
        with Store.open(old, readonly=True) as store:  # an upgraded private copy is read
            assert store.schema_version == LATEST_VERSION
        assert db.read_bytes() == before and side_files(db) == [] and side_files(old) == []
    finally:
        folder.chmod(0o755)


# -- the window --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", "foreign"])
def test_window_on_a_folder_or_foreign_file_explains(tmp_path, qapp, monkeypatch, capsys, kind):
    from PySide6.QtCore import QSettings

    from pairscope.app.gui import launch

    target = tmp_path / "proj.pairscope"
    if kind == "folder":
        target.mkdir()
    else:
        foreign_sqlite(target)
    before = None if kind == "folder" else target.read_bytes()
    shown = []
    monkeypatch.setattr(launch.QMessageBox, "critical", lambda *args: shown.append(args))
    monkeypatch.setattr(launch, "QSettings", lambda: QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    assert launch.run(target, "ann") == 1
    assert len(shown) == 1 and str(target) in shown[0][2]
    assert ("is a folder" if kind == "folder" else "is not a PairScope project") in shown[0][2]
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    if before is not None:
        assert target.read_bytes() == before and side_files(target) == []
