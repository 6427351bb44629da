"""The item table: every item of the project, paged in on demand.

The model knows only the total and a ``page_source(offset, limit)`` callable; rows are
fetched a page at a time when the view paints them, so a 100,000-item project opens as
fast as a 10-item one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import cast

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from pairscope.app.records import TableRow

from .plain_text import tooltip

PageSource = Callable[[int, int], Sequence[TableRow]]

COLUMNS = ("ID", "Category", "Media", "Status", "My label", "Prompt")
#: The order the columns are shown in (model column numbers).
VISUAL_ORDER = (0, 3, 4, 1, 2, 5)
_STATUS_COLOURS = {"labeled": "#1e7b34", "discarded": "#8a6d00", "unlabeled": "#8a8f98"}
# Enum lookups like Qt.DisplayRole cost ~5 µs each in PySide6; data() runs per cell per paint.
_ROLE = Qt.ItemDataRole
_DISPLAY, _FOREGROUND, _TOOLTIP = _ROLE.DisplayRole, _ROLE.ForegroundRole, _ROLE.ToolTipRole
_BRUSHES: dict[str, QBrush] = {}


class ItemTableModel(QAbstractTableModel):
    """A sparse, paged model: ``rowCount`` is the total, pages load as they are painted."""

    PAGE = 200
    MAX_PAGES = 64

    def __init__(self, total: int, page_source: PageSource, parent=None):
        super().__init__(parent)
        self._total = total
        self._source = page_source
        self._pages: OrderedDict[int, list[TableRow]] = OrderedDict()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else self._total

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def row(self, row: int) -> TableRow | None:
        """The row at ``row``, loading its page if needed."""
        if not 0 <= row < self._total:
            return None
        number = row // self.PAGE
        page = self._pages.get(number)
        if page is None:
            page = list(self._source(number * self.PAGE, self.PAGE))
            self._pages[number] = page
            while len(self._pages) > self.MAX_PAGES:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(number)
        offset = row - number * self.PAGE
        return page[offset] if offset < len(page) else None

    def replace_row(self, new: TableRow) -> None:
        """Show a changed row (e.g. after a label was saved) if its page is loaded."""
        for number, page in self._pages.items():
            for offset, table_row in enumerate(page):
                if table_row.summary.id == new.summary.id:
                    page[offset] = new
                    row = number * self.PAGE + offset
                    self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
                    return

    def data(self, index: QModelIndex | QPersistentModelIndex, role=_DISPLAY):
        if role != _DISPLAY and role != _FOREGROUND and role != _TOOLTIP:
            return None
        table_row = self.row(index.row())
        if table_row is None:
            return None
        item, column = table_row.summary, index.column()
        if role == _DISPLAY:
            if column == 0:
                return item.ext_id
            if column == 1:
                return item.category
            if column == 2:
                media = item.media_kind if item.media_kind != "none" else "—"
                return f"{media} (missing)" if item.missing_media else media
            if column == 3:
                return table_row.status
            if column == 4:
                return table_row.own_label
            return " ".join(item.prompt_preview.split())
        if role == _FOREGROUND and column == 3:
            brush = _BRUSHES.get(table_row.status)
            if brush is None:
                brush = _BRUSHES[table_row.status] = QBrush(QColor(_STATUS_COLOURS.get(table_row.status, "#000")))
            return brush
        if role == _TOOLTIP and column == 5:
            return tooltip(item.prompt_preview)  # dataset text: escaped, or Qt renders (and loads) its HTML
        if role == _TOOLTIP and column == 0:
            return tooltip(item.ext_id)  # the full id: the cell cuts a long one at its end
        if role == _TOOLTIP and column == 4 and table_row.own_label:
            return tooltip(table_row.own_label)
        return None

    def headerData(self, section: int, orientation, role=_DISPLAY):  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None


#: The id column grows to fit the ids of this many first rows, up to this width in pixels.
ID_SAMPLE_ROWS = 200
ID_WIDTH_MAX = 210


class ItemTable(QTableView):
    """A read-only table of items; emits ``item_selected(item_id)``."""

    item_selected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # the window owns the keyboard (J/K, 1/2, …)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        self.setWordWrap(False)
        # Cut at the end, as everywhere else (a middle cut read as a different id); the tooltip
        # shows the whole id.
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self._model: ItemTableModel | None = None

    def set_items(self, total: int, page_source: PageSource) -> None:
        """Show ``total`` rows, loading them through ``page_source`` as they are painted."""
        self._model = ItemTableModel(total, page_source, self)
        self.setModel(self._model)
        header = self.horizontalHeader()
        widths = (124, 86, 56, 74, 110)
        for column, width in enumerate(widths):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            self.setColumnWidth(column, width)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self._fit_id_column(total, widths[0])
        # Shown first what an annotator scans in a narrow list: id, status, my label.
        for visual, column in enumerate(VISUAL_ORDER):
            header.moveSection(header.visualIndex(column), visual)
        self.selectionModel().currentRowChanged.connect(self._on_row)

    def _fit_id_column(self, total: int, least: int) -> None:
        """Widen the id column to the longest id of the first rows (up to ID_WIDTH_MAX): ids
        of one dataset differ at their end, where a narrow column cuts them."""
        if self._model is None:
            return
        metrics = self.fontMetrics()
        rows = (self._model.row(i) for i in range(min(total, ID_SAMPLE_ROWS)))
        longest = max((metrics.horizontalAdvance(r.summary.ext_id) for r in rows if r is not None), default=0)
        self.setColumnWidth(0, max(least, min(longest + 18, ID_WIDTH_MAX)))

    def model(self) -> ItemTableModel:  # typed accessor
        # set_items is the only place a model is set, and it is always an ItemTableModel.
        return cast(ItemTableModel, super().model())

    def select_row(self, row: int) -> None:
        """Select a row (the item is announced through ``item_selected``)."""
        if self._model is not None and 0 <= row < self._model.rowCount():
            self.selectRow(row)
            self.scrollTo(self._model.index(row, 0), QAbstractItemView.ScrollHint.PositionAtCenter)

    def current_row(self) -> int:
        return self.currentIndex().row()

    def replace_row(self, row: TableRow) -> None:
        if self._model is not None:
            self._model.replace_row(row)

    def _on_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and self._model is not None:
            table_row = self._model.row(current.row())
            if table_row is not None:
                self.item_selected.emit(table_row.summary.id)
