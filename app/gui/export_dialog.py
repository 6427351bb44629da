"""File → Export: the curated-set export from the window (the same function as the CLI),
run in the background with a progress bar; Cancel stops it."""

from __future__ import annotations

import traceback
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QToolButton,
    QWidget,
)

from pairscope.widgets.plain_text import inert_html, plain_label

from ..curation.export import ExportResult, export_project
from . import tasks
from .controller import AnnotationController
from .tasks import BackgroundOp, Task

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
        browse = QToolButton()
        browse.setText("…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        self.progress = QProgressBar(textVisible=True)
        self.progress.hide()
        self.status = plain_label(word_wrap=True)  # quotes paths and error messages
        form = QFormLayout(self)
        form.addRow("Format", self.format)
        form.addRow("Items", self.scope)
        form.addRow("Which", self.only)
        form.addRow("Folder", row)
        form.addRow(self.progress)
        form.addRow(self.status)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.run)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self.result_text = ""
        self._op: BackgroundOp | None = None

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export into")
        if folder:
            self.folder.setText(folder)

    @property
    def running(self) -> bool:
        return self._op is not None and self._op.running

    def run(self) -> None:
        """Start the export; a non-empty folder is only written into after the user says so."""
        if self.running:
            return
        if not self.folder.text().strip():
            QMessageBox.warning(self, "Export", "Choose a folder to export into.")
            return
        out = Path(self.folder.text().strip())
        force = False
        if out.is_dir() and any(out.iterdir()):
            question = inert_html(f"{out} is not empty. Write the export into it anyway?")  # a path: text, not HTML
            answer = QMessageBox.question(self, "Export", question)
            if answer != QMessageBox.StandardButton.Yes:
                return
            force = True
        scope = self.scope.currentText()
        collection = self.scope.currentData() if scope.startswith("Collection: ") else None
        filtered = SCOPES.get(scope) == "filtered"
        controller, fmt, only = self.controller, self.format.currentText(), ONLY[self.only.currentText()]
        description = {"table": repr(controller.filter)}

        def export(task: Task) -> ExportResult:
            # The dialog is window-modal: the table's filter cannot change while this runs.
            item_ids = [r.summary.id for r in controller.page(0, controller.row_count())] if filtered else None
            task.check()

            def step(done: int, total: int) -> None:
                task.check()  # raising here leaves no data file and no manifest
                task.progress(done, total)

            return export_project(
                controller.store,
                out,
                fmt,
                collection=collection,
                only=only,
                item_ids=item_ids,
                force=force,
                filters_description=description,
                progress=step,
            )

        self._set_running(True)
        self.status.setText("")
        self._op = (
            BackgroundOp(self, export, title="Export")
            .with_progress("Exporting", bar=self.progress)
            .success(self._done)
            .failure(self._failed)
            .cancelled(self._cancelled)
            .run()
        )

    def reject(self) -> None:
        """Cancel stops a running export (the dialog stays); otherwise it closes the dialog."""
        op = self._op
        if op is not None and op.running:
            op.cancel()
            self.status.setText("Cancelling…")
            return
        super().reject()

    def _set_running(self, running: bool) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not running)
        for widget in (self.format, self.scope, self.only, self.folder):
            widget.setEnabled(not running)

    def _done(self, result: ExportResult) -> None:
        self._set_running(False)
        self.result_text = (
            f"Exported {result.n_items} items to {result.out_dir}"
            f" ({len(result.skipped)} skipped, {len(result.warnings)} warnings)."
        )
        window = self.parent()
        if isinstance(window, QMainWindow):
            window.statusBar().showMessage(self.result_text, 15000)
        self.accept()

    def _failed(self, exc: BaseException) -> None:
        self._set_running(False)
        self.status.setText(f"Export failed: {exc}")
        tasks.show_error(self, "Export failed", tasks.error_message(exc), "".join(traceback.format_exception(exc)))

    def _cancelled(self) -> None:
        self._set_running(False)
        self.status.setText("Export cancelled: no data file or manifest was written.")


__all__ = ["ExportDialog"]
