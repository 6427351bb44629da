"""File → Export: the curated-set export from the window (the same function as the CLI),
run in the background with a progress bar; Cancel stops it.

The dialog names the preference source (chosen explicitly, the human decision by default),
says in words what will be exported, and after the export shows every skip reason with
its items; only the filters that select the items are passed on (and so recorded)."""

from __future__ import annotations

import traceback
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from pairscope.widgets.plain_text import inert_html, plain_label

from ..curation.export import (
    EXPORT_FORMATS,
    ExportResult,
    PreferenceSource,
    default_media,
    describe_table_filter,
    export_project,
)
from . import tasks
from .controller import AnnotationController, filtered_item_ids
from .tasks import BackgroundOp, Task, own_store

SCOPES = {"Items shown in the table": "filtered", "Every item": "all"}
ONLY = {"Every exportable item": None, "Adjudicated items only": "adjudicated", "Agreed or adjudicated": "agreed"}
HUMAN = "The human decision (adjudication, else the annotators' consensus)"
SOURCES = {HUMAN: "human", "Adjudication": "adjudicated", "Annotators' consensus": "consensus"}
REFERENCE = "Dataset reference"
MEDIA = {
    "Copy the media files into the export folder": "copy",
    "Reference the dataset's media paths (copy nothing)": "reference",
}
MAX_IDS = 20  # per reason on screen; the manifest lists them all
#: References a reviewer marked wrong (Suspect references…), as ``pairscope export --reference-corrections``.
CORRECTIONS = {
    "Export the dataset's references as imported": None,
    "Apply the corrected references (with who, when and why)": "apply",
    "Leave out items whose reference was marked wrong": "leave-out",
}


def result_summary(result: ExportResult) -> str:
    """What the export did, in words: count and place, the source, every skip reason with its items."""
    items = "item" if result.n_items == 1 else "items"
    lines = [
        f"Exported {result.n_items} {items} to {result.out_dir} ({result.format}).",
        f"Preference: {result.source_description}.",
        f"Per preference source: {result.sources_text()}.",
        f"{result.media_summary[:1].upper()}{result.media_summary[1:]}.",  # the choice; missing media counted once
    ]
    if result.skipped:
        lines.append(f"Skipped {len(result.skipped)}:")
        lines += [f"  {line}" for line in result.skip_lines(MAX_IDS)]
    else:
        lines.append("Skipped none.")
    if result.warnings:
        lines.append(f"{len(result.warnings)} warnings:")
        lines += [f"  {item}: {message}" for item, message in result.warnings[:MAX_IDS]]
    lines.append(f"Everything is listed in {result.manifest_path}.")
    return "\n".join(lines)


