"""Keep the keyboard on labeling.

An annotator's first key is a label: the window opens with focus on the item, not in a text
field. Esc in any text field of the window (and Enter in the search box) gives focus back to
the item; single-key shortcuts work everywhere except while typing in a text field, and a
list or a combo box that has focus (after Tab or a click) does not eat letters for its own
keyboard search.
"""

from __future__ import annotations

import contextlib

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)


def is_text_entry(widget: QObject | None) -> bool:
    """True while keys type text into ``widget`` (a line, an editable text, a spin box)."""
    if isinstance(widget, QLineEdit | QAbstractSpinBox):
        return True
    if isinstance(widget, QTextEdit | QPlainTextEdit):
        return not widget.isReadOnly()
    if isinstance(widget, QComboBox):
        return widget.isEditable()
    return False


def _types_text(event) -> bool:
    """A key that would type a character (no Ctrl/Alt/Meta)."""
    mods = event.modifiers() & ~(Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.KeypadModifier)
    return bool(event.text()) and event.text().isprintable() and mods == Qt.KeyboardModifier.NoModifier


class FocusFilter(QObject):
    """An event filter on ``window``'s focus widget, moved along as the focus moves (a real key
    press goes to the focus widget): Python then runs for the keys the user types, not for
    every event of the application (paints, timers) as an application-wide filter does."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.window = window
        self._watched: QWidget | None = None
        app = QApplication.instance()
        assert app is not None, "a window needs its QApplication"
        app.focusChanged.connect(self._follow)  # type: ignore[attr-defined]
        window.destroyed.connect(self._uninstall)
        self._follow(None, QApplication.focusWidget())

    def _follow(self, _old: QWidget | None, new: QWidget | None) -> None:
        if self._watched is not None and shiboken6.isValid(self._watched):
            self._watched.removeEventFilter(self)
        self._watched = None
        if new is not None and new.window() is self.window and new is not self.window:
            new.installEventFilter(self)
            self._watched = new

    def _uninstall(self) -> None:
        app = QApplication.instance()
        if app is not None:
            with contextlib.suppress(RuntimeError, TypeError):  # already gone at exit
                app.focusChanged.disconnect(self._follow)  # type: ignore[attr-defined]


class KeyboardHome(FocusFilter):
    """For one window: sends focus to ``home`` (the item) on Esc in a text field, and keeps
    letters away from lists' and combo boxes' keyboard search."""

    def __init__(self, window: QWidget, home: QWidget):
        self.home = home
        home.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        super().__init__(window)

    def go_home(self) -> None:
        """Give the keyboard back to labeling."""
        self.home.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() != QEvent.Type.KeyPress or not isinstance(watched, QWidget):
            return False
        if watched.window() is not self.window:  # dialogs keep their own Esc (close) and keys
            return False
        if is_text_entry(watched):
            if event.key() == Qt.Key.Key_Escape:  # type: ignore[attr-defined]
                self.go_home()
                return True
            return False
        # Shortcuts were tried before this key press arrived: a letter left over would only
        # move a list's or combo box's selection by keyboard search.
        return isinstance(watched, QComboBox | QAbstractItemView) and _types_text(event)


__all__ = ["FocusFilter", "KeyboardHome", "is_text_entry"]
