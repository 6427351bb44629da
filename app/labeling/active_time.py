"""Active time: how long an item was really worked on before its label was saved.

Time counts for the item on screen while the window has focus, and only while the annotator
is active: every key press, click, wheel turn or mouse move is an input, and a gap between
inputs longer than :data:`IDLE_S` counts only its first :data:`IDLE_S` seconds (reading a long
answer without touching anything for 40 s counts 40 s; leaving the desk for an hour counts
60 s, not an hour). Focus lost stops the count at once; focus regained starts it again.

Qt-free, with an injectable clock (``time.monotonic`` by default) so that tests drive it
with a simulated clock. The window feeds it (``gui/controller.py``: item changes and saves;
``gui/activity.py``, installed by ``gui/actions.py``: focus changes and input events) and
:meth:`LabelingSession.save <app.labeling.session.LabelingSession.save>` stores
:meth:`ActiveTime.active_ms` with the label (``labels.active_ms``, schema migration 9). The
time is per item and adds up over visits during one session of the window: a label states the
whole time spent on its item so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: seconds without input after which the annotator counts as idle (the rest of the gap is left out)
IDLE_S = 60.0


class ActiveTime:
    """Accumulates active milliseconds per item from focus, input and item changes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, idle_s: float = IDLE_S):
        if idle_s <= 0:
            raise ValueError(f"the idle threshold must be positive, not {idle_s}")
        self.clock = clock
        self.idle_s = float(idle_s)
        self.item_id: int | None = None
        self.focused = True
        self._totals: dict[int, float] = {}
        self._mark: float | None = None  # when the running stretch began (None: not counting)
        self._last_input = 0.0

    def _settle(self) -> float:
        """Add the stretch since the last mark to the current item; returns now."""
        now = self.clock()
        if self._mark is not None and self.item_id is not None:
            counted_until = min(now, self._last_input + self.idle_s)
            if counted_until > self._mark:
                self._totals[self.item_id] = self._totals.get(self.item_id, 0.0) + counted_until - self._mark
            self._mark = now
        return now

    def _restart(self, now: float) -> None:
        self._last_input = now
        self._mark = now if self.focused and self.item_id is not None else None

    def show(self, item_id: int | None) -> None:
        """``item_id`` is now on screen (``None``: no item); showing it counts as input."""
        now = self._settle()
        self.item_id = item_id
        self._restart(now)

    def focus(self, focused: bool) -> None:
        """The window gained or lost focus (losing it stops the count)."""
        now = self._settle()
        self.focused = focused
        if focused:
            self._restart(now)
        else:
            self._mark = None

    def input(self) -> None:
        """A key press, click, wheel turn or mouse move in the window."""
        now = self._settle()
        if self.focused and self.item_id is not None:
            self._restart(now)

    def seconds(self, item_id: int) -> float:
        """Active seconds spent on ``item_id`` so far (including the running stretch)."""
        self._settle()
        return self._totals.get(item_id, 0.0)

    def active_ms(self, item_id: int) -> int:
        """:meth:`seconds` in whole milliseconds, as stored with a label."""
        return round(self.seconds(item_id) * 1000)


__all__ = ["IDLE_S", "ActiveTime"]
