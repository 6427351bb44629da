"""The "Suspect references…" dialog (Review menu): the items whose dataset reference the
evidence says is probably wrong, most suspect first, with the evidence of the selected one,
and "Reference is wrong" / "Reference is right", stored as an audited review (who: the
window's annotator, when, why: the reason typed). Each run's accuracy with and without the
suspects is shown below the queue.

The score and the figures are :mod:`pairscope.app.stats.suspects`'s; the review is written by
:mod:`pairscope.app.store.references`; this module only lays them out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from pairscope.widgets.plain_text import plain_label
from pairscope.widgets.stat_tables import StatSection

from ..project import open_project
from ..stats.suspects import Suspect, SuspectReport, load_suspects
from ..stats.suspects_report import accuracy_under_label_noise, evidence_line
from ..store import StoreError
from ..store.references import ReferenceReview, add_reference_review
from .tasks import BackgroundOp, Task, error_message

if TYPE_CHECKING:
    from .controller import AnnotationController

COLUMNS = ("#", "Item", "Score", "Reference", "Likely", "Against", "Status")
STATUS = {"open": "open", "wrong": "reference wrong", "confirmed": "reference confirmed", "adjudicated": "adjudicated"}


def _read(path, task: Task) -> SuspectReport:
    """Fit the model off the GUI thread (EM over every item with a reference), reading the
    project through a read-only connection of its own (never the window's)."""
    with open_project(path, readonly=True) as store:
        report = load_suspects(store)
    task.check()
    return report


def _pct(x: float | None) -> tuple[str, float | None]:
    return ("n/a", None) if x is None else (f"{100 * x:.1f}%", x)


class SuspectsDialog(QDialog):
    """The suspect queue, the evidence of the selected item and the review buttons.
    ``reviewed`` (item id) is emitted after a review is stored."""

    reviewed = Signal(int)

    def __init__(self, controller: AnnotationController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.setWindowTitle("Suspect references — is the dataset's reference wrong?")
        self.report: SuspectReport | None = None
        self.shown: list[Suspect] = []
        self._op: BackgroundOp | None = None
        self.summary = plain_label("Reading the evidence…")
        self.hide_reviewed = QCheckBox("hide items already reviewed")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.setToolTip(
            "Score: the probability the dataset's reference is wrong (one-coin Dawid–Skene over the judges'"
            " verdicts and the annotators' labels; docs/STATISTICS.md)"
        )
        self.evidence = QListWidget()
        self.evidence.setToolTip("Every run's verdict and every annotator's label on the item, and human decisions")
        self.item_text = QPlainTextEdit(readOnly=True)
        self.item_text.setToolTip("The item's prompt and responses (the dataset's reference is marked)")
        self.corrected = QComboBox()
        self.corrected.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.corrected.setMinimumContentsLength(12)
        self.corrected.setToolTip("The response that is in fact better (stored with the review)")
        self.reason = QLineEdit(placeholderText="why (kept with the review), e.g. the image shows two circles")
        self.wrong = QPushButton("Reference is wrong")
        self.wrong.setToolTip("Store that the dataset's reference is wrong: who, when, why (audited, append-only)")
        self.right = QPushButton("Reference is right")
        self.message = plain_label("")
        self.progress = QProgressBar()
        self.progress.hide()
        self.accuracy = QVBoxLayout()
        accuracy = QWidget()
        accuracy.setLayout(self.accuracy)

        upper = QWidget()
        top = QVBoxLayout(upper)
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.table, 3)
        top.addWidget(plain_label("Evidence on the selected item, and the item:"))
        sides = QSplitter(Qt.Orientation.Horizontal)
        sides.addWidget(self.evidence)
        sides.addWidget(self.item_text)
        sides.setStretchFactor(0, 3)
        sides.setStretchFactor(1, 2)
        top.addWidget(sides, 2)
        review = QHBoxLayout()
        review.addWidget(plain_label("Better response:"))
        review.addWidget(self.corrected)
        review.addWidget(self.reason, 1)
        review.addWidget(self.wrong)
        review.addWidget(self.right)
        top.addLayout(review)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(upper)
        split.addWidget(accuracy)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        head = QHBoxLayout()
        head.addWidget(self.summary, 1)
        head.addWidget(self.hide_reviewed)
        layout.addLayout(head)
        layout.addWidget(split, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.message)
        layout.addWidget(buttons)

        self.table.itemSelectionChanged.connect(self._selected)
        self.hide_reviewed.toggled.connect(lambda _on: self._fill())
        self.wrong.clicked.connect(lambda: self.mark("wrong"))
        self.right.clicked.connect(lambda: self.mark("confirmed"))
        self._set_buttons(None)
        self.refresh()

    @property
    def reading(self) -> bool:
        """Whether the model is still being fitted."""
        return self._op is not None and self._op.running

    def refresh(self, keep: int | None = None) -> None:
        """Fit the model again, off the GUI thread; the queue is replaced when done (``keep``:
        the item to select again)."""
        if self._op is not None and self._op.running:
            self._op.cancel()
        path = self.controller.store.path
        self._op = (
            BackgroundOp(self, lambda task: _read(path, task), title="Suspect references")
            .with_progress("Weighing the evidence…", bar=self.progress)
            .success(lambda report: self._show(report, keep))
            .failure(lambda exc: self.summary.setText(f"Could not read the evidence: {error_message(exc)}"))
            .run()
        )

    def _show(self, report: SuspectReport, keep: int | None) -> None:
        self.report = report
        queue = report.queue()
        self.summary.setText(
            f"{len(queue)} of {len(report.items)} items with a reference are contradicted by at least one vote;"
            f" estimated reference accuracy {100 * report.reference_accuracy:.1f}%"
            f" ({len(report.runs)} judge run{'s' if len(report.runs) != 1 else ''},"
            f" {sum(1 for f in report.sources if f.kind == 'annotator')} annotators)."
        )
        self._fill(keep)
        self._accuracy_tables(report)

    def _fill(self, keep: int | None = None) -> None:
        """The queue as the check box asks, the ``keep`` item (else the first) selected."""
        report = self.report
        self.shown = [] if report is None else report.queue(reviewed=not self.hide_reviewed.isChecked())
        self.table.blockSignals(True)
        self.table.setRowCount(len(self.shown))
        for row, s in enumerate(self.shown):
            cells = [
                str(row + 1),
                s.ext_id,
                f"{s.score:.3f}",
                f"response {s.reference}",
                "" if s.alternative is None else f"response {s.alternative}",
                str(len(s.against())),
                STATUS.get(s.status, s.status),
            ]
            for col, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                if col in (0, 2, 5):
                    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, cell)
        self.table.blockSignals(False)
        ids = [s.item_id for s in self.shown]
        if ids:
            first_open = next((row for row, s in enumerate(self.shown) if s.status == "open"), 0)
            self.table.selectRow(ids.index(keep) if keep in ids else first_open)
        self._selected()

    def current(self) -> Suspect | None:
        rows = self.table.selectionModel().selectedRows()
        return self.shown[rows[0].row()] if rows and rows[0].row() < len(self.shown) else None

    def select_item(self, item_id: int) -> bool:
        """Select the item in the queue (False: it is not listed)."""
        for row, s in enumerate(self.shown):
            if s.item_id == item_id:
                self.table.selectRow(row)
                return True
        return False

    def _selected(self) -> None:
        s = self.current()
        self.evidence.clear()
        self.corrected.clear()
        self.item_text.setPlainText(self._item_text(s))
        if s is not None:
            for e in s.evidence:
                mark = "✓" if e.agrees else ("✗" if e.agrees is False else "·")
                self.evidence.addItem(f"{mark} {evidence_line(e)}")
            others = [r for r in range(s.n_responses) if r != s.reference]
            if s.alternative in others:
                others.remove(s.alternative)
                others.insert(0, s.alternative)
            for r in others:
                self.corrected.addItem(f"response {r}", r)
            self.corrected.addItem("none of them", None)
        self._set_buttons(s)

    def _item_text(self, s: Suspect | None) -> str:
        if s is None:
            return ""
        try:
            item = self.controller.store.get_item(s.item_id)
        except KeyError:
            return f"item {s.ext_id} is no longer in the project"
        lines = [f"{item.ext_id} · {item.category}", "", item.prompt, ""]
        for r in item.responses:
            mark = "  ← the dataset's reference" if r.index == s.reference else ""
            lines += [f"response {r.index}{mark}:", r.text, ""]
        return "\n".join(lines)

    def _set_buttons(self, s: Suspect | None) -> None:
        for button in (self.wrong, self.right):
            button.setEnabled(s is not None)
        self.corrected.setEnabled(s is not None)

    def mark(self, verdict: str) -> ReferenceReview | None:
        """Store the review of the selected item (``wrong`` with the chosen better response, or
        ``confirmed``) under the window's annotator; the message says what was stored."""
        s = self.current()
        if s is None:
            return None
        corrected = self.corrected.currentData() if verdict == "wrong" else None
        review = ReferenceReview(s.item_id, self.controller.annotator, verdict, corrected, self.reason.text())
        try:
            stored = add_reference_review(self.controller.store, review)
        except (ValueError, KeyError, StoreError) as exc:  # e.g. a read-only or busy project
            self.message.setText(f"Not stored: {error_message(exc)}")
            return None
        what = "wrong" if verdict == "wrong" else "right"
        better = f"; better: response {corrected}" if corrected is not None else ""
        when = (stored.created_at or "")[:19]
        self.message.setText(f"Stored: the reference of {s.ext_id} is {what}{better} — {stored.reviewer}, {when}")
        self.reason.clear()
        self.reviewed.emit(s.item_id)
        self.refresh(keep=s.item_id)
        return stored

    def _accuracy_tables(self, report: SuspectReport) -> None:
        while self.accuracy.count():
            taken = self.accuracy.takeAt(0)
            widget = taken.widget() if taken is not None else None
            if widget is not None:
                widget.deleteLater()
        rows = []
        for a in accuracy_under_label_noise(report):
            cells = [a.all, a.confirmed, a.without_suspects, a.corrected]
            rows.append([a.label, *(_pct(c.accuracy) for c in cells), (str(a.all.decided), a.all.decided)])
        self.accuracy.addWidget(
            StatSection(
                "Accuracy per judge run, with and without the suspects",
                [
                    ("Judge", False, ""),
                    ("all", True, "every decided item, against the dataset's reference"),
                    ("confirmed", True, "items whose reference humans confirmed"),
                    ("no suspects", True, "items scoring below 0.5 (not marked wrong)"),
                    ("corrected", True, "against the reviewers' corrected references"),
                    ("decided", True, "items with a majority verdict"),
                ],
                rows,
                "No judge run votes on preferences yet.",
            )
        )
