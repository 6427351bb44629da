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

from helpers import WAIT_MS
from pairscope.app.gc_pause import collection_paused, gc_paused
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
        qtbot.waitUntil(lambda: "MainThread" in threads, timeout=WAIT_MS)
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


def _checks(collector, rounds: int, per_round: int, keep: list | None = None) -> list[int]:
    """Allocate ``per_round`` cyclic objects (kept in ``keep`` when given, else garbage)
    before each of ``rounds`` timer checks; the generations the checks collected."""
    done = []
    for _ in range(rounds):
        made = [_Cycle() for _ in range(per_round)]
        if keep is not None:
            keep.extend(made)
        del made
        generation = collector.check()
        if generation is not None:
            done.append(generation)
    return done


def test_short_lived_garbage_does_not_cost_full_collections(qapp):
    """A full collection (~170 ms with the Statistics dialog open) runs only when the objects
    promoted since the last one exceed a quarter of those it kept, as CPython decides."""
    collector = collect_on_gui_thread()
    gc.collect()
    collector._long_lived, collector._pending = len(gc.get_objects(2)), 0  # as after a full one
    garbage = _checks(collector, 200, 1_000)
    assert 1 in garbage and 2 not in garbage
    kept: list = []
    grown = _checks(collector, 400, 2_000, keep=kept)
    assert 2 in grown  # a quarter more long-lived objects: a full collection is due


def test_an_import_pause_holds_the_gui_collector(qapp):
    collector = collect_on_gui_thread()
    with gc_paused():
        assert collection_paused()
        assert _checks(collector, 20, 2_000) == []
    assert not collection_paused() and not gc.isenabled()  # the window's collector still owns it
    assert _checks(collector, 1, 0) != []


def test_pauses_nest_and_give_automatic_collection_back(qapp):
    gc.enable()
    try:
        with gc_paused():
            with gc_paused():
                assert not gc.isenabled()
            assert not gc.isenabled() and collection_paused()
        assert gc.isenabled() and not collection_paused()
    finally:
        gc.disable()  # the suite's own collector (tests/conftest.py) keeps it off


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
    qtbot.waitUntil(lambda: bool(freed), timeout=WAIT_MS)
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
