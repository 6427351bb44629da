"""A save either lands or the user knows (issue 16, point 1).

When the project cannot be written — another process holds the write lock past the busy
timeout, the disk is full, the file is read-only — a label is kept in memory and in a
journal next to the project (``<project>.pending.jsonl``, fsynced), the window says so in a
banner and retries, and the journal is replayed (exactly once: labels keep their uuid) on the
next successful write or the next start. Real processes hold the lock; SQLite's
``max_page_count`` makes the window's own connection fail with SQLITE_FULL.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager

import pytest
from PySide6.QtCore import Qt

from helpers import LOCK_WAIT_BOUND_S, show_active
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.labeling.pending import Journal, journal_path, replay_pending
from pairscope.app.labeling.session import PENDING_MARK, LabelingSession, describe
from pairscope.app.records import Item, Label, LabelDraft, Response
from pairscope.app.store import Store

N_ITEMS = 6

#: Holds the project's write transaction (as an import does) until told to let go.
_HOLDER = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO annotators (name, created_at) VALUES ('importer', '2025-01-01')")
    print("locked", flush=True)
    sys.stdin.readline()  # "release" (or EOF when the test dies)
    conn.execute("COMMIT")
    print("released", flush=True)
""")


@contextmanager
def write_locked(path):
    """Another process holds the write lock; the block gets a function that releases it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )

    def release() -> None:
        proc.stdin.write("release\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        proc.wait(timeout=10)

    try:
        assert proc.stdout.readline().strip() == "locked"
        yield release
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"it{k}", prompt=f"Which, {k}?", responses=(Response(0, f"yes {k}"), Response(1, f"no {k}"))
                )
                for k in range(N_ITEMS)
            ]
        )
    return path


def open_window(qtbot, path, annotator="ann"):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), annotator)))


def current_id(win) -> int:
    return win.controller.current.item.id


def assert_in_step(win) -> None:
    """The selected table row is the shown item, and it shows the label the panel shows."""
    row = win.table.model().row(win.table.current_row())
    assert row is not None and row.summary.id == current_id(win)
    assert row.own_label.removesuffix(PENDING_MARK) == describe(win.panel.draft()), row


def own_label(win, item_id) -> str:
    model = win.table.model()
    return next(r.own_label for r in (model.row(i) for i in range(model.rowCount())) if r.summary.id == item_id)


def banner_text(win) -> str:
    return win.banner.text() if win.banner.isVisible() else ""


def history(win, item_id, annotator="ann") -> list[Label]:
    # The window's own connection: a second Store on the file in this process would drop this
    # connection's POSIX locks when it closes the file (the other process could then delete
    # the -wal under it).
    return win.controller.store.label_history(item_id, annotator)


@pytest.mark.slow
def test_labels_typed_while_another_process_writes_are_kept_shown_and_land_later(qtbot, project):
    window = open_window(qtbot, project)
    first = current_id(window)
    with write_locked(project) as release:
        qtbot.keyClick(window, Qt.Key_1)  # waits the busy timeout, then is kept pending
        assert "1 label not yet saved" in banner_text(window) and "busy" in banner_text(window)
        assert own_label(window, first).endswith(PENDING_MARK)
        assert_in_step(window)
        qtbot.keyClick(window, Qt.Key_N)
        second = current_id(window)
        assert second != first
        qtbot.keyClick(window, Qt.Key_2)  # queued behind the first: no second busy wait
        qtbot.keyClick(window, Qt.Key_N)
        assert "2 labels not yet saved" in banner_text(window)
        assert journal_path(project).exists()
        # Navigation reads only: quick, and the table and the shown item stay in step.
        for key in (Qt.Key_P, Qt.Key_P, Qt.Key_N, Qt.Key_N, Qt.Key_P):
            start = time.perf_counter()
            qtbot.keyClick(window, key)
            assert time.perf_counter() - start < LOCK_WAIT_BOUND_S  # no busy-timeout wait
            assert_in_step(window)
        qtbot.keyClick(window, Qt.Key_P)
        assert current_id(window) == first and window.panel.draft().preferred_position == 1
        assert_in_step(window)
        assert history(window, first) == [] and history(window, second) == []
        release()
    qtbot.waitUntil(lambda: banner_text(window) == "", timeout=20000)
    assert not journal_path(project).exists()
    assert_in_step(window)
    assert not own_label(window, first).endswith(PENDING_MARK)
    order = {i: window.controller.session.order(i) for i in (first, second)}
    [one], [two] = history(window, first), history(window, second)
    assert one.preferred == order[first][0] and two.preferred == order[second][1]
    assert window.progress.format() == f"2 / {N_ITEMS} labeled"


def test_a_full_disk_keeps_labels_pending_with_undo_and_redo_until_there_is_room(qtbot, project):
    window = open_window(qtbot, project)
    conn = window.controller.store.conn  # the window's own connection: it can grow no further
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    first = current_id(window)
    note = "a long note " * 4000  # needs new pages: SQLITE_FULL, "database or disk is full"
    window.panel.note_edit.setPlainText(note)
    window.panel.flush()
    assert "1 label not yet saved" in banner_text(window) and "disk is full" in banner_text(window)
    qtbot.keyClick(window, Qt.Key_1)
    qtbot.keyClick(window, Qt.Key_N)
    second = current_id(window)
    qtbot.keyClick(window, Qt.Key_T)  # tie
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)  # undo: back to no label
    assert window.panel.draft() == LabelDraft()
    qtbot.keyClick(window, Qt.Key_Y, Qt.ControlModifier)  # redo: the tie again
    assert window.panel.draft().outcome == "tie"
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)  # and undone once more
    assert "6 labels not yet saved" in banner_text(window)
    assert_in_step(window)
    qtbot.keyClick(window, Qt.Key_P)
    assert current_id(window) == first and window.panel.draft().preferred_position == 1
    assert window.panel.draft().note == note
    assert_in_step(window)
    assert window.controller.store.label_history(first, "ann") == []

    conn.execute("PRAGMA max_page_count = 1000000")  # room again
    qtbot.waitUntil(lambda: banner_text(window) == "", timeout=15000)
    store = window.controller.store
    assert [label.outcome for label in store.label_history(first, "ann")] == ["unrated", "prefer"]
    assert [label.outcome for label in store.label_history(second, "ann")] == ["tie", "cleared", "tie", "cleared"]
    assert store.current_label(first, "ann").note == note and store.current_label(second, "ann") is None
    assert_in_step(window)
    assert not journal_path(project).exists()
    # Undo keeps working on what has landed since.
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
    assert store.current_label(first, "ann").outcome == "unrated"
    assert current_id(window) == first and window.panel.draft().preferred_position is None
    assert_in_step(window)


CHILD = textwrap.dedent("""
    import sys, time
    from pairscope.app.labeling.session import LabelingSession
    from pairscope.app.records import LabelDraft
    from pairscope.app.store import Store

    store = Store.open(sys.argv[1])
    session = LabelingSession(store, "kid")
    ids = [s.id for s in store.item_summaries(0, 10)]
    first = session.save(ids[0], LabelDraft(outcome="tie"))  # waits the busy timeout
    second = session.save(ids[1], LabelDraft(outcome="both_bad"))
    print("PENDING", len(session.pending), first.uuid, second.uuid, flush=True)
    time.sleep(60)
