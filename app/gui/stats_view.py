"""The Statistics view: the report (and its figures) computed in the background, a text
summary, and one tab per figure (each exportable), plus a one-click report folder."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
)

from pairscope.widgets.charts import ChartView
from pairscope.widgets.plain_text import plain_label

from ..stats.report import compute_stats, summary_text, write_report
from ..store import Store
from .tasks import BackgroundOp, Task, error_message


def _compute(store: Store, task: Task) -> tuple[dict, dict]:
    """The report and its figures (matplotlib figures draw without a screen)."""
    from ..stats.plots import FIGURES

    report = compute_stats(store)
    task.check()
    return report, {name: draw(report) for name, draw in FIGURES.items()}


class StatsView(QDialog):
    """Statistics of the open project (computed off the GUI thread)."""

    def __init__(self, store: Store, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Statistics")
        self.resize(1000, 760)
        self.store = store
        self.report: dict | None = None
        self.status = plain_label("Computing…")  # quotes paths and error messages
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(240)
        self.tabs = QTabWidget()
        self.summary = QPlainTextEdit(readOnly=True)
        self.tabs.addTab(self.summary, "Summary")
        self.export = QPushButton("Write report folder…")
        self.export.setEnabled(False)
        self.export.clicked.connect(self._write_report)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.progress)
        bottom.addWidget(self.export)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(bottom)
        self._op = (
            BackgroundOp(self, lambda task: _compute(store, task), title="Statistics")
            .with_progress("Computing…", bar=self.progress)
            .success(lambda computed: self.show_report(*computed))
            .failure(lambda exc: self.status.setText(f"Could not compute: {error_message(exc)}"))
            .run()
        )

    def show_report(self, report: dict, figures: dict | None = None) -> None:
        """Show a computed report (figures drawn here when not given)."""
        if figures is None:
            from ..stats.plots import FIGURES

            figures = {name: draw(report) for name, draw in FIGURES.items()}
        self.report = report
        self.summary.setPlainText(summary_text(report))
        for name, figure in figures.items():
            self.tabs.addTab(ChartView(figure, name), name.replace("_", " "))
        runs = len(report["judges"])
        self.status.setText(f"{report['items']} items, {runs} judge run{'' if runs == 1 else 's'}")
        self.export.setEnabled(True)

    def _write_report(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Write the report into")
        if not folder or self.report is None:
            return
        report = self.report
        self.export.setEnabled(False)

        def written(path: Path) -> None:
            self.export.setEnabled(True)
            self.status.setText(f"Wrote {path}")

        def failed(exc: BaseException) -> None:
            self.export.setEnabled(True)
            self.status.setText(f"Could not write the report: {error_message(exc)}")

        (
            BackgroundOp(self, lambda task: write_report(report, Path(folder)), title="Statistics report")
            .with_progress("Writing the report…", bar=self.progress)
            .success(written)
            .failure(failed)
            .run()
        )

    def done(self, result: int) -> None:  # noqa: A003 (Qt API)
        self._op.cancel()  # its thread is joined when it ends, or when the window closes
        super().done(result)
