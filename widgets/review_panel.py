"""The review panel: every human label and every judge verdict of an item, with the sentence
that decided each verdict highlighted. Plain text only: labels and model output are untrusted."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from .plain_text import plain_label, tooltip
from .render_budget import TOTAL_LIMIT, excerpt, plan_plain

HIGHLIGHT = QColor("#ffe08a")
#: Background of the right/wrong cell of the per-run table.
OUTCOME_COLOURS = {"right": QColor("#d6f0d0"), "wrong": QColor("#f7d4d4"), "undecided": QColor("#fff1c2")}
RUN_COLUMNS = ("Judge", "Verdict", "Votes", "vs dataset")
#: Longest note of a label shown (notes come from packs and journals too: untrusted).
NOTE_LIMIT = 2_000
#: Longest reason of the reference shown (a dataset's text: untrusted).
RATIONALE_LIMIT = 4_000


class ReviewPanel(QWidget):
    """Shows what everyone said about the item; ``show_review`` takes plain data (the
    ``LabelLine``/``VerdictLine`` records of ``pairscope.app.judge.review``, duck-typed)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.mode = plain_label()
        self.mode.setStyleSheet("font-weight: bold; color: #8a3ffc;")
        self.text = QPlainTextEdit(readOnly=True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.runs = QTableWidget(0, len(RUN_COLUMNS))  # every judge's verdict side by side
        self.runs.setHorizontalHeaderLabels(RUN_COLUMNS)
        self.runs.verticalHeader().hide()
        self.runs.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.runs.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.runs.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.runs.setWordWrap(False)
        header = self.runs.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in range(1, len(RUN_COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.runs.hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.mode)
        layout.addWidget(self.runs)
        layout.addWidget(self.text, 1)
        self.highlighted: list[str] = []

    def set_mode(self, text: str) -> None:
        self.mode.setText(text)

    def show_runs(self, runs: Sequence) -> None:
        """One row per judge (``RunVerdictLine``-like: label, verdict, votes, outcome); hidden
        without rows."""
        self.runs.setRowCount(len(runs))
        for row, line in enumerate(runs):
            for column, text in enumerate((line.label, line.verdict, line.votes, line.outcome)):
                cell = QTableWidgetItem(text)  # plain text: a model name is never markup
                cell.setToolTip(tooltip(text))  # Qt renders a tooltip as HTML when it looks like it
                if column == 3 and text in OUTCOME_COLOURS:
                    cell.setBackground(OUTCOME_COLOURS[text])
                self.runs.setItem(row, column, cell)
        self.runs.setVisible(bool(runs))
        if runs:
            height = self.runs.horizontalHeader().height() + 2 * self.runs.frameWidth()
            height += sum(self.runs.rowHeight(r) for r in range(len(runs)))
            self.runs.setFixedHeight(min(height, 220))

    def run_rows(self) -> list[tuple[str, ...]]:
        """The per-run table as text (for tests and copying)."""
        cells = [[self.runs.item(r, c) for c in range(self.runs.columnCount())] for r in range(self.runs.rowCount())]
        return [tuple(cell.text() if cell is not None else "" for cell in row) for row in cells]

    def show_review(
        self,
        reference: str,
        labels: Sequence,
        verdicts: Sequence,
        runs: Sequence = (),
        rationale: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Render the per-run table, the reference (with its ``rationale``, ``(response,
        reason)`` pairs, when the dataset gives one), the labels, then the verdicts with their
        deciding sentence highlighted. Bounded like a response (widgets/render_budget.py): the
        verdicts share :data:`~.render_budget.TOTAL_LIMIT` characters, each keeps its deciding
        sentence in view."""
        self.show_runs(runs)
        self.text.clear()
        self.highlighted = []
        cursor = self.text.textCursor()
        bold = QTextCharFormat()
        bold.setFontWeight(QFont.Weight.Bold)
        plain = QTextCharFormat()
        mark = QTextCharFormat()
        mark.setBackground(HIGHLIGHT)
        cursor.insertText(f"Dataset reference: {reference}\n\n", bold)
        if rationale:
            cursor.insertText("Reference's rationale\n", bold)
            for who, why in rationale:
                cursor.insertText(f"  {who}: {plan_plain(why, RATIONALE_LIMIT).text}\n", plain)
            cursor.insertText("\n", plain)
        cursor.insertText("Human labels\n", bold)
        if not labels:
            cursor.insertText("  none yet\n", plain)
        for line in labels:
            who = f"{line.annotator} (adjudication)" if line.kind == "adjudication" else line.annotator
            note = f" — {plan_plain(line.note, NOTE_LIMIT).text}" if line.note else ""
            cursor.insertText(f"  {who}: {line.summary or '—'}{note}\n", plain)
        cursor.insertText("\nJudge verdicts\n", bold)
        if not verdicts:
            cursor.insertText("  not judged\n", plain)
        share = max(2_000, TOTAL_LIMIT // max(1, len(verdicts)))
        for v in verdicts:
            cursor.insertText(f"  run {v.run_id}, sample {v.sample + 1} (shown {v.order}): {v.choice}\n", bold)
            shown, decisive = excerpt(v.text, v.decisive if v.text else None, share)
            text = shown.strip("\n")
            if decisive is not None:
                start, end = decisive
                cursor.insertText("    " + shown[:start], plain)
                cursor.insertText(shown[start:end], mark)
                cursor.insertText(shown[end:].rstrip("\n") + "\n", plain)
                self.highlighted.append(shown[start:end])
            else:
                cursor.insertText(f"    {text}\n" if text else "    (no output)\n", plain)
        self.text.moveCursor(QTextCursor.MoveOperation.Start)
