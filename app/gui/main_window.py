"""The main window: composes the item table and the item preview."""

from __future__ import annotations

from pairscope.widgets.item_preview import ItemPreview
from pairscope.widgets.item_table import ItemTable
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QSplitter

from .controller import ProjectController


class MainWindow(QMainWindow):
    def __init__(self, controller: ProjectController, settings: QSettings | None = None):
        super().__init__()
        self.controller = controller
        self.settings = settings
        self.setWindowTitle(f"PairScope — {controller.path.name}")
        self.table = ItemTable()
        self.preview = ItemPreview()
        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.preview)
        self.splitter.setSizes([520, 900])
        self.setCentralWidget(self.splitter)
        self._status = QLabel()
        self.statusBar().addPermanentWidget(self._status)

        self.table.item_selected.connect(self.show_item)
        self.table.set_items(controller.item_count(), controller.page)
        self._add_navigation()
        self._status.setText(
            f"{controller.item_count()} items  ·  annotator: {controller.annotator}  ·  {controller.path}"
        )
        if controller.item_count():
            self.table.selectRow(0)
        if settings is not None and settings.value("window/geometry") is not None:
            self.restoreGeometry(settings.value("window/geometry"))

    def _add_navigation(self) -> None:
        for keys, step, name in (("J", 1, "Next item"), ("K", -1, "Previous item")):
            action = QAction(name, self)
            action.setShortcuts([QKeySequence(keys)])
            action.triggered.connect(lambda _=False, s=step: self.move(s))
            self.addAction(action)

    def move(self, step: int) -> None:
        """Select the next (``step=1``) or previous (``-1``) item in the table."""
        row = max(0, self.table.currentIndex().row() + step)
        if row < self.table.model().rowCount():
            self.table.selectRow(row)

    def show_item(self, item_id: int) -> None:
        view = self.controller.view(item_id)
        self.preview.show_item(view.item, view.order, view.media, view.media_note)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if self.settings is not None:
            self.settings.setValue("window/geometry", self.saveGeometry())
        self.controller.close()
        super().closeEvent(event)
