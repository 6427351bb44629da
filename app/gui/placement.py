"""Where the window goes on the screen: the first window fits the screen's available area,
frame included (the status bar, which names the annotator, stays on screen), and a window is
moved back onto its screen when the window manager's frame pushes it past an edge; the title
names the annotator; size, place and layout are saved per project.

``MainWindow.move(step)`` moves the table's row, so the window is placed with
``QMainWindow.move``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QMainWindow

if TYPE_CHECKING:
    from .controller import AnnotationController

#: Room left for a window manager's frame before it is known (a title bar, borders).
FRAME_ALLOWANCE = (16, 48)
#: The first window's largest size.
FIRST_SIZE = (1600, 1000)


def first_size(window: QMainWindow) -> None:
    """The first window's size and place: at most :data:`FIRST_SIZE` and, with room for a
    frame, within the primary screen's available area (:func:`fit_to_screen` corrects it once
    the real frame is known)."""
    screen = QApplication.primaryScreen()
    if screen is None:
        return
    available = screen.availableGeometry()
    width = min(FIRST_SIZE[0], available.width() - FRAME_ALLOWANCE[0])
    height = min(FIRST_SIZE[1], available.height() - FRAME_ALLOWANCE[1])
    window.resize(width, height)
    QMainWindow.move(window, available.x() + (available.width() - width - FRAME_ALLOWANCE[0]) // 2, available.y())


def fit_to_screen(window: QMainWindow) -> None:
    """Keep the whole window, frame included, on its screen's available area: shrink it (never
    below its minimum) and move it in. The frame is known once the window manager has framed
    the window, so the window calls this again just after its first show."""
    screen = window.screen() or QApplication.primaryScreen()
    if screen is None or window.isMaximized() or window.isFullScreen():
        return
    available = screen.availableGeometry()
    frame, inner = window.frameGeometry(), window.geometry()
    extra_w, extra_h = frame.width() - inner.width(), frame.height() - inner.height()
    if available.contains(frame):
        return
    minimum = window.minimumSizeHint()
    width = max(min(inner.width(), available.width() - extra_w), minimum.width())
    height = max(min(inner.height(), available.height() - extra_h), minimum.height())
    window.resize(width, height)
    x = min(max(frame.x(), available.x()), available.right() + 1 - (width + extra_w))
    y = min(max(frame.y(), available.y()), available.bottom() + 1 - (height + extra_h))
    QMainWindow.move(window, max(x, available.x()), max(y, available.y()))  # places the frame


def window_title(controller: AnnotationController) -> str:
    """``PairScope — project.pairscope — annotator``: who labels is always on screen
    (adjudicating and read-only said too)."""
    role = " (adjudicating)" if controller.adjudicating else ""
    mode = " (read-only)" if controller.store.readonly else ""
    return f"PairScope — {controller.path.name} — {controller.annotator}{role}{mode}"


def saved_value(settings: QSettings | None, key: str, what: str) -> Any:
    """The value saved under this project's ``key``, else the one older versions saved for
    every project (``window/WHAT``), else ``None``."""
    if settings is None:
        return None
    value = settings.value(key)
    return value if value is not None else settings.value(f"window/{what}")


__all__ = ["saved_value", "window_title", "FIRST_SIZE", "FRAME_ALLOWANCE", "first_size", "fit_to_screen"]
