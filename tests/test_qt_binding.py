"""Guards against a Qt binding that corrupts the interpreter (seen with PySide6 6.12.0 on
Python 3.11: every void Qt call dropped one reference to None, aborting the app after about
a hundred items)."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QLabel


def test_void_qt_calls_keep_none_alive(qtbot):
    label = QLabel()
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for _ in range(2000):
        label.setText("x")
        label.setVisible(False)
    assert sys.getrefcount(None) >= before - 50
