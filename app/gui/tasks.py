"""The window's one background executor (after Anki's ``QueryOp``/``CollectionOp``).

An op runs a plain function off the GUI thread and then calls ``success(result)`` or
``failure(exc)`` **on the GUI thread**::

    BackgroundOp(self, lambda task: export_project(...)) \\
        .success(self.show_result).failure(self.show_problem) \\
        .with_progress("Exporting…", bar=self.bar).run()

The function receives a :class:`Task`: ``task.cancel`` is a ``threading.Event`` set when the
op is cancelled, ``task.progress(done, total)`` drives the progress bar, ``task.update(x)``
hands ``x`` to ``on_update`` on the GUI thread (e.g. streamed text) and ``task.check()``
raises :class:`Cancelled`. An op that raises :class:`Cancelled` calls ``cancelled()``
(if given) and is no error. An error without a ``failure`` callback, or raised by a
callback, is shown in a critical message box by :func:`show_error`: never dropped.

Every op belongs to the :class:`TaskManager` of its window (found through the parent chain,
else one for the whole application). An op runs on its own thread, joined when it ends, or
on a :class:`Lane`: one long-lived thread that runs its ops in order and owns state that
must stay on one thread (a loaded judge model). ``TaskManager.shutdown()`` (the window's
close) cancels every op and joins every thread.

An op that reads or writes the project opens its own connection on its own thread
(:func:`own_store`, from the project's path): the GUI thread's connection is the window's
alone, so a long write (an import is one transaction) never holds a lock the window needs, and
the window reads through WAL while it runs. An op's function is given plain values (a path, a
filter, ids), never the window's store or labeling session. ``TaskManager.op_ended`` tells the
window when an op ends (labels kept pending while it wrote land then).
"""

from __future__ import annotations

import itertools
import logging
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QMessageBox,
    QProgressBar,
    QToolButton,
    QWidget,
)
from shiboken6 import isValid

from pairscope.widgets.plain_text import plain_label

if TYPE_CHECKING:
    from ..store import Store

log = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 30.0
PROGRESS_INTERVAL_S = 0.05  # at most ~20 progress repaints a second
_ids = itertools.count(1)


@contextmanager
def own_store(path: str | Path, readonly: bool = False) -> Iterator[Store]:
    """The project at ``path`` through a connection of the calling op's own (closed at the end
    of the block): background work never uses the window's connection."""
    from ..project import open_project

    store = open_project(path, readonly=readonly)
    try:
        yield store
    finally:
        store.close()


class Cancelled(Exception):
    """Raised inside an op's function (by :meth:`Task.check`) when the op was cancelled."""


@dataclass(frozen=True)
class Progress:
    done: int
    total: int  # 0: unknown (a busy bar)
    text: str = ""


