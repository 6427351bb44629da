"""The ``?`` cheat sheet: every shortcut, grouped by section."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from .plain_text import plain_label

Entry = tuple[str, Sequence[str], str]  # (section, key sequences, description)


class CheatSheet(QDialog):
    """A read-only table of shortcuts; Esc or ``?`` closes it. ``note`` (plain text) is shown
    above it (e.g. which label schema the keys are of)."""

    def __init__(self, entries: Sequence[Entry], parent=None, *, note: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.table = QTableWidget(0, 3, self)
        self.table.setHorizontalHeaderLabels(["Section", "Keys", "Action"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        previous = None
        for section, keys, description in entries:
            row = self.table.rowCount()
            self.table.insertRow(row)
            cells = (section if section != previous else "", "  or  ".join(keys), description)
            for column, text in enumerate(cells):
                self.table.setItem(row, column, QTableWidgetItem(text))
            previous = section
        # Compact rows, every column readable without scrolling sideways: the dialog is as wide
        # as its columns; only the list scrolls, down.
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setWordWrap(False)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setStretchLastSection(True)
        width = sum(self.table.columnWidth(c) for c in range(3)) + self.table.verticalScrollBar().sizeHint().width()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        self.note = plain_label(note, word_wrap=True)
        self.note.setVisible(bool(note))
        layout.addWidget(self.note)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(max(520, width + 40), 720)

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if event.text() == "?":
            self.reject()
            return
        super().keyPressEvent(event)

    def rows(self) -> list[tuple[str, str, str]]:
        """The table's text, for tests."""
        return [(self._text(r, 0), self._text(r, 1), self._text(r, 2)) for r in range(self.table.rowCount())]

    def _text(self, row: int, column: int) -> str:
        item = self.table.item(row, column)
        assert item is not None  # __init__ fills every cell
        return item.text()
