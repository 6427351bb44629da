"""A read-only view of one item: media, prompt and responses in a given display order."""

from __future__ import annotations

from typing import Sequence

from pairscope.app.records import Item
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)


def pil_to_pixmap(image: Image.Image) -> QPixmap:
    """Convert a PIL image to a QPixmap (copying the pixels)."""
    rgba = image.convert("RGBA")
    data = rgba.tobytes("raw", "RGBA")
    qimage = QImage(data, rgba.width, rgba.height, rgba.width * 4, QImage.Format_RGBA8888)
    return QPixmap.fromImage(qimage.copy())


def _plain_label(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.PlainText)  # dataset text is untrusted: never rich text
    label.setWordWrap(True)
    return label


class ScaledPixmapLabel(QLabel):
    """A label that shows its pixmap scaled to fit, re-scaling as the label resizes."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._source = QPixmap()
        self.setAlignment(Qt.AlignCenter)
        self.setMinimumSize(1, 1)

    def set_source(self, pixmap: QPixmap) -> None:
        self._source = pixmap
        self._rescale()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._rescale()

    def _rescale(self) -> None:
        if self._source.isNull():
            self.setPixmap(QPixmap())
            return
        self.setPixmap(self._source.scaled(self.contentsRect().size(), Qt.KeepAspectRatio, Qt.SmoothTransformation))


class ItemPreview(QWidget):
    """Shows one item. Response boxes are titled by screen position, never by dataset role."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._title = _plain_label()
        self._title.setStyleSheet("font-weight: bold; font-size: 13pt;")
        self._media = ScaledPixmapLabel()
        self._media.setMinimumHeight(200)
        self._media.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self._media.setStyleSheet("background: #20232a; color: #e6e6e6; border-radius: 4px;")
        self._prompt = QPlainTextEdit(readOnly=True)
        self._prompt.setMaximumHeight(72)
        self._responses = QWidget()
        self._responses_layout = QHBoxLayout(self._responses)
        self._responses_layout.setContentsMargins(0, 0, 0, 0)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self._title)
        top_layout.addWidget(self._media, 1)
        top_layout.addWidget(_plain_label("Prompt"))
        top_layout.addWidget(self._prompt)
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(self._responses)
        splitter.setSizes([420, 300])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)

    def show_item(self, item: Item, order: Sequence[int], media: Image.Image | None, media_note: str) -> None:
        """Display ``item`` with responses in ``order``; ``media`` is a decoded preview or
        ``None`` with ``media_note`` saying why (missing file, no media, …)."""
        self._title.setText(f"{item.ext_id}  ·  {item.category}" + (f" / {item.subset}" if item.subset else ""))
        if media is not None:
            self._media.setText("")
            self._media.set_source(pil_to_pixmap(media))
            self._media.setToolTip(media_note)
        else:
            self._media.set_source(QPixmap())
            self._media.setText(media_note)
            self._media.setToolTip("")
        self._prompt.setPlainText(item.prompt)
        while self._responses_layout.count():
            widget = self._responses_layout.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        for position, index in enumerate(order, start=1):
            response = item.responses[index]
            box = QGroupBox(f"Response {position}  ({response.word_count} words)")
            box_layout = QVBoxLayout(box)
            text = QPlainTextEdit(readOnly=True)
            if response.steps:
                text.setPlainText("\n".join(f"{n}. {s.text}" for n, s in enumerate(response.steps, start=1)))
            else:
                text.setPlainText(response.text)
            box_layout.addWidget(text)
            self._responses_layout.addWidget(box)

    def media_text(self) -> str:
        return self._media.text()
