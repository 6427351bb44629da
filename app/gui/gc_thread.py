"""Python's cyclic garbage collector runs on the GUI thread only.

A collection runs in whichever thread happens to allocate when a threshold is crossed. When
that is a background op (matplotlib drawing the statistics figures, an import, a judge run)
and the garbage holds a closed window's Qt objects (a dialog kept alive by a lambda that
refers to it), Qt deletes those widgets off the GUI thread and the process can crash
(measured: a segmentation fault in 2 of 3 runs of a reproduction — a closed dialog with six
charts collected by a worker thread — and once in CI inside the Statistics dashboard's tests;
tests/test_gc_thread.py checks on which thread such a dialog is freed).

So automatic collection is switched off and its rule is applied from a timer on the GUI thread
(the approach pyqtgraph and Spyder take): a young generation when its count crosses its
threshold, and a full collection only when the objects promoted since the last one exceed a
quarter of those it kept (CPython's own guard; without it a full collection — ~170 ms with
the Statistics dialog open — would follow every tenth generation-1 collection). A 100 ms tick
keeps each young collection small; an import's pause (``app/gc_pause.py``) holds it. Reference counting still frees
everything that is not in a cycle at once, on any thread. ``bench/gc_bench.py`` measures it.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QObject, QTimer

from ..gc_pause import collection_paused

INTERVAL_MS = 100
#: CPython's guard: a full collection only when this share of new long-lived objects piled up.
FULL_WHEN_GROWN_BY = 0.25


class GuiThreadCollector(QObject):
    """Switches off automatic collection and collects from a GUI-thread timer instead, by
    the thresholds automatic collection would have used. ``stop()`` restores it."""

    def __init__(self, parent: QObject):
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        self._long_lived = 0  # objects the last full collection kept
        self._pending = 0  # objects promoted to the oldest generation since
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(INTERVAL_MS)

    def check(self) -> int | None:
        """Collect what automatic collection would collect now; the generation collected,
        or None (nothing due, or an import paused collection)."""
        young, middle, old = gc.get_count()
        if young <= self.threshold[0] or collection_paused():
            return None
        if middle <= self.threshold[1]:
            gc.collect(0)
            return 0
        if old > self.threshold[2] and self._pending > self._long_lived * FULL_WHEN_GROWN_BY:
            gc.collect(2)
            self._long_lived, self._pending = len(gc.get_objects(2)), 0
            return 2
        younger = len(gc.get_objects(0)) + len(gc.get_objects(1))
        self._pending += max(0, younger - gc.collect(1))  # the survivors move to the oldest
        return 1

    def stop(self) -> None:
        """Stop the timer and give collection back to Python."""
        self.timer.stop()
        if self._was_enabled:
            gc.enable()


def collect_on_gui_thread() -> GuiThreadCollector:
    """Install (once) the collector on the running QApplication; returns it."""
    app = QCoreApplication.instance()
    if app is None:
        raise RuntimeError("collect_on_gui_thread() needs a QApplication")
    existing = app.findChild(GuiThreadCollector)
    return existing if existing is not None else GuiThreadCollector(app)
