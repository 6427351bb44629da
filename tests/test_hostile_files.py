"""Hostile conditions: a full disk, read-only media and folders, planted schema objects, damage.

Every case ends in one clear message (no traceback, no "cannot rollback") and leaves the
files as they were. Read-only media are made with ``chmod`` when not root; as root (which
ignores permissions) with the immutable flag (``chattr +i``), which stops root too.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import shutil
import sqlite3
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import write_jsonl
from pairscope.app.cli.main import main
from pairscope.app.importer import import_file
from pairscope.app.records import Label
from pairscope.app.store import ReadOnlyError, SchemaError, Store
from pairscope.app.store.connection import DiskFullError, StoreBase

SIDE = ("-wal", "-shm", "-journal")


def vl_row(i: int) -> dict:
    return {
        "id": f"RLAIF-V-{i}",
        "query": f"How many boats are there in picture {i}?",
        "response": [f"There are {i} boats " * 8, f"I count {i + 1} boats " * 8],
        "human_ranking": [1, 0],
    }


def dataset(folder: Path, n: int = 3, name: str = "vl.jsonl") -> Path:
    return write_jsonl(folder / name, [vl_row(i) for i in range(n)])


def make_project(folder: Path, n: int = 3, labels: tuple[str, ...] = ("alice",)) -> Path:
    db = folder / "p.pairscope"
    with Store.create(db) as store:
        import_file(store, dataset(folder, n), "vlrewardbench")
        for name in labels:
            for i in range(n):
                store.add_label(Label(store.item_id(f"RLAIF-V-{i}"), name, "prefer", ranking=(0, 1)))
    return db


def listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "cannot rollback" not in captured.err
    return code, captured.out, captured.err


# -- read-only media ----------------------------------------------------------------------------


def _chattr(flag: str, *paths: Path) -> None:
    subprocess.run(["chattr", flag, *map(str, paths)], check=True, capture_output=True, text=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """Make ``folder`` and the files in it unwritable, as a CD or a read-only mount would be."""
    files = [p for p in folder.iterdir() if p.is_file()]
    if os.geteuid() != 0:
        for path in files:
            path.chmod(0o444)
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
            for path in files:
                path.chmod(0o644)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root (permissions do not stop root) and chattr is not installed")
    try:
        _chattr("+i", *files, folder)
    except subprocess.CalledProcessError as exc:
        with contextlib.suppress(subprocess.CalledProcessError):
            _chattr("-i", *files, folder)
        pytest.skip(f"running as root and this filesystem has no immutable flag: {exc.stderr.strip()}")
    try:
        yield
    finally:
        _chattr("-i", folder, *files)


def with_changes_in_its_wal(folder: Path, target: Path) -> Path:
    """A copy of a project in ``target`` whose newest label is only in its ``-wal`` (a project
    copied while the window had it open, or after a crash)."""
    db = make_project(folder, labels=())
    # a reader in the middle of a read keeps the WAL from being checkpointed when the store closes
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA wal_autocheckpoint = 0")
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM items").fetchall()
    with Store.open(db) as store:
        store.conn.execute("PRAGMA wal_autocheckpoint = 0")
        store.add_label(Label(1, "alice", "prefer", ranking=(1, 0)))
    target.mkdir()
    copy = target / db.name
    shutil.copyfile(db, copy)
    shutil.copyfile(f"{db}-wal", f"{copy}-wal")
    holder.close()
    conn = sqlite3.connect(f"file:{copy}?mode=ro&immutable=1", uri=True)
    assert conn.execute("SELECT count(*) FROM labels").fetchone()[0] == 0  # the label is in the -wal only
    conn.close()
    return copy


def test_a_project_on_read_only_media_with_changes_in_its_wal_is_read_whole(tmp_path, capsys, monkeypatch):
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    copy = with_changes_in_its_wal(tmp_path / "src", tmp_path / "cd")
    before = listing(copy.parent)
    with read_only(copy.parent):
        with Store.open(copy, readonly=True) as store:
            assert store.readonly and store.query("SELECT count(*) FROM labels")[0][0] == 1
            assert store.note and "read-only" in store.note
            with pytest.raises(ReadOnlyError):
                store.set_meta("x", "y")
        code, out, err = run_cli(capsys, "info", "--db", copy, "--json")
        assert code == 0 and json.loads(out)["labels"] == 1 and "note:" in err
        code, out, err = run_cli(capsys, "stats", "--db", copy)
        assert code == 0
        out_dir = tmp_path / "out"
        code, out, err = run_cli(capsys, "export", "--db", copy, "--format", "jsonl", "--out", out_dir)
        assert code == 0, err
        rows = [json.loads(line) for line in (out_dir / "items.jsonl").read_text().splitlines()]
        assert sum(len(r.get("labels") or []) for r in rows) == 1
    assert listing(copy.parent) == before
    assert list(private_tmp.iterdir()) == []  # the private copy is gone


def test_a_read_only_project_opens_read_only_with_a_note(tmp_path, capsys):
    db = make_project(tmp_path / "cd")
    before = listing(db.parent)
    with read_only(db.parent):
        with pytest.raises(ReadOnlyError, match="cannot be written"):
            Store.open(db)
        with Store.open(db, fallback_readonly=True) as store:
            assert store.readonly and store.item_count() == 3
            assert "read-only" in (store.note or "")
        for argv in (["info", "--db", db], ["stats", "--db", db]):
            code, _, err = run_cli(capsys, *argv)
            assert code == 0 and "read-only" in err
    assert listing(db.parent) == before


def test_the_window_opens_a_read_only_project_read_only(tmp_path, qapp, qtbot, monkeypatch):
    from PySide6.QtCore import QSettings

    from pairscope.app.gui import launch

    db = make_project(tmp_path / "cd")
    made = []
    real = launch.MainWindow

    def window(*args, **kwargs):
        made.append(real(*args, **kwargs))
        qtbot.addWidget(made[-1])
        return made[-1]

    monkeypatch.setattr(launch, "MainWindow", window)
    monkeypatch.setattr(launch.QApplication, "exec", lambda self: 0)
    monkeypatch.setattr(launch.QMessageBox, "critical", lambda *args: pytest.fail(f"refused: {args[2]}"))
    monkeypatch.setattr(launch, "QSettings", lambda: QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    with read_only(db.parent):
        assert launch.run(db, "ann") == 0
        shown = made[0]
        assert "read-only" in shown.windowTitle()
        assert shown.controller.store.readonly
        shown.close()
        shown.controller.store.close()


@pytest.mark.parametrize("command", ["import", "demo"])
@pytest.mark.parametrize("where", ["in", "below"])
def test_creating_a_project_in_a_read_only_folder_explains(tmp_path, capsys, command, where):
    src = dataset(tmp_path)
    folder = tmp_path / "cd"
    folder.mkdir()
    target = folder / "p.pairscope" if where == "in" else folder / "sub" / "p.pairscope"
    with read_only(folder):
        argv = ["import", src, "--db", target] if command == "import" else ["demo", target]
        code, _, err = run_cli(capsys, *argv)
        assert code == 1 and err.startswith("error: ")
        assert "read-only" in err and str(folder) in err
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("where", ["in", "below"])
def test_exporting_into_a_read_only_folder_explains(tmp_path, capsys, where):
    db = make_project(tmp_path / "proj")
    folder = tmp_path / "cd"
    folder.mkdir()
    out = folder if where == "in" else folder / "out"
    with read_only(folder):
        code, _, err = run_cli(capsys, "export", "--db", db, "--format", "jsonl", "--out", out)
        assert code == 1 and err.startswith("error: ") and "read-only" in err
    assert list(folder.iterdir()) == []


# -- a full disk --------------------------------------------------------------------------------


def cap_pages(monkeypatch, extra_pages: int = 0) -> None:
    """Every store connection may grow its file by at most ``extra_pages`` pages (SQLITE_FULL after)."""
    real = StoreBase._pragmas

    def capped(self):
        real(self)
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {max(pages, 1) + extra_pages}")

    monkeypatch.setattr(StoreBase, "_pragmas", capped)


def test_a_full_disk_during_an_import_reports_the_full_disk(tmp_path):
    db = make_project(tmp_path, n=2)
    big = write_jsonl(tmp_path / "big.jsonl", [vl_row(i) for i in range(100, 600)])
    with Store.open(db) as store:
        pages = store.query("PRAGMA page_count")[0][0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(DiskFullError, match="the disk is full") as raised:
            import_file(store, big, "vlrewardbench")
        assert "cannot rollback" not in str(raised.value)
        assert isinstance(raised.value, OSError)
        assert getattr(raised.value.__cause__, "sqlite_errorname", "") == "SQLITE_FULL"
        assert not store.conn.in_transaction and store.item_count() == 2
        store.conn.execute(f"PRAGMA max_page_count = {pages * 100}")
        assert import_file(store, big, "vlrewardbench").added == 500  # the store is still usable
    with Store.open(db) as store:
        assert store.integrity_check() == "ok"


def test_a_full_disk_from_the_command_line(tmp_path, capsys, monkeypatch):
    db = make_project(tmp_path, n=2)
    big = write_jsonl(tmp_path / "big.jsonl", [vl_row(i) for i in range(100, 600)])
    cap_pages(monkeypatch)
    code, _, err = run_cli(capsys, "import", big, "--db", db)
    assert code == 1 and "the disk is full" in err
    new = tmp_path / "new.pairscope"
    code, _, err = run_cli(capsys, "import", big, "--db", new)
    assert code == 1 and "the disk is full" in err and not new.exists()
    code, _, err = run_cli(capsys, "demo", tmp_path / "demo.pairscope")
    assert code == 1 and "the disk is full" in err
    demo = tmp_path / "demo.pairscope"
    assert not demo.exists() and not any(Path(f"{demo}{s}").exists() for s in SIDE)
    monkeypatch.undo()
    with Store.open(db) as store:
        assert store.item_count() == 2 and store.integrity_check() == "ok"


# -- planted schema objects ---------------------------------------------------------------------


PLANTED = {
    "trigger": (
        "CREATE TRIGGER keep_it_fair AFTER INSERT ON labels BEGIN"
        " UPDATE label_current SET outcome = 'discard' WHERE annotator_id != new.annotator_id; END",
        "trigger 'keep_it_fair'",
    ),
    "changed trigger": (
        "DROP TRIGGER labels_keep_current; CREATE TRIGGER labels_keep_current AFTER INSERT ON labels BEGIN"
        " DELETE FROM label_current WHERE item_id = new.item_id; END",
        "trigger 'labels_keep_current'",
    ),
    "view": ("CREATE VIEW mine AS SELECT * FROM labels", "view 'mine'"),
    "table": ("CREATE TABLE notes (x TEXT)", "table 'notes'"),
}


def plant(db: Path, sql: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(sql)
    conn.close()


@pytest.mark.parametrize("kind", list(PLANTED))
def test_a_project_with_planted_objects_is_refused_before_anything_runs(tmp_path, capsys, kind):
    db = make_project(tmp_path / "proj", labels=("alice",))
    sql, named = PLANTED[kind]
    plant(db, sql)
    before = listing(db.parent)
    for opener in (Store.open, Store.create, lambda p: Store.open(p, readonly=True)):
        with pytest.raises(SchemaError, match=f"{named} PairScope did not create; refusing to open it"):
            opener(db)
    for argv in (
        ["info", "--db", db],
        ["stats", "--db", db],
        ["export", "--db", db, "--format", "jsonl", "--out", tmp_path / "out"],
        ["import", dataset(tmp_path, name="more.jsonl"), "--db", db],
    ):
        code, _, err = run_cli(capsys, *argv)
        assert code == 1 and named in err, (argv, err)
    assert listing(db.parent) == before
    assert not (tmp_path / "out").exists()


def test_the_planted_trigger_does_not_rewrite_anyone_s_labels(tmp_path, qapp, monkeypatch, capsys):
    from PySide6.QtCore import QSettings

    from pairscope.app.gui import launch

    db = make_project(tmp_path / "proj", labels=("alice",))
    plant(db, PLANTED["trigger"][0])
    shown = []
    monkeypatch.setattr(launch.QMessageBox, "critical", lambda *args: shown.append(args))
    monkeypatch.setattr(launch.QApplication, "exec", lambda self: pytest.fail("the window opened"))
    monkeypatch.setattr(launch, "QSettings", lambda: QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    assert launch.run(db, "bob") == 1
    assert len(shown) == 1 and "trigger 'keep_it_fair'" in html.unescape(shown[0][2])
    capsys.readouterr()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert {r[0] for r in conn.execute("SELECT outcome FROM label_current")} == {"prefer"}
    conn.close()


def test_an_index_or_a_column_added_by_hand_is_not_foreign(tmp_path):
    db = make_project(tmp_path)
    plant(db, "CREATE INDEX my_index ON items(category); ALTER TABLE items ADD COLUMN batch TEXT;")
    with Store.open(db) as store:
        assert store.item_count() == 3


# -- damage -------------------------------------------------------------------------------------


def damage(db: Path, how: str) -> None:
    conn = sqlite3.connect(db)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'responses'").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    data = bytearray(db.read_bytes())
    if how == "page":
        start = (root - 1) * page_size
        data[start + 8 : start + page_size] = b"\x5a" * (page_size - 8)
    else:  # the freelist count in the header: quick_check reports it, reads still work
        data[36:40] = struct.pack(">I", 7)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["page", "freelist"])
def test_a_damaged_project_is_refused_with_the_reason(tmp_path, capsys, qapp, monkeypatch, how):
    from PySide6.QtCore import QSettings

    from pairscope.app.gui import launch

    db = make_project(tmp_path / "proj", n=40)
    damage(db, how)
    before = listing(db.parent)
    for opener in (Store.open, lambda p: Store.open(p, readonly=True)):
        with pytest.raises(SchemaError, match="is damaged"):
            opener(db)
    for argv in (
        ["info", "--db", db],
        ["stats", "--db", db],
        ["export", "--db", db, "--format", "jsonl", "--out", tmp_path / "out"],
    ):
        code, _, err = run_cli(capsys, *argv)
        assert code == 1 and "is damaged" in err, (argv, err)
    shown = []
    monkeypatch.setattr(launch.QMessageBox, "critical", lambda *args: shown.append(args))
    monkeypatch.setattr(launch.QApplication, "exec", lambda self: pytest.fail("the window opened"))
    monkeypatch.setattr(launch, "QSettings", lambda: QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    assert launch.run(db, "ann") == 1
    assert len(shown) == 1 and "is damaged" in html.unescape(shown[0][2])
    capsys.readouterr()
    assert listing(db.parent) == before
