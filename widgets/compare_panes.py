"""Two judges' rationales side by side on one item, the sentence that decided each sample
highlighted, above them the dataset's reference and the human labels. Plain data in (duck-typed
``VerdictLine`` records of ``pairscope.app.judge.review``: ``sample``, ``order``, ``choice``,
``text``, ``decisive``); plain text only — model output and labels are untrusted."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QGridLayout, QPlainTextEdit, QVBoxLayout, QWidget

from .plain_text import plain_label
from .render_budget import TOTAL_LIMIT, excerpt
from .review_panel import HIGHLIGHT

SIDES = ("a", "b")
#: Longest line of the item context (prompt, each response) shown above the rationales.
CONTEXT_LIMIT = 400


class ComparePanes(QWidget):
    """``show_pair`` fills the header and the two panes; ``highlighted[side]`` lists the
    highlighted spans of each pane (for tests and copying)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.header = plain_label("")
        self.header.setStyleSheet("font-weight: bold;")
        self.header.setWordWrap(True)
        self.labels = plain_label("")
        self.labels.setWordWrap(True)
        self.context = QPlainTextEdit(readOnly=True)  # the prompt and the responses, cut short
        self.context.setMaximumHeight(130)
        self.context.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.titles = {side: plain_label("") for side in SIDES}
        self.panes = {side: QPlainTextEdit(readOnly=True) for side in SIDES}
        self.highlighted: dict[str, list[str]] = {side: [] for side in SIDES}
        grid = QGridLayout()
        for column, side in enumerate(SIDES):
            self.titles[side].setWordWrap(True)
            self.titles[side].setStyleSheet("font-weight: bold;")
            self.panes[side].setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
            grid.addWidget(self.titles[side], 0, column)
            grid.addWidget(self.panes[side], 1, column)
        grid.setRowStretch(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.labels)
        layout.addWidget(self.context)
        layout.addLayout(grid, 1)

    def clear(self, message: str = "") -> None:
        self.header.setText(message)
        self.labels.setText("")
        self.context.clear()
        for side in SIDES:
            self.titles[side].setText("")
            self.panes[side].clear()
            self.highlighted[side] = []

    def show_pair(
        self,
        header: str,
        labels: Sequence[str],
        a: tuple[str, Sequence],
        b: tuple[str, Sequence],
        context: Sequence[str] = (),
    ) -> None:
        """``header`` (item, reference, what kind of flip), one line per human label, each
        side's ``(title, verdict lines)`` and ``context`` (the prompt and responses: each line
        cut to :data:`CONTEXT_LIMIT` characters)."""
        self.header.setText(header)
        self.context.setPlainText("\n".join(_cut(line) for line in context))
        self.context.setVisible(bool(context))
        self.labels.setText("Human labels: " + ("; ".join(labels) if labels else "none yet"))
        for side, (title, verdicts) in zip(SIDES, (a, b)):
            self.titles[side].setText(title)
            self.highlighted[side] = _render(self.panes[side], verdicts)

    def text(self, side: str) -> str:
        return self.panes[side].toPlainText()


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CONTEXT_LIMIT else text[: CONTEXT_LIMIT - 1] + "…"


def _render(edit: QPlainTextEdit, verdicts: Sequence) -> list[str]:
    """Each sample's reading, then its output with the deciding span highlighted (bounded as in
    the review panel: the samples share :data:`TOTAL_LIMIT` characters); the spans shown."""
    edit.clear()
    cursor = edit.textCursor()
    bold, plain, mark = QTextCharFormat(), QTextCharFormat(), QTextCharFormat()
    bold.setFontWeight(QFont.Weight.Bold)
    mark.setBackground(HIGHLIGHT)
    spans: list[str] = []
    if not verdicts:
        cursor.insertText("not judged\n", plain)
    share = max(2_000, TOTAL_LIMIT // max(1, 2 * len(verdicts)))
    for v in verdicts:
        cursor.insertText(f"sample {v.sample + 1} (shown {v.order}): {v.choice}\n", bold)
        shown, decisive = excerpt(v.text, v.decisive if v.text else None, share)
        if decisive is not None:
            start, end = decisive
            cursor.insertText(shown[:start], plain)
            cursor.insertText(shown[start:end], mark)
            cursor.insertText(shown[end:].rstrip("\n") + "\n\n", plain)
            spans.append(shown[start:end])
        else:
            text = shown.strip("\n")
            cursor.insertText(f"{text}\n\n" if text else "(no output)\n\n", plain)
    edit.moveCursor(QTextCursor.MoveOperation.Start)
    return spans
