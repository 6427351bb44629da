"""The Statistics view: the report computed on a worker thread, a text summary, and one
tab per figure (each exportable), plus a one-click report folder."""

from __future__ import annotations

import threading

from pairscope.widgets.charts import ChartView
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
)

from ..stats.report import compute_stats, summary_text, write_report
from ..store import Store


class _Computer(QObject):
    done = Signal(object)
    failed = Signal(str)

    def start(self, store: Store) -> threading.Thread:
        def work() -> None:
            try:
                self.done.emit(compute_stats(store))
            except Exception as exc:  # shown in the view, never a crash
                self.failed.emit(f"{type(exc).__name__}: {exc}")

        thread = threading.Thread(target=work, name="pairscope-stats", daemon=True)
        thread.start()
        return thread


class StatsView(QDialog):
    """Statistics of the open project (computed off the GUI thread)."""

    def __init__(self, store: Store, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Statistics")
        self.resize(1000, 760)
        self.store = store
        self.report: dict | None = None
        self.status = QLabel("Computing…")
        self.tabs = QTabWidget()
        self.summary = QPlainTextEdit(readOnly=True)
        self.tabs.addTab(self.summary, "Summary")
        self.export = QPushButton("Write report folder…", enabled=False)
        self.export.clicked.connect(self._write_report)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.export)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(bottom)
        self._computer = _Computer(self)
        self._computer.done.connect(self.show_report, Qt.QueuedConnection)
        self._computer.failed.connect(lambda message: self.status.setText(f"Could not compute: {message}"))
        self._thread = self._computer.start(store)

    def show_report(self, report: dict) -> None:
        from ..stats.plots import FIGURES

        self.report = report
        self.summary.setPlainText(summary_text(report))
        for name, draw in FIGURES.items():
            self.tabs.addTab(ChartView(draw(report), name), name.replace("_", " "))
        runs = len(report["judges"])
        self.status.setText(f"{report['items']} items, {runs} judge run{'' if runs == 1 else 's'}")
        self.export.setEnabled(True)

    def _write_report(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Write the report into")
        if folder and self.report is not None:
            from pathlib import Path

            path = write_report(self.report, Path(folder))
            self.status.setText(f"Wrote {path}")

    def done(self, result: int) -> None:  # noqa: A003 (Qt API)
        self._thread.join(timeout=30)
        super().done(result)