""")


@pytest.mark.slow
def test_a_killed_process_with_pending_labels_has_them_replayed_once_on_the_next_start(project):
    with write_locked(project) as release:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(project)], stdout=subprocess.PIPE, text=True)
        try:
            words = child.stdout.readline().split()
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            child.stdout.close()
        assert words[:2] == ["PENDING", "2"], words
        uuids = set(words[2:])
        journal = journal_path(project)
        assert {json.loads(line)["uuid"] for line in journal.read_text().splitlines()} == uuids
        release()
    with Store.open(project) as store:
        assert store.label_history(1, "kid") == []
        session = LabelingSession(store, "kid")  # the next start replays the journal
        assert len(session.pending) == 0 and not journal.exists()
        stored = [label.uuid for i in (1, 2) for label in store.label_history(i, "kid")]
        assert sorted(stored) == sorted(uuids)
        assert session.draft(1).outcome == "tie" and session.draft(2).outcome == "both_bad"
        LabelingSession(store, "kid")  # nothing left to replay
        assert replay_pending(store) == 0
        assert len([label for i in (1, 2) for label in store.label_history(i, "kid")]) == 2


def test_replay_skips_a_label_already_stored_and_removes_the_journal(project):
    with Store.open(project) as store:
        stored = store.add_label(Label(1, "ann", "tie", display_order=(0, 1)))
        journal = Journal(journal_path(project))
        journal.append(stored)  # e.g. killed after the write, before the journal was tidied
        journal.append(Label(2, "ann", "both_bad", display_order=(1, 0), uuid="u-2", created_at=stored.created_at))
        assert replay_pending(store) == 1
        assert not journal_path(project).exists()
        assert [label.uuid for label in store.label_history(1, "ann")] == [stored.uuid]
        [two] = store.label_history(2, "ann")
        assert (two.uuid, two.created_at, two.outcome) == ("u-2", stored.created_at, "both_bad")
        assert replay_pending(store) == 0


def test_a_torn_last_journal_line_is_skipped_and_the_next_entry_starts_a_new_line(project):
    path = journal_path(project)
    path.write_text('{"uuid": "torn", "item_id": 1, "annot')  # killed mid-write: never acknowledged
    journal = Journal(path)
    journal.append(Label(1, "ann", "tie", display_order=(0, 1), uuid="u-1", created_at="2025-01-01T00:00:00+00:00"))
    assert [label.uuid for label in journal.read()] == ["u-1"]
    with Store.open(project) as store:
        assert replay_pending(store) == 1
        assert store.current_label(1, "ann").uuid == "u-1"


def test_a_read_only_project_keeps_the_label_pending_and_says_why(project):
    with Store.open(project, readonly=True) as store:
        session = LabelingSession(store, "ann")
        label = session.save(1, LabelDraft(outcome="tie"))
        assert label is not None and len(session.pending) == 1
        assert "read-only" in session.pending.message()
        assert session.draft(1).outcome == "tie"  # what the annotator chose is still shown
        assert session.table_row(1).own_label == "tie" + PENDING_MARK
    with Store.open(project) as store:
        assert store.label_history(1, "ann") == []
        LabelingSession(store, "ann")  # writable now: the journal lands
        assert store.current_label(1, "ann").uuid == label.uuid


def test_reading_commands_say_journal_labels_are_left_out_and_pack_saves_them_first(project, tmp_path, capsys):
    from pairscope.app.cli.main import main

    journal = journal_path(project)
    kept = Label(1, "ann", "tie", display_order=(0, 1), uuid="u-1", created_at="2025-01-01T00:00:00+00:00")
    Journal(journal).append(kept, "it0")
    before = journal.read_bytes()
    for argv in (["info"], ["stats"], ["export", "--format", "jsonl", "--out", str(tmp_path / "out")]):
        assert main([*argv, "--db", str(project)]) == 0
        err = capsys.readouterr().err
        assert f"1 label is not saved in the project yet (kept in {journal})" in err, (argv, err)
    assert journal.read_bytes() == before  # reading wrote nothing
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    # the journal's label is not in the project, so no exported row takes its preference
    assert manifest["counts"]["per_preference_source"] == {"none": N_ITEMS}

    assert main(["pack", "--db", str(project), "--annotator", "ann", "--out", str(tmp_path / "ann.pairscope")]) == 0
    err = capsys.readouterr().err
    assert f"saved 1 label kept in {journal}" in err and "not saved" not in err
    assert not journal.exists()
    for path in (project, tmp_path / "ann.pairscope"):
        with Store.open(path, readonly=True) as store:
            assert store.current_label(1, "ann").uuid == "u-1"
    assert main(["info", "--db", str(project)]) == 0
    assert "not saved" not in capsys.readouterr().err


# -- bounded inputs (issue 31, item 5) -------------------------------------------------------------

_FLOCK_HOLDER = textwrap.dedent("""
    import fcntl, sys
    fh = open(sys.argv[1], "a+b")
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    print("locked", flush=True)
    sys.stdin.readline()  # until the test ends
