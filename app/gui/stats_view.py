"""The Statistics dashboard: the report, its tables (``app/stats/dashboard.py``) and its figures
computed on the background executor, shown as tabs — Overview, Judge runs (with calibration:
its table, reliability bins and figure), Categories, Annotators, Figures (each exportable) and
the report as text — plus a one-click report folder.
Where data is missing a tab says what is missing instead of showing an empty grid or plot."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from pairscope.widgets.charts import ChartView
from pairscope.widgets.plain_text import plain_label
from pairscope.widgets.stat_tables import StatSection, empty_state

from ..stats.dashboard import Dashboard, Table, build_dashboard, compute_dashboard
from ..stats.ranking_tables import rankings_tables
from ..stats.report import summary_text, write_report
from ..store import Store
from .tasks import BackgroundOp, Task, error_message

#: The tabs, in order.
TABS = ("Overview", "Judge runs", "Categories", "Annotators", "Figures", "Report text")
#: The figure shown under a tab's tables (a copy of the one in Figures), when it has data.
INLINE = {
    "Overview": "judge_accuracy",
    "Judge runs": "calibration",
    "Categories": "judge_per_category",
    "Annotators": "annotator_accuracy",
}
CHART_MIN_HEIGHT = 300


def _draw(report: dict, dashboard: Dashboard) -> tuple[dict, dict]:
    """Every drawable figure, and a second copy of each tab's inline figure (a figure lives in
    one canvas). matplotlib's Agg draws without a screen, so this runs off the GUI thread."""
    from ..stats.plots import FIGURES

    drawable = {e.name for e in dashboard.figures if not e.empty}
    figures = {name: FIGURES[name](report) for name in FIGURES if name in drawable}
    inline = {tab: FIGURES[name](report) for tab, name in INLINE.items() if name in drawable}
    return figures, inline


def _compute(store: Store, task: Task) -> tuple[dict, dict, Dashboard, dict]:
    """The report, the dashboard tables and the figures."""
    from .tasks import own_store  # the op's own connection: only the path and mode of ``store`` are read

    with own_store(store.path, store.readonly) as own:
        report, dashboard = compute_dashboard(own)
    task.check()
    figures, inline = _draw(report, dashboard)
    return report, figures, dashboard, inline


def _section(table: Table) -> StatSection:
    return StatSection(table.title, table.columns, table.rows, table.empty, table.note)


class _Page(QScrollArea):
    """A tab's scrollable column of sections."""

    def __init__(self, placeholder: str = "Computing…"):
        super().__init__()
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.fill([plain_label(placeholder)])

    def fill(self, widgets: list[QWidget], chart: QWidget | None = None) -> None:
        """Sections top to bottom; ``chart`` (if any) takes the room left below them."""
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(12, 8, 12, 8)
        for widget in widgets:
            layout.addWidget(widget)
        if chart is not None:
            chart.setMinimumHeight(CHART_MIN_HEIGHT)
            layout.addWidget(chart, 1)
        else:
            layout.addStretch(1)
        self.setWidget(body)


class StatsView(QDialog):
    """Statistics of the open project (computed off the GUI thread)."""

    def __init__(self, store: Store, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Statistics")
        self.resize(1200, 800)
        self.store = store
        self.report: dict | None = None
        self.dashboard: Dashboard | None = None
        self.sections: dict[str, StatSection] = {}
        self.charts: dict[str, ChartView] = {}
        self.figure_empty: dict[str, str] = {}
        self.inline_charts: dict[str, ChartView] = {}
        self.status = plain_label("Computing…")  # quotes paths and error messages
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(240)
        self.tabs = QTabWidget()
        self.pages = {name: _Page() for name in TABS[:4]}
        for name, page in self.pages.items():
            self.tabs.addTab(page, name)
        self.figure_tabs = QTabWidget()
        self.figure_tabs.setDocumentMode(True)
        self.tabs.addTab(self.figure_tabs, "Figures")
        self.summary = QPlainTextEdit(readOnly=True)
        self.summary.setPlaceholderText("Computing…")
        self.tabs.addTab(self.summary, "Report text")
        self.export = QPushButton("Write report folder…")
        self.export.setToolTip("report.md, stats.json and every figure as PNG")
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

    def show_report(
        self,
        report: dict,
        figures: dict | None = None,
        dashboard: Dashboard | None = None,
        inline: dict | None = None,
    ) -> None:
        """Show a computed report (tables without label counts, and figures, built here when
        not given)."""
        if dashboard is None:
            dashboard = build_dashboard(report)
        if figures is None:
            figures, inline = _draw(report, dashboard)
        inline = inline or {}
        self.report, self.dashboard = report, dashboard
        d = dashboard
        self.sections = {
            "overview": _section(d.overview),
            "judge_runs": _section(d.judge_runs),
            "judge_vs_annotators": _section(d.judge_vs_annotators),
            "categories": _section(d.categories),
            "annotators": _section(d.annotators),
            "annotator_pairs": _section(d.annotator_pairs),
            "calibration": _section(d.calibration),
            "reliability": _section(d.reliability),
        }
        if d.score_as is not None:
            self.sections["score_as"] = _section(d.score_as)
        s = self.sections
        overview: list[QWidget] = []
        if d.missing:
            overview.append(empty_state("Not shown yet:\n" + "\n".join(f"• {m}" for m in d.missing)))
        self.inline_charts = {tab: ChartView(figure, INLINE[tab]) for tab, figure in inline.items()}
        charts = self.inline_charts
        self.pages["Overview"].fill([*overview, s["overview"]], charts.get("Overview"))
        calibration = [s["calibration"]] + ([s["reliability"]] if d.reliability.rows else [])
        self.pages["Judge runs"].fill(
            [s["judge_runs"], *([s["score_as"]] if "score_as" in s else []), s["judge_vs_annotators"], *calibration],
            charts.get("Judge runs"),
        )
        self.pages["Categories"].fill([s["categories"]], charts.get("Categories"))
        ranking = {f"rankings_{i}": _section(t) for i, t in enumerate(rankings_tables(report))}
        self.sections.update(ranking)
        self.pages["Annotators"].fill(
            [s["annotators"], s["annotator_pairs"], *ranking.values()], charts.get("Annotators")
        )
        if isinstance(report.get("team"), list):  # items were assigned: the lead's report (TEAMWORK.md)
            from .assign_dialog import team_table

            if "Team" not in self.pages:
                self.pages["Team"] = _Page()
                self.tabs.insertTab(self.tabs.indexOf(self.figure_tabs), self.pages["Team"], "Team")
            columns, rows = team_table(report["team"])
            self.sections["team"] = StatSection("Per annotator", columns, rows, "No annotator has labels yet.")
            self.pages["Team"].fill([self.sections["team"]])
        self.figure_tabs.clear()
        self.charts, self.figure_empty = {}, {}
        for entry in d.figures:
            if entry.empty or entry.name not in figures:
                self.figure_empty[entry.name] = entry.empty
                page = _Page()
                page.fill([empty_state(entry.empty or "Nothing to draw.")])
                self.figure_tabs.addTab(page, entry.title)
            else:
                chart = ChartView(figures[entry.name], entry.name)
                self.charts[entry.name] = chart
                self.figure_tabs.addTab(chart, entry.title)
        self.summary.setPlainText(summary_text(report))
        runs = len(report["judges"])
        annotators = len(report.get("annotator_accuracy") or {})
        self.status.setText(
            f"{report['items']} items, {annotators} annotator{'' if annotators == 1 else 's'} with labels,"
            f" {runs} judge run{'' if runs == 1 else 's'}"
        )
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
