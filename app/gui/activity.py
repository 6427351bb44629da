"""Feed a window's focus and input to its :class:`~app.labeling.active_time.ActiveTime`.

Installed on the application for one window: key presses, clicks, wheel turns and mouse
moves in that window count as input; the window's activation and deactivation are its focus
(a dialog opened over it takes the focus, and the count stops until the window is back).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget

from ..labeling.active_time import ActiveTime

_INPUT = {
    QEvent.Type.KeyPress,
    QEvent.Type.MouseButtonPress,
    QEvent.Type.MouseMove,
    QEvent.Type.Wheel,
}


class ActivityWatch(QObject):
    """Tells ``active`` when ``window`` gains or loses focus and when its user does something."""

    def __init__(self, window: QWidget, active: ActiveTime):
        super().__init__(window)
        self.window, self.active = window, active
        active.focus(window.isActiveWindow())
        app = QApplication.instance()
        assert app is not None, "a window needs its QApplication"
        app.installEventFilter(self)
        window.destroyed.connect(self._uninstall)

    def _uninstall(self) -> None:
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        kind = event.type()
        if watched is self.window and kind in (QEvent.Type.WindowActivate, QEvent.Type.WindowDeactivate):
            self.active.focus(kind == QEvent.Type.WindowActivate)
        elif kind in _INPUT and isinstance(watched, QWidget) and watched.window() is self.window:
            self.active.input()
        return False


__all__ = ["ActivityWatch"]
