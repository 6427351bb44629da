"""Helpers for bench/annotation_bench.py: statistics, memory, Qt waiting, fixtures.

Only the standard library is imported at module level, so that a benchmark child process
that imports this module carries no memory or import time the application would not.
Qt, Pillow and numpy are imported inside the functions that need them.
"""

from __future__ import annotations

import math
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

# -- statistics and printing ---------------------------------------------------------------

median = statistics.median


def pct(values, p: float) -> float:
    """The ``p``-th percentile by nearest rank (p95 of 40 samples is the 3rd largest)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[max(0, min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def ms_list(values) -> str:
    return "[" + ", ".join(f"{v * 1000:.1f}" for v in values) + "]"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


# -- memory --------------------------------------------------------------------------------


def _proc_status_mb(key: str) -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """Peak resident set size of this process image: VmHWM, which starts afresh at exec.

    (``ru_maxrss`` does not: a child inherits its parent's high-water mark across
    fork+exec, so a child of a big parent would report the parent's peak.)
    """
    peak = _proc_status_mb("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """Current resident set size (VmRSS), or the peak where /proc is not available."""
    now = _proc_status_mb("VmRSS")
    return now if now is not None else peak_rss_mb()


# -- a PySide6 refcount bug -----------------------------------------------------------------

NONE_GUARD = 1 << 40


def none_refs() -> int:
    """References to None, less the guard's (see :func:`guard_none_refcount`)."""
    refs = sys.getrefcount(None)
    return refs - NONE_GUARD if refs > NONE_GUARD else refs


def guard_none_refcount() -> bool:
    """Keep a long benchmark alive despite PySide6 6.12's None refcount bug.

    Under Python 3.11, every call of a void Qt method (``QLabel.setText``, ``setVisible``,
    ``update``, ...) drops one reference to ``None`` that it never took; the window loses
    ~100 per item shown, and when None's count reaches zero the interpreter aborts with
    "Fatal Python error: none_dealloc". Python ≥ 3.12 makes None immortal (no-op here).
    This adds 2**40 to None's reference count (a counter, no memory) in *this* process; the
    app's code is untouched, and the benchmark reports how fast the count falls.
    """
    if sys.version_info >= (3, 12) or sys.getrefcount(None) > NONE_GUARD:
        return False
    import ctypes

    ctypes.c_ssize_t.from_address(id(None)).value += NONE_GUARD
    return True


# -- Qt: waiting for paints without starving the media worker ---------------------------------

_WATCH_CLASS = None


def qt_app():
    """The QApplication (offscreen unless the caller chose a platform before); Qt's
    offscreen-plugin chatter about size hints is dropped."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    def quiet(_mode, _context, message):
        if "propagateSizeHints" not in message:
            sys.stderr.write(message + "\n")

    qInstallMessageHandler(quiet)
    from pairscope.app.gui.gc_thread import collect_on_gui_thread

    app = QApplication.instance() or QApplication(["bench"])
    collect_on_gui_thread()  # as the app does (app/gui/gc_thread.py)
    return app


def paint_watch(app, widget):
    """Watch ``widget``'s paint events: ``.count`` of them, and ``.done_at``, the
    perf_counter() reading when the event loop moved on after the latest one (the first
    non-paint event anywhere afterwards: the window's paint pass and backing-store flush
    are over by then). ``None`` until then; :meth:`EventPump.until` falls back to when
    processEvents returned. Keep the returned object alive."""
    global _WATCH_CLASS
    if _WATCH_CLASS is None:
        from PySide6.QtCore import QEvent, QObject

        paint = QEvent.Type.Paint

        class PaintWatch(QObject):
            def __init__(self, app, widget):
                super().__init__()
                self.count, self.done_at = 0, None
                self._app, self._widget, self._armed = app, widget, False
                widget.installEventFilter(self)

            def eventFilter(self, obj, event):
                kind = event.type()
                if kind == paint:
                    if obj is self._widget:
                        self.count += 1
                        self.done_at = None
                        if not self._armed:  # wait for the next non-paint event, application-wide
                            self._armed = True
                            self._app.installEventFilter(self)
                elif self._armed:
                    self.done_at = time.perf_counter()
                    self._armed = False
                    self._app.removeEventFilter(self)
                return False

        _WATCH_CLASS = PaintWatch
    return _WATCH_CLASS(app, widget)


class EventPump:
    """Processes Qt events until a condition holds, sleeping in the event loop in between
    (the GIL is released there, so the media worker thread runs at full speed). A
    heartbeat timer bounds each sleep so timeouts are noticed."""

    def __init__(self, app, heartbeat_ms: int = 25):
        from PySide6.QtCore import QEventLoop, QTimer

        self.app = app
        self._flags = QEventLoop.ProcessEventsFlag.AllEvents | QEventLoop.ProcessEventsFlag.WaitForMoreEvents
        self._timer = QTimer()
        self._timer.setInterval(heartbeat_ms)
        self._timer.start()

    def until(self, condition, timeout: float = 30.0, what: str = "condition", watch=None) -> float:
        """Process events until ``condition()``; returns perf_counter() when it held, or
        when ``watch`` (a :func:`paint_watch`) saw its paint pass end, if that was earlier."""
        deadline = time.perf_counter() + timeout
        while not condition():
            if time.perf_counter() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
            self.app.processEvents(self._flags)
        now = time.perf_counter()
        return min(now, watch.done_at) if watch is not None and watch.done_at is not None else now

    def idle(self, seconds: float) -> None:
        """Run the event loop for ``seconds`` (an annotator reading the item)."""
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.app.processEvents(self._flags)

    def stop(self) -> None:
        self._timer.stop()


def wrap_timed(obj, name: str, bucket: dict[str, float], key: str | None = None):
    """Shadow ``obj.name`` with a wrapper adding its wall time to ``bucket[key]``.

    Only instance attributes are set (the app's classes are untouched); callers that look
    the attribute up at call time see the wrapper.
    """
    original = getattr(obj, name)
    key = key or name

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            bucket[key] = bucket.get(key, 0.0) + time.perf_counter() - start

    setattr(obj, name, timed)
    return original


# -- fixtures ------------------------------------------------------------------------------

WORDS = (
    "the",
    "a",
    "red",
    "blue",
    "green",
    "circle",
    "square",
    "there",
    "are",
    "two",
    "three",
    "four",
    "left",
    "right",
    "of",
    "image",
    "shows",
    "count",
    "object",
    "text",
    "sign",
    "person",
    "table",
    "answer",
    "because",
    "first",
    "second",
    "visible",
    "near",
    "small",
    "large",
)
CATEGORIES = ("general", "hallucination", "reasoning")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_item(
    rng: random.Random,
    i: int,
    media_path: str | None,
    media_ref: str,
    rare: str | None = None,
    response_words: tuple[int, int] = (45, 75),
):
    """One two-response image item like VL-RewardBench's (prompt 8–30 words)."""
    from pairscope.app.records import Item, MediaRef, Reference, Response

    prompt = sentence(rng, rng.randint(8, 30))
    if rare and i % 100 == 0:  # a word in 1 % of prompts, for a selective text filter
        prompt = prompt[:-1] + f" {rare}."
    responses = tuple(
        Response(idx, sentence(rng, rng.randint(*response_words)), f"model-{'ab'[idx]}") for idx in range(2)
    )
    return Item(
        ext_id=f"bench_{i:06d}",
        prompt=prompt,
        responses=responses,
        media=(MediaRef("image", media_ref, media_path, None if media_path else "missing"),),
        category=CATEGORIES[i % len(CATEGORIES)],
        source_format="vlrewardbench",
        reference=Reference(ranking=rng.choice([(0, 1), (1, 0)])),
    )


def write_jpegs(folder: Path, count: int, size=(4000, 3000), quality: int = 90, seed: int = 11) -> list[Path]:
    """``count`` distinct photo-like JPEGs: a smooth random field, shapes and fine noise
    (so they compress like photos, not like flat colour). Existing files are reused."""
    import numpy as np
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"photo_{i:03d}.jpg" for i in range(count)]
    if all(p.exists() for p in paths):
        return paths
    w, h = size
    rng = np.random.default_rng(seed)
    grain = rng.integers(-14, 15, size=(h, w, 3), dtype=np.int16)  # rolled per image below
    pyrng = random.Random(seed)
    for i, path in enumerate(paths):
        if path.exists():
            continue
        base = Image.fromarray(rng.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)).resize(size, Image.BICUBIC)
        draw = ImageDraw.Draw(base)
        for _ in range(60):
            x0, y0 = pyrng.randrange(w), pyrng.randrange(h)
            x1, y1 = x0 + pyrng.randrange(40, 900), y0 + pyrng.randrange(40, 700)
            colour = tuple(pyrng.randrange(256) for _ in range(3))
            shape = pyrng.randrange(3)
            if shape == 0:
                draw.ellipse((x0, y0, x1, y1), fill=colour)
            elif shape == 1:
                draw.rectangle((x0, y0, x1, y1), fill=colour)
            else:
                draw.line((x0, y0, x1, y1), fill=colour, width=pyrng.randrange(2, 30))
        arr = np.asarray(base, dtype=np.int16) + np.roll(grain, shift=(i * 37, i * 53), axis=(0, 1))
        Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8)).save(path, quality=quality)
    return paths


