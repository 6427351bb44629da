"""The window's background executor: results on the GUI thread, errors always shown,
progress, cancellation, single-thread lanes, and no thread left when the window closes."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QProgressBar

from helpers import WAIT_MS, show_active
from pairscope.app.gui import tasks
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.gui.tasks import BackgroundOp, Cancelled
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, Reference, Response
from pairscope.app.store import Store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def window(qtbot, tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"it{i}",
                    prompt="Which?",
                    responses=(Response(0, "GOOD a"), Response(1, "BAD b")),
                    reference=Reference(ranking=(0, 1)),
                )
                for i in range(4)
            ]
        )
        # Two annotators, so that every statistics figure has something to draw.
        for name, outcome in (("alice", "tie"), ("bob", "both_bad")):
            for summary in store.item_summaries(0, 2):
                LabelingSession(store, name).save(summary.id, LabelDraft(outcome=outcome))
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann")))


@pytest.fixture
def shown(monkeypatch):
    """Error dialogs, recorded instead of shown (the real dialog is tested once below)."""
    messages: list[tuple[str, str]] = []
    monkeypatch.setattr(
        tasks, "show_error", lambda parent, title, message, details="": messages.append((title, message))
    )
    return messages


def ticking():
    """A GUI-thread timer and its tick count: ticks only grow while the event loop runs."""
    ticks = []
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    return timer, ticks


def labels_still_work(qtbot, window):
    window.windowHandle().requestActivate()  # offscreen, a closed dialog does not hand activation back
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key_2)
    return window.controller.store.current_label(window.controller.current.item.id, "ann") is not None


def test_success_runs_on_the_gui_thread_with_the_result(qtbot, window, shown):
    ran_on, called_on, results = [], [], []

    def work(task):
        ran_on.append(threading.current_thread())
        return 6 * 7

    def done(result):
        called_on.append(threading.current_thread())
        results.append(result)

    BackgroundOp(window, work).success(done).run()
    qtbot.waitUntil(lambda: bool(results), timeout=WAIT_MS)
    assert results == [42]
    assert called_on == [threading.main_thread()] and ran_on[0] is not threading.main_thread()
    assert not ran_on[0].is_alive() and not window.tasks.running() and not shown


def test_an_error_is_shown_in_a_critical_dialog_and_the_window_keeps_working(qtbot, window):
    def broken(task):
        raise ValueError("the folder /nowhere/out cannot be written")

    BackgroundOp(window, broken, title="Export").run()

    def dialog():
        boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
        return boxes[0] if boxes else None

    qtbot.waitUntil(lambda: dialog() is not None, timeout=WAIT_MS)
    box = dialog()
    assert box.icon() == QMessageBox.Critical and box.windowTitle() == "Export failed"
    assert "the folder /nowhere/out cannot be written" in box.text()
    assert "Traceback" in box.detailedText()
    box.button(QMessageBox.Ok).click()
    qtbot.waitUntil(lambda: dialog() is None, timeout=WAIT_MS)
    assert labels_still_work(qtbot, window)


def test_a_failure_callback_replaces_the_dialog(qtbot, window, shown):
    errors = []
    BackgroundOp(window, lambda task: 1 / 0).failure(errors.append).run()
    qtbot.waitUntil(lambda: bool(errors), timeout=WAIT_MS)
    assert isinstance(errors[0], ZeroDivisionError) and not shown


def test_an_error_inside_a_callback_is_not_dropped(qtbot, window, shown):
    def bad_success(result):
        raise KeyError("no such column")

    BackgroundOp(window, lambda task: 1, title="Statistics").success(bad_success).run()
    qtbot.waitUntil(lambda: bool(shown), timeout=WAIT_MS)
    assert shown == [("Statistics failed", "KeyError: 'no such column'")]
    assert labels_still_work(qtbot, window)


def test_cancel_stops_a_long_op_and_leaves_no_thread(qtbot, window, shown):
    started, threads, outcome = threading.Event(), [], []

    def forever(task):
        threads.append(threading.current_thread())
        started.set()
        while not task.cancel.wait(0.01):
            pass
        task.check()

    op = (
        BackgroundOp(window, forever)
        .success(lambda r: outcome.append("success"))
        .cancelled(lambda: outcome.append("cancelled"))
        .run()
    )
    assert started.wait(5) and op.running
    op.cancel()
    qtbot.waitUntil(lambda: bool(outcome), timeout=WAIT_MS)
    assert outcome == ["cancelled"] and not shown
    assert not threads[0].is_alive() and threads[0] not in threading.enumerate()
    assert not window.tasks.running()


def test_progress_shows_in_a_bar_and_in_the_status_bar(qtbot, window, shown):
    release = threading.Event()
    bar = QProgressBar()
    qtbot.addWidget(bar)

    def steps(task):
        task.progress(1, 3)
        release.wait(5)
        task.progress(3, 3)
        return "ok"

    done = []
    BackgroundOp(window, steps).with_progress("Exporting…", bar=bar).success(done.append).run()
    BackgroundOp(window, steps).with_progress("Adding to collection…").run()
    indicator = window.tasks.indicator
    qtbot.waitUntil(lambda: bar.value() == 1 and indicator.bar.value() == 1, timeout=WAIT_MS)
    assert bar.maximum() == 3 and "Exporting…" in bar.format()
    assert indicator.isVisible() and indicator.label.text() == "Adding to collection…"
    release.set()
    qtbot.waitUntil(lambda: bool(done) and not window.tasks.running(), timeout=WAIT_MS)
    assert bar.isHidden() and indicator.isHidden()


def test_the_status_bar_cancel_button_cancels_the_op(qtbot, window, shown):
    cancelled = []

    def forever(task):
        task.progress(0, 10)
        task.cancel.wait(10)
        task.check()

    BackgroundOp(window, forever).with_progress("Working…").cancelled(lambda: cancelled.append(1)).run()
    qtbot.waitUntil(lambda: window.tasks.indicator.isVisible(), timeout=WAIT_MS)
    window.tasks.indicator.cancel.click()
    qtbot.waitUntil(lambda: bool(cancelled), timeout=WAIT_MS)


def test_updates_reach_the_gui_thread_in_order_before_success(qtbot, window, shown):
    seen = []

    def stream(task):
        for word in ("one", "two", "three"):
            task.update(word)
        return "end"

    (
        BackgroundOp(window, stream)
        .on_update(lambda w: seen.append((w, threading.current_thread())))
        .success(lambda r: seen.append((r, threading.current_thread())))
        .run()
    )
    qtbot.waitUntil(lambda: len(seen) == 4, timeout=WAIT_MS)
    assert [w for w, _ in seen] == ["one", "two", "three", "end"]
    assert {t for _, t in seen} == {threading.main_thread()}


def test_a_lane_keeps_its_ops_on_one_thread_until_the_window_closes(qtbot, window, shown):
    closed_on, ran_on = [], []
    lane = window.tasks.lane("model", at_close=lambda: closed_on.append(threading.current_thread()))
    for n in range(3):
        BackgroundOp(window, lambda task, n=n: ran_on.append((n, threading.current_thread())), lane=lane).run()
    qtbot.waitUntil(lambda: len(ran_on) == 3 and not window.tasks.running(), timeout=WAIT_MS)
    assert [n for n, _ in ran_on] == [0, 1, 2] and len({t for _, t in ran_on}) == 1
    thread = ran_on[0][1]
    assert thread.is_alive() and thread is not threading.main_thread()  # kept for the next job
    window.close()
    assert closed_on == [thread] and not thread.is_alive()


def test_closing_the_window_cancels_running_ops_and_joins_their_threads(qtbot, window, shown):
    started, threads, called = threading.Event(), [], []

    def forever(task):
        threads.append(threading.current_thread())
        started.set()
        task.cancel.wait(30)
        return "late"

    BackgroundOp(window, forever).success(called.append).failure(called.append).run()
    assert started.wait(5)
    window.close()
    assert not threads[0].is_alive()
    qtbot.wait(50)
    assert not called and not shown  # nothing runs into a closed window
    with pytest.raises(RuntimeError):
        BackgroundOp(window, forever).run()


def test_statistics_are_computed_off_the_gui_thread(qtbot, window, shown):
    store = window.controller.store
    timer, ticks = ticking()
    with store.transaction():  # the computation waits for the store; the GUI must not
        view = window.shortcuts.show_statistics()
        qtbot.wait(200)
        assert ticks and view.report is None and "Computing" in view.status.text()
        assert view.progress.isVisible()
    timer.stop()
    qtbot.waitUntil(lambda: view.report is not None, timeout=30000)
    assert view.report["items"] == 4 and view.tabs.count() > 1 and view.export.isEnabled()
    assert not view.progress.isVisible() and "4 items" in view.status.text()


def test_closing_statistics_while_computing_does_not_block(qtbot, window, shown):
    store = window.controller.store
    with store.transaction():
        view = window.shortcuts.show_statistics()
        qtbot.wait(50)
        start = time.monotonic()
        view.close()
        assert time.monotonic() - start < 5  # generous: the old view joined its thread here
    qtbot.waitUntil(lambda: not window.tasks.running(), timeout=30000)
    assert not shown


def test_statistics_report_folder_is_written_in_the_background(qtbot, window, shown, tmp_path, monkeypatch):
    from pairscope.app.gui import stats_view

    view = window.shortcuts.show_statistics()
    qtbot.waitUntil(lambda: view.report is not None, timeout=30000)
    chosen = str(tmp_path / "r")
    monkeypatch.setattr(stats_view.QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: chosen))
    view.export.click()
    qtbot.waitUntil(lambda: "Wrote" in view.status.text(), timeout=30000)
    assert (tmp_path / "r" / "report.md").exists() and not shown


def test_no_event_pumping_in_the_app():
    """Background work goes through app/gui/tasks.py, never processEvents() loops."""
    pumping = [
        str(p.relative_to(ROOT))
        for folder in ("app", "widgets")
        for p in (ROOT / folder).rglob("*.py")
        if re.search(r"processEvents\s*\(", p.read_text("utf-8"))
    ]
    assert pumping == []


def test_a_cancelled_exception_is_no_error(qtbot, window, shown):
    def stop(task):
        raise Cancelled()

    ended = []
    BackgroundOp(window, stop).success(ended.append).run()
    qtbot.waitUntil(lambda: not window.tasks.running(), timeout=WAIT_MS)
    qtbot.wait(20)
    assert not ended and not shown


@pytest.mark.qt_no_exception_capture
def test_an_error_escaping_any_slot_is_shown(qtbot, window, shown, monkeypatch, capsys):
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    tasks.install_error_hook()
    QTimer.singleShot(0, lambda: {}["missing column"])
    qtbot.waitUntil(lambda: bool(shown), timeout=WAIT_MS)
    assert shown == [("PairScope error", "KeyError: 'missing column'")]
    assert "Traceback" in capsys.readouterr().err  # and still on stderr
    assert labels_still_work(qtbot, window)
