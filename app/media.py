"""Media loading for the core: images with Pillow, videos with OpenCV (no Qt).

Every failure (missing file, corrupt or truncated data, not an image, a decompression
bomb, an unreadable video frame) surfaces as :class:`MediaError` naming the file and the
reason; raw Pillow/OpenCV/OS errors never escape.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageOps

# Pillow's own warning threshold (~89.5 MP); Pillow itself refuses twice this at open time.
DEFAULT_MAX_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485

_SWAPPING_ORIENTATIONS = {5, 6, 7, 8}  # EXIF orientations that exchange width and height
_EXIF_ORIENTATION = 0x0112


class MediaError(Exception):
    """A media file could not be used; carries ``path`` and a human-readable ``reason``."""

    def __init__(self, path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


@dataclass(frozen=True)
class ImageInfo:
    width: int
    height: int
    format: str | None


@dataclass(frozen=True)
class VideoInfo:
    frame_count: int
    fps: float
    duration_s: float
    width: int
    height: int


@dataclass(frozen=True, eq=False)
class Frame:
    index: int
    timestamp_s: float
    image: Image.Image = field(repr=False)


def _existing(path) -> Path:
    p = Path(path)
    if not p.exists():
        raise MediaError(p, "file not found")
    if not p.is_file():
        raise MediaError(p, "not a regular file")
    return p


def _open_header(p: Path) -> Image.Image:
    """``Image.open`` with every failure mapped to MediaError (header only, no decode)."""
    try:
        with warnings.catch_warnings():
            # Our own max_pixels check (below) decides; Pillow's warning is redundant noise.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            return Image.open(p)
    except Image.DecompressionBombError as exc:
        raise MediaError(p, f"refused as a possible decompression bomb: {exc}") from exc
    except Image.UnidentifiedImageError as exc:
        raise MediaError(p, "not a recognised image format (or the file is corrupt)") from exc
    except Exception as exc:  # noqa: BLE001 - Pillow plugins raise many exception types
        raise MediaError(p, f"cannot read image header: {type(exc).__name__}: {exc}") from exc


def image_info(path) -> ImageInfo:
    """Size and format from the header only (no pixel decoding; EXIF rotation not applied)."""
    p = _existing(path)
    with _open_header(p) as img:
        return ImageInfo(img.size[0], img.size[1], img.format)


def _has_alpha(img: Image.Image) -> bool:
    return img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (img.mode == "P" and "transparency" in img.info)


def _high_depth_to_l(img: Image.Image) -> Image.Image:
    """16-bit / 32-bit greyscale to 8 bits by scaling (Pillow's own convert clips at 255)."""
    import numpy as np

    arr = np.asarray(img).astype(np.float64)
    top = 65535.0 if img.mode.startswith("I;16") else max(float(arr.max(initial=0.0)), 255.0)
    return Image.fromarray(np.clip(arr * (255.0 / top), 0, 255).astype(np.uint8))


def open_image(
    path,
    max_size: tuple[int, int] | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> Image.Image:
    """Decode an image upright (EXIF orientation applied), in RGB or RGBA.

    The pixel count is checked from the header before decoding; above ``max_pixels`` the
    file is refused with :class:`MediaError`. With ``max_size`` (width, height) the result
    fits inside it (aspect ratio kept, never enlarged), and JPEGs are decoded with DCT
    scaling (``draft``) straight to roughly that size (~2.3x faster for a 12 MP photo).
    """
    if max_size is not None and (int(max_size[0]) < 1 or int(max_size[1]) < 1):
        raise ValueError(f"max_size must be positive, got {max_size!r}")
    p = _existing(path)
    with _open_header(p) as img:
        w, h = img.size
        if w * h > max_pixels:
            raise MediaError(p, f"image is {w}x{h} = {w * h:,} pixels, over the limit of {max_pixels:,} pixels")
        try:
            if max_size is not None:
                mw, mh = int(max_size[0]), int(max_size[1])
                orientation = img.getexif().get(_EXIF_ORIENTATION, 1)
                # draft works on the stored (unrotated) pixels: swap the box for 90° turns.
                draft_box = (mh, mw) if orientation in _SWAPPING_ORIENTATIONS else (mw, mh)
                img.draft("RGB", draft_box)
            img.load()
            out = ImageOps.exif_transpose(img)
            if max_size is not None:
                out.thumbnail((mw, mh), Image.Resampling.LANCZOS)
            if _has_alpha(out):
                return out.convert("RGBA")
            if out.mode.startswith("I") or out.mode == "F":
                out = _high_depth_to_l(out)
            return out.convert("RGB")
        except Exception as exc:  # noqa: BLE001 - truncated data is OSError, others vary
            raise MediaError(p, f"cannot decode image: {type(exc).__name__}: {exc}") from exc


# -- stored media paths -------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredPath:
    """Where a media path stored in a project points (:func:`follow_stored`): ``name``, the
    file's name inside the project's own media store (a blob in the file, or a file in its media
    folder), ``file``, the file to read, or ``problem``, why the path may not be followed."""

    name: str | None = None
    file: Path | None = None
    problem: str | None = None


def follow_stored(media_dir: Path, stored: str, *, outside: bool = True) -> StoredPath:
    """The one rule for following a media path stored in a project whose media folder is
    ``media_dir`` (export, pack, merge, the window: every reader).

    A relative path (``<stem>_media/ab/ab12….png``, as PairScope writes it) names a file of
    the project's own media store: the part after the first folder is its name there, read
    from ``media_dir`` (so a project renamed with its folder still finds it; with ``outside``,
    a project renamed alone finds it in the ``*_media`` folder the path names); a ``..`` or an
    empty part, or a link that leads out of the media folder once resolved, is refused. An
    absolute path is what an import found (inside the media root it was given): followed only
    with ``outside`` — never for a pack or merge input, whose paths stay inside its own store.
    """
    shown = stored if len(stored) <= 80 else stored[:77] + "…"
    if os.path.isabs(stored) or stored.startswith("~"):
        if outside:
            return StoredPath(file=Path(stored))
        return StoredPath(problem=f"'{shown}' is an absolute path, outside the project's own media store")
    parts = stored.replace("\\", "/").split("/")
    if len(parts) < 2 or any(part in ("", ".", "..") for part in parts):
        return StoredPath(problem=f"'{shown}' leaves the project's own media store")
    name = "/".join(parts[1:])
    folder = media_dir.absolute()
    if outside and parts[0] != folder.name and parts[0].endswith("_media"):
        earlier = folder.with_name(parts[0])  # the project renamed without its media folder
        if not (folder / name).exists() and (earlier / name).exists():
            folder = earlier
    base = os.path.realpath(folder)
    if not os.path.realpath(os.path.join(base, name)).startswith(base.rstrip(os.sep) + os.sep):
        return StoredPath(problem=f"'{shown}' is a link that leads out of the project's own media store")
    return StoredPath(name=name, file=folder / name)


# -- video --------------------------------------------------------------------------------------


def _capture(p: Path):
    import cv2  # imported here: image-only users never pay for OpenCV

    cap = cv2.VideoCapture(str(p))
    if not cap.isOpened():
        cap.release()
        raise MediaError(p, "not a readable video (OpenCV could not open it)")
    return cv2, cap


def video_info(path) -> VideoInfo:
    """Frame count, fps, duration and frame size as reported by the container.

    Containers that report no frame count are counted by reading through the file.
    """
    p = _existing(path)
    cv2, cap = _capture(p)
    try:
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
        width = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH) or 0)
        height = int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT) or 0)
        if n <= 0:
            while cap.grab():
                n += 1
        if n <= 0 or width <= 0 or height <= 0:
            raise MediaError(p, f"video has no readable frames ({n} frames, {width}x{height})")
        duration = n / fps if fps > 0 else 0.0
        return VideoInfo(n, fps, duration, width, height)
    finally:
        cap.release()