def build_large_project(
    path: Path, n_items: int, annotator: str, labeled_fraction: float, png: Path, rare: str, batch: int = 10000
) -> dict:
    """A project of ``n_items`` items (one small PNG each) added with ``Store.add_items`` in
    batches inside one transaction, and the first ``labeled_fraction`` of them labeled by
    ``annotator`` (display order drawn, then a label) through ``store.add_label`` in one
    transaction. Returns timings."""
    from pairscope.app.records import Label
    from pairscope.app.store import Store

    rng = random.Random(5)
    start = time.perf_counter()
    with Store.create(path) as store:
        with store.transaction():
            for lo in range(0, n_items, batch):
                items = [make_item(rng, i, str(png), "small.png", rare) for i in range(lo, min(n_items, lo + batch))]
                added = store.add_items(items)
                assert len(added.ids) == len(items), "fixture items must all be new"
        built = time.perf_counter() - start
        start = time.perf_counter()
        n_labeled = int(n_items * labeled_fraction)
        with store.transaction():
            for item_id in range(1, n_labeled + 1):
                order = store.display_order(item_id, annotator)
                store.add_label(
                    Label(item_id, annotator, "prefer", ranking=order, strength="clearly", display_order=order)
                )
        labeled = time.perf_counter() - start
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"build_s": built, "label_s": labeled, "labeled": n_labeled, "size_mb": path.stat().st_size / 1e6}


# -- fresh processes -------------------------------------------------------------------------

CHILD_MARK = "BENCH-RESULT "


def report_child(**fields) -> None:
    """In a bench's child process: print its figures (and this process's peak memory) as the
    one line :func:`run_child` reads."""
    import json

    fields.setdefault("peak_mb", peak_rss_mb())
    print(CHILD_MARK + json.dumps(fields), flush=True)


def run_child(argv: list[str], env: dict | None = None) -> dict:
    """Run ``argv`` (a fresh Python process) and return the figures it reported with
    :func:`report_child`, plus ``wall_s``: the whole process's wall time, start-up included."""
    import json
    import subprocess

    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith(CHILD_MARK)]
    if not lines:
        raise RuntimeError(f"{argv[:4]} reported nothing:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    result = json.loads(lines[-1][len(CHILD_MARK) :])
    result["wall_s"] = wall
    return result


def load_note() -> str:
    """The machine's load while the bench ran (1-minute load average over the CPU count)."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load average {one:.2f} (1 min) / {five:.2f} (5 min) on {os.cpu_count()} CPUs"
