"""Render packaging/icons/pairscope.svg into the PNG sizes a desktop needs (16 … 512 px),
with Qt's QSvgRenderer (PySide6-Essentials carries QtSvg). Run after editing the SVG:

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icons.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parent / "icons"
SIZES = (16, 32, 48, 64, 128, 256, 512)


def render(svg: Path = ICONS / "pairscope.svg", folder: Path = ICONS) -> list[Path]:
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not a valid SVG")
    written = []
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        path = folder / f"pairscope-{size}.png"
        if not image.save(str(path)):
            raise OSError(f"cannot write {path}")
        written.append(path)
    return written


if __name__ == "__main__":
    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    for path in render():
        print(path)
