"""The project's labeling guidelines: Markdown written by whoever set up the project.

Shown exactly as responses are (``response_view``): Markdown without HTML (a ``<img …>`` or
``<script>`` line is shown as text), no resource ever loaded (``SafeTextBrowser``), images
replaced by their alt text, links never followed, and the text bounded by the render budget.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from .plain_text import LINE_LIMIT, bounded, plain_label
from .render_budget import plan_body
from .response_view import SafeTextBrowser, render_plan

EMPTY = (
    "This project has no labeling guidelines yet.\n\n"
    "Write them in Markdown and store them with the label schema:\n"
    "pairscope schema --db PROJECT set SCHEMA.toml --guidelines GUIDELINES.md"
)


class GuidelinesPanel(QWidget):
    """A read-only view of the guidelines of one label schema version."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.title: QLabel = plain_label(word_wrap=True)
        self.title.setStyleSheet("font-weight: bold;")
        self.body = SafeTextBrowser()
        self.note = plain_label(word_wrap=True)
        self.note.setStyleSheet("color: #6b7280;")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 6)
        layout.addWidget(self.title)
        layout.addWidget(self.body, 1)
        layout.addWidget(self.note)
        self.set_guidelines("")

    def set_guidelines(self, markdown: str, title: str = "", version: int | None = None) -> None:
        """Show ``markdown`` (untrusted) with a heading naming the schema and its version."""
        heading = bounded(title, LINE_LIMIT) or "Labeling guidelines"
        self.title.setText(heading + (f"  ·  label schema version {version}" if version is not None else ""))
        doc = self.body.document()
        doc.setPlainText("")
        if not markdown.strip():
            doc.setPlainText(EMPTY)
            self.note.hide()
            return
        plan = plan_body(markdown, True)
        render_plan(doc, plan)
        self.note.setText(plan.note)
        self.note.setVisible(bool(plan.note))

    def text(self) -> str:
        """The text as shown (for tests)."""
        return self.body.toPlainText()
