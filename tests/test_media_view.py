"""MediaView: image fit/zoom/pan, placeholders, video playback and the film strip (offscreen)."""

from __future__ import annotations

import pytest
from PIL import Image
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QImage, QWheelEvent
from PySide6.QtWidgets import QApplication, QLabel, QToolButton

from helpers import WAIT_MS
from pairscope.widgets.media_view import MediaView
from pairscope.widgets.qimage import pil_to_qimage


@pytest.fixture
def view(qtbot):
    v = MediaView(play_interval_ms=1)
    qtbot.addWidget(v)
    v.resize(640, 480)
    v.show()
    qtbot.waitExposed(v)
    return v


def wheel(widget, pos: QPoint, dy: int) -> None:
    event = QWheelEvent(
        QPointF(pos),
        QPointF(widget.mapToGlobal(pos)),
        QPoint(0, 0),
        QPoint(0, dy),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def placeholder(view) -> QLabel:
    return view.findChild(QLabel, "media-placeholder")


class Frames:
    """A frame source that records which frames were asked for."""

    def __init__(self, fail_at: int | None = None):
        self.calls: list[int] = []
        self.fail_at = fail_at

    def __call__(self, i: int) -> Image.Image:
        self.calls.append(i)
        if i == self.fail_at:
            raise OSError(f"decoder gave up at frame {i}")
        return Image.new("RGB", (32, 24), (i * 40 % 256, 0, 0))


def show_video(view, n=5, fps=25.0, source=None, strip_every=2):
    source = source or Frames()
    strip = [(i, i / fps, Image.new("RGB", (32, 24), "gray")) for i in range(0, n, strip_every)]
    view.show_video("clip.mp4", n, fps, strip, source)
    return source


def test_fit_then_zoom_in_out_and_actual(view):
    view.show_images([("a.png", Image.new("RGB", (2000, 1000), "blue"), "")])
    fit = view.zoom_factor()
    assert 0.1 < fit < 0.5  # 2000 px wide squeezed into ~640
    view.zoom_in()
    assert view.zoom_factor() == pytest.approx(fit * 1.25)
    view.zoom_out()
    view.zoom_out()
    assert view.zoom_factor() == pytest.approx(fit / 1.25)
    view.zoom_actual()
    assert view.zoom_factor() == pytest.approx(1.0)
    view.zoom_fit()
    assert view.zoom_factor() == pytest.approx(fit)


def test_fit_follows_resize_until_the_user_zooms(view, qtbot):
    view.show_images([("a.png", Image.new("RGB", (2000, 1000), "blue"), "")])
    fit = view.zoom_factor()
    view.resize(1280, 960)
    qtbot.waitUntil(lambda: view.zoom_factor() > fit * 1.5)
    view.zoom_actual()
    view.resize(640, 480)
    qtbot.wait(0)
    assert view.zoom_factor() == pytest.approx(1.0)


def test_wheel_zooms_anchored_under_the_cursor(view):
    view.show_images([("a.png", Image.new("RGB", (2000, 1000), "blue"), "")])
    view.zoom_actual()
    canvas = view._canvas
    pos = QPoint(100, 80)
    before = canvas.mapToScene(pos)
    wheel(canvas.viewport(), pos, 120)
    assert view.zoom_factor() == pytest.approx(1.25)
    after = canvas.mapToScene(pos)
    assert abs(after.x() - before.x()) <= 2 and abs(after.y() - before.y()) <= 2
    wheel(canvas.viewport(), pos, -240)
    assert view.zoom_factor() == pytest.approx(1.25 / 1.25**2)


def test_multiple_images_switch_and_clamp(view, qtbot):
    images = [(f"img{i}.png", Image.new("RGB", (40 + i, 30), "green"), "") for i in range(3)]
    view.show_images(images)
    counter = view._counter
    assert view.image_count() == 3 and view.image_index() == 0
    assert counter.isVisible() and counter.text() == "image 1 of 3"
    with qtbot.waitSignal(view.imageChanged) as sig:
        view.next_image()
    assert sig.args == [1] and counter.text() == "image 2 of 3"
    view.next_image()
    view.next_image()
    assert view.image_index() == 2
    view.previous_image()
    assert view.image_index() == 1
    view.show_images(images[:1])
    assert not counter.isVisible()


def test_missing_image_shows_its_note(view):
    note = "Missing image: imgs/a.png — not found (looked in /data/imgs)"
    view.show_images([("imgs/a.png", None, note), ("b.png", Image.new("RGB", (8, 8)), "")])
    label = placeholder(view)
    assert label.isVisible() and label.text() == note and view.placeholder_text() == note
    assert label.textFormat() == Qt.TextFormat.PlainText
    view.next_image()
    assert not label.isVisible() and view.placeholder_text() == ""


def test_broken_pil_image_shows_an_error_not_a_crash(view, tmp_path):
    path = tmp_path / "cut.png"
    Image.new("RGB", (200, 200), "red").save(path)
    path.write_bytes(path.read_bytes()[:100])
    view.show_images([("cut.png", Image.open(path), "")])  # lazily opened: decoding fails here
    assert "Cannot display cut.png" in view.placeholder_text()


def test_placeholder_and_empty(view):
    view.show_placeholder("This item has no image or video.")
    assert placeholder(view).isVisible()
    assert view.placeholder_text() == "This item has no image or video."
    view.show_images([])
    assert view.placeholder_text() == "This item has no image."


def test_large_image_and_qimage_input(view):
    view.show_images([("big.jpg", Image.new("RGB", (4000, 3000), "white"), "")])
    assert view.zoom_factor() < 0.2 and view.placeholder_text() == ""
    view.grab()
    qimg = QImage(50, 40, QImage.Format.Format_RGB32)
    qimg.fill(QColor("yellow"))
    view.show_images([("prepared", qimg, "")])
    assert view.placeholder_text() == "" and "50×40" in view._caption.text()


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "1", "P", "CMYK", "I;16", "F", "LA"])
def test_pil_conversion_modes(mode):
    img = Image.new("RGB", (7, 5), (200, 10, 10)).convert(mode)
    q = pil_to_qimage(img)
    assert (q.width(), q.height()) == (7, 5) and not q.isNull()
    del img  # the QImage owns its pixels
    q.pixelColor(6, 4)


