"""Safe copies (issue 22 item 6): ``pairscope copy`` and File → Save a copy… go through SQLite's
online backup API, so a copy holds every committed label while the project is open and being
written; the window checkpoints the WAL when idle and the store on close, so even a plain
``cp`` of the file then misses nothing."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from pairscope.app.cli import main as cli
from pairscope.app.curation import project_copy
from pairscope.app.curation.project_copy import CopyError, copy_project
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, MediaRef, Reference, Response
from pairscope.app.store import Store


def pair(ext_id, media=()) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=f"which is right in {ext_id}?",
        media=tuple(media),
        responses=(Response(0, f"{ext_id} one"), Response(1, f"{ext_id} two")),
        reference=Reference(ranking=(0, 1)),
    )


def labels_in(path: Path) -> set[str]:
    """The label uuids in the file at ``path`` read alone (``immutable``: no -wal is looked at)."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT uuid FROM labels")}
    finally:
        conn.close()


def copied_alone(path: Path, tmp: Path) -> Path:
    """``cp project.pairscope`` — the file without its ``-wal``, as a user copies it."""
    tmp.mkdir(parents=True, exist_ok=True)
    target = tmp / path.name
    shutil.copyfile(path, target)
    return target


@pytest.fixture
def project(tmp_path) -> Path:
    """Two items; a0's image in the project's media folder (as a Parquet import stores it)."""
    path = tmp_path / "proj" / "p.pairscope"
    image = path.with_name("p_media") / "ab" / "ab12.png"
    image.parent.mkdir(parents=True)
    Image.new("RGB", (4, 4), "red").save(image)
    with Store.create(path) as store:
        store.add_items([pair("a0", [MediaRef("image", "x.png", "p_media/ab/ab12.png")]), pair("a1")])
    return path


def test_the_copy_command_copies_the_file_its_labels_and_its_media(project, tmp_path, capsys):
    with Store.open(project) as store:
        uid = LabelingSession(store, "ann").save(store.item_id("a0"), LabelDraft(outcome="tie")).uuid
        out = tmp_path / "moved" / "q.pairscope"
        assert cli.main(["copy", "--db", str(project), "--out", str(out)]) == 0  # while it is open
    said = capsys.readouterr().out
    assert f"copied to {out}" in said and "1 media files" in said
    assert sorted(p.name for p in out.parent.iterdir()) == ["q.pairscope", "q_media"]  # no -wal beside it
    assert labels_in(out) == {uid}
    with Store.open(out) as copy:
        path = copy.get_item(copy.item_id("a0")).media[0].path
        assert path is not None and Path(path).is_relative_to(out.parent / "q_media") and Path(path).is_file()
        assert copy.integrity_check() == "ok"


def test_the_copy_command_refuses_what_it_would_break(project, tmp_path, capsys):
    out = tmp_path / "q.pairscope"
    out.write_bytes(b"keep me")
    assert cli.main(["copy", "--db", str(project), "--out", str(out)]) == 1
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == b"keep me"
    assert cli.main(["copy", "--db", str(project), "--out", str(project)]) == 1
    assert "is the project being copied" in capsys.readouterr().err
    Path(f"{out}-wal").write_bytes(b"")
    assert cli.main(["copy", "--db", str(project), "--out", str(out), "--force"]) == 1
    assert "open in another program" in capsys.readouterr().err and out.read_bytes() == b"keep me"
    Path(f"{out}-wal").unlink()
    assert cli.main(["copy", "--db", str(project), "--out", str(out), "--force"]) == 0
    with Store.open(out) as copy:
        assert copy.item_count() == 2


def test_a_failed_copy_leaves_nothing(project, tmp_path, monkeypatch):
    def full(tmp, target, made):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    monkeypatch.setattr(project_copy, "place", full)
    folder = tmp_path / "copies"
    with Store.open(project) as store, pytest.raises(CopyError, match="the disk is full.*nothing was written"):
        copy_project(store, folder / "q.pairscope")
    assert not folder.exists()


