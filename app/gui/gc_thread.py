"""Python's cyclic garbage collector runs on the GUI thread only.

A collection runs in whichever thread happens to allocate when a threshold is crossed. When
that is a background op (matplotlib drawing the statistics figures, an import, a judge run)
and the garbage holds a closed window's Qt objects (a dialog kept alive by a lambda that
refers to it), Qt deletes those widgets off the GUI thread and the process can crash
(measured: a segmentation fault in 2 of 3 runs of a reproduction — a closed dialog with six
charts collected by a worker thread — and once in CI inside the Statistics dashboard's tests;
tests/test_gc_thread.py checks on which thread such a dialog is freed).

So automatic collection is switched off and the same generational rule is applied from a
timer on the GUI thread (the approach pyqtgraph and Spyder take). Reference counting still
frees everything that is not in a cycle at once, on any thread.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QObject, QTimer

INTERVAL_MS = 500


class GuiThreadCollector(QObject):
    """Switches off automatic collection and collects from a GUI-thread timer instead, by
    the thresholds automatic collection would have used. ``stop()`` restores it."""

    def __init__(self, parent: QObject):
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(INTERVAL_MS)

    def check(self) -> int | None:
        """Collect the generations whose counts crossed their thresholds (as automatic
        collection would); the generation collected, or None."""
        young, middle, old = gc.get_count()
        if young <= self.threshold[0]:
            return None
        generation = 0
        if middle > self.threshold[1]:
            generation = 2 if old > self.threshold[2] else 1
        gc.collect(generation)
        return generation

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
