"""A non-modal warning strip across the top of a window (e.g. "3 labels not yet saved").

Plain text in, a ``retry_requested`` signal out; an empty text hides it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton

from .plain_text import plain_label


class Banner(QFrame):
    retry_requested = Signal()

    def __init__(self, parent=None, *, action: str = "Retry now"):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setStyleSheet(
            "#banner { background: #fff3cd; border-bottom: 1px solid #e0c36a; } QLabel { color: #5c4400; }"
        )
        self._label = plain_label(word_wrap=True)
        self._button = QPushButton(action)
        self._button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # keys stay with the window's shortcuts
        self._button.clicked.connect(self.retry_requested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self._label, 1)
        layout.addWidget(self._button)
        self.hide()

    def show_message(self, text: str) -> None:
        """Show ``text``; an empty one hides the banner."""
        self._label.setText(text)
        self.setVisible(bool(text))

    def text(self) -> str:
        return self._label.text()
