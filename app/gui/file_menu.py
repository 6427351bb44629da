"""The File menu: open a project (or a recent one), import a dataset into this one, switch
annotator, quit. Menus get mnemonics (Alt+F opens File).

Opening a project or switching annotator opens a new window on it and closes this one; a
folder or a file that is not a project is refused in a dialog, never with a traceback.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMenu, QMenuBar, QMessageBox

from pairscope.widgets.plain_text import inert_html

from ..store import SchemaError, Store
from .tasks import BackgroundOp

if TYPE_CHECKING:
    from ..records import ImportReport
    from .main_window import MainWindow

RECENT_KEY = "project/recent"
RECENT_MAX = 8
PROJECT_FILTER = "PairScope projects (*.pairscope);;All files (*)"
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
    try:
        store = Store.open(path, fallback_readonly=True)
        if store.item_verdicts_stale() and not store.readonly:
            from ..judge.results import ensure_item_verdicts  # projects before schema 4 only

            ensure_item_verdicts(store)
        return store
    except (OSError, SchemaError, sqlite3.DatabaseError) as exc:
        raise ValueError(f"{path} cannot be opened as a PairScope project: {exc}") from exc


def open_window(window: MainWindow, path: Path, annotator: str) -> MainWindow | None:
    """Open ``path`` for ``annotator`` in a new window that replaces ``window``; a dialog
    (and None) when it cannot be opened."""
    from .controller import AnnotationController
    from .main_window import MainWindow

    try:
        store = open_store(path)
    except ValueError as exc:
        QMessageBox.warning(window, "PairScope", inert_html(str(exc)))
        return None
    remember_project(window.settings, path)
    successor = MainWindow(AnnotationController(store, annotator), window.settings)
    if store.readonly:
        successor.setWindowTitle(f"{successor.windowTitle()} (read-only)")
        successor.statusBar().showMessage(store.note or f"{path} is open read-only.")
    successor.resize(window.size())
    successor.show()
    window.successor = successor
    window.close()
    return successor


def choose_project(window: MainWindow) -> None:
    path, _ = QFileDialog.getOpenFileName(window, "Open a project", str(window.controller.path.parent), PROJECT_FILTER)
    if path:
        open_window(window, Path(path), window.controller.annotator)


def switch_annotator(window: MainWindow) -> None:
    name, ok = QInputDialog.getText(
        window,
        "Switch annotator",
        "Annotator name (stored with every label you give):",
        text=window.controller.annotator,
    )
    name = name.strip()
    if ok and name and name != window.controller.annotator:
        window.panel.flush()
        if window.settings is not None:
            window.settings.setValue("annotator/name", name)
        open_window(window, window.controller.path, name)


def import_dataset(window: MainWindow, path: Path | None = None) -> BackgroundOp | None:
    """Import a dataset file into this project (format detected) on the background
    executor; the report — counts and every problem with file:line — is shown in a dialog."""
    if path is None:
        chosen, _ = QFileDialog.getOpenFileName(window, "Import a dataset", str(Path.home()), DATASET_FILTER)
        if not chosen:
            return None
        path = Path(chosen)
    store = window.controller.store

    def work(task) -> ImportReport:
        from ..importer import import_file  # the formats load only when a file is imported

        return import_file(store, path, None, path.parent)

    def done(report: ImportReport) -> None:
        window.refresh_items()
        box = QMessageBox(window)
        box.setWindowTitle("Import")
        box.setIcon(QMessageBox.Icon.Warning if report.problems else QMessageBox.Icon.Information)
        box.setText(inert_html(import_summary(report)))
        details = import_problems(report)
        if details:
            box.setDetailedText(details)  # plain text: file:line problems quote the dataset
        box.open()
        window.import_result = box

    def failed(exc: BaseException) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Critical, "Import", inert_html(f"Nothing was imported from {path}."), parent=window
        )
        box.setDetailedText(str(exc))
        box.open()
        window.import_result = box

    op = (
        BackgroundOp(window, work, title="Import")
        .with_progress(f"Importing {path.name}…")
        .success(done)
        .failure(failed)
    )
    op.run()
    return op


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


def import_problems(report: ImportReport) -> str:
    from ..formats.messages import summarise

    return "\n".join(summarise(report.problems))


def add_mnemonics(bar: QMenuBar) -> None:
    """Give every menu title without one an Alt+letter mnemonic (the first free letter)."""
    used: set[str] = set()
    titles = [action.text() for action in bar.actions()]
    for title in titles:
        if "&" in title:
            used.add(title[title.index("&") + 1].lower())
    for action in bar.actions():
        title = action.text()
        if "&" in title or not title:
            continue
        for i, char in enumerate(title):
            if char.isalpha() and char.lower() not in used:
                used.add(char.lower())
                action.setText(f"{title[:i]}&{title[i:]}")
                break


def install_file_menu(window: MainWindow) -> QMenu:
    """Add the File menu first in the menu bar, and mnemonics to every menu."""
    bar = window.menuBar()
    menu = QMenu("&File", window)
    first = bar.actions()[0] if bar.actions() else None
    if first is not None:
        bar.insertMenu(first, menu)
    else:
        bar.addMenu(menu)

    def action(text: str, slot, keys: QKeySequence | QKeySequence.StandardKey | str | None = None) -> QAction:
        act = QAction(text, window)
        if keys is not None:
            act.setShortcut(QKeySequence(keys))
        act.triggered.connect(lambda _checked=False: slot())
        menu.addAction(act)
        return act

    actions = {
        "open_project": action("&Open project…", lambda: choose_project(window), QKeySequence.StandardKey.Open),
    }
    recent = menu.addMenu("Open &recent")

    def fill_recent() -> None:
        recent.clear()
        paths = [p for p in recent_projects(window.settings) if Path(p) != window.controller.path.resolve()]
        for path in paths:
            act = recent.addAction(path)
            act.triggered.connect(
                lambda _checked=False, p=path: open_window(window, Path(p), window.controller.annotator)
            )
        if not paths:
            recent.addAction("No other project yet").setEnabled(False)

    recent.aboutToShow.connect(fill_recent)
    menu.addSeparator()
    actions["import_dataset"] = action("&Import a dataset…", lambda: import_dataset(window), "Ctrl+Shift+I")
    actions["switch_annotator"] = action("Switch &annotator…", lambda: switch_annotator(window))
    menu.addSeparator()
    actions["quit"] = action("&Quit", window.close, "Ctrl+Q")
    window.file_actions = actions
    add_mnemonics(bar)
    remember_project(window.settings, window.controller.path)
    return menu


__all__ = ["install_file_menu", "open_store", "open_window", "import_dataset", "recent_projects", "add_mnemonics"]
