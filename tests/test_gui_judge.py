"""The judge panel in the window: live streaming, verdicts, cancel, a responsive GUI."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt, QTimer

import fake_backend  # noqa: F401  (registers "fake")
from fake_backend import FakeBackend, prefer_marker
from helpers import good_bad_items, show_active
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.store import Store


@pytest.fixture
def project_path(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(6))
    return path


def open_window(qtbot, path, factory):
    window = MainWindow(AnnotationController(Store.open(path), "ann"))
    window.judge.worker._factory = factory
    return show_active(qtbot, window, (1500, 900))


def test_judge_item_streams_and_shows_verdict_beside_labels(qtbot, project_path):
    window = open_window(qtbot, project_path, lambda options: FakeBackend(options.model))
    qtbot.keyClick(window, Qt.Key_J, Qt.ControlModifier)
    assert window.judge.isVisible()
    window.judge.panel.model.setText("fake-model")
    window.judge.panel.k.setValue(3)
    ticks = []
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    with qtbot.waitSignal(window.judge.worker.finished, timeout=10000):
        qtbot.keyClick(window, Qt.Key_J, Qt.ControlModifier | Qt.ShiftModifier)
    timer.stop()
    stream = window.judge.panel.stream.toPlainText()
    # temperature 0: samples showing the same order send the same prompt, generated once
    assert "sample 1" in stream and "is better" in stream
    result = window.judge.panel.result.text()
    assert "Judge: Response" in result and "agrees with the dataset ✓" in result and "(3 of 3 samples)" in result
    assert ticks  # the GUI kept running while the judge worked
    store = window.controller.store
    assert len(store.verdicts(item_id=window.controller.current.item.id)) == 3


def test_cancel_mid_stream_keeps_the_window_working(qtbot, project_path):
    started = threading.Event()
    release = threading.Event()

    def slow_script(request):
        started.set()
        release.wait(5)
        return prefer_marker()(request)

    window = open_window(qtbot, project_path, lambda options: FakeBackend(options.model, script=slow_script))
    window.judge.show()
    window.judge.panel.model.setText("fake-model")
    window.judge.panel.k.setValue(5)
    window.judge.judge_current()
    assert started.wait(5)
    window.judge.panel.cancel.click()
    release.set()
    qtbot.waitUntil(lambda: not window.judge.worker.busy, timeout=10000)
    assert len(window.controller.store.verdicts()) < 5
    qtbot.keyClick(window, Qt.Key_2)  # labeling still works
    assert window.controller.store.current_label(window.controller.current.item.id, "ann") is not None


def test_model_errors_are_reported_in_the_panel(qtbot, project_path, tmp_path):
    window = open_window(qtbot, project_path, None)
    window.judge.worker._factory = __import__("pairscope.models.base", fromlist=["open_backend"]).open_backend
    window.judge.show()
    window.judge.panel.model.setText(str(tmp_path / "no-such-model"))
    with qtbot.waitSignal(window.judge.worker.failed, timeout=10000):
        window.judge.judge_current()
    assert "Judge failed" in window.judge.panel.status.text()
    assert "no model folder" in window.judge.panel.status.text()
    assert window.judge.panel.judge_item.isEnabled()


def test_judge_all_shows_progress_and_summary(qtbot, project_path):
    window = open_window(qtbot, project_path, lambda options: FakeBackend(options.model))
    window.judge.show()
    window.judge.panel.model.setText("fake-model")
    with qtbot.waitSignal(window.judge.worker.finished, timeout=10000):
        window.judge.judge_all()
    assert "6/6" in window.judge.panel.progress.format().replace(" / ", "/") or window.judge.panel.progress.value() == 6
    assert "official vote 100.0%" in window.judge.panel.status.text()


def test_the_model_stays_loaded_on_one_thread_between_jobs(qtbot, project_path):
    made, used_on, closed_on = [], set(), []

    class Recording(FakeBackend):
        def generate(self, requests, cancel=None):
            used_on.add(threading.current_thread())
            return super().generate(requests, cancel)

        def generate_stream(self, request, on_text, cancel=None):
            used_on.add(threading.current_thread())
            return super().generate_stream(request, on_text, cancel)

        def close(self):
            closed_on.append(threading.current_thread())

    def factory(options):
        made.append(threading.current_thread())
        return Recording(options.model)

    window = open_window(qtbot, project_path, factory)
    window.judge.show()
    window.judge.panel.model.setText("fake-model")
    with qtbot.waitSignal(window.judge.worker.finished, timeout=10000):
        window.judge.judge_current()
    qtbot.keyClick(window, Qt.Key_Down)
    with qtbot.waitSignal(window.judge.worker.finished, timeout=10000):
        window.judge.judge_current()
    with qtbot.waitSignal(window.judge.worker.finished, timeout=10000):
        window.judge.judge_all()
    assert len(made) == 1  # loaded once for three jobs
    lane = made[0]
    assert used_on == {lane} and lane is not threading.main_thread() and lane.is_alive()
    window.close()
    assert closed_on == [lane] and not lane.is_alive()  # freed on its own thread, which then ended


def test_a_judge_bug_is_reported_in_the_panel_not_lost(qtbot, project_path):
    class Broken(FakeBackend):
        def generate_stream(self, request, on_text, cancel=None):
            raise IndexError("token 7 out of range")

    window = open_window(qtbot, project_path, lambda options: Broken(options.model))
    window.judge.show()
    window.judge.panel.model.setText("fake-model")
    with qtbot.waitSignal(window.judge.worker.failed, timeout=10000):
        window.judge.judge_current()
    assert "IndexError: token 7 out of range" in window.judge.panel.status.text()
    assert window.judge.panel.judge_item.isEnabled() and not window.judge.worker.busy
