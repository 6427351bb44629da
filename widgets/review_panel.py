"""The review panel: every human label and every judge verdict of an item, with the sentence
that decided each verdict highlighted. Plain text only: labels and model output are untrusted."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

HIGHLIGHT = QColor("#ffe08a")


class ReviewPanel(QWidget):
    """Shows what everyone said about the item; ``show_review`` takes plain data (the
    ``LabelLine``/``VerdictLine`` records of ``pairscope.app.judge.review``, duck-typed)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.mode = QLabel()
        self.mode.setTextFormat(Qt.TextFormat.PlainText)
        self.mode.setStyleSheet("font-weight: bold; color: #8a3ffc;")
        self.text = QPlainTextEdit(readOnly=True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        layout = QVBoxLayout(self)
        layout.addWidget(self.mode)
        layout.addWidget(self.text, 1)
        self.highlighted: list[str] = []

    def set_mode(self, text: str) -> None:
        self.mode.setText(text)

    def show_review(self, reference: str, labels: Sequence, verdicts: Sequence) -> None:
        """Render the labels, then the verdicts with their deciding sentence highlighted."""
        self.text.clear()
        self.highlighted = []
        cursor = self.text.textCursor()
        bold = QTextCharFormat()
        bold.setFontWeight(QFont.Weight.Bold)
        plain = QTextCharFormat()
        mark = QTextCharFormat()
        mark.setBackground(HIGHLIGHT)
        cursor.insertText(f"Dataset reference: {reference}\n\n", bold)
        cursor.insertText("Human labels\n", bold)
        if not labels:
            cursor.insertText("  none yet\n", plain)
        for line in labels:
            who = f"{line.annotator} (adjudication)" if line.kind == "adjudication" else line.annotator
            note = f" — {line.note}" if line.note else ""
            cursor.insertText(f"  {who}: {line.summary or '—'}{note}\n", plain)
        cursor.insertText("\nJudge verdicts\n", bold)
        if not verdicts:
            cursor.insertText("  not judged\n", plain)
        for v in verdicts:
            cursor.insertText(f"  run {v.run_id}, sample {v.sample + 1} (shown {v.order}): {v.choice}\n", bold)
            text = v.text.strip("\n")
            if v.decisive is not None and v.text:
                start, end = v.decisive
                cursor.insertText("    " + v.text[:start], plain)
                cursor.insertText(v.text[start:end], mark)
                cursor.insertText(v.text[end:].rstrip("\n") + "\n", plain)
                self.highlighted.append(v.text[start:end])
            else:
                cursor.insertText(f"    {text}\n" if text else "    (no output)\n", plain)
        self.text.moveCursor(QTextCursor.MoveOperation.Start)
