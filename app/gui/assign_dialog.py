"""File → Assign… and File → Team report…: the lead's two team tools in the window.

Assign runs :func:`..curation.assign.assign_project` (the function ``pairscope assign`` runs)
in a background op with its own store connection: annotators, overlap ``K``, strategy, gold
share, seed, the items (every item or a collection) and the folder the packs go to; the
result lists each annotator's new items and pack. Team report shows
:func:`..stats.team_report.team_report` (``pairscope team-report``) as a table, computed off the
GUI thread, with the flags' thresholds stated under it (docs/TEAMWORK.md)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from pairscope.widgets.plain_text import inert_html, plain_label
from pairscope.widgets.stat_tables import StatSection

from ..curation.assign import STRATEGIES, AssignResult, assign_project, parse_annotators
from ..stats.team_report import (
    GOLD_THRESHOLD,
    MIN_POSITION,
    MIN_TIMED,
    TOO_FAST_S,
    AnnotatorRow,
    report_lines,
    team_report,
)
from .controller import AnnotationController
from .tasks import BackgroundOp, Task, error_message, own_store

ALL_ITEMS = "Every item"
STRATEGY_TEXT = {
    "balanced": "Balanced: even load, items spread over annotators",
    "random": "Random (seeded)",
    "stratified-by-category": "Stratified by category",
    "least-labeled": "Least-labeled items first",
}


class AssignDialog(QDialog):
    """Plan one round of assignments with overlap and write one pack per annotator."""

    def __init__(self, controller: AnnotationController, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Assign items to annotators")
        self.setMinimumWidth(640)  # the packs' paths fit on a line
        self.controller = controller
        store = controller.store
        self.annotators = QLineEdit(", ".join(store.annotators()), placeholderText="ana, ben, chen")
        self.overlap = QSpinBox(minimum=1, maximum=20, value=2)
        self.overlap.setToolTip("How many annotators label each item (K)")
        self.strategy = QComboBox()
        for name in STRATEGIES:
            self.strategy.addItem(STRATEGY_TEXT.get(name, name), name)
        self.items = QComboBox()
        self.items.addItem(ALL_ITEMS, None)
        for name in store.collections():
            self.items.addItem(f"Collection: {name}", name)
        self.gold_share = QDoubleSpinBox(minimum=0.0, maximum=50.0, singleStep=5.0, decimals=0, suffix=" %")
        self.gold_share.setToolTip("Share of each annotator's items drawn from the gold items (pairscope gold)")
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1, value=0)
        self.folder = QLineEdit(placeholderText="the folder for one pack per annotator")
        browse = QToolButton()
        browse.setText("…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        self.explain = plain_label(word_wrap=True)
        self.progress = QProgressBar(textVisible=False)
        self.progress.hide()
        self.status = plain_label(word_wrap=True)  # quotes paths and error messages
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setMinimumHeight(120)
        self.details.hide()
        outer = QVBoxLayout(self)
        form = QFormLayout()
        outer.addLayout(form)
        form.addRow("Annotators", self.annotators)
        form.addRow("Overlap (K)", self.overlap)
        form.addRow("Strategy", self.strategy)
        form.addRow("Items", self.items)
        form.addRow("Gold share", self.gold_share)
        form.addRow("Seed", self.seed)
        form.addRow("Packs folder", row)
        outer.addWidget(self.explain)
        outer.addWidget(self.progress)
        outer.addWidget(self.status)
        outer.addWidget(self.details, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Assign")
        self.buttons.accepted.connect(self.run)
        self.buttons.rejected.connect(self.reject)
        outer.addWidget(self.buttons)
        for signal in (self.annotators.textChanged, self.overlap.valueChanged, self.gold_share.valueChanged):
            signal.connect(self._explain)
        self._explain()
        self.assigned: AssignResult | None = None  # not .result: QDialog.result() is the exit code
        self.result_text = ""
        self._op: BackgroundOp | None = None

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Write the packs into", str(self.controller.path.parent))
        if folder:
            self.folder.setText(folder)

    def _explain(self, *_args) -> None:
        """Say what the round will do before it runs."""
        try:
            names = parse_annotators(self.annotators.text())
        except ValueError:
            self.explain.setText("Name the annotators, separated by commas.")
            return
        k = self.overlap.value()
        gold = self.gold_share.value()
        gold_text = f" {gold:.0f}% of each annotator's items are gold items." if gold else ""
        self.explain.setText(
            f"Each item not yet assigned goes to {k} of {len(names)} annotators; items already held"
            f" are never reissued.{gold_text} One pack per annotator is written into the folder."
        )

    @property
    def running(self) -> bool:
        return self._op is not None and self._op.running

    def run(self) -> None:
        """Start the round (a folder holding packs of these names is replaced only if the user says so)."""
        if self.running:
            return
        try:
            names = parse_annotators(self.annotators.text())
        except ValueError as exc:
            self.status.setText(str(exc).replace("--annotators: ", "Annotators: "))
            return
        if not self.folder.text().strip():
            QMessageBox.warning(self, "Assign", "Choose a folder for the packs.")
            return
        out = Path(self.folder.text().strip())
        force = False
        existing = [out / f"{name}.pairscope" for name in names if (out / f"{name}.pairscope").exists()]
        if existing:
            listed = ", ".join(p.name for p in existing)
            answer = QMessageBox.question(self, "Assign", inert_html(f"{listed} already exist in {out}. Replace them?"))
            if answer != QMessageBox.StandardButton.Yes:
                return
            force = True
        project = self.controller.store.path
        overlap, strategy = self.overlap.value(), self.strategy.currentData()
        collection, share, seed = self.items.currentData(), self.gold_share.value() / 100, self.seed.value()

        def assign(task: Task) -> AssignResult:
            with own_store(project) as store:  # never the window's connection
                task.check()
                return assign_project(
                    store,
                    names,
                    overlap,
                    out,
                    strategy=strategy,
                    seed=seed,
                    collection=collection,
                    gold_share=share,
                    force=force,
                )

        self._set_running(True)
        self.status.setText("")
        self.details.hide()
        self._op = (
            BackgroundOp(self, assign, title="Assign")
            .with_progress("Assigning and packing…", bar=self.progress)
            .success(self._done)
            .failure(self._failed)
            .run()
        )

    def _set_running(self, running: bool) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not running)
        for widget in (self.annotators, self.overlap, self.strategy, self.items, self.gold_share, self.seed):
            widget.setEnabled(not running)
        self.folder.setEnabled(not running)
        self.progress.setVisible(running)

    def _done(self, result: AssignResult) -> None:
        self._set_running(False)
        self.assigned = result
        self.result_text = "\n".join(result.lines())
        total = sum(result.new.values()) + sum(result.gold.values())
        self.status.setText(f"Assigned {total} items in round {result.batch}; {len(result.packs)} packs written.")
        self.details.setPlainText(self.result_text)
        self.details.show()

    def _failed(self, exc: BaseException) -> None:
        self._set_running(False)
        self.status.setText(f"Nothing assigned: {error_message(exc)}")

    def reject(self) -> None:
        """Close, unless a round is being written (it is not cancelled half-way)."""
        if self.running:
            self.status.setText("Assigning… the round finishes before the dialog closes.")
            return
        super().reject()


def team_table(rows: list[AnnotatorRow]) -> tuple[list[str], list[list[object]]]:
    """The team report as table columns and rows (the figures ``team-report`` prints)."""

    def pct(x: float | None) -> object:
        return "—" if x is None else f"{100 * x:.0f}%"

    def secs(x: float | None) -> object:
        return "—" if x is None else f"{x:.1f}"

    columns = [
        "Annotator",
        "Done / assigned",
        "Gold correct",
        "Gold accuracy [95% CI]",
        "Mean κ",
        "First shown picked",
        "Active s/item: median",
        "Quartiles",
        "Timed",
        "Flags",
    ]
    table = []
    for r in rows:
        ci = f" [{pct(r.gold_ci[0])}, {pct(r.gold_ci[1])}]" if r.gold_ci else ""
        table.append(
            [
                r.annotator,
                f"{r.done} / {r.assigned}",
                f"{r.gold_correct} / {r.gold_labeled}",
                f"{pct(r.gold_accuracy)}{ci}",
                "—" if r.kappa_mean is None else f"{r.kappa_mean:.2f}",
                f"{pct(r.first_shown_share)} of {r.first_shown_n}" if r.first_shown_n else "—",
                secs(r.seconds_median),
                f"{secs(r.seconds_q1)} – {secs(r.seconds_q3)}" if r.seconds_n else "—",
                r.seconds_n,
                ", ".join(r.flags) or "—",
            ]
        )
    return columns, table


class TeamReportDialog(QDialog):
    """The lead's report after a merge (``pairscope team-report``), computed off the GUI thread."""

    def __init__(self, controller: AnnotationController, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Team report")
        self.resize(1320, 300)
        self.rows: list[AnnotatorRow] | None = None
        self.layout_ = QVBoxLayout(self)
        self.status = plain_label("Computing…", word_wrap=True)
        self.layout_.addWidget(self.status)
        self.section: StatSection | None = None
        self.text = QPlainTextEdit(readOnly=True)
        self.text.hide()
        project, readonly = controller.store.path, controller.store.readonly

        def compute(task: Task) -> list[AnnotatorRow]:
            with own_store(project, readonly) as store:
                task.check()
                return team_report(store)

        self._op = (
            BackgroundOp(self, compute, title="Team report")
            .success(self._show)
            .failure(lambda exc: self.status.setText(f"Could not compute: {error_message(exc)}"))
            .run()
        )

    def _show(self, rows: list[AnnotatorRow]) -> None:
        self.rows = rows
        columns, table = team_table(rows)
        note = (
            f"Flags: fails gold (CI upper bound < {100 * GOLD_THRESHOLD:.0f}%), position bias (p < 0.05 over"
            f" ≥ {MIN_POSITION} preferences),"
            f" too fast (median active time < {TOO_FAST_S:g} s over ≥ {MIN_TIMED} timed labels)."
        )
        self.section = StatSection(
            "Per annotator", columns, table, "No annotator has assignments or labels yet.", note, parent=self
        )
        self.layout_.insertWidget(1, self.section)
        self.layout_.addStretch(1)
        self.status.setText(f"{len(rows)} annotator{'' if len(rows) == 1 else 's'}.")
        self.text.setPlainText("\n".join(report_lines(rows)))


__all__ = ["AssignDialog", "TeamReportDialog", "team_table"]
