"""The media area: images with fit/zoom/pan, or a video with playback, scrubbing and a film strip.

The view takes decoded pixels (PIL images or QImages) and a frame callback; it never reads
files itself, so a missing or broken image arrives as ``None`` plus a note to show instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from PySide6.QtCore import QPointF, QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QPixmap, QTransform
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QSizePolicy,
    QSlider,
    QStackedWidget,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .media_style import BACKGROUND, NO_FOCUS, TEXT, compact_row
from .plain_text import LINE_LIMIT, TEXT_LIMIT, bounded, plain_label, tooltip, visible
from .qimage import ImageLike, to_qimage
from .video_strip import FilmStrip

_MIN_ZOOM, _MAX_ZOOM, _ZOOM_STEP = 0.02, 64.0, 1.25


def _button(parent: QWidget, tip: str, slot: Callable, *, text: str = "", icon=None) -> QToolButton:
    btn = QToolButton(parent, autoRaise=True)
    btn.setFocusPolicy(NO_FOCUS)
    btn.setToolTip(tip)
    btn.setText(text)
    if icon is not None:
        btn.setIcon(parent.style().standardIcon(icon))
    btn.clicked.connect(lambda _checked=False: slot())
    return btn


class _Canvas(QGraphicsView):
    """One pixmap in a scene: fit-to-view until the user zooms, then wheel zoom and drag pan."""

    zoomChanged = Signal(float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self._item = QGraphicsPixmapItem()
        self.scene().addItem(self._item)
        self._fit = True
        self.setBackgroundBrush(QColor(BACKGROUND))
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Anchoring is done by hand: Qt's AnchorUnderMouse reads QCursor::pos(), not the event.
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setFocusPolicy(NO_FOCUS)
        self.setMinimumSize(64, 48)

    def has_image(self) -> bool:
        return not self._item.pixmap().isNull()

    def set_image(self, image: QImage) -> None:
        self._item.setPixmap(QPixmap.fromImage(image))
        self.scene().setSceneRect(self._item.boundingRect())
        if self._fit:
            self.fit()

    def clear(self) -> None:
        self._item.setPixmap(QPixmap())
        self._fit = True
        self.resetTransform()

    def zoom_factor(self) -> float:
        return self.transform().m11()

    def fit(self) -> None:
        self._fit = True
        rect, vp = self._item.boundingRect(), self.viewport().rect()
        if rect.isEmpty() or vp.width() < 2 or vp.height() < 2:
            return
        scale = min(vp.width() / rect.width(), vp.height() / rect.height())
        self.setTransform(QTransform.fromScale(scale, scale))
        self.centerOn(rect.center())
        self._changed()

    def set_zoom(self, factor: float, anchor: QPointF | None = None) -> None:
        """Zoom to ``factor`` keeping the scene point under ``anchor`` (view coords) in place."""
        if not self.has_image():
            return
        factor = min(max(factor, _MIN_ZOOM), _MAX_ZOOM)
        pos = (anchor if anchor is not None else QPointF(self.viewport().rect().center())).toPoint()
        scene_pt = self.mapToScene(pos)
        self._fit = False
        self.setTransform(QTransform.fromScale(factor, factor))
        delta = self.mapFromScene(scene_pt) - pos
        self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() + delta.x())
        self.verticalScrollBar().setValue(self.verticalScrollBar().value() + delta.y())
        self._changed()

    def _changed(self) -> None:
        zoom, mode, drag = self.zoom_factor(), Qt.TransformationMode, QGraphicsView.DragMode
        # Smooth when shrinking; crisp pixels when inspecting details up close.
        self._item.setTransformationMode(mode.SmoothTransformation if zoom < 2 else mode.FastTransformation)
        self.setDragMode(drag.NoDrag if self._fit else drag.ScrollHandDrag)
        self.zoomChanged.emit(zoom)

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt API)
        dy = event.angleDelta().y()
        if not dy or not self.has_image():
            event.ignore()
            return
        self.set_zoom(self.zoom_factor() * _ZOOM_STEP ** (dy / 120), event.position())
        event.accept()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if self._fit:
            self.fit()


class MediaView(QWidget):
    """Shows an item's images (one at a time, zoomable) or its video, or a placeholder text.

    Child widgets tests and the window may look up by object name: ``media-placeholder``
    (the text panel), ``media-caption``, ``frame-label`` and ``strip-frame-<index>``
    (film-strip thumbnails). Captions and notes carry dataset paths and decoder messages:
    every label is plain text, every tooltip escaped, both bounded.
    """

    frameChanged = Signal(int)
    imageChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None, *, play_interval_ms: int | None = None) -> None:
        """``play_interval_ms`` overrides the playback interval derived from the video's fps."""
        super().__init__(parent)
        self._interval_override = play_interval_ms
        self._images: list[tuple[str, ImageLike | None, str]] = []
        self._image_index, self._mode = 0, "none"
        self._frame_source: Callable[[int], ImageLike] | None = None
        self._frame_count, self._fps, self._current = 0, 0.0, 0
        self._highlighted: frozenset[int] = frozenset()
        self._highlight_label = "highlighted"
        self._timer = QTimer(self, timerType=Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)
        self._build()
        self.clear()

    def _build(self) -> None:
        sp, ignored = QStyle.StandardPixmap, QSizePolicy.Policy.Ignored
        self._prev_btn = _button(self, "Previous image", self.previous_image, icon=sp.SP_ArrowLeft)
        self._next_btn = _button(self, "Next image", self.next_image, icon=sp.SP_ArrowRight)
        self._counter, self._zoom_label = plain_label(parent=self), plain_label(parent=self)
        self._caption = plain_label(parent=self)
        self._caption.setObjectName("media-caption")
        self._caption.setSizePolicy(QSizePolicy(ignored, QSizePolicy.Policy.Preferred))
        self._zoom_btns = [
            _button(self, "Zoom out", self.zoom_out, text="−"),
            _button(self, "Zoom in", self.zoom_in, text="+"),
            _button(self, "Fit to view", self.zoom_fit, text="Fit"),
            _button(self, "Actual pixels", self.zoom_actual, text="1:1"),
        ]
        header = compact_row(None, self._prev_btn, self._counter, self._next_btn, (self._caption, 1), self._zoom_label)
        for btn in self._zoom_btns:
            header.addWidget(btn)

        self._canvas = _Canvas(self)
        self._canvas.zoomChanged.connect(lambda z: self._zoom_label.setText(f"{z * 100:.0f}%"))
        self._placeholder = plain_label(parent=self, word_wrap=True)  # untrusted paths and decoder messages
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._placeholder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._placeholder.setObjectName("media-placeholder")
        self._placeholder.setSizePolicy(QSizePolicy(ignored, ignored))
        self._placeholder.setStyleSheet(f"background: {BACKGROUND}; color: {TEXT}; padding: 24px; font-size: 13px;")
        self._stack = QStackedWidget(self)
        self._stack.addWidget(self._canvas)
        self._stack.addWidget(self._placeholder)

        self._play_btn = _button(self, "Play / pause", self.toggle_play, icon=sp.SP_MediaPlay)
        back = _button(self, "Previous frame", lambda: self.step(-1), icon=sp.SP_MediaSeekBackward)
        fwd = _button(self, "Next frame", lambda: self.step(+1), icon=sp.SP_MediaSeekForward)
        self._slider = QSlider(Qt.Orientation.Horizontal, self)
        self._slider.setFocusPolicy(NO_FOCUS)
        self._slider.valueChanged.connect(self._slider_moved)
        self._slider.sliderPressed.connect(self.pause)
        self._frame_label = plain_label(parent=self)  # shows the caller's highlight label
        self._frame_label.setObjectName("frame-label")
        self._video_controls = (self._play_btn, back, fwd, self._slider)
        self._video_bar = QWidget(self)
        compact_row(self._video_bar, self._play_btn, back, fwd, (self._slider, 1), self._frame_label)
        self._strip = FilmStrip(self)
        self._strip.frameClicked.connect(self.seek)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(header)
        layout.addWidget(self._stack, 1)
        layout.addWidget(self._video_bar)
        layout.addWidget(self._strip)

    # ----- common -----------------------------------------------------------------------------

    def clear(self) -> None:
        """Stop playback and show nothing."""
        self.pause()
        self._mode, self._images, self._frame_source = "none", [], None
        self._frame_count, self._current, self._highlighted = 0, 0, frozenset()
        self._canvas.clear()
        self._strip.clear()
        self._strip.hide()
        self._video_bar.hide()
        self._set_caption("")
        self._set_nav(0)
        self._show_text("")

    def show_placeholder(self, text: str) -> None:
        """Show only ``text`` (e.g. "This item has no image or video.")."""
        self.clear()
        self._mode = "placeholder"
        self._show_text(text)

    def placeholder_text(self) -> str:
        """The text shown in place of media, or "" while media is showing."""
        return self._placeholder.text() if self._stack.currentWidget() is self._placeholder else ""

    def zoom_factor(self) -> float:
        """Current scale: 1.0 means one image pixel per screen pixel."""
        return self._canvas.zoom_factor()

    def zoom_in(self) -> None:
        """Zoom in one step about the centre of the view."""
        self._canvas.set_zoom(self.zoom_factor() * _ZOOM_STEP)

    def zoom_out(self) -> None:
        """Zoom out one step about the centre of the view."""
        self._canvas.set_zoom(self.zoom_factor() / _ZOOM_STEP)

    def zoom_fit(self) -> None:
        """Fit the whole image in the view (and keep fitting on resize)."""
        self._canvas.fit()

    def zoom_actual(self) -> None:
        """Show one image pixel per screen pixel."""
        self._canvas.set_zoom(1.0)

    def _show_text(self, text: str) -> None:
        self._placeholder.setText(bounded(text, TEXT_LIMIT))
        self._stack.setCurrentWidget(self._placeholder)
        self._set_zoom_enabled(False)

    def _show_qimage(self, image: QImage) -> None:
        self._stack.setCurrentWidget(self._canvas)  # first, so the fit uses the page's real size
        self._canvas.set_image(image)
        self._set_zoom_enabled(True)

    def _set_caption(self, text: str) -> None:
        self._caption.setText(visible(bounded(text, LINE_LIMIT)))
        self._caption.setToolTip(tooltip(text))  # an unescaped tooltip is rendered as HTML

    def _set_zoom_enabled(self, on: bool) -> None:
        for btn in self._zoom_btns:
            btn.setEnabled(on)
        self._zoom_label.setVisible(on)

    def _set_nav(self, count: int) -> None:
        for w in (self._prev_btn, self._counter, self._next_btn):
            w.setVisible(count > 1)
        self._counter.setText(f"image {self._image_index + 1} of {count}")
        self._prev_btn.setEnabled(self._image_index > 0)
        self._next_btn.setEnabled(self._image_index < count - 1)

    # ----- images -----------------------------------------------------------------------------

    def show_images(self, images: Sequence[tuple[str, ImageLike | None, str]]) -> None:
        """Show (caption, PIL image / QImage / None, note) entries one at a time; None shows the note."""
        self.clear()
        self._images = list(images)
        if not self._images:
            self.show_placeholder("This item has no image.")
            return
        self._mode = "images"
        self._show_image(0)

    def image_count(self) -> int:
        return len(self._images)

    def image_index(self) -> int:
        return self._image_index

    def next_image(self) -> None:
        """Show the next image of the item (stops at the last)."""
        if self._mode == "images" and self._image_index < len(self._images) - 1:
            self._show_image(self._image_index + 1)

    def previous_image(self) -> None:
        """Show the previous image of the item (stops at the first)."""
        if self._mode == "images" and self._image_index > 0:
            self._show_image(self._image_index - 1)

    def _show_image(self, index: int) -> None:
        caption, image, note = self._images[index]
        self._image_index = index
        self._set_nav(len(self._images))
        qimage, problem = None, note
        if image is not None:
            try:
                qimage = to_qimage(image)
            except Exception as exc:  # noqa: BLE001 - e.g. a lazily opened, truncated PIL file
                problem = f"Cannot display {caption}: {type(exc).__name__}: {exc}"
        if qimage is None or qimage.isNull():
            self._set_caption(caption)
            self._show_text(problem or f"{caption}: image unavailable")
        else:
            self._set_caption(" · ".join(p for p in (caption, f"{qimage.width()}×{qimage.height()}", note) if p))
            self._canvas.clear()  # each image starts fitted
            self._show_qimage(qimage)
        self.imageChanged.emit(index)

    # ----- video ------------------------------------------------------------------------------

    def show_video(
        self,
        caption: str,
        frame_count: int,
        fps: float,
        strip: Sequence[tuple[int, float, ImageLike]],
        frame_source: Callable[[int], ImageLike],
    ) -> None:
        """Show a video: frame i comes from ``frame_source(i)``; ``strip`` thumbnails seek on click."""
        self.clear()
        self._mode, self._frame_source = "video", frame_source
        self._frame_count = max(0, int(frame_count))
        self._fps = float(fps) if fps and math.isfinite(fps) and fps > 0 else 0.0
        self._timer.setInterval(max(1, self._interval_override or (round(1000 / self._fps) if self._fps else 40)))
        self._set_caption(caption)
        self._strip.set_frames(strip)
        self._strip.setVisible(bool(strip))
        self._video_bar.show()
        with QSignalBlocker(self._slider):
            self._slider.setRange(0, max(0, self._frame_count - 1))
        for w in self._video_controls:
            w.setEnabled(self._frame_count > 0)
        if not self._frame_count:
            self._frame_label.setText("no frames")
            self._show_text(f"{caption}: the video has no frames.")
            return
        self.seek(0)

    def set_highlighted_frames(self, indices: Iterable[int], label: str = "highlighted") -> None:
        """Mark these frame indices in the strip (call after show_video); ``label`` tags them in the frame label."""
        self._highlighted = frozenset(int(i) for i in indices)
        self._highlight_label = label
        self._strip.set_highlighted(self._highlighted)
        if self._mode == "video" and self._frame_count:
            self._update_frame_label()

    def current_frame(self) -> int:
        return self._current

    def is_playing(self) -> bool:
        return self._timer.isActive()

    def toggle_play(self) -> None:
        """Play or pause; playing from the last frame starts over."""
        if self.is_playing():
            self.pause()
        elif self._mode == "video" and self._frame_count > 1:
            if self._current >= self._frame_count - 1:
                self.seek(0)
            self._timer.start()
            self._play_btn.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaPause))

    def pause(self) -> None:
        """Stop playback, staying on the current frame."""
        self._timer.stop()
        self._play_btn.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaPlay))

    def step(self, delta: int) -> None:
        """Pause and move ``delta`` frames, clamped to the video."""
        self.pause()
        self.seek(self._current + delta)

    def seek(self, index: int) -> None:
        """Show frame ``index`` (clamped); an error from the frame source is shown as text."""
        if self._mode != "video" or not self._frame_count or self._frame_source is None:
            return
        self._current = index = min(max(int(index), 0), self._frame_count - 1)
        with QSignalBlocker(self._slider):
            self._slider.setValue(index)
        self._update_frame_label()
        self._strip.set_current(index)
        try:
            image = to_qimage(self._frame_source(index))
            if image.isNull():
                raise ValueError("empty frame")
        except Exception as exc:  # noqa: BLE001 - the window's decoder may raise anything
            self.pause()  # otherwise every tick would hit the same failure
            self._show_text(f"Cannot show frame {index + 1}: {type(exc).__name__}: {exc}")
        else:
            self._show_qimage(image)
        self.frameChanged.emit(index)

    def _update_frame_label(self) -> None:
        i = self._current
        text = f"frame {i + 1} / {self._frame_count}" + (f" · {i / self._fps:.2f} s" if self._fps else "")
        self._frame_label.setText(text + (f" · {self._highlight_label}" if i in self._highlighted else ""))

    def _slider_moved(self, value: int) -> None:
        if value != self._current:
            self.seek(value)

    def _tick(self) -> None:
        if self._current < self._frame_count - 1:
            self.seek(self._current + 1)
        if self._current >= self._frame_count - 1:
            self.pause()

    # ----- Qt events ---------------------------------------------------------------------------

    def hideEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self.pause()  # no timer keeps pulling frames for a view nobody sees
        super().hideEvent(event)