""")


def test_a_journal_locked_by_another_process_is_waited_for_a_while_then_said(project):
    """A held flock on the journal made ``info`` wait forever; now it waits the journal's own
    timeout (5 s) and says why the journal's labels are left out."""
    from pairscope.app.labeling.pending import JOURNAL_WAIT_S

    journal = journal_path(project)
    Journal(journal).append(
        Label(1, "ann", "tie", display_order=(0, 1), uuid="u-1", created_at="2025-01-01T00:00:00+00:00")
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", _FLOCK_HOLDER, str(journal)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        info = subprocess.run(
            [sys.executable, "-m", "pairscope.app.cli.main", "info", "--db", str(project)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        took = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
        holder.stdin.close()
        holder.stdout.close()
    assert info.returncode == 0, info.stderr
    assert f"{journal} is locked by another process" in info.stderr and "left out" in info.stderr
    assert JOURNAL_WAIT_S <= took < 60, took


@pytest.mark.parametrize("depth", [101, 100_000])
def test_a_journal_line_nested_too_deeply_is_skipped_everywhere(project, tmp_path, capsys, depth):
    """Deep JSON in a journal line was a RecursionError: ``info`` exit 70, ``pairscope.open`` raised."""
    import pairscope
    from pairscope.app.cli.main import main

    journal = journal_path(project)
    kept = Label(1, "ann", "tie", display_order=(0, 1), uuid="u-1", created_at="2025-01-01T00:00:00+00:00")
    Journal(journal).append(kept, "it0")
    with journal.open("ab") as fh:
        fh.write(b'{"uuid": ' + b"[" * depth + b"]" * depth + b"}\n")
    assert main(["info", "--db", str(project)]) == 0
    assert "1 label is not saved in the project yet" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="1 label is not saved"), pairscope.open(project) as p:
        assert len(p.labels()) == 0
    with Store.open(project) as store:
        assert replay_pending(store) == 1 and store.current_label(1, "ann").uuid == "u-1"
    assert not journal.exists()


# -- nothing acknowledged is lost on quit (issue 31, item 6) -----------------------------------------


def memory_only(window_or_store_conn) -> None:
    """The disk is full for this connection (SQLITE_FULL on the next new page)."""
    pages = window_or_store_conn.execute("PRAGMA page_count").fetchone()[0]
    window_or_store_conn.execute(f"PRAGMA max_page_count = {pages}")


def test_quitting_with_labels_only_in_memory_asks_first(qtbot, project, tmp_path):
    """Disk full and the journal unwritable: Ctrl+Q closed the window and the labels were gone
    (2 of 2). Now Quit asks: save them elsewhere, keep trying, or discard them."""
    journal_path(project).mkdir()  # the journal cannot be written (a folder where its file goes)
    window = open_window(qtbot, project)
    memory_only(window.controller.store.conn)
    window.panel.note_edit.setPlainText("a long note " * 4000)  # needs new pages: the disk is full
    window.panel.flush()
    qtbot.keyClick(window, Qt.Key_N)
    qtbot.keyClick(window, Qt.Key_T)
    assert "2 labels not yet saved" in banner_text(window) and "only in memory" in banner_text(window)
    pending = [label.uuid for label in window.controller.session.pending.labels]
    asked: list[str] = []
    window.quit_guard.ask = lambda text: asked.append(text) or "retry"
    qtbot.keyClick(window, Qt.Key_Q, Qt.ControlModifier)  # Quit
    assert window.isVisible() and len(asked) == 1, asked
    assert "2 labels are only in memory" in asked[0] and "disk is full" in asked[0]
    target = tmp_path / "kept" / "labels.pending.jsonl"
    target.parent.mkdir()
    window.quit_guard.ask = lambda text: "save"
    window.quit_guard.choose_file = lambda: ""  # the file dialog cancelled: the window stays
    assert not window.close() and window.isVisible()
    window.quit_guard.choose_file = lambda: str(target)
    assert window.close() and not window.isVisible()
    assert [label.uuid for label in Journal(target).read()] == pending
    journal_path(project).rmdir()  # room again: the saved file put back as the journal lands
    target.rename(journal_path(project))
    with Store.open(project) as store:
        LabelingSession(store, "ann")
        assert {label.uuid for i in range(1, N_ITEMS + 1) for label in store.label_history(i, "ann")} == set(pending)


def test_discarding_labels_only_in_memory_closes_the_window(qtbot, project):
    journal_path(project).mkdir()
    window = open_window(qtbot, project)
    memory_only(window.controller.store.conn)
    window.panel.note_edit.setPlainText("a long note " * 4000)
    window.panel.flush()
    window.quit_guard.ask = lambda text: "discard"
    assert window.close()


def test_quitting_with_labels_in_the_journal_closes_without_asking(qtbot, project):
    window = open_window(qtbot, project)
    memory_only(window.controller.store.conn)
    window.panel.note_edit.setPlainText("a long note " * 4000)
    window.panel.flush()
    assert "1 label not yet saved" in banner_text(window) and "only in memory" not in banner_text(window)
    window.quit_guard.ask = lambda text: pytest.fail(f"asked: {text}")
    assert window.close()
    assert len(Journal(journal_path(project)).read()) == 1  # stored at the next start


def test_closing_a_session_with_labels_only_in_memory_raises_what_was_not_stored(project, tmp_path):
    """Through the API, 13,460 of 13,461 labels were lost without a word; now ``close()`` raises
    with the labels, and they can be saved to a journal file."""
    from pairscope.app.labeling.pending import UnsavedLabels

    journal_path(project).mkdir()
    target = tmp_path / "kept.pending.jsonl"
    with Store.open(project) as store:
        memory_only(store.conn)
        session = LabelingSession(store, "api")
        for item_id in range(1, N_ITEMS + 1):
            session.save(item_id, LabelDraft(outcome="tie", note=f"note {item_id} " * 2000))
        with pytest.raises(UnsavedLabels) as caught:
            session.close()
        assert len(caught.value.labels) == N_ITEMS
        assert f"{N_ITEMS} labels are only in memory" in str(caught.value) and "save_to" in str(caught.value)
        assert session.pending.save_to(target) == N_ITEMS
        store.conn.execute("PRAGMA max_page_count = 1000000")
        assert session.close() == [] and len(session.pending) == 0  # room again: they land
    with Store.open(project) as store:
        assert len([i for i in range(1, N_ITEMS + 1) if store.current_label(i, "api")]) == N_ITEMS
    assert len(Journal(target).read()) == N_ITEMS


_LOSING = textwrap.dedent("""
    import sys
    from pairscope.app.labeling.session import LabelingSession
    from pairscope.app.records import LabelDraft
    from pairscope.app.store import Store

    store = Store.open(sys.argv[1])
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages}")
    session = LabelingSession(store, "script")
    for item_id in (1, 2, 3):
        session.save(item_id, LabelDraft(outcome="tie", note="n " * 5000))
    print("saved", len(session.pending), flush=True)
""")


def test_a_script_ending_with_labels_only_in_memory_is_told_they_are_lost(project):
    journal_path(project).mkdir()
    done = subprocess.run([sys.executable, "-c", _LOSING, str(project)], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["saved", "3"], done.stderr
    assert "3 labels were never stored and are lost" in done.stderr, done.stderr
