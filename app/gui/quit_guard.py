"""Closing the window while labels are only in memory (the project cannot be written and
neither can its journal, e.g. a full disk): the window asks instead of closing — save them
to a file elsewhere, keep trying (the window stays, the retries go on), or discard them.

Labels kept in the journal are safe (stored at the next start): closing then asks nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from pairscope.widgets.plain_text import inert_html

if TYPE_CHECKING:
    from .controller import AnnotationController

SAVE, RETRY, DISCARD = "save", "retry", "discard"


class QuitGuard:
    """Decides whether ``window`` may close. ``ask(text)`` returns :data:`SAVE`, :data:`RETRY`
    or :data:`DISCARD` (a dialog); ``choose_file()`` a path to save to (``""``: cancelled)."""

    def __init__(self, window: QMainWindow, controller: AnnotationController):
        self.window, self.controller = window, controller
        self.ask: Callable[[str], str] = self._ask
        self.choose_file: Callable[[], str] = self._choose_file

    def may_close(self) -> bool:
        """True when nothing acknowledged would be lost by closing now (or the user said so)."""
        session = self.controller.session
        if session.pending.memory_only():
            session.retry_pending()  # a last try before asking
        text = session.pending.unsaved_text()
        if not text:
            return True
        choice = self.ask(text)
        if choice == DISCARD:
            session.pending.forget_memory_only()
            return True
        if choice != SAVE:
            self.window.statusBar().showMessage("Still trying to save the labels; the window stays open.", 8000)
            return False
        path = self.choose_file()
        if not path:
            return False
        try:
            session.pending.save_to(path)
        except OSError as exc:
            QMessageBox.warning(self.window, "PairScope", inert_html(f"The labels could not be saved to {path}: {exc}"))
            return False
        return True

    def _ask(self, text: str) -> str:
        journal = self.controller.session.pending.journal.path.name
        box = QMessageBox(QMessageBox.Icon.Warning, "Labels not saved", inert_html(text), parent=self.window)
        box.setInformativeText(  # paths and errors are untrusted text: escaped
            inert_html(
                "Closing now loses them. Save them to a file (put it beside the project as"
                f" {journal} and they are stored when the project next opens), keep the window open"
                " while PairScope keeps trying, or discard them."
            )
        )
        save = box.addButton("Save them to a file…", QMessageBox.ButtonRole.AcceptRole)
        retry = box.addButton("Keep trying", QMessageBox.ButtonRole.RejectRole)
        discard = box.addButton("Discard them", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(retry)
        box.setEscapeButton(retry)
        box.exec()
        clicked = box.clickedButton()
        return SAVE if clicked is save else DISCARD if clicked is discard else RETRY

    def _choose_file(self) -> str:
        name = self.controller.session.pending.journal.path.name
        start = self.controller.path.parent / name  # the project's folder, where it is put to be replayed
        path, _ = QFileDialog.getSaveFileName(
            self.window, "Save the labels not stored", str(start), "Label journals (*.jsonl);;All files (*)"
        )
        return path


__all__ = ["DISCARD", "RETRY", "SAVE", "QuitGuard"]