def test_red_image_is_painted(view, qtbot):
    view.show_images([("red.png", Image.new("RGB", (300, 200), (255, 0, 0)), "")])
    qtbot.wait(0)
    shot = view.grab().toImage()
    centre = shot.pixelColor(shot.width() // 2, shot.height() // 2)
    assert (centre.red(), centre.green(), centre.blue()) == (255, 0, 0)


def test_strip_click_seeks(view, qtbot):
    source = show_video(view, n=9, fps=4.0)
    assert source.calls == [0]
    label = view.findChild(QLabel, "frame-label")
    assert label.text() == "frame 1 / 9 · 0.00 s"
    thumb = view.findChild(QToolButton, "strip-frame-6")
    with qtbot.waitSignal(view.frameChanged) as sig:
        qtbot.mouseClick(thumb, Qt.MouseButton.LeftButton)
    assert sig.args == [6] and source.calls[-1] == 6 and view.current_frame() == 6
    assert label.text() == "frame 7 / 9 · 1.50 s"
    assert view._slider.value() == 6


def test_step_clamps_at_both_ends(view):
    source = show_video(view, n=3)
    view.step(-1)
    assert view.current_frame() == 0
    view.step(+1)
    view.step(+1)
    view.step(+1)
    assert view.current_frame() == 2 and source.calls[-1] == 2
    view.seek(99)
    assert view.current_frame() == 2
    view.step(-1)
    assert view.current_frame() == 1


def test_play_advances_and_stops_at_the_end(view, qtbot):
    source = show_video(view, n=5)
    view.toggle_play()
    assert view.is_playing()
    qtbot.waitUntil(lambda: not view.is_playing(), timeout=WAIT_MS)
    assert view.current_frame() == 4 and source.calls == [0, 1, 2, 3, 4]
    view.toggle_play()  # from the end: starts over
    assert view.is_playing() and view.current_frame() == 0
    view.toggle_play()
    assert not view.is_playing()


def test_frame_source_error_is_shown(view, qtbot):
    show_video(view, n=5, source=Frames(fail_at=2))
    view.toggle_play()
    qtbot.waitUntil(lambda: not view.is_playing(), timeout=WAIT_MS)
    assert view.current_frame() == 2
    assert "decoder gave up at frame 2" in view.placeholder_text() and placeholder(view).isVisible()
    view.step(+1)
    assert view.placeholder_text() == ""


def test_highlighted_frames(view):
    show_video(view, n=9, fps=4.0)
    view.set_highlighted_frames([0, 4])
    label = view.findChild(QLabel, "frame-label")
    assert label.text().endswith("· highlighted")
    view.seek(1)
    assert "highlighted" not in label.text()
    assert "f5a623" in view.findChild(QToolButton, "strip-frame-4").styleSheet()
    assert "f5a623" not in view.findChild(QToolButton, "strip-frame-2").styleSheet()


def test_clear_and_hide_stop_the_timer(view, qtbot):
    show_video(view, n=1000)
    view.toggle_play()
    assert view.is_playing()
    view.clear()
    assert not view.is_playing() and view.current_frame() == 0
    show_video(view, n=1000)
    view.toggle_play()
    view.hide()
    assert not view.is_playing()


def test_video_without_frames(view):
    view.show_video("empty.mp4", 0, 30.0, [], Frames())
    assert "no frames" in view.placeholder_text()
    view.toggle_play()
    view.step(1)
    assert not view.is_playing()


def test_drag_pans_when_zoomed(view):
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QMouseEvent

    view.show_images([("a.png", Image.new("RGB", (3000, 2000), "blue"), "")])
    view.zoom_actual()
    vp = view._canvas.viewport()
    hbar, vbar = view._canvas.horizontalScrollBar(), view._canvas.verticalScrollBar()
    h0, v0 = hbar.value(), vbar.value()

    def send(kind, pos, buttons):
        p = QPointF(pos)
        QApplication.sendEvent(
            vp,
            QMouseEvent(
                kind,
                p,
                QPointF(vp.mapToGlobal(pos)),
                Qt.MouseButton.LeftButton,
                buttons,
                Qt.KeyboardModifier.NoModifier,
            ),
        )

    send(QEvent.Type.MouseButtonPress, QPoint(300, 200), Qt.MouseButton.LeftButton)
    send(QEvent.Type.MouseMove, QPoint(250, 170), Qt.MouseButton.LeftButton)
    send(QEvent.Type.MouseButtonRelease, QPoint(250, 170), Qt.MouseButton.NoButton)
    assert (hbar.value() - h0, vbar.value() - v0) == (50, 30)


def test_same_video_twice_leaves_one_strip(view):
    show_video(view, n=9)
    show_video(view, n=9)
    assert len(view.findChildren(QToolButton, "strip-frame-4")) == 1


# ----- decoded media: the format that QPixmap takes as is, and prefetching after the paint -----


def test_pil_conversion_gives_the_pixmap_format_and_the_same_pixels(qapp):
    from PySide6.QtGui import QPixmap

    rgb = pil_to_qimage(Image.new("RGB", (6, 4), (12, 200, 99)))
    assert rgb.format() == QImage.Format.Format_RGB32
    assert rgb.pixelColor(5, 3).getRgb() == (12, 200, 99, 255)
    grey = pil_to_qimage(Image.new("L", (3, 2), 77))
    assert grey.format() == QImage.Format.Format_RGB32 and grey.pixelColor(2, 1).getRgb() == (77, 77, 77, 255)
    rgba = pil_to_qimage(Image.new("RGBA", (3, 2), (255, 0, 0, 128)))
    assert rgba.format() == QImage.Format.Format_ARGB32_Premultiplied
    r, g, b, a = rgba.pixelColor(0, 0).getRgb()
    assert (g, b, a) == (0, 0, 128) and r >= 254  # premultiplied and back: ±1
    # A pixmap of it shares the pixels instead of converting them (the GUI thread's part).
    pixmap = QPixmap.fromImage(rgb)
    assert pixmap.toImage().format() == QImage.Format.Format_RGB32


def _image_item(tmp_path, item_id: int, colour):
    from pairscope.app.records import Item, MediaRef, Response

    path = tmp_path / f"img{item_id}.png"
    Image.new("RGB", (40, 30), colour).save(path)
    return Item(
        ext_id=f"i{item_id}",
        prompt="p",
        responses=(Response(0, "a"), Response(1, "b")),
        media=(MediaRef("image", path.name, str(path)),),
        id=item_id,
    )


def _count_decodes(monkeypatch) -> list[int]:
    from pairscope.app.gui import media_loader

    decoded: list[int] = []
    real = media_loader.load_media

    def counting(item, *args, **kwargs):
        decoded.append(item.id)
        return real(item, *args, **kwargs)

    monkeypatch.setattr(media_loader, "load_media", counting)
    return decoded


def test_loader_prefetches_only_after_the_gui_had_its_turn(qtbot, tmp_path, monkeypatch):
    """The requested item is decoded at once; neighbours wait (here: far longer than the
    test runs), and a neighbour the user steps onto is decoded at once."""
    from pairscope.app.gui.media_loader import MediaLoader

    decoded = _count_decodes(monkeypatch)
    a, b = _image_item(tmp_path, 1, "red"), _image_item(tmp_path, 2, "blue")
    loader = MediaLoader(prefetch_delay_s=3600)
    try:
        with qtbot.waitSignal(loader.loaded, timeout=10_000) as got:
            assert loader.request(a, prefetch=(b,)) is None
        assert got.args[0].item_id == 1 and got.args[0].images[0][1].width() == 40
        qtbot.wait(100)
        assert decoded == [1] and loader.cached(2) is None  # the neighbour is still waiting
        with qtbot.waitSignal(loader.loaded, timeout=10_000) as got:
            assert loader.request(b, prefetch=(a,)) is None  # stepped onto it: no wait
        assert got.args[0].item_id == 2 and decoded == [1, 2]
        assert loader.request(a) is not None  # still cached
    finally:
        loader.stop()


def test_loader_prefetch_arrives_without_a_delay(qtbot, tmp_path, monkeypatch):
    from pairscope.app.gui.media_loader import MediaLoader

    decoded = _count_decodes(monkeypatch)
    a, b = _image_item(tmp_path, 1, "red"), _image_item(tmp_path, 2, "blue")
    loader = MediaLoader(prefetch_delay_s=0)
    try:
        with qtbot.waitSignals([loader.loaded, loader.loaded], timeout=10_000):
            loader.request(a, prefetch=(b,))
        qtbot.waitUntil(lambda: loader.cached(2) is not None, timeout=10_000)
        assert decoded == [1, 2]
        hit = loader.request(b, prefetch=(a,))
        assert hit is not None and hit.images[0][1].pixelColor(0, 0).getRgb() == (0, 0, 255, 255)
    finally:
        loader.stop()


def test_loader_stop_frees_the_decoded_images(qtbot, tmp_path):
    """A closed window's loader lets go of its decoded images at once (not when a full
    garbage collection reaches the window's reference cycles)."""
    from pairscope.app.gui.media_loader import MediaLoader

    loader = MediaLoader(prefetch_delay_s=0)
    with qtbot.waitSignal(loader.loaded, timeout=10_000):
        loader.request(_image_item(tmp_path, 1, "red"))
    assert loader.cached(1) is not None
    loader.stop()
    assert loader.cached(1) is None
