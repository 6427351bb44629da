"""Palette and small layout helpers of the media area."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QWidget

BACKGROUND = "#20232a"
TEXT = "#d7dae0"
CURRENT, HIGHLIGHT = "#4c8bf5", "#f5a623"
NO_FOCUS = Qt.FocusPolicy.NoFocus  # keys belong to the window's shortcuts, not to these buttons


def compact_row(parent: QWidget | None, *items) -> QHBoxLayout:
    """A compact horizontal layout; an item is a widget or a (widget, stretch) pair."""
    row = QHBoxLayout(parent) if parent is not None else QHBoxLayout()
    row.setContentsMargins(4, 2, 4, 2)
    row.setSpacing(4)
    for item in items:
        row.addWidget(*(item if isinstance(item, tuple) else (item,)))
    return row
