"""The film strip under a video: clickable thumbnails of uniformly sampled frames."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QFrame, QScrollArea, QToolButton, QWidget

from .media_style import BACKGROUND, CURRENT, HIGHLIGHT, NO_FOCUS, TEXT, compact_row
from .qimage import ImageLike, to_qimage


class FilmStrip(QScrollArea):
    """A row of clickable thumbnails; marks the current one and any highlighted frames."""

    frameClicked = Signal(int)
    THUMB_HEIGHT = 54

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, widgetResizable=True)
        self.setFocusPolicy(NO_FOCUS)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._row = row = QWidget()
        row.setObjectName("film-strip-row")
        row.setStyleSheet(f"#film-strip-row {{ background: {BACKGROUND}; }}")
        self._layout = compact_row(row)
        self._layout.addStretch(1)
        self.setWidget(row)
        self._buttons: dict[int, QToolButton] = {}
        self._current: int | None = None
        self._highlighted: frozenset[int] = frozenset()

    def set_frames(self, strip: Sequence[tuple[int, float, ImageLike]]) -> None:
        self.clear()
        for index, seconds, thumb in strip:
            btn = QToolButton(self._row, toolButtonStyle=Qt.ToolButtonStyle.ToolButtonTextUnderIcon)
            btn.setObjectName(f"strip-frame-{index}")
            btn.setFocusPolicy(NO_FOCUS)
            btn.setText(f"{seconds:.1f} s")
            btn.setToolTip(f"frame {index + 1} · {seconds:.2f} s")
            try:
                pm = QPixmap.fromImage(to_qimage(thumb))
                pm = pm.scaledToHeight(self.THUMB_HEIGHT, Qt.TransformationMode.SmoothTransformation)
            except Exception:  # noqa: BLE001 - a bad thumbnail must not cost the whole strip
                pm = QPixmap()
            btn.setIcon(QIcon(pm))
            btn.setIconSize(pm.size() if not pm.isNull() else QSize(72, self.THUMB_HEIGHT))
            btn.clicked.connect(lambda _checked=False, i=index: self.frameClicked.emit(i))
            self._layout.insertWidget(self._layout.count() - 1, btn)
            self._buttons[index] = btn
            self._style(index)
        self.setFixedHeight(self._row.sizeHint().height() + self.horizontalScrollBar().sizeHint().height())

    def clear(self) -> None:
        for btn in self._buttons.values():
            btn.setParent(None)  # gone now (Python held the last reference), not at the next event loop
        self._buttons.clear()
        self._current, self._highlighted = None, frozenset()

    def set_highlighted(self, indices: frozenset[int]) -> None:
        self._highlighted = indices
        for index in self._buttons:
            self._style(index)

    def set_current(self, frame: int) -> None:
        """Mark the last thumbnail at or before ``frame``."""
        new = max((i for i in self._buttons if i <= frame), default=None)
        if new == self._current:
            return
        old, self._current = self._current, new
        for index in (old, new):
            if index is not None:
                self._style(index)
        if new is not None:
            self.ensureWidgetVisible(self._buttons[new], 24, 0)

    def _style(self, index: int) -> None:
        lit = index in self._highlighted
        border = CURRENT if index == self._current else (HIGHLIGHT if lit else "transparent")
        self._buttons[index].setStyleSheet(
            f"QToolButton {{ border: 2px solid {border}; border-radius: 3px; color: {TEXT}; padding: 1px;"
            f" background: {'#4a3b14' if lit else 'transparent'}; font-size: 10px; }}"
        )
