"""Does the window wait for File → Import? (issue 24, "import stall").

A window (offscreen) on a 2,000-item project (N always has a next item) imports a generated
20,000-item VL-RewardBench file through File → Import while a timer presses ``N`` every 50 ms;
at the 20th press, ``1`` labels the current item. Printed: the import's time, each press's time in the window's handler
(median, p95, max), the longest gap of the event loop (a 10 ms heartbeat: the window frozen),
what the ``1`` press cost, and whether its label landed after the import.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/import_stall_bench.py [--items 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_util import pct, qt_app  # noqa: E402  (qt_app: offscreen unless told)
from import_bench import generate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    args = parser.parse_args()
    qt_app()
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest

    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.launch import start_application
    from pairscope.app.gui.main_window import MainWindow
    from pairscope.app.records import Item, Response
    from pairscope.app.store import Store

    app = start_application()  # as `pairscope` runs: cyclic garbage collected on the GUI thread
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = generate(folder / "data", args.items, n_images=50)
        project = folder / "p.pairscope"
        with Store.create(project) as store:
            store.add_items(
                [Item(ext_id=f"it{i}", prompt="Q", responses=(Response(0, "a"), Response(1, "b"))) for i in range(2000)]
            )
        window = MainWindow(AnnotationController(Store.open(project), "ann"))
        window.resize(1400, 900)
        window.show()
        app.processEvents()
        presses: list[float] = []
        gaps: list[float] = []
        state: dict = {"last": time.perf_counter(), "label_ms": None, "labeled": None}

        def beat() -> None:
            now = time.perf_counter()
            gaps.append(now - state["last"])
            if gaps[-1] > 0.1:
                print(f"  gap {gaps[-1] * 1000:.0f} ms at {now - started:.2f} s", file=sys.stderr)
            state["last"] = now

        def press() -> None:
            start = time.perf_counter()
            QTest.keyClick(window, Qt.Key.Key_N)
            presses.append(time.perf_counter() - start)
            if len(presses) == 20 and state["label_ms"] is None:
                start = time.perf_counter()
                QTest.keyClick(window, Qt.Key.Key_1)
                state["label_ms"] = (time.perf_counter() - start) * 1000
                state["labeled"] = window.controller.current.item_id

        heart = QTimer(interval=10)
        heart.timeout.connect(beat)
        keys = QTimer(interval=50)
        keys.timeout.connect(press)
        started = time.perf_counter()
        op = window.file_menu.import_dataset(data)
        state["last"] = time.perf_counter()
        heart.start()
        keys.start()
        while not op.finished:
            app.processEvents()
            time.sleep(0.001)
        took = time.perf_counter() - started
        keys.stop()
        heart.stop()
        deadline = time.monotonic() + 10
        while window.controller.pending_count and time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.01)
        landed = state["labeled"] is not None and not window.controller.pending_count
        if window.file_menu.import_result is not None:
            window.file_menu.import_result.close()
        window.close()
        ms = [p * 1000 for p in presses]
        print(f"import of {args.items:,} items: {took:.2f} s; {len(ms)} N presses")
        if ms:
            print(f"N press: median {statistics.median(ms):.1f} ms, p95 {pct(ms, 95):.1f} ms, max {max(ms):.1f} ms")
        print(f"longest event-loop gap: {max(gaps, default=0) * 1000:.0f} ms")
        print(f"'1' during the import: {state['label_ms'] or float('nan'):.1f} ms; landed afterwards: {landed}")


if __name__ == "__main__":
    main()
