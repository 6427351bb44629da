"""Feed a window's focus and input to its :class:`~app.labeling.active_time.ActiveTime`.

For one window: key presses, clicks, wheel turns and mouse moves in that window count as
input; the window's activation and deactivation are its focus (a dialog opened over it takes
the focus, and the count stops until the window is back). The filter sits on the window, on
its native window (where the user's mouse and keys arrive before Qt hands them to a widget)
and on its focus widget, not on the whole application: Python runs for the user's input, not
for every paint and timer of the application.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QWindow
from PySide6.QtWidgets import QWidget

from ..labeling.active_time import ActiveTime
from .focus import FocusFilter

_INPUT = frozenset(
    {
        QEvent.Type.KeyPress,
        QEvent.Type.MouseButtonPress,
        QEvent.Type.MouseMove,
        QEvent.Type.Wheel,
    }
)
_FOCUS = {QEvent.Type.WindowActivate: True, QEvent.Type.WindowDeactivate: False}
_HANDLE_CHANGES = frozenset({QEvent.Type.Show, QEvent.Type.WinIdChange})


class ActivityWatch(FocusFilter):
    """Tells ``active`` when ``window`` gains or loses focus and when its user does something."""

    def __init__(self, window: QWidget, active: ActiveTime):
        self.active = active
        self._handle: QWindow | None = None
        super().__init__(window)
        active.focus(window.isActiveWindow())
        window.installEventFilter(self)
        self._watch_handle()

    def _watch_handle(self) -> None:
        """Follow the window's native window (made on the first show, remade by some changes)."""
        handle = self.window.windowHandle()
        if handle is self._handle:
            return
        if self._handle is not None and shiboken6.isValid(self._handle):
            self._handle.removeEventFilter(self)
        self._handle = handle
        if handle is not None:
            handle.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        kind = event.type()
        if kind in _INPUT:
            if watched is self._handle or (isinstance(watched, QWidget) and watched.window() is self.window):
                self.active.input()
        elif watched is self.window:
            if kind in _FOCUS:
                self.active.focus(_FOCUS[kind])
            elif kind in _HANDLE_CHANGES:
                self._watch_handle()
        return False


__all__ = ["ActivityWatch"]
