"""Statistics tables: plain rows in, a sortable, copyable table out.

A table is given as ``columns`` — ``(name, numeric, help)`` tuples (``help`` becomes the header
tooltip) — and ``rows`` of cells, each ``(text, sort_key)``: the text shown and the value a
click on the header sorts by (``None`` = no value, sorted first). Numeric columns are
right-aligned. Ctrl+C copies the selected cells, the "Copy table" button the whole table, as
tab-separated text (pastes into a spreadsheet). A section with no rows shows its ``empty``
text — what is missing and how to get it — instead of an empty grid.

Every text is shown as plain text (table cells are never rich text; labels are
:func:`plain_label`), so category and annotator names from a dataset stay inert.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from .plain_text import plain_label

SORT_ROLE = Qt.ItemDataRole.UserRole
MAX_VISIBLE_ROWS = 14  # a longer table scrolls inside its own frame


def _cell(value: Any) -> tuple[str, Any]:
    """``(text, sort_key)`` of a cell given as such a pair, a number, a string or None."""
    if isinstance(value, tuple) and len(value) == 2:
        return str(value[0]), value[1]
    if value is None:
        return "", None
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value), value
    return str(value), str(value)


def _column(value: Any) -> tuple[str, bool, str]:
    if isinstance(value, str):
        return value, False, ""
    name, numeric, *rest = value
    return str(name), bool(numeric), str(rest[0]) if rest else ""


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, str(value).casefold())


class StatTableModel(QAbstractTableModel):
    """Rows of ``(text, sort_key)`` cells; sorts itself (stable, n/a first)."""

    def __init__(self, columns: Sequence[Any], rows: Sequence[Sequence[Any]], parent=None):
        super().__init__(parent)
        self.columns = [_column(c) for c in columns]
        self.rows = [[_cell(c) for c in row] for row in rows]
        self._given = list(self.rows)  # the order the rows came in (no sort column)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if column >= len(self.rows[row]):
            return None
        text, key = self.rows[row][column]
        if role == Qt.ItemDataRole.DisplayRole:
            return text
        if role == SORT_ROLE:
            return key
        if role == Qt.ItemDataRole.TextAlignmentRole:
            horizontal = Qt.AlignmentFlag.AlignRight if self.columns[column][1] else Qt.AlignmentFlag.AlignLeft
            return int(horizontal | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal or section >= len(self.columns):
            return None
        name, numeric, help_text = self.columns[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return name
        if role == Qt.ItemDataRole.ToolTipRole:
            return help_text or None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            horizontal = Qt.AlignmentFlag.AlignRight if numeric else Qt.AlignmentFlag.AlignLeft
            return int(horizontal | Qt.AlignmentFlag.AlignVCenter)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self.rows = list(self._given)
        if column >= 0:
            self.rows.sort(
                key=lambda row: _sort_key(row[column][1] if column < len(row) else None),
                reverse=order == Qt.SortOrder.DescendingOrder,
            )
        self.layoutChanged.emit()

    def text(self, row: int, column: int) -> str:
        return self.rows[row][column][0]

    def as_tsv(self, rows: Sequence[int] | None = None, columns: Sequence[int] | None = None) -> str:
        """The table (or the given rows and columns), header first, tab-separated."""
        rows = range(len(self.rows)) if rows is None else rows
        columns = range(len(self.columns)) if columns is None else columns
        lines = ["\t".join(self.columns[c][0].replace("\n", " ") for c in columns)]
        lines += ["\t".join(self.rows[r][c][0] if c < len(self.rows[r]) else "" for c in columns) for r in rows]
        return "\n".join(lines)


class StatTableView(QTableView):
    """A read-only, sortable table of a :class:`StatTableModel`; Ctrl+C copies the selection."""

    def __init__(self, columns: Sequence[Any], rows: Sequence[Sequence[Any]], parent=None):
        super().__init__(parent)
        self.stat_model = StatTableModel(columns, rows, self)
        self.setModel(self.stat_model)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        vertical = self.verticalHeader()
        vertical.setVisible(False)
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vertical.setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        header.setSortIndicatorShown(True)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the given order until a click
        self.setSortingEnabled(True)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self._fit_height()

    def _fit_height(self) -> None:
        """As tall as its rows (up to MAX_VISIBLE_ROWS, then it scrolls) and no wider than its
        columns, so a page of tables reads top to bottom without empty grid around them."""
        self.resizeColumnsToContents()
        header = self.horizontalHeader()
        rows = min(self.model().rowCount(), MAX_VISIBLE_ROWS)
        frame = 2 * self.frameWidth()
        height = header.sizeHint().height() + rows * self.verticalHeader().defaultSectionSize() + frame
        scrollbar = self.verticalScrollBar().sizeHint().width() if self.model().rowCount() > rows else 0
        self._content_width = header.length() + frame + scrollbar
        self._content_height = height
        self.setMaximumWidth(self._content_width + 2)
        self.setFixedHeight(height)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        """Room for the horizontal scroll bar only while the columns are wider than the table."""
        super().resizeEvent(event)
        bar = self.horizontalScrollBar().sizeHint().height() if self.width() < self._content_width else 0
        if self.height() != self._content_height + bar:
            self.setFixedHeight(self._content_height + bar)

    def selected_tsv(self) -> str:
        """The selected cells (their bounding rows and columns) as tab-separated text."""
        indexes = self.selectionModel().selectedIndexes()
        if not indexes:
            return ""
        rows = sorted({i.row() for i in indexes})
        columns = sorted({i.column() for i in indexes})
        return self.stat_model.as_tsv(rows, columns)

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if event.matches(QKeySequence.StandardKey.Copy):
            text = self.selected_tsv()
            if text:
                QGuiApplication.clipboard().setText(text)
            event.accept()
            return
        super().keyPressEvent(event)


def empty_state(text: str, parent: QWidget | None = None) -> QWidget:
    """A framed note saying what is missing (instead of an empty table or plot)."""
    frame = QFrame(parent)
    frame.setObjectName("empty-state")
    frame.setFrameShape(QFrame.Shape.StyledPanel)
    frame.setStyleSheet("QFrame#empty-state { background: palette(alternate-base); border-radius: 4px; }")
    label = plain_label(text, frame, word_wrap=True)
    label.setObjectName("empty-state-text")
    label.setStyleSheet("color: palette(placeholder-text); padding: 10px;")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(label)
    return frame


class StatSection(QWidget):
    """A titled table with a one-line note and a "Copy table" button, or its empty state."""

    def __init__(
        self,
        title: str,
        columns: Sequence[Any],
        rows: Sequence[Sequence[Any]],
        empty: str = "",
        note: str = "",
        parent=None,
    ):
        super().__init__(parent)
        self.setObjectName("stat-section")
        self.title = plain_label(title)
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        self.note = plain_label(note)  # one line: a wrapped label makes a scroll page size to its hints
        self.note.setStyleSheet("color: palette(placeholder-text);")
        self.table: StatTableView | None = None
        self.empty: QWidget | None = None
        self.copy = QPushButton("Copy table")
        self.copy.setToolTip("Copy the whole table as tab-separated text")
        head = QHBoxLayout()
        head.addWidget(self.title)
        head.addStretch(1)
        head.addWidget(self.copy)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 10)
        layout.addLayout(head)
        if note:
            layout.addWidget(self.note)
        else:
            self.note.hide()
        if rows:
            self.table = StatTableView(columns, rows, self)
            layout.addWidget(self.table)
            self.copy.clicked.connect(self.copy_all)
        else:
            self.empty = empty_state(empty or "Nothing to show.", self)
            layout.addWidget(self.empty)
            self.copy.hide()

    def empty_text(self) -> str:
        """The empty state's text ("" when the section has a table)."""
        if self.empty is None:
            return ""
        label = self.empty.findChild(QLabel, "empty-state-text")
        return label.text() if label is not None else ""

    def as_tsv(self) -> str:
        return self.table.stat_model.as_tsv() if self.table is not None else ""

    def copy_all(self) -> None:
        QGuiApplication.clipboard().setText(self.as_tsv())
