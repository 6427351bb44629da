"""The File menu: open a project (or a recent one), import a dataset into this one, save a
copy of it, switch annotator, quit. Menus get mnemonics (Alt+F opens File).

Save a copy… copies through SQLite's backup API (``curation.project_copy``): the copy holds
every label saved so far although the window has the project open. The menu also keeps the
project's file whole while the window is idle: a few seconds after the last save, the WAL is
checkpointed into the file (never waiting for another program), so even a plain ``cp`` of the
file made then misses nothing; closing the store checkpoints it too.

Opening a project or switching annotator opens a new window on it and closes this one; a
folder or a file that is not a project is refused in a dialog, never with a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QFileDialog, QInputDialog, QMainWindow, QMenu, QMenuBar, QMessageBox

from pairscope.widgets.plain_text import inert_html

from ..labeling.keymap import FILE_KEYS, FILE_MENU, mnemonics
from ..project import open_project
from ..store import SchemaError, Store
from .tasks import BackgroundOp, own_store

if TYPE_CHECKING:
    from ..records import ImportReport
    from .controller import AnnotationController

_FILE_KEYS = {s.action: s.keys[0] for s in FILE_KEYS}  # the keymap's table: a schema's check knows them
RECENT_KEY = "project/recent"
RECENT_MAX = 8
PROJECT_FILTER = "PairScope projects (*.pairscope);;All files (*)"
#: How long after the last save the idle window checkpoints the project's WAL into its file.
IDLE_CHECKPOINT_MS = 3000
DATASET_FILTER = "Datasets (*.jsonl *.json *.parquet);;All files (*)"


def recent_projects(settings) -> list[str]:
    """Projects opened lately, newest first, that still exist."""
    if settings is None:
        return []
    value = settings.value(RECENT_KEY) or []
    paths = [value] if isinstance(value, str) else list(value)
    return [p for p in paths if Path(p).exists()]


def remember_project(settings, path: Path) -> None:
    """Put ``path`` first in the recent projects (and make it the one opened next time)."""
    if settings is None:
        return
    resolved = str(Path(path).resolve())
    paths = [resolved] + [p for p in recent_projects(settings) if p != resolved]
    settings.setValue(RECENT_KEY, paths[:RECENT_MAX])
    settings.setValue("project/last", resolved)


def open_store(path: Path) -> Store:
    """Open an existing project for the window (read-only when it cannot be written);
    ``ValueError`` with a sentence for anything that is not one."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a PairScope project (a project is one .pairscope file)")
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    if is_data_file(path):
        raise NotAProject(
            f"{path} is a dataset file, not a PairScope project (a project is one .pairscope file);"
            " File → Import a dataset… adds its items to a project"
        )
    try:
        return open_project(path, fallback_readonly=True)
    except (OSError, SchemaError) as exc:
        said = str(exc)  # the store's message names the file already: said once
        raise ValueError(
            said if str(path) in said else f"{path} cannot be opened as a PairScope project: {said}"
        ) from exc


#: File name endings of the dataset files File → Import reads.
DATA_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


class NotAProject(ValueError):
    """A dataset file given where a project was asked for (it can be imported instead)."""


def is_data_file(path: Path) -> bool:
    """Whether ``path`` looks like a dataset file (by its name, and not an SQLite file)."""
    if Path(path).suffix.lower() not in DATA_SUFFIXES:
        return False
    try:
        with open(path, "rb") as fh:
            return not fh.read(16).startswith(b"SQLite format 3")
    except OSError:
        return False


def import_into(project: Path, source: Path) -> ImportReport:
    """Import ``source`` into the project at ``project`` through a connection of its own (a
    background op's work: the window's connection is never used off its thread)."""
    from ..importer import import_file  # the formats load only when a file is imported

    with own_store(project) as store:
        return import_file(store, source, None, source.parent)


def copy_of(project: Path, readonly: bool, target: Path):
    """Copy the project at ``project`` to ``target`` through a connection of its own."""
    from ..curation.project_copy import copy_project

    with own_store(project, readonly) as store:
        return copy_project(store, target, force=True)


def import_summary(report: ImportReport) -> str:
    """``demo.jsonl (vlrewardbench): 40 added, 0 unchanged, 0 conflicting · 2 problems``"""
    from ..formats.messages import shown_path

    text = (
        f"{shown_path(report.source)} ({report.format}): {report.added} added, {report.unchanged} unchanged,"
        f" {report.conflicts} conflicting"
    )
    if report.missing_media:
        text += f"; {report.missing_media} with missing media"
    if report.problems:
        text += f"; {len(report.problems)} problem(s), listed under Show Details"
    return text


#: How many lines of a failed import's reason the dialog shows itself (the rest: Show Details).
SHOWN_PROBLEM_LINES = 5


