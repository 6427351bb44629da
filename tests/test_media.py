"""Media loading on real files: EXIF rotation, bomb guard, corrupt input, video sampling."""

from __future__ import annotations

import struct
import warnings
import zlib

import cv2
import numpy as np
import pytest
from PIL import Image, JpegImagePlugin

from pairscope.app import media
from pairscope.app.media import (
    MediaError,
    frame_indices,
    image_info,
    open_image,
    sample_frames,
    video_info,
)

# -- images -------------------------------------------------------------------------------------


def _two_colour_jpeg(path, size=(40, 20), orientation=None):
    """Left half red, right half blue; optionally tagged with an EXIF orientation."""
    img = Image.new("RGB", size, (255, 0, 0))
    img.paste((0, 0, 255), (size[0] // 2, 0, size[0], size[1]))
    exif = Image.Exif()
    if orientation:
        exif[0x0112] = orientation
    img.save(path, "JPEG", quality=95, exif=exif.tobytes())
    return path


def _png_header_only(path, width, height):
    """A PNG whose IHDR claims ``width x height`` 1-bit pixels and that has no image data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b""))
    return path


def _px(img, x, y):
    return np.asarray(img.convert("RGB"))[y, x].astype(int)


def test_exif_rotated_jpeg_comes_out_upright(tmp_path):
    path = _two_colour_jpeg(tmp_path / "rot.jpg", orientation=6)  # 6: display rotated 90° clockwise
    assert image_info(path) == media.ImageInfo(40, 20, "JPEG")  # header: stored size
    img = open_image(path)
    assert img.size == (20, 40) and img.mode == "RGB"
    top, bottom = _px(img, 10, 3), _px(img, 10, 36)
    assert top[0] > 200 and top[2] < 60, top  # the stored left (red) half is now on top
    assert bottom[2] > 200 and bottom[0] < 60, bottom


def test_exif_rotation_with_max_size_swaps_the_draft_box(tmp_path, monkeypatch):
    path = _two_colour_jpeg(tmp_path / "big.jpg", size=(1600, 800), orientation=8)
    calls = []
    real = JpegImagePlugin.JpegImageFile.draft
    monkeypatch.setattr(
        JpegImagePlugin.JpegImageFile,
        "draft",
        lambda self, mode, size: calls.append((mode, size)) or real(self, mode, size),
    )
    img = open_image(path, max_size=(100, 200))
    assert img.size == (100, 200)
    assert calls == [("RGB", (200, 100))]  # the stored pixels are landscape


def test_draft_mode_decodes_small_and_fits_max_size(tmp_path, monkeypatch):
    path = tmp_path / "photo.jpg"
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (1200, 1600, 3), dtype=np.uint8)).save(path, quality=80)
    sizes = []
    real_load = JpegImagePlugin.JpegImageFile.load
    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "load", lambda self: sizes.append(self.size) or real_load(self))
    img = open_image(path, max_size=(300, 200))
    assert img.size[0] <= 300 and img.size[1] <= 200 and max(img.size) > 0
    assert img.size == (267, 200)  # aspect ratio kept, fitted to the height
    assert sizes and sizes[0] == (400, 300)  # DCT-scaled 1/4 decode, not 1600x1200
    assert open_image(path).size == (1600, 1200)  # no max_size: full resolution


def test_pixel_limit_is_checked_from_the_header(tmp_path):
    path = tmp_path / "a.png"
    Image.new("RGB", (100, 100), "white").save(path)
    with pytest.raises(MediaError) as err:
        open_image(path, max_pixels=5_000)
    msg = str(err.value)
    assert "a.png" in msg and "100x100" in msg and "10,000 pixels" in msg and "5,000" in msg
    assert err.value.path == str(path)
    assert open_image(path, max_pixels=10_000).size == (100, 100)


def test_decompression_bomb_refused_without_decoding_or_warning(tmp_path):
    bomb = _png_header_only(tmp_path / "bomb.png", 10_000, 10_000)  # 1e8 px: Pillow only warns
    assert image_info(bomb) == media.ImageInfo(10_000, 10_000, "PNG")  # header only, no decode
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(MediaError, match=r"bomb\.png.*100,000,000 pixels, over the limit"):
            open_image(bomb)
    assert not [w for w in caught if issubclass(w.category, Image.DecompressionBombWarning)]
    huge = _png_header_only(tmp_path / "huge.png", 30_000, 30_000)  # > 2x limit: Pillow's error
    with pytest.raises(MediaError, match=r"huge\.png.*decompression bomb.*900000000 pixels"):
        open_image(huge)
    with pytest.raises(MediaError, match="decompression bomb"):
        image_info(huge)


def test_truncated_jpeg_is_a_media_error(tmp_path):
    path = tmp_path / "cut.jpg"
    rng = np.random.default_rng(1)
    Image.fromarray(rng.integers(0, 255, (200, 200, 3), dtype=np.uint8)).save(path, quality=90)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(MediaError, match=r"cut\.jpg: cannot decode image.*truncated"):
        open_image(path)


@pytest.mark.parametrize("content", [b"this is not a picture\n", b""])
def test_non_image_named_jpg_is_a_media_error(tmp_path, content):
    path = tmp_path / "notes.jpg"
    path.write_bytes(content)
    with pytest.raises(MediaError, match=r"notes\.jpg: not a recognised image"):
        open_image(path)
    with pytest.raises(MediaError):
        image_info(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(MediaError, match=r"nope\.png: file not found"):
        open_image(tmp_path / "nope.png")
    with pytest.raises(MediaError, match="not a regular file"):
        open_image(tmp_path)
    with pytest.raises(MediaError, match="file not found"):
        video_info(tmp_path / "nope.mp4")


def test_modes_become_rgb_or_rgba(tmp_path):
    Image.new("RGBA", (4, 4), (1, 2, 3, 128)).save(tmp_path / "a.png")
    Image.new("L", (4, 4), 77).save(tmp_path / "l.png")
    pal = Image.new("P", (4, 4), 0)
    pal.info["transparency"] = 0
    pal.save(tmp_path / "p.png", transparency=0)
    Image.fromarray(np.full((4, 4), 65535, np.uint16)).save(tmp_path / "deep.png")
    assert open_image(tmp_path / "a.png").mode == "RGBA"
    assert open_image(tmp_path / "p.png").mode == "RGBA"
    assert open_image(tmp_path / "l.png").getpixel((0, 0)) == (77, 77, 77)
    deep = open_image(tmp_path / "deep.png")
    assert deep.mode == "RGB" and deep.getpixel((0, 0)) == (255, 255, 255)


# -- video --------------------------------------------------------------------------------------

N_FRAMES, FPS = 48, 12


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """48 frames at 12 fps: grey level 5*i encodes the index; a red block in the first half,
    a blue block in the second."""
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (160, 120))
    assert writer.isOpened()
    for i in range(N_FRAMES):
        frame = np.full((120, 160, 3), 5 * i, np.uint8)
        if i < N_FRAMES // 2:
            frame[10:40, 10:40] = (0, 0, 255)  # BGR red, top left
        else:
            frame[80:110, 120:150] = (255, 0, 0)  # BGR blue, bottom right
        writer.write(frame)
    writer.release()
    return path


def _grey(frame):
    return float(np.asarray(frame.image)[50:70, 60:100].mean())


def test_video_info(clip):
    info = video_info(clip)
    assert (info.frame_count, info.width, info.height) == (N_FRAMES, 160, 120)
    assert info.fps == pytest.approx(FPS) and info.duration_s == pytest.approx(N_FRAMES / FPS)


def test_frame_indices_convention():
    assert frame_indices(10, 4) == [0, 3, 6, 9]
    assert frame_indices(48, 2) == [0, 47]
    assert frame_indices(48, 1) == [0]
    assert frame_indices(5, 9) == [0, 1, 2, 3, 4]
    idx = frame_indices(1000, 64)
    assert len(set(idx)) == 64 and idx == sorted(idx) and idx[-1] == 999
    with pytest.raises(ValueError):
        frame_indices(10, 0)


@pytest.mark.parametrize("k", [4, 20])  # 4: seeking; 20: one sequential pass
def test_sample_frames_are_the_frames_they_claim(clip, k):
    frames = sample_frames(clip, k)
    assert [f.index for f in frames] == frame_indices(N_FRAMES, k)
    assert frames[0].index == 0 and frames[0].timestamp_s == 0.0
    assert frames[-1].index == N_FRAMES - 1
    assert frames[-1].timestamp_s == pytest.approx((N_FRAMES - 1) / FPS)
    assert all(a.timestamp_s < b.timestamp_s for a, b in zip(frames, frames[1:]))
    for f in frames:
        assert f.image.mode == "RGB" and f.image.size == (160, 120)
        assert abs(_grey(f) - 5 * f.index) < 4, (f.index, _grey(f))
        red, blue = _px(f.image, 25, 25), _px(f.image, 135, 95)
        if f.index < N_FRAMES // 2:
            assert red[0] > 180 and red[2] < 80, (f.index, red)
        else:
            assert blue[2] > 180 and blue[0] < 80, (f.index, blue)


def test_sample_frames_more_than_the_video_has(clip):
    frames = sample_frames(clip, 500, max_size=(80, 80))
    assert [f.index for f in frames] == list(range(N_FRAMES))
    assert frames[0].image.size == (80, 60)
    with pytest.raises(ValueError):
        sample_frames(clip, 0)


def test_failed_seek_falls_back_to_sequential_read(clip, monkeypatch):
    real = cv2.VideoCapture

    class NoSeek:
        def __init__(self, *args):
            self._cap = real(*args)

        def set(self, *args):
            return False

        def __getattr__(self, name):
            return getattr(self._cap, name)

    monkeypatch.setattr(cv2, "VideoCapture", NoSeek)
    frames = sample_frames(clip, 4)
    assert [f.index for f in frames] == [0, 16, 31, 47]
    assert all(abs(_grey(f) - 5 * f.index) < 4 for f in frames)


def test_unreadable_frame_names_its_index(clip, monkeypatch):
    monkeypatch.setattr(media, "video_info", lambda p: media.VideoInfo(60, 12.0, 5.0, 160, 120))
    with pytest.raises(MediaError, match="cannot read frame 59"):
        sample_frames(clip, 3)


def test_corrupt_and_truncated_mp4(tmp_path, clip):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(np.random.default_rng(2).integers(0, 255, 20_000, dtype=np.uint8).tobytes())
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(clip.read_bytes()[: clip.stat().st_size // 2])
    for bad in (junk, cut):
        with pytest.raises(MediaError, match=rf"{bad.name}: not a readable video"):
            video_info(bad)
        with pytest.raises(MediaError):
            sample_frames(bad, 4)