WRITER = r"""
import sys, time
from pathlib import Path
from pairscope.app.records import Label
from pairscope.app.store import Store

project, log, stop = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
with Store.open(project) as store, open(log, "a") as out:
    items = sorted(r[0] for r in store.query("SELECT id FROM items"))
    n = 0
    while not stop.exists():
        label = store.add_label(Label(items[n % len(items)], f"w{n % 3}", "tie", display_order=(0, 1)))
        out.write(label.uuid + "\n")  # after its commit
        out.flush()
        n += 1
"""


@pytest.mark.slow
def test_a_copy_holds_every_committed_label_while_another_process_writes(project, tmp_path):
    """Before: ``cp`` while the project was open gave ``labels: 0`` (they sat in the -wal),
    and there was no other way to copy it."""
    log, stop = tmp_path / "committed.txt", tmp_path / "stop"
    log.touch()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(project), str(log), str(stop)])
    try:
        deadline = time.monotonic() + 120
        while len(log.read_text().split()) < 50:
            assert time.monotonic() < deadline and writer.poll() is None, "the writer did not start"
            time.sleep(0.05)
        with Store.open(project, readonly=True) as store:
            for round_ in range(5):
                committed = set(log.read_text().split())  # every label committed before the copy
                out = tmp_path / f"copy{round_}.pairscope"
                copy_project(store, out)
                held = labels_in(out)
                assert committed <= held, f"{len(committed - held)} committed labels missing from the copy"
                with Store.open(out, readonly=True) as copy:
                    assert copy.integrity_check() == "ok"
    finally:
        stop.touch()
        writer.wait(timeout=120)
    assert writer.returncode == 0
    assert len(labels_in(out)) >= 50


def test_closing_checkpoints_the_wal_even_while_another_program_has_it_open(project, tmp_path):
    """Before: closing left the labels in the -wal whenever another connection had the file
    open, so a ``cp`` of the file alone missed them."""
    reader = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        reader.execute("SELECT count(*) FROM items").fetchone()  # open, between reads
        store = Store.open(project)
        uid = LabelingSession(store, "ann").save(store.item_id("a1"), LabelDraft(outcome="tie")).uuid
        store.close()
        assert labels_in(copied_alone(project, tmp_path / "cp")) == {uid}
    finally:
        reader.close()


def test_checkpoint_is_a_store_method_that_never_waits(project):
    with Store.open(project) as store:
        LabelingSession(store, "ann").save(store.item_id("a1"), LabelDraft(outcome="tie"))
        pages, moved = store.checkpoint()
        assert pages == moved > 0
        with pytest.raises(ValueError, match="checkpoint mode"):
            store.checkpoint("NOW")
    with Store.open(project, readonly=True) as store:
        assert store.checkpoint() is None


# -- the window -----------------------------------------------------------------------------------


@pytest.fixture
def window(qtbot, project, monkeypatch):
    from helpers import show_active
    from pairscope.app.gui import file_menu
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    monkeypatch.setattr(file_menu, "IDLE_CHECKPOINT_MS", 50)
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(project), "ann"), None))


def label_in_window(qtbot, window) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_T)
    qtbot.waitUntil(lambda: window.controller.progress()[0] == 1, timeout=10_000)


def test_save_a_copy_holds_the_labels_just_given(qtbot, window, project, tmp_path):
    label_in_window(qtbot, window)
    out = tmp_path / "saved" / "copy.pairscope"
    op = window.file_menu.save_copy(out)
    qtbot.waitUntil(lambda: window.file_menu.copy_result is not None, timeout=20_000)
    assert op is not None and "copied to" in window.file_menu.copy_result.text()
    assert len(labels_in(out)) == 1
    window.close()


def test_the_idle_window_keeps_the_file_whole_and_a_clean_quit_leaves_no_side_files(qtbot, window, project, tmp_path):
    """Before: a ``cp`` of the file made while the window was open held none of its labels."""
    label_in_window(qtbot, window)
    qtbot.waitUntil(lambda: len(labels_in(copied_alone(project, tmp_path / "cp"))) == 1, timeout=10_000)
    window.file_menu.actions["quit"].trigger()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert sorted(p.name for p in project.parent.iterdir()) == ["p.pairscope", "p_media"]