def failed_import_text(source: Path, exc: BaseException) -> str:
    """What the dialog says when nothing was imported: the file and its first problems
    (``file:line`` reasons) in the message itself, not only behind Show Details."""
    lines = [line for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    shown = "\n".join(lines[:SHOWN_PROBLEM_LINES])
    more = (
        f"\n… and {len(lines) - SHOWN_PROBLEM_LINES} more lines (Show Details)"
        if len(lines) > SHOWN_PROBLEM_LINES
        else ""
    )
    return f"Nothing was imported from {source}:\n{shown}{more}"


def import_problems(report: ImportReport) -> str:
    from ..formats.messages import summarise

    return "\n".join(summarise(report.problems))


def add_mnemonics(bar: QMenuBar) -> None:
    """Give every menu title without one an Alt+letter mnemonic, as the keymap's table says
    (``keymap.mnemonics``: the first free letter; a label schema's keys leave them free)."""
    letters = mnemonics(action.text() for action in bar.actions())
    for action in bar.actions():
        title = action.text()
        if "&" in title or title not in letters:
            continue
        i = title.upper().index(letters[title])
        action.setText(f"{title[:i]}&{title[i:]}")


#: Makes the window that replaces this one: (the project's store, the annotator) → that window.
WindowMaker = Callable[[Store, str], QMainWindow]


class FileMenu:
    """The File menu of ``window``, first in its menu bar (and a mnemonic for every menu).
    ``actions``: name → QAction; ``successor``: the window that replaced this one;
    ``import_result``: the last import's report."""

    def __init__(
        self,
        window: QMainWindow,
        controller: AnnotationController,
        settings: QSettings | None,
        *,
        flush: Callable[[], None],
        refresh_items: Callable[[], None],
        make_window: WindowMaker,
    ):
        self.window, self.controller, self.settings = window, controller, settings
        self._flush, self._refresh_items, self._make_window = flush, refresh_items, make_window
        self.successor: QMainWindow | None = None
        self.import_result: QMessageBox | None = None
        self.offer: QMessageBox | None = None  # the last "import this dataset instead?" question
        bar = window.menuBar()
        self.menu = QMenu(FILE_MENU, window)
        first = bar.actions()[0] if bar.actions() else None
        if first is not None:
            bar.insertMenu(first, self.menu)
        else:
            bar.addMenu(self.menu)
        self.actions = {"open_project": self._action("&Open project…", self.choose_project, _FILE_KEYS["open_project"])}
        self.recent = self.menu.addMenu("Open &recent")
        self.recent.aboutToShow.connect(self._fill_recent)
        self.menu.addSeparator()
        self.actions["import_dataset"] = self._action(
            "&Import a dataset…", self.import_dataset, _FILE_KEYS["import_dataset"]
        )
        self.actions["save_copy"] = self._action("Save a &copy…", self.save_copy)
        self.actions["switch_annotator"] = self._action("Switch &annotator…", self.switch_annotator)
        self.menu.addSeparator()
        self.team_dialogs: dict[str, QDialog] = {}  # the newest Assign… / Team report… (assign_dialog.py)
        self.actions["assign"] = self._action("Assi&gn…", lambda: self.show_team_dialog("assign"))
        self.actions["team_report"] = self._action("&Team report…", lambda: self.show_team_dialog("team_report"))
        self.menu.addSeparator()
        self.actions["quit"] = self._action("&Quit", window.close, _FILE_KEYS["quit"])
        add_mnemonics(bar)
        remember_project(settings, controller.path)
        self.copy_result: QMessageBox | None = None
        self.idle = QTimer(window, singleShot=True, interval=IDLE_CHECKPOINT_MS)
        self.idle.timeout.connect(self.checkpoint)
        controller.saved.connect(lambda _row: self.idle.start())

    def show_team_dialog(self, which: str) -> QDialog:
        """Open File → Assign… (``assign``) or File → Team report… (``team_report``)."""
        from .assign_dialog import AssignDialog, TeamReportDialog

        dialog = (AssignDialog if which == "assign" else TeamReportDialog)(self.controller, self.window)
        self.team_dialogs[which] = dialog
        dialog.open()
        return dialog

    def checkpoint(self) -> None:
        """Move the saved labels from the WAL into the project file (never waits; a failure is
        no one's business: SQLite checkpoints again later). A closed window's store is closed."""
        if not self.window.isVisible():
            return
        try:
            self.controller.store.checkpoint()
        except (OSError, SchemaError):
            pass

    def _action(self, text: str, slot, keys: QKeySequence | QKeySequence.StandardKey | str | None = None) -> QAction:
        act = QAction(text, self.window)
        if keys is not None:
            act.setShortcut(QKeySequence(keys))
        act.triggered.connect(lambda _checked=False: slot())
        self.menu.addAction(act)
        return act

    def _fill_recent(self) -> None:
        self.recent.clear()
        paths = [p for p in recent_projects(self.settings) if Path(p) != self.controller.path.resolve()]
        for path in paths:
            act = self.recent.addAction(path)
            act.triggered.connect(lambda _checked=False, p=path: self.open_project(Path(p), self.controller.annotator))
        if not paths:
            self.recent.addAction("No other project yet").setEnabled(False)

    def open_project(self, path: Path, annotator: str) -> QMainWindow | None:
        """Open ``path`` for ``annotator`` in a new window that replaces this one; a dialog
        (and None) when it cannot be opened."""
        window = self.window
        try:
            store = open_store(path)
        except NotAProject:
            self.offer_import(path)
            return None
        except ValueError as exc:
            QMessageBox.warning(window, "PairScope", inert_html(str(exc)))
            return None
        remember_project(self.settings, path)
        successor = self._make_window(store, annotator)
        if store.readonly:
            successor.statusBar().showMessage(store.note or f"{path} is open read-only.")
        # The same place, size and maximised state (Switch annotator is the same window to the user).
        successor.restoreGeometry(window.saveGeometry())
        if window.isMaximized():
            successor.showMaximized()
        else:
            successor.show()
        self.successor = successor
        if not window.close():  # kept open: labels only in memory (app/gui/quit_guard.py)
            successor.close()
            self.successor = None
            return None
        return successor

    def offer_import(self, path: Path) -> None:
        """A dataset file chosen as a project: offer to import it into this one."""
        question = inert_html(
            f"{path} is a dataset file, not a PairScope project.\n\nImport its items into {self.controller.path.name}?"
        )
        box = QMessageBox(QMessageBox.Icon.Question, "Open project", question, parent=self.window)
        importing = box.addButton("Import it", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(importing)
        self.offer = box
        box.finished.connect(lambda _r: self.import_dataset(path) if box.clickedButton() is importing else None)
        box.open()

    def choose_project(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.window, "Open a project", str(self.controller.path.parent), PROJECT_FILTER
        )
        if path:
            self.open_project(Path(path), self.controller.annotator)

    def save_copy(self, path: Path | None = None) -> BackgroundOp | None:
        """Copy the project, every saved label in it, to a file the user names (on the
        background executor); the result, or why it failed, in a dialog."""
        window, store = self.window, self.controller.store
        project, readonly = store.path, store.readonly
        if path is None:
            start = str(store.path.with_name(f"{store.path.stem} copy{store.path.suffix}"))
            chosen, _ = QFileDialog.getSaveFileName(window, "Save a copy of the project", start, PROJECT_FILTER)
            if not chosen:
                return None
            path = Path(chosen)  # the dialog asked before replacing a file
        self._flush()  # the label being edited is saved first
        pending = self.controller.pending_count
        target = path

        def say(icon: QMessageBox.Icon, text: str) -> None:
            self.copy_result = QMessageBox(icon, "Save a copy", inert_html(text), parent=window)
            self.copy_result.open()

        def done(result) -> None:
            text = result.message()
            if pending:
                text += f"; {pending} label{'s' if pending != 1 else ''} not yet saved are not in it"
            say(QMessageBox.Icon.Information, text)

        def failed(exc: BaseException) -> None:
            say(QMessageBox.Icon.Critical, str(exc))

        op = (
            BackgroundOp(window, lambda task: copy_of(project, readonly, target), title="Save a copy")
            .with_progress(f"Copying to {target.name}…")
            .success(done)
            .failure(failed)
        )
        op.run()
        return op

    def switch_annotator(self) -> None:
        name, ok = QInputDialog.getText(
            self.window,
            "Switch annotator",
            "Annotator name (stored with every label you give):",
            text=self.controller.annotator,
        )
        name = name.strip()
        if ok and name and name != self.controller.annotator:
            self._flush()
            if self.settings is not None:
                self.settings.setValue("annotator/name", name)
            self.open_project(self.controller.path, name)

    def import_dataset(self, path: Path | None = None) -> BackgroundOp | None:
        """Import a dataset file into this project (format detected) on the background
        executor; the report — counts and every problem with file:line — is shown in a dialog."""
        window = self.window
        if path is None:
            start = str(self.controller.path.parent)  # the project's folder, where its data usually is
            chosen, _ = QFileDialog.getOpenFileName(window, "Import a dataset", start, DATASET_FILTER)
            if not chosen:
                return None
            path = Path(chosen)
        project, source = self.controller.path, path

        def work(task) -> ImportReport:
            return import_into(project, source)

        def done(report: ImportReport) -> None:
            self._refresh_items()
            box = QMessageBox(window)
            box.setWindowTitle("Import")
            box.setIcon(QMessageBox.Icon.Warning if report.problems else QMessageBox.Icon.Information)
            box.setText(inert_html(import_summary(report)))
            details = import_problems(report)
            if details:
                box.setDetailedText(details)  # plain text: file:line problems quote the dataset
            box.open()
            self.import_result = box

        def failed(exc: BaseException) -> None:
            box = QMessageBox(
                QMessageBox.Icon.Critical, "Import", inert_html(failed_import_text(source, exc)), parent=window
            )
            box.setDetailedText(str(exc))
            box.open()
            self.import_result = box

        op = (
            BackgroundOp(window, work, title="Import")
            .with_progress(f"Importing {source.name}…")
            .success(done)
            .failure(failed)
        )
        op.run()
        return op


__all__ = [
    "FileMenu",
    "NotAProject",
    "is_data_file",
    "open_store",
    "recent_projects",
    "remember_project",
    "add_mnemonics",
]
