"""File → Export: the curated-set export from the window (the same function as the CLI)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QProgressDialog,
    QToolButton,
    QWidget,
)

from ..curation.export import export_project
from .controller import AnnotationController

SCOPES = {"Items shown in the table": "filtered", "Every item": "all"}
ONLY = {"Every exportable item": None, "Adjudicated items only": "adjudicated", "Agreed or adjudicated": "agreed"}


class ExportDialog(QDialog):
    def __init__(self, controller: AnnotationController, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export a curated set")
        self.controller = controller
        self.format = QComboBox()
        self.format.addItems(["vlrewardbench", "trl", "jsonl"])
        self.scope = QComboBox()
        self.scope.addItems(list(SCOPES))
        for name in controller.store.collections():
            self.scope.addItem(f"Collection: {name}", name)
        self.only = QComboBox()
        self.only.addItems(list(ONLY))
        self.folder = QLineEdit(placeholderText="an empty folder")
        browse = QToolButton(text="…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        form = QFormLayout(self)
        form.addRow("Format", self.format)
        form.addRow("Items", self.scope)
        form.addRow("Which", self.only)
        form.addRow("Folder", row)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.run)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.result_text = ""

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export into")
        if folder:
            self.folder.setText(folder)

    def run(self) -> None:
        """Export; a non-empty folder is only written into after the user says so."""
        if not self.folder.text().strip():
            QMessageBox.warning(self, "Export", "Choose a folder to export into.")
            return
        out = Path(self.folder.text().strip())
        force = False
        if out.exists() and any(out.iterdir()):
            answer = QMessageBox.question(self, "Export", f"{out} is not empty. Write the export into it anyway?")
            if answer != QMessageBox.Yes:
                return
            force = True
        scope = self.scope.currentText()
        collection = self.scope.currentData() if scope.startswith("Collection: ") else None
        item_ids = None
        if SCOPES.get(scope) == "filtered":
            item_ids = [r.summary.id for r in self.controller.page(0, self.controller.row_count())]
        progress = QProgressDialog("Exporting…", "", 0, 100, self)
        progress.setCancelButton(None)
        progress.setWindowModality(Qt.WindowModal)

        def step(done: int, total: int) -> None:
            progress.setMaximum(max(total, 1))
            progress.setValue(done)
            QApplication.processEvents()

        try:
            result = export_project(self.controller.store, out, self.format.currentText(), collection=collection,
                                    only=ONLY[self.only.currentText()], item_ids=item_ids, force=force,
                                    filters_description={"table": repr(self.controller.filter)}, progress=step)
        except (OSError, ValueError) as exc:
            progress.close()
            QMessageBox.critical(self, "Export failed", str(exc))
            return
        progress.close()
        self.result_text = (f"Exported {result.n_items} items to {result.out_dir}"
                            f" ({len(result.skipped)} skipped, {len(result.warnings)} warnings).")
        QMessageBox.information(self, "Export", self.result_text)
        self.accept()