class Task:
    """What an op's function gets: the cancel event and the ways to report back."""

    def __init__(self, op: BackgroundOp):
        self._op = op
        self.cancel: threading.Event = op._cancel
        self._last = 0.0

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` when the op was cancelled."""
        if self.cancel.is_set():
            raise Cancelled()

    def progress(self, done: int, total: int = 0, text: str = "") -> None:
        """Report progress (throttled; the last step always shows)."""
        now = time.monotonic()
        if total and done >= total or now - self._last >= PROGRESS_INTERVAL_S:
            self._last = now
            self._op._emit(self._op._progressed, Progress(int(done), int(total), text))

    def update(self, payload: Any) -> None:
        """Hand ``payload`` to the op's ``on_update`` callback on the GUI thread (in order)."""
        self._op._emit(self._op._updated, payload)


_open_boxes: set[QMessageBox] = set()


def show_error(parent: QWidget | None, title: str, message: str, details: str = "") -> QMessageBox:
    """Show an error in a critical message box without blocking (no nested event loop)."""
    if parent is not None and not isValid(parent):
        parent = None
    box = QMessageBox(QMessageBox.Icon.Critical, title, message, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)  # messages quote file names and dataset text
    if details:
        box.setDetailedText(details)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    _open_boxes.add(box)
    box.finished.connect(lambda _result: _open_boxes.discard(box))
    box.open()
    return box


def install_error_hook() -> None:
    """Show any exception that escapes a Qt slot in a critical dialog, as well as on stderr
    (PySide hands such exceptions to ``sys.excepthook``)."""
    previous = sys.excepthook
    if getattr(previous, "pairscope_hook", False):
        return

    def hook(kind, exc, tb) -> None:
        previous(kind, exc, tb)
        if issubclass(kind, Exception) and QApplication.instance() is not None:
            show_error(
                QApplication.activeWindow(),
                "PairScope error",
                error_message(exc),
                "".join(traceback.format_exception(kind, exc, tb)),
            )

    hook.pairscope_hook = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def error_message(exc: BaseException) -> str:
    """The text a user sees for ``exc`` (expected errors plain, bugs with their type)."""
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, (OSError, ValueError)) else f"{type(exc).__name__}: {text}"


def _parent_widget(obj: QObject | None) -> QWidget | None:
    while obj is not None and not isinstance(obj, QWidget):
        obj = obj.parent()
    return obj


class BackgroundOp(QObject):
    """One piece of background work: build it, chain callbacks, then :meth:`run`."""

    _progressed = Signal(object)
    _updated = Signal(object)
    _ended = Signal()

    def __init__(
        self,
        parent: QObject | None,
        fn: Callable[[Task], Any],
        *,
        title: str = "PairScope",
        lane: Lane | None = None,
        manager: TaskManager | None = None,
    ):
        manager = manager or TaskManager.of(parent)
        super().__init__(manager)  # not the caller: the op must outlive a closed dialog
        self.manager = manager
        self.owner = parent
        self.fn = fn
        self.title = title
        self.lane = lane
        self.id = next(_ids)
        self._cancel = threading.Event()
        self._on_success: Callable[[Any], Any] | None = None
        self._on_failure: Callable[[BaseException], Any] | None = None
        self._on_cancelled: Callable[[], Any] | None = None
        self._on_update: Callable[[Any], Any] | None = None
        self._progress_label: str | None = None
        self._bar: QProgressBar | None = None
        self._thread: threading.Thread | None = None
        self._result: Any = None
        self._error: BaseException | None = None
        self._details = ""
        self.started = self.finished = False
        self._progressed.connect(self._show_progress, Qt.ConnectionType.QueuedConnection)
        self._updated.connect(self._deliver_update, Qt.ConnectionType.QueuedConnection)
        self._ended.connect(self._finish, Qt.ConnectionType.QueuedConnection)

    # -- building ------------------------------------------------------------------------

    def success(self, callback: Callable[[Any], Any]) -> BackgroundOp:
        """Call ``callback(result)`` on the GUI thread when the function returns."""
        self._on_success = callback
        return self

    def failure(self, callback: Callable[[BaseException], Any]) -> BackgroundOp:
        """Call ``callback(exc)`` on the GUI thread when the function raises (instead of the
        error dialog)."""
        self._on_failure = callback
        return self

    def cancelled(self, callback: Callable[[], Any]) -> BackgroundOp:
        """Call ``callback()`` when the op ends by :class:`Cancelled`."""
        self._on_cancelled = callback
        return self

    def on_update(self, callback: Callable[[Any], Any]) -> BackgroundOp:
        """Call ``callback(payload)`` on the GUI thread for each ``task.update(payload)``."""
        self._on_update = callback
        return self

    def with_progress(self, label: str, bar: QProgressBar | None = None) -> BackgroundOp:
        """Show progress in ``bar``, else in the window's status-bar indicator."""
        self._progress_label = label
        self._bar = bar
        return self

    # -- running -------------------------------------------------------------------------

    def run(self) -> BackgroundOp:
        """Start the op (returns at once)."""
        if self.started:
            raise RuntimeError("an op runs once")
        if self.manager.closed or (self.lane is not None and self.lane.closed):
            raise RuntimeError("the window is closing: no new background work")
        self.started = True
        self.manager._add(self)
        if self._progress_label is not None:
            self._show_progress(Progress(0, 0, ""))
        if self.lane is not None:
            self.lane._submit(self)
        else:
            self._thread = threading.Thread(target=self._work, name=f"pairscope-op-{self.id}", daemon=True)
            self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the function to stop (it sees ``task.cancel``); a queued lane op never starts."""
        self._cancel.set()

    @property
    def running(self) -> bool:
        return self.started and not self.finished

    def _work(self) -> None:  # on the worker thread
        try:
            if self._cancel.is_set():
                raise Cancelled()
            self._result = self.fn(Task(self))
        except BaseException as exc:  # noqa: BLE001 (everything reaches the GUI thread)
            self._error = exc
            self._details = traceback.format_exc()
        finally:
            self._emit(self._ended)

    def _emit(self, signal, *payload: Any) -> None:
        try:
            signal.emit(*payload)
        except RuntimeError:  # the window (and this object) is gone: nobody to tell
            pass

    # -- on the GUI thread ---------------------------------------------------------------

    def _live(self) -> bool:
        return not self.manager.closed and (self.owner is None or isValid(self.owner))

    @Slot(object)
    def _show_progress(self, progress: Progress) -> None:
        if self.finished or self._progress_label is None or not self._live():
            return
        bar = self._bar
        if bar is None:
            self.manager._indicate(self, progress)
            return
        if not isValid(bar):
            return
        bar.setRange(0, progress.total)
        bar.setValue(min(progress.done, progress.total) if progress.total else 0)
        text = progress.text or self._progress_label
        bar.setFormat(f"{text}  %v / %m" if progress.total else text)
        bar.setTextVisible(True)
        bar.show()

    @Slot(object)
    def _deliver_update(self, payload: Any) -> None:
        if self._on_update is not None and self._live():
            self._call(self._on_update, payload)

    @Slot()
    def _finish(self) -> None:
        if self.finished:
            return
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT_S)  # it has emitted its last signal: ends at once
        self.finished = True
        live = self._live()
        if live and self._progress_label is not None:
            if self._bar is None:
                self.manager._indicate(self, None)
            elif isValid(self._bar):
                self._bar.hide()
        self.manager._remove(self)
        error = self._error
        if not live:
            if error is not None and not isinstance(error, Cancelled):
                log.error("%s failed after its window closed:\n%s", self.title, self._details)
        elif isinstance(error, Cancelled):
            if self._on_cancelled is not None:
                self._call(self._on_cancelled)
        elif error is not None:
            if self._on_failure is not None:
                self._call(self._on_failure, error)
            else:
                self._report(error, self._details)
        elif self._on_success is not None:
            self._call(self._on_success, self._result)
        self.deleteLater()

    def _call(self, callback: Callable, *args) -> None:
        try:
            callback(*args)
        except Exception as exc:  # noqa: BLE001 (a bug in a callback still reaches the user)
            self._report(exc, traceback.format_exc())

    def _report(self, exc: BaseException, details: str) -> None:
        log.error("%s failed:\n%s", self.title, details)
        show_error(_parent_widget(self.owner), f"{self.title} failed", error_message(exc), details)


class Lane:
    """One long-lived worker thread that runs its ops one after another, so that state
    used by them (a loaded model) stays on one thread. Started on first use; ``close``
    cancels what is queued, runs the ``at_close`` functions on the lane's thread and
    joins it."""

    def __init__(self, name: str, at_close: Callable[[], Any] | None = None):
        self.name = name
        self._at_close = [at_close] if at_close else []
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._ops: list[BackgroundOp] = []
        self._lock = threading.Lock()
        self.closed = False

    def at_close(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the lane's thread when the lane closes (e.g. free a model)."""
        self._at_close.append(fn)

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def _submit(self, op: BackgroundOp) -> None:
        if self.closed:
            raise RuntimeError(f"lane {self.name} is closed")
        with self._lock:
            self._ops.append(op)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"pairscope-{self.name}", daemon=True)
            self._thread.start()
        self._queue.put(op)

    def _loop(self) -> None:
        while True:
            op = self._queue.get()
            if op is None:
                break
            op._work()
            with self._lock:
                self._ops.remove(op)
        for fn in self._at_close:
            try:
                fn()
            except Exception:  # the window is closing: nobody left to show it to
                log.exception("closing lane %s", self.name)

    def close(self, timeout: float = JOIN_TIMEOUT_S) -> None:
        """Cancel every op of the lane, let the thread finish and join it."""
        self.closed = True
        with self._lock:
            for op in self._ops:
                op.cancel()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.error("lane %s did not stop within %.0f s", self.name, timeout)


class ProgressIndicator(QWidget):
    """The status-bar part that shows the newest running op with progress, and cancels it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = plain_label()  # may name a collection or a file
        self.bar = QProgressBar(textVisible=True)
        self.bar.setMaximumWidth(220)
        self.cancel = QToolButton(autoRaise=True)
        self.cancel.setText("✕")
        self.cancel.setToolTip("Cancel this background task")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel)
        self.op: BackgroundOp | None = None
        self.cancel.clicked.connect(lambda: self.op.cancel() if self.op is not None else None)
        self.hide()

    def show_op(self, op: BackgroundOp, progress: Progress) -> None:
        self.op = op
        self.label.setText(progress.text or op._progress_label or "")
        self.bar.setRange(0, progress.total)
        self.bar.setValue(min(progress.done, progress.total) if progress.total else 0)
        self.bar.setFormat("%v / %m" if progress.total else "")
        self.show()


class TaskManager(QObject):
    """Every op and lane of one window; :meth:`shutdown` cancels them and joins their threads.
    ``op_ended`` is emitted on the GUI thread after each op's callbacks."""

    op_ended = Signal()
    _app_instance: TaskManager | None = None

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._ops: dict[int, BackgroundOp] = {}
        self._progress: dict[int, Progress] = {}
        self._lanes: dict[str, Lane] = {}
        self.indicator: ProgressIndicator | None = None
        self.closed = False

    @classmethod
    def of(cls, obj: QObject | None) -> TaskManager:
        """The manager of ``obj``'s window (an ancestor's ``tasks``), else the application's."""
        while obj is not None:
            tasks = getattr(obj, "tasks", None)
            if isinstance(tasks, TaskManager):
                return tasks
            obj = obj.parent()
        return cls.application()

    @classmethod
    def application(cls) -> TaskManager:
        """The application-wide manager (for widgets without a window), shut down at quit."""
        manager = cls._app_instance
        if manager is None or not isValid(manager):
            app = QCoreApplication.instance()
            manager = cls._app_instance = TaskManager(app)
            if app is not None:
                app.aboutToQuit.connect(manager.shutdown)
        return manager

    def progress_indicator(self) -> ProgressIndicator:
        """The widget a window puts in its status bar for ops without their own bar."""
        if self.indicator is None:
            self.indicator = ProgressIndicator()
        return self.indicator

    def lane(self, name: str, at_close: Callable[[], Any] | None = None) -> Lane:
        """The single-thread lane called ``name`` (made on first use)."""
        lane = self._lanes.get(name)
        if lane is None or lane.closed:
            lane = self._lanes[name] = Lane(name, at_close)
        elif at_close is not None:
            lane.at_close(at_close)
        return lane

    def running(self) -> list[BackgroundOp]:
        return list(self._ops.values())

    def cancel_all(self) -> None:
        for op in self.running():
            op.cancel()

    def shutdown(self, timeout: float = JOIN_TIMEOUT_S) -> None:
        """Cancel every op, close every lane and join every thread (the window is closing);
        no callback runs after this."""
        self.closed = True
        self.cancel_all()
        for lane in self._lanes.values():
            lane.close(timeout)
        for op in self.running():
            if op._thread is not None:
                op._thread.join(timeout)
                if op._thread.is_alive():
                    log.error("%s did not stop within %.0f s", op.title, timeout)
        if self.indicator is not None and isValid(self.indicator):
            self.indicator.hide()

    def _add(self, op: BackgroundOp) -> None:
        self._ops[op.id] = op

    def _remove(self, op: BackgroundOp) -> None:
        self._ops.pop(op.id, None)
        self._progress.pop(op.id, None)
        if not self.closed:
            QTimer.singleShot(0, self, self.op_ended.emit)  # after the op's own callbacks

    def _indicate(self, op: BackgroundOp, progress: Progress | None) -> None:
        """Show ``op``'s progress in the status-bar indicator (None: it ended)."""
        if progress is None:
            self._progress.pop(op.id, None)
        else:
            self._progress[op.id] = progress
        indicator = self.indicator
        if indicator is None or not isValid(indicator):
            return
        if not self._progress:
            indicator.op = None
            indicator.hide()
            return
        newest = max(self._progress)
        indicator.show_op(self._ops.get(newest) or op, self._progress[newest])


__all__ = [
    "BackgroundOp",
    "Cancelled",
    "Lane",
    "Progress",
    "ProgressIndicator",
    "Task",
    "TaskManager",
    "error_message",
    "install_error_hook",
    "own_store",
    "show_error",
]
