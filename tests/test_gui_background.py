"""The window never waits for background work (issue 24, build 1).

Background ops write through connections of their own (the window's is the GUI thread's
alone); a label saved while another connection holds the write lock goes to the pending
journal at once and lands when that write ends; each op works with the window's store closed
(it touches only its arguments); the GUI-thread watchdog sees no long block while an import
of 20,000 items, the statistics, an export and a judge run go on under key presses.

Timing on a shared 2-CPU machine is noise, so these tests count: blocks the watchdog saw over
a generous bound, labels pending or stored, ops that failed.
"""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest
from PySide6.QtCore import Qt, QTimer

import fake_backend  # noqa: F401  (registers "fake")
from fake_backend import FakeBackend
from helpers import WAIT_MS, good_bad_items, show_active
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.gui.watchdog import Watchdog
from pairscope.app.store import Store

#: A block of the GUI thread this long is a stall whatever the machine's load (the 2.6 s
#: stall of issue 24 was a lock wait; a busy CI box adds ~0.3 s of scheduling at most).
STALL_MS = 1000
N_BIG = 20_000


@pytest.fixture
def project_path(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(40))
    return path


@pytest.fixture
def big_file(tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(N_BIG):
            row = {
                "id": f"big_{i}",
                "query": f"Question {i}?",
                "response": [f"a {i}", f"b {i}"],
                "human_ranking": [0, 1],
            }
            fh.write(json.dumps(row) + "\n")
    return path


def open_window(qtbot, path):
    window = MainWindow(AnnotationController(Store.open(path), "ann"))
    window.judge.worker._factory = lambda options: FakeBackend(options.model)
    return show_active(qtbot, window, (1400, 900))


def write_locked(path) -> bool:
    """Whether some connection holds the project's write lock now (a try that never waits)."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


class Presser:
    """Presses ``N`` on the window every 50 ms, like an annotator stepping through items."""

    def __init__(self, qtbot, window):
        self.count = 0
        self.timer = QTimer(interval=50)
        self.timer.timeout.connect(self._press)
        self.qtbot, self.window = qtbot, window

    def _press(self) -> None:
        self.count += 1
        self.qtbot.keyClick(self.window, Qt.Key_N)

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.stop()


def test_import_of_20000_items_under_key_presses_never_stalls_and_a_label_lands_after(
    qtbot, project_path, big_file, caplog
):
    window = open_window(qtbot, project_path)
    watchdog = Watchdog(window).start()
    seen: dict = {}

    def label_during_the_write() -> None:
        """Once the import holds the write lock, press 1: the label is pending at once."""
        if "pending" in seen or not write_locked(project_path):
            return
        seen["item"] = window.controller.current.item_id
        qtbot.keyClick(window, Qt.Key_1)
        seen["pending"] = window.controller.pending_count
        seen["stored_then"] = window.controller.store.current_label(seen["item"], "ann")

    probe = QTimer(interval=30)
    probe.timeout.connect(label_during_the_write)
    with caplog.at_level(logging.WARNING, "pairscope.app.gui.watchdog"), Presser(qtbot, window) as presser:
        probe.start()
        op = window.file_menu.import_dataset(big_file)
        qtbot.waitUntil(lambda: op.finished, timeout=120_000)
        probe.stop()
    watchdog.stop()
    assert op._error is None, op._details
    assert "20000 added" in window.file_menu.import_result.text().replace(",", "")
    window.file_menu.import_result.close()
    assert presser.count > 10  # the window kept taking keys during the import
    stalls = [round(b.ms) for b in watchdog.blocks if b.ms > STALL_MS]
    assert not stalls, (stalls, [b.stack for b in watchdog.blocks if b.ms > STALL_MS][:1])
    # The label typed while the import wrote went to the journal at once (no busy wait) …
    assert seen.get("pending") == 1 and seen["stored_then"] is None, seen
    # … and landed when the import's transaction ended.
    qtbot.waitUntil(lambda: window.controller.pending_count == 0, timeout=WAIT_MS)
    with Store.open(project_path, readonly=True) as other:
        assert other.current_label(seen["item"], "ann").outcome == "prefer"
        assert other.item_count() == 40 + N_BIG


def test_statistics_export_and_judging_under_key_presses_never_stall(qtbot, project_path, tmp_path):
    from pairscope.app.gui.export_dialog import ExportDialog

    window = open_window(qtbot, project_path)
    watchdog = Watchdog(window).start()
    with Presser(qtbot, window):
        window.shortcuts.open_statistics()  # as the key does: the first time, modules load off the GUI thread
        qtbot.waitUntil(lambda: window.shortcuts.stats_view is not None, timeout=120_000)
        view = window.shortcuts.stats_view
        qtbot.waitUntil(lambda: view._op is not None and view._op.finished, timeout=120_000)
        dialog = ExportDialog(window.controller, window)
        dialog.folder.setText(str(tmp_path / "out"))
        dialog.source.setCurrentIndex(dialog.source.findData("reference"))
        dialog.run()
        qtbot.waitUntil(lambda: not dialog.running, timeout=WAIT_MS)
        window.judge.show()
        window.judge.panel.model.setText("fake-model")
        with qtbot.waitSignal(window.judge.worker.finished, timeout=60_000):
            window.judge.judge_all()
    watchdog.stop()
    assert "Exported 40 items" in dialog.result_text, dialog.result_text
    assert "official vote 100.0%" in window.judge.panel.status.text()
    stalls = [round(b.ms) for b in watchdog.blocks if b.ms > STALL_MS]
    assert not stalls, (stalls, [b.stack for b in watchdog.blocks if b.ms > STALL_MS][:1])
    view.close()
    dialog.close()


def close_window_store(window) -> None:
    """Close the window's own connection: an op that used it would fail."""
    window.controller.store.conn.close()


def finished_ok(qtbot, op):
    qtbot.waitUntil(lambda: op.finished, timeout=60_000)
    assert op._error is None, op._details
    return op._result


@pytest.mark.qt_no_exception_capture  # the GUI-side callbacks read the closed store: expected here
def test_each_background_op_runs_with_the_windows_store_closed(qtbot, project_path, tmp_path, caplog):
    """Import, save a copy, export, statistics, a collection, judging and the ensemble read
    touch only their arguments (a path, a filter, ids), never the window's connection."""
    from pairscope.app.gui import ensemble_dialog
    from pairscope.app.gui.controller import collect_filtered
    from pairscope.app.gui.export_dialog import ExportDialog
    from pairscope.app.gui.stats_view import StatsView
    from pairscope.app.gui.tasks import BackgroundOp

    data = tmp_path / "more.jsonl"
    data.write_text(json.dumps({"id": "new", "query": "Q", "response": ["a", "b"], "human_ranking": [0, 1]}) + "\n")
    window = open_window(qtbot, project_path)
    window.judge.show()
    window.judge.panel.model.setText("fake-model")
    export = ExportDialog(window.controller, window)
    export.folder.setText(str(tmp_path / "out"))
    export.source.setCurrentIndex(export.source.findData("reference"))
    item_filter = window.controller.filter
    close_window_store(window)
    caplog.set_level(logging.CRITICAL)  # the GUI-side callbacks that read the closed store complain

    assert finished_ok(qtbot, window.file_menu.import_dataset(data)).added == 1
    finished_ok(qtbot, window.file_menu.save_copy(tmp_path / "copy.pairscope"))
    export.run()
    assert finished_ok(qtbot, export._op).n_items == 41
    stats = StatsView(window.controller.store, window)
    finished_ok(qtbot, stats._op)
    op = BackgroundOp(window, lambda task: collect_filtered(project_path, "all", item_filter)).run()
    assert finished_ok(qtbot, op) == 41
    window.judge.worker.judge_items(item_filter, window.judge.panel.settings())
    run_id, _summary, _cancelled = finished_ok(qtbot, window.judge.worker._op)
    op = BackgroundOp(window, lambda task: ensemble_dialog._read(project_path, False, [run_id], task)).run()
    ensemble, _kappa = finished_ok(qtbot, op)
    assert len(ensemble.items) == 41
    with Store.open(project_path, readonly=True) as other:
        assert other.item_id("new") is not None
        assert len({v.item_id for v in other.verdicts(run_id=run_id)}) == 41
        assert len(other.collection_item_ids("all")) == 41
    with Store.open(tmp_path / "copy.pairscope", readonly=True) as copy:
        assert copy.item_count() == 41
    stats.close()
    export.close()


def test_a_label_typed_during_a_foreign_write_is_pending_at_once_and_lands_after(qtbot, project_path):
    """Another process holds the write lock (an import elsewhere): the key's label goes to the
    journal without waiting the 5 s busy timeout, and is stored when the write ends."""
    import time

    from helpers import LOCK_WAIT_BOUND_S
    from test_save_failures import write_locked

    window = open_window(qtbot, project_path)
    item = window.controller.current.item_id
    with write_locked(project_path) as release:
        start = time.perf_counter()
        qtbot.keyClick(window, Qt.Key_1)
        waited = time.perf_counter() - start
        assert window.controller.pending_count == 1
        assert waited < LOCK_WAIT_BOUND_S  # no busy-timeout wait (that is 5 s)
        release()
    qtbot.waitUntil(lambda: window.controller.pending_count == 0, timeout=WAIT_MS)
    with Store.open(project_path, readonly=True) as other:
        assert other.current_label(item, "ann").outcome == "prefer"


def test_the_watchdog_logs_a_blocked_gui_thread_with_its_stack(qtbot, caplog):
    """A GUI thread busy for 0.4 s in a Python function: one block logged, with that
    function in its stack; the beats before and after are no block."""
    import time

    watchdog = Watchdog(threshold_ms=100).start()

    def stuck_in_a_slot() -> None:
        deadline = time.monotonic() + 0.4
        while time.monotonic() < deadline:
            pass

    with caplog.at_level(logging.WARNING, "pairscope.app.gui.watchdog"):
        qtbot.wait(100)
        QTimer.singleShot(0, stuck_in_a_slot)
        qtbot.wait(300)
        qtbot.waitUntil(lambda: bool(watchdog.blocks), timeout=WAIT_MS)
    watchdog.stop()
    [block] = watchdog.blocks
    assert block.ms >= 300 and "stuck_in_a_slot" in block.stack
    assert "blocked for" in caplog.text and "stuck_in_a_slot" in caplog.text
