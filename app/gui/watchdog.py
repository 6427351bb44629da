"""A debug watchdog for the GUI thread (after Anki's): any block of the event loop longer
than a threshold (100 ms) is logged with the GUI thread's stack as it was during the block.

A ``QTimer`` on the GUI thread beats every :data:`BEAT_MS`; a plain thread checks the last
beat and, when it is older than the threshold, takes the GUI thread's stack
(``sys._current_frames``) once per block. When the loop runs again the block's length is
known: it is logged (``pairscope.app.gui.watchdog``, WARNING) with that stack and kept in
:attr:`Watchdog.blocks`. Turned on for a window by ``PAIRSCOPE_WATCHDOG=1`` (or a number: the
threshold in ms); tests start one directly and count the blocks.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication, QObject, QTimer

log = logging.getLogger(__name__)

#: A block of the GUI thread longer than this is logged.
THRESHOLD_MS = 100
#: How often the GUI thread beats.
BEAT_MS = 20
ENV = "PAIRSCOPE_WATCHDOG"


@dataclass(frozen=True)
class Block:
    """One time the GUI thread did not run its event loop for ``ms`` milliseconds; ``stack``:
    where it was (the innermost frame last)."""

    ms: float
    stack: str


class Watchdog(QObject):
    """Watches the thread this object is made on (the GUI thread). ``blocks``: every block
    over ``threshold_ms`` so far; ``longest_ms``: the longest gap between beats seen."""

    def __init__(self, parent: QObject | None = None, threshold_ms: float = THRESHOLD_MS):
        super().__init__(parent)
        self.threshold_s = threshold_ms / 1000
        self.blocks: list[Block] = []
        self.longest_ms = 0.0
        self._gui_id = threading.get_ident()
        self._last = time.monotonic()
        self._stack: str | None = None  # taken during the current block
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer = QTimer(self, interval=BEAT_MS)
        self._timer.timeout.connect(self._beat)
        self._thread: threading.Thread | None = None

    def start(self) -> Watchdog:
        """Start beating and watching (returns self)."""
        self._last = time.monotonic()
        self._timer.start()
        self._thread = threading.Thread(target=self._watch, name="pairscope-watchdog", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (the thread ends within one beat)."""
        self._timer.stop()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def reset(self) -> None:
        """Forget the blocks seen so far (measure from now)."""
        with self._lock:
            self.blocks.clear()
            self.longest_ms = 0.0
            self._last = time.monotonic()
            self._stack = None

    def _beat(self) -> None:  # on the GUI thread
        now = time.monotonic()
        with self._lock:
            gap = now - self._last
            self._last = now
            stack, self._stack = self._stack, None
            self.longest_ms = max(self.longest_ms, gap * 1000 - BEAT_MS)
        if gap - BEAT_MS / 1000 > self.threshold_s:
            block = Block((gap * 1000) - BEAT_MS, stack or "(stack not taken)")
            self.blocks.append(block)
            log.warning("the GUI thread was blocked for %.0f ms at:\n%s", block.ms, block.stack)

    def _watch(self) -> None:  # on the watchdog's thread
        while not self._stop.wait(BEAT_MS / 1000):
            with self._lock:
                late = time.monotonic() - self._last - BEAT_MS / 1000 > self.threshold_s
                if late and self._stack is None:
                    frame = sys._current_frames().get(self._gui_id)
                    self._stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)"


def watchdog_from_env(parent: QObject) -> Watchdog | None:
    """A started watchdog when ``PAIRSCOPE_WATCHDOG`` asks for one (``1``, or the threshold in
    ms), logging at WARNING; ``None`` otherwise."""
    value = os.environ.get(ENV, "").strip()
    if not value or value == "0":
        return None
    try:
        threshold = float(value) if value != "1" else THRESHOLD_MS
    except ValueError:
        threshold = THRESHOLD_MS
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING)
    watchdog = Watchdog(parent, threshold).start()
    app = QCoreApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(watchdog.stop)  # its thread ends with the event loop
    parent.destroyed.connect(watchdog._stop.set)
    return watchdog


__all__ = ["BEAT_MS", "THRESHOLD_MS", "Block", "Watchdog", "watchdog_from_env"]
