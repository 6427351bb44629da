"""The item table: a lazily paged list of items (id, category, media, responses, prompt)."""

from __future__ import annotations

from typing import Callable, Sequence

from pairscope.app.records import ItemSummary
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

PageSource = Callable[[int, int], Sequence[ItemSummary]]

COLUMNS = ("ID", "Category", "Media", "Responses", "Prompt")


class ItemTableModel(QAbstractTableModel):
    """Rows come from ``page_source(offset, limit)`` a page at a time, as the view scrolls."""

    PAGE = 500

    def __init__(self, total: int, page_source: PageSource, parent=None):
        super().__init__(parent)
        self._total = total
        self._source = page_source
        self._rows: list[ItemSummary] = []

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def canFetchMore(self, parent=QModelIndex()) -> bool:  # noqa: N802
        return not parent.isValid() and len(self._rows) < self._total

    def fetchMore(self, parent=QModelIndex()) -> None:  # noqa: N802
        page = list(self._source(len(self._rows), self.PAGE))
        if not page:
            self._total = len(self._rows)
            return
        self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows) + len(page) - 1)
        self._rows.extend(page)
        self.endInsertRows()

    def summary(self, row: int) -> ItemSummary:
        return self._rows[row]

    def data(self, index: QModelIndex, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        item = self._rows[index.row()]
        if role == Qt.DisplayRole:
            media = item.media_kind if not item.missing_media else f"{item.media_kind} (missing)"
            prompt = " ".join(item.prompt_preview.split())
            return (item.ext_id, item.category, media, item.n_responses, prompt)[index.column()]
        if role == Qt.ToolTipRole and index.column() == 4:
            return item.prompt_preview
        return None

    def headerData(self, section: int, orientation, role=Qt.DisplayRole):  # noqa: N802
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            return COLUMNS[section]
        return None


class ItemTable(QTableView):
    """A read-only table of items; emits ``item_selected(item_id)``."""

    item_selected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(24)
        self.setWordWrap(False)

    def set_items(self, total: int, page_source: PageSource) -> None:
        """Show ``total`` items, loading rows through ``page_source`` on demand."""
        model = ItemTableModel(total, page_source, self)
        if model.canFetchMore():
            model.fetchMore()  # the first page at once; the rest as the view scrolls
        self.setModel(model)
        header = self.horizontalHeader()
        for column, mode in enumerate((QHeaderView.ResizeToContents,) * 4 + (QHeaderView.Stretch,)):
            header.setSectionResizeMode(column, mode)
        self.selectionModel().currentRowChanged.connect(self._on_row)

    def _on_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.item_selected.emit(self.model().summary(current.row()).id)
