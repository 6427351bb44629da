"""Cyclic garbage is collected on the GUI thread only (app/gui/gc_thread.py).

CI crashed with a segmentation fault inside the Statistics dashboard's tests: matplotlib,
drawing on a background op, allocated past the collector's threshold, the collection found a
closed dialog kept in a cycle by its own lambdas, and Qt deleted its widgets on the worker
thread."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QDialog, QTabWidget, QVBoxLayout

from pairscope.app.gui.gc_thread import GuiThreadCollector, collect_on_gui_thread
from pairscope.app.gui.tasks import BackgroundOp
from pairscope.widgets.charts import ChartView

ROOT = Path(__file__).resolve().parents[1]


class _Cycle:
    def __init__(self):
        self.me = self


def _allocate_cycles(n: int = 50_000) -> int:
    """Enough container allocations to cross generation 0's threshold many times."""
    for _ in range(n):
        _Cycle()
    return n


def test_a_background_op_that_allocates_never_collects_on_its_thread(qtbot):
    collector = collect_on_gui_thread()
    assert collect_on_gui_thread() is collector  # installed once
    threads: list[str] = []

    def record(phase, _info):
        if phase == "start":
            threads.append(threading.current_thread().name)

    gc.callbacks.append(record)
    try:
        results = []
        BackgroundOp(None, lambda task: _allocate_cycles()).success(results.append).run()
        qtbot.waitUntil(lambda: bool(results), timeout=10_000)
        assert threads == [] or set(threads) == {"MainThread"}, threads
        # the garbage the op left is collected by the GUI thread's timer
        qtbot.waitUntil(lambda: "MainThread" in threads, timeout=5_000)
    finally:
        gc.callbacks.remove(record)
    assert not gc.isenabled()


def test_check_collects_by_the_thresholds_automatic_collection_uses(qapp):
    collector = collect_on_gui_thread()
    gc.collect()
    assert collector.check() is None  # nothing allocated since
    _allocate_cycles(collector.threshold[0] + 10)
    assert collector.check() in (0, 1, 2)
    assert gc.get_count()[0] < collector.threshold[0]


def test_stop_gives_collection_back_to_python(qapp):
    owner = QObject()
    gc.enable()
    try:
        collector = GuiThreadCollector(owner)
        assert not gc.isenabled()
        collector.stop()
        assert gc.isenabled()
    finally:
        gc.disable()  # the suite's own collector (tests/conftest.py) keeps it off
        owner.deleteLater()


class _Dialog(QDialog):
    """A closed window kept in a cycle by its own lambda, as a dialog holding its ops is."""

    def __init__(self):
        super().__init__()
        tabs = QTabWidget()
        QVBoxLayout(self).addWidget(tabs)
        for k in range(3):
            tabs.addTab(ChartView(_figure(), "chart"), str(k))
        self.retitle = lambda: self.setWindowTitle("x")


def _figure():
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().bar([1, 2], [3, 4], yerr=[0.1, 0.2])
    return fig


def _long_lived_cycles(n: int = 300_000) -> int:
    """Containers that survive the young generations: they push Python to a full collection."""
    kept = [_Cycle() for _ in range(n)]
    return len(kept)


def test_a_closed_dialog_with_charts_is_freed_on_the_gui_thread(qtbot):
    """Without the collector the op's thread freed the dialog in 8 runs of 8."""
    collect_on_gui_thread()
    freed: list[str] = []
    dialog = _Dialog()
    weakref.finalize(dialog, lambda: freed.append(threading.current_thread().name))
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.close()
    del dialog
    results = []
    BackgroundOp(None, lambda task: _long_lived_cycles()).success(results.append).run()
    qtbot.waitUntil(lambda: bool(results), timeout=20_000)
    qtbot.waitUntil(lambda: bool(freed), timeout=5_000)
    assert freed == ["MainThread"]


SCENARIO = textwrap.dedent(
    """
    import threading, weakref
    from PySide6.QtWidgets import QDialog
    from pairscope.app.gui.launch import start_application
    from pairscope.app.gui.tasks import BackgroundOp

    app = start_application()
    freed = []

    class Dialog(QDialog):
        def __init__(self):
            super().__init__()
            self.retitle = lambda: self.setWindowTitle("x")

    class Cycle:
        def __init__(self):
            self.me = self

    dialog = Dialog()
    weakref.finalize(dialog, lambda: freed.append(threading.current_thread().name))
    dialog.show()
    app.processEvents()
    dialog.close()
    del dialog
    done = []
    BackgroundOp(None, lambda task: len([Cycle() for _ in range(300_000)])).success(done.append).run()
    while not done or not freed:
        app.processEvents()
    print("freed on", freed[0])
    """
)


def test_the_app_starts_with_the_collector(tmp_path):
    """``start_application`` (what ``pairscope``'s window runs) installs it."""
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "freed on MainThread" in done.stdout, done.stdout
