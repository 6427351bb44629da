"""Start the window: pick the project, check for a screen, run the event loop."""

from __future__ import annotations

import contextlib
import getpass
import os
import signal
import socket
import sys
from pathlib import Path

from PySide6.QtCore import (
    QCoreApplication,
    QSettings,
    QSocketNotifier,
    QStandardPaths,
    QTimer,
    qInstallMessageHandler,
)
from PySide6.QtWidgets import QApplication, QInputDialog, QMessageBox

from pairscope.widgets.plain_text import inert_html

from ..project import open_project
from ..store import SchemaError
from .controller import AnnotationController
from .file_menu import open_store
from .gc_thread import collect_on_gui_thread
from .main_window import MainWindow
from .placement import first_size
from .tasks import install_error_hook


def has_display() -> bool:
    """False where Qt would abort for want of a screen (Linux without X11/Wayland)."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM"))


def default_project(settings: QSettings) -> Path:
    """The last project opened, else the demo project in the user's data folder."""
    last = settings.value("project/last")
    if last and Path(str(last)).exists():
        return Path(str(last))
    data = Path(
        QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation) or Path.home() / ".pairscope"
    )
    demo = data / "demo.pairscope"
    if not demo.exists():
        from ..demo import (
            create_demo_project,  # only the first run without a project needs it
        )

        create_demo_project(demo)
    return demo


def ask_annotator(settings: QSettings) -> str | None:
    """The remembered annotator name, or ask for it once."""
    known = settings.value("annotator/name")
    if known:
        return str(known)
    name, ok = QInputDialog.getText(
        None, "PairScope", "Your annotator name (stored with every label you give):", text=getpass.getuser()
    )
    return name.strip() if ok and name.strip() else None


#: Qt messages that say nothing a user can act on: fonts are found through fontconfig
#: anyway, and the offscreen platform cannot resize native windows.
QUIET_QT_MESSAGES = ("QFontDatabase:", "This plugin does not support propagateSizeHints")


def quiet_qt_messages() -> None:
    """Drop Qt's font-database and platform-plugin notices; print every other Qt message."""

    def handler(mode, context, message: str) -> None:
        if not message.startswith(QUIET_QT_MESSAGES):
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def start_application() -> QCoreApplication:
    """The QApplication as the window needs it: Qt's noise quiet, errors escaping a slot
    shown, cyclic garbage collected on the GUI thread only (``gc_thread``), settings stored
    under PairScope's name."""
    quiet_qt_messages()  # before the QApplication: the font database speaks while it starts
    app = QApplication.instance() or QApplication(sys.argv[:1])
    install_error_hook()  # an error escaping a Qt slot is shown, never only on stderr
    collect_on_gui_thread()  # a worker thread that collects a closed window's widgets crashes
    app.setOrganizationName("PairScope")
    app.setApplicationName("PairScope")
    return app


#: The exit status after each signal that closes the window (128 + SIGINT's number, as shells say).
SIGNAL_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 0}


class QuitSignals:
    """SIGINT (Ctrl-C) and SIGTERM close the windows as File → Quit does (the label being
    edited is saved, pending labels flushed or kept in the journal), then the event loop
    ends with :data:`SIGNAL_STATUS`. Python runs a signal handler only between bytecodes, and
    Qt's event loop runs none: SIGINT was ignored, or raised KeyboardInterrupt inside some slot
    and crashed at exit. The C-level handler writes to a socket (``signal.set_wakeup_fd``)
    whose notifier wakes the loop, so the Python handler runs at once."""

    def __init__(self, app: QCoreApplication):
        self.app = app
        self.status: int | None = None
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno())
        self._previous = {sig: signal.signal(sig, self._handle) for sig in SIGNAL_STATUS}
        self._notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Type.Read, app)
        self._notifier.activated.connect(self._drain)

    def _drain(self, *_args) -> None:  # the Python handler has run by the time this slot runs
        with contextlib.suppress(OSError):
            self._read.recv(64)

    def _handle(self, signum: int, _frame: object) -> None:
        self.status = SIGNAL_STATUS.get(signal.Signals(signum), 1)
        QTimer.singleShot(0, self._close_windows)

    def _close_windows(self) -> None:
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if all(window.close() for window in windows):  # a window may stay: labels only in memory
            self.app.exit(self.status or 0)

    def restore(self) -> None:
        """Put back the handlers that were there before."""
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        signal.set_wakeup_fd(self._previous_fd)
        self._notifier.setEnabled(False)
        self._read.close()
        self._write.close()


