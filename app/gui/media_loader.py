"""Media decode off the GUI thread, with prefetch of neighbouring items.

One worker thread decodes an item's images (or its video's metadata and frame strip)
into QImages at display size, already in the format the screen's pixmaps use (so that
showing one on the GUI thread converts nothing), and hands them to the GUI thread through
a signal. The newest request is served first; finished results stay in a small LRU cache
so that stepping back and forth paints from memory.

Prefetching waits until the GUI thread has shown the current item: a decode on the worker
takes the GIL and a core in many short turns, and when it overlapped the window's own
work of showing the next item it made that ~1.5–2× slower (p95 14.7 ms → 8.1 ms with
the wait, bench/annotation_bench.py). The current item itself is never delayed.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QImage

from pairscope.widgets.qimage import pil_to_qimage as to_qimage

from ..media import MediaError, VideoReader, open_image, sample_frames, video_info
from ..records import Item

DISPLAY_SIZE = (1920, 1440)
STRIP_FRAMES = 8
STRIP_SIZE = (160, 120)
# How long the worker leaves the GUI thread alone after a request (or after delivering the
# requested item) before it decodes neighbours. A decode of a 12 MP JPEG takes ~110 ms on
# the worker, so a neighbour is still ready for an annotator stepping every ~0.2 s.
PREFETCH_DELAY_S = 0.06


@dataclass(frozen=True)
class VideoMedia:
    caption: str
    path: str
    frame_count: int
    fps: float
    strip: tuple[tuple[int, float, QImage], ...]


@dataclass(frozen=True)
class LoadedMedia:
    """What the media view shows for one item."""

    item_id: int
    images: tuple[tuple[str, QImage | None, str], ...] = ()
    video: VideoMedia | None = None
    placeholder: str | None = None
    errors: tuple[str, ...] = field(default=())


def _stored_id(item: Item) -> int:
    """The store key of an item the window shows (read from the store, so it has one)."""
    assert item.id is not None, f"item {item.ext_id} is not stored"
    return item.id


def load_media(item: Item, display_size=DISPLAY_SIZE) -> LoadedMedia:
    """Decode an item's media for display. Never raises for bad media: a missing or corrupt
    file becomes a placeholder with the reason."""
    item_id = _stored_id(item)
    if not item.media:
        return LoadedMedia(item_id, placeholder="This item has no image or video.")
    videos = [m for m in item.media if m.kind == "video"]
    if videos:
        m = videos[0]
        if m.path is None:
            return LoadedMedia(item_id, placeholder=f"Missing video: {m.ref}\n{m.problem or ''}".strip())
        try:
            info = video_info(m.path)
            strip = tuple(
                (f.index, f.timestamp_s, to_qimage(f.image))
                for f in sample_frames(m.path, STRIP_FRAMES, max_size=STRIP_SIZE)
            )
        except MediaError as exc:
            return LoadedMedia(item_id, placeholder=f"Cannot play {m.ref}:\n{exc.reason}")
        return LoadedMedia(item_id, video=VideoMedia(m.ref, m.path, info.frame_count, info.fps, strip))
    images: list[tuple[str, QImage | None, str]] = []
    for m in item.media:
        if m.path is None:
            images.append((m.ref, None, f"Missing image: {m.ref}\n{m.problem or ''}".strip()))
            continue
        try:
            images.append((m.ref, to_qimage(open_image(m.path, max_size=display_size)), ""))
        except MediaError as exc:
            images.append((m.ref, None, f"Cannot show {m.ref}:\n{exc.reason}"))
    return LoadedMedia(item_id, images=tuple(images))


class MediaLoader(QObject):
    """Decodes media on one worker thread. ``loaded`` fires on the GUI thread."""

    loaded = Signal(object)

    def __init__(self, cache_size: int = 8, parent=None, *, prefetch_delay_s: float = PREFETCH_DELAY_S):
        super().__init__(parent)
        self._cache: OrderedDict[int, LoadedMedia] = OrderedDict()
        self._cache_size = cache_size
        self._pending: list[Item] = []
        self._prefetch_delay = max(0.0, prefetch_delay_s)
        self._wanted_now: int | None = None  # the requested item while it is not decoded yet
        self._quiet_until = 0.0  # time.monotonic() before which no prefetch starts
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="pairscope-media", daemon=True)
        self._thread.start()

    def cached(self, item_id: int) -> LoadedMedia | None:
        with self._cond:
            media = self._cache.get(item_id)
            if media is not None:
                self._cache.move_to_end(item_id)
            return media

    def request(self, item: Item, *, prefetch: tuple[Item, ...] = ()) -> LoadedMedia | None:
        """Ask for ``item`` now and ``prefetch`` after it. Returns the result at once when
        it is cached (no signal then); otherwise ``loaded`` fires when it is ready."""
        hit = self.cached(_stored_id(item))
        with self._cond:
            wanted = ([] if hit else [item]) + [p for p in prefetch if p.id not in self._cache]
            # The newest request goes first; stale prefetches are dropped.
            self._pending = wanted
            self._wanted_now = None if hit else item.id
            self._quiet_until = time.monotonic() + self._prefetch_delay  # the GUI is showing `item`
            self._cond.notify()
        return hit

    def stop(self) -> None:
        """Stop the worker and wait for it (call before the window goes away). The cache is
        emptied: a closed window's decoded images (~11 MB each) are freed now, not whenever a
        full garbage collection gets to the window's reference cycles."""
        with self._cond:
            self._stopped = True
            self._pending = []
            self._cache.clear()
            self._cond.notify()
        self._thread.join(timeout=10)

    def _next_job(self) -> Item | None:
        """The next item to decode, waiting for work (and, for a prefetch, for the GUI
        thread to be done with the current item); None once stopped. Holds ``_cond``."""
        while not self._stopped:
            if not self._pending:
                self._cond.wait()
                continue
            item = self._pending[0]
            if item.id in self._cache:
                self._pending.pop(0)
                continue
            wait = self._quiet_until - time.monotonic() if item.id != self._wanted_now else 0.0
            if wait > 0:
                self._cond.wait(wait)  # a newer request may replace the queue meanwhile
                continue
            return self._pending.pop(0)
        return None

    def _run(self) -> None:
        while True:
            with self._cond:
                item = self._next_job()
                if item is None:
                    return
            media = load_media(item)
            with self._cond:
                if self._stopped:
                    return
                self._cache[media.item_id] = media
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
                if media.item_id == self._wanted_now:  # the GUI thread shows it next
                    self._wanted_now = None
                    self._quiet_until = time.monotonic() + self._prefetch_delay
            self.loaded.emit(media)


class FrameSource:
    """Frames of the current video for playback, read on the GUI thread (sequential reads
    of a display-size video take a few ms)."""

    def __init__(self, path: str, max_size=DISPLAY_SIZE):
        self._reader = VideoReader(path, max_size=max_size)

    def __call__(self, index: int) -> QImage:
        return to_qimage(self._reader.frame(index))

    def close(self) -> None:
        self._reader.close()