def frame_indices(n: int, k: int) -> list[int]:
    """The frames :func:`sample_frames` picks: ``round(linspace(0, n-1, k))``, halves up.

    The first and last frames are always included (for ``k >= 2``); ``k >= n`` gives every
    frame once. This is the Qwen-VL convention (lmms-eval truncates instead of rounding).
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if n <= 0:
        return []
    if k >= n:
        return list(range(n))
    if k == 1:
        return [0]
    step = (n - 1) / (k - 1)
    return [int(i * step + 0.5) for i in range(k)]


def _to_pil(cv2, bgr, max_size) -> Image.Image:
    img = Image.fromarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    if max_size is not None:
        img.thumbnail((int(max_size[0]), int(max_size[1])), Image.Resampling.LANCZOS)
    return img


def sample_frames(path, k: int, max_size: tuple[int, int] | None = None) -> list[Frame]:
    """``k`` uniformly spaced frames (see :func:`frame_indices`) as RGB images.

    Frames are fetched by seeking (``CAP_PROP_POS_FRAMES``); if a seek or read fails the
    video is read sequentially instead. Timestamps are ``index / fps``.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    info = video_info(path)
    p = Path(path)
    wanted = frame_indices(info.frame_count, k)
    fps = info.fps

    def frame(i: int, bgr) -> Frame:
        return Frame(i, i / fps if fps > 0 else 0.0, _to_pil(cv2, bgr, max_size))

    cv2, cap = _capture(p)
    got: list[Frame] = []
    try:
        # Dense sampling is cheaper as one sequential pass than as many seeks.
        if len(wanted) * 4 < info.frame_count:
            for i in wanted:
                if not cap.set(cv2.CAP_PROP_POS_FRAMES, i):
                    break
                ok, bgr = cap.read()
                if not ok or bgr is None:
                    break
                got.append(frame(i, bgr))
        if len(got) < len(wanted):
            cap.release()
            cv2, cap = _capture(p)
            got, targets, pos = [], set(wanted), 0
            while len(got) < len(wanted):
                ok, bgr = cap.read()
                if not ok or bgr is None:
                    missing = next(i for i in wanted if i >= pos)
                    raise MediaError(p, f"cannot read frame {missing} (video has {info.frame_count} frames)")
                if pos in targets:
                    got.append(frame(pos, bgr))
                pos += 1
        return got
    finally:
        cap.release()


class VideoReader:
    """Frames of one video by index, keeping the file open: sequential reads (playback)
    are cheap, anything else seeks. Close it, or use it as a context manager."""

    def __init__(self, path, max_size: tuple[int, int] | None = None):
        self.path = _existing(path)
        self.info = video_info(self.path)
        self.max_size = max_size
        self._cv2, self._cap = _capture(self.path)
        self._next = 0

    def frame(self, index: int) -> Image.Image:
        """Frame ``index`` as an RGB image; :class:`MediaError` if it cannot be read."""
        if not 0 <= index < self.info.frame_count:
            raise MediaError(self.path, f"frame {index} is outside 0..{self.info.frame_count - 1}")
        cv2, cap = self._cv2, self._cap
        if index != self._next and not cap.set(cv2.CAP_PROP_POS_FRAMES, index):
            raise MediaError(self.path, f"cannot seek to frame {index}")
        ok, bgr = cap.read()
        if not ok or bgr is None:
            self._next = -1
            raise MediaError(self.path, f"cannot read frame {index}")
        self._next = index + 1
        return _to_pil(cv2, bgr, self.max_size)

    def close(self) -> None:
        self._cap.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