def run(db: Path | None, annotator: str | None, item: str | None = None) -> int:
    """Open the window on ``db`` (or the default project) and run until it closes."""
    if not has_display():
        print(
            "error: no display found. On a machine without a screen run:\n"
            "  xvfb-run -a pairscope ...   (or set QT_QPA_PLATFORM=offscreen)",
            file=sys.stderr,
        )
        return 2
    app = start_application()
    settings = QSettings()
    name = annotator or ask_annotator(settings)
    if not name:
        return 1
    settings.setValue("annotator/name", name)
    path = db or default_project(settings)
    try:
        # A project that cannot be written (read-only media, folder or file) opens read-only.
        store = open_project(path, create=True) if db is None else open_store(path)
    except (OSError, SchemaError, ValueError) as exc:  # a folder, a FIFO, a foreign file ...
        said = str(exc) if str(path) in str(exc) else f"Cannot open {path}:\n{exc}"  # the path said once
        QMessageBox.critical(None, "PairScope", inert_html(said))  # a path: text, not HTML
        print(f"error: {exc}", file=sys.stderr)
        return 1
    settings.setValue("project/last", str(Path(path).resolve()))
    start = store.item_id(item) if item else None
    if item and start is None:
        print(f"warning: no item {item!r} in {path}; opening at the first unlabeled item", file=sys.stderr)
    window = MainWindow(AnnotationController(store, name), settings, start_item=start)
    if store.readonly:  # visible for the whole session: labels given here cannot be saved
        window.statusBar().showMessage(store.note or f"{path} is open read-only.")
        print(f"note: {store.note or 'opened read-only'}", file=sys.stderr)
    if not window.has_saved_geometry:
        first_size(window)
    window.show()
    if os.environ.get("PAIRSCOPE_SELFTEST"):
        schedule_selftest(window, Path(path), name, os.environ["PAIRSCOPE_SELFTEST"])
    signals = QuitSignals(app)
    try:
        status = app.exec()
    finally:
        signals.restore()
    return signals.status if signals.status is not None else status


def main(argv: list[str] | None = None) -> int:
    """The ``pairscope-gui`` entry point (a GUI script: no console window on Windows): the
    window only, with ``pairscope``'s window options (``pairscope-gui [DB] [--annotator NAME]``)."""
    from ..cli.main import build_gui_parser

    args = build_gui_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return run(args.db, args.annotator, args.item)


#: Key names ``PAIRSCOPE_SELFTEST`` accepts ("1" = response 1 is better; see app/labeling/keymap.py).
SELFTEST_KEYS = {"1": "Key_1", "2": "Key_2", "t": "Key_T", "b": "Key_B", "x": "Key_X"}


def schedule_selftest(window: MainWindow, path: Path, annotator: str, keys: str) -> None:
    """``PAIRSCOPE_SELFTEST=KEY``: once the first item shows, press KEY on the window the way a
    user does (QTest sends it through Qt's shortcut map to the window's actions), wait for the
    label to reach the project file, print one ``selftest:`` JSON line and quit: exit code 0
    when a second, read-only connection finds the label, 1 when it does not. Used by
    tests/test_bundle.py on the frozen app, where no test framework is inside the bundle."""
    import json
    import time

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest

    key = SELFTEST_KEYS.get(keys.strip().lower(), "Key_1")
    started = time.monotonic()
    state: dict = {}

    def finish(ok: bool, **fields) -> None:
        fields.update(ok=ok, seconds=round(time.monotonic() - started, 3))
        print("selftest: " + json.dumps(fields), flush=True)
        QApplication.instance().exit(0 if ok else 1)  # type: ignore[union-attr]

    def press() -> None:
        current = window.controller.current
        if current is None:  # the first item is still loading
            if time.monotonic() - started > 20:
                return finish(False, error="no item was shown within 20 s")
            QTimer.singleShot(50, press)
            return
        if QApplication.activeWindow() is not window:  # window-wide shortcuts fire in the active window only
            if time.monotonic() - started > 20:
                return finish(False, error="the window never became active")
            window.windowHandle().requestActivate()
            QTimer.singleShot(50, press)
            return
        state["item_id"], state["ext_id"] = current.item.id, current.item.ext_id
        QTest.keyClick(window, getattr(Qt.Key, key))
        state["pressed"] = time.monotonic()
        QTimer.singleShot(0, check)

    def check() -> None:
        with open_project(path, readonly=True) as store:  # what is in the file, not in the window
            label = store.current_label(state["item_id"], annotator)
        if label is not None:
            return finish(
                True, item=state["ext_id"], annotator=annotator, outcome=label.outcome, ranking=list(label.ranking)
            )
        if time.monotonic() - state["pressed"] > 10:
            return finish(False, item=state["ext_id"], error="the key press saved no label within 10 s")
        QTimer.singleShot(50, check)

    QTimer.singleShot(0, press)