class ExportDialog(QDialog):
    def __init__(self, controller: AnnotationController, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export a curated set")
        self.controller = controller
        store = controller.store
        self.format = QComboBox()
        self.format.addItems(list(EXPORT_FORMATS))
        self.media = QComboBox()  # a stated choice; each format's own default
        for text, value in MEDIA.items():
            self.media.addItem(text, value)
        self.format.currentTextChanged.connect(self._format_changed)
        self.scope = QComboBox()
        self.scope.addItems(list(SCOPES))
        for name in store.collections():
            self.scope.addItem(f"Collection: {name}", name)
        self.source = QComboBox()
        for text, value in SOURCES.items():
            self.source.addItem(text, value)
        for name in store.annotators():
            if store.labeled_count(name):
                self.source.addItem(f"One annotator: {name}", f"annotator:{name}")
        self.source.addItem(REFERENCE, "reference")
        self.fallback = QCheckBox("Where the source gives no preference, use the dataset's reference")
        self.include_discarded = QCheckBox("Include items a human discarded")
        self.corrections = QComboBox()
        self.corrections.setToolTip(
            "References a reviewer marked wrong in Suspect references (the CLI's --reference-corrections)"
        )
        for shown, correction in CORRECTIONS.items():
            self.corrections.addItem(shown, correction)
        self.explain = plain_label(word_wrap=True)
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
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setMinimumHeight(140)
        self.details.hide()
        # The form, then the result below it in a column of its own: word-wrapped text in a
        # QFormLayout row gets the wrong height, and the result ran under the buttons.
        outer = QVBoxLayout(self)
        form = QFormLayout()
        outer.addLayout(form)
        form.addRow("Format", self.format)
        form.addRow("Media", self.media)
        form.addRow("Items", self.scope)
        form.addRow("Preference", self.source)
        form.addRow("", self.fallback)
        form.addRow("", self.include_discarded)
        form.addRow("Reviewed references", self.corrections)
        form.addRow(self.explain)
        form.addRow("Which", self.only)
        form.addRow("Folder", row)
        outer.addWidget(self.progress)
        outer.addWidget(self.status)
        outer.addWidget(self.details, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export")
        self.buttons.accepted.connect(self.run)
        self.buttons.rejected.connect(self.reject)
        outer.addWidget(self.buttons)
        signals = (
            self.source.currentIndexChanged,
            self.fallback.toggled,
            self.include_discarded.toggled,
            self.corrections.currentIndexChanged,
        )
        for signal in (*signals, self.media.currentIndexChanged):
            signal.connect(self._explain)
        self._format_changed(self.format.currentText())
        self.result_text = ""
        self._op: BackgroundOp | None = None

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export into", str(self.controller.path.parent))
        if folder:
            self.folder.setText(folder)

    def _format_changed(self, fmt: str) -> None:
        self.media.setCurrentIndex(max(self.media.findData(default_media(fmt)), 0))
        self._explain()

    def chosen_source(self) -> PreferenceSource:
        return PreferenceSource.parse(self.source.currentData())

    def _explain(self, *_args) -> None:
        """Say, before anything runs, which preference goes out and what is left out."""
        source = self.chosen_source()
        self.fallback.setEnabled(source.kind != "reference")
        fallback = self.fallback.isChecked() and source.kind != "reference"
        discarded = (
            "Items a human discarded are included."
            if self.include_discarded.isChecked()
            else "Items a human discarded are left out."
        )
        media = (
            "Media files are copied into the folder"
            if self.media.currentData() == "copy"
            else "No media file is copied: rows name the dataset's own paths"
        )
        corrections = {
            None: "",
            "apply": " References marked wrong are exported corrected (reference_corrected says by whom and why).",
            "leave-out": " Items whose reference was marked wrong are left out.",
        }[self.corrections.currentData()]
        self.explain.setText(
            f"Exports {source.describe(fallback)}. {discarded} {media}; a missing one keeps its path.{corrections}"
        )

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
        controller, fmt, only = self.controller, self.format.currentText(), ONLY[self.only.currentText()]
        media = self.media.currentData()
        source = self.chosen_source()
        fallback = self.fallback.isChecked() and source.kind != "reference"
        include_discarded = self.include_discarded.isChecked()
        corrections = self.corrections.currentData()
        # The table's filter is passed (and recorded) only when it selects the items: not for
        # "Every item" or a collection, and not when the table shows every item.
        table = describe_table_filter(controller.filter) if SCOPES.get(scope) == "filtered" else {}

        project, readonly = controller.store.path, controller.store.readonly
        item_filter = controller.filter  # a frozen value: the op reads its own copy

        def export(task: Task) -> ExportResult:
            def step(done: int, total: int) -> None:
                task.check()  # raising here leaves no data file and no manifest
                task.progress(done, total)

            with own_store(project, readonly) as store:  # never the window's connection
                item_ids = filtered_item_ids(store, item_filter) if table else None
                task.check()
                return export_project(
                    store,
                    out,
                    fmt,
                    source=source,
                    fallback_reference=fallback,
                    include_discarded=include_discarded,
                    collection=collection,
                    only=only,
                    item_ids=item_ids,
                    table_filter=table or None,
                    force=force,
                    progress=step,
                    media=media,
                    reference_corrections=corrections,
                )

        self._set_running(True)
        self.status.setText("")
        self.details.hide()
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
        widgets: list[QWidget] = [self.format, self.media, self.scope, self.source, self.include_discarded]
        widgets += [self.corrections, self.only, self.folder]
        for widget in widgets:
            widget.setEnabled(not running)
        self.fallback.setEnabled(not running and self.chosen_source().kind != "reference")

    def _done(self, result: ExportResult) -> None:
        """The result stays on screen: what went out, from which source, and every skip with its reason."""
        self._set_running(False)
        self.result_text = result_summary(result)
        first = self.result_text.splitlines()[0]
        skipped = f" {len(result.skipped)} skipped (reasons below)." if result.skipped else ""
        self.status.setText(first + skipped)
        self.details.setPlainText(self.result_text)
        self.details.show()
        self._grow_to_fit()
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setText("Close")
        window = self.parent()
        if isinstance(window, QMainWindow):
            window.statusBar().showMessage(f"{first}{skipped}", 15000)

    def _grow_to_fit(self) -> None:
        """Make room for the result: the dialog grows (within its screen) instead of the text
        running under the buttons."""
        if (layout := self.layout()) is not None:
            layout.activate()
        hint = self.sizeHint()
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        height = max(self.height(), hint.height())
        if screen is not None:
            height = min(height, screen.height() - 60)
        self.resize(max(self.width(), hint.width()), height)

    def _failed(self, exc: BaseException) -> None:
        self._set_running(False)
        self.status.setText(f"Export failed: {exc}")
        tasks.show_error(self, "Export failed", tasks.error_message(exc), "".join(traceback.format_exception(exc)))

    def _cancelled(self) -> None:
        self._set_running(False)
        self.status.setText("Export cancelled: no data file or manifest was written.")


__all__ = ["ExportDialog", "result_summary"]
