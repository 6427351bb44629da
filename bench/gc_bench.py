"""What collecting cyclic garbage on the GUI thread costs (app/gui/gc_thread.py).

Background ops that allocate a lot run while the GUI thread spins its event loop: an import of
a generated 20,000-item VL-RewardBench file, and the Statistics dashboard (report and
figures) of stats_bench's project at 2,000 items (3 annotators, 2 judge runs). Each op runs with the collector
(collections on the GUI thread's timer) and, as the baseline in the same run, with Python's
automatic collection (collections wherever a threshold is crossed). Printed per op and mode,
medians over the rounds: the op's time, the longest single collection on the GUI thread (a
stall of the window), all collection time on the GUI thread, and collections on other threads
(the crash risk the collector removes).

    .venv/bin/python bench/gc_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_util import qt_app  # noqa: E402
from import_bench import generate  # noqa: E402
from stats_bench import build as build_stats_project  # noqa: E402


class CollectionLog:
    """Every collection's thread and duration (``gc.callbacks``)."""

    def __init__(self):
        self.started: dict[int, float] = {}
        self.main: list[float] = []
        self.elsewhere = 0

    def __call__(self, phase, _info):
        ident = threading.get_ident()
        if phase == "start":
            self.started[ident] = time.perf_counter()
        elif ident in self.started:
            took = time.perf_counter() - self.started.pop(ident)
            if threading.current_thread() is threading.main_thread():
                self.main.append(took)
            else:
                self.elsewhere += 1


def run_op(app, fn) -> tuple[float, CollectionLog]:
    """Run ``fn`` as a BackgroundOp while the event loop spins; its time and collections."""
    from pairscope.app.gui.tasks import BackgroundOp

    gc.collect()
    log = CollectionLog()
    gc.callbacks.append(log)
    done = []
    start = time.perf_counter()
    try:
        BackgroundOp(None, lambda task: fn()).success(done.append).failure(done.append).run()
        while not done:
            app.processEvents()
            time.sleep(0.001)  # an idle window: the timer fires, the worker runs
        took = time.perf_counter() - start
        for _ in range(3):  # what the op left is collected too
            app.processEvents()
            time.sleep(0.2)
            app.processEvents()
    finally:
        gc.callbacks.remove(log)
    if isinstance(done[0], BaseException):
        raise done[0]
    return took, log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--items", type=int, default=20_000)
    args = parser.parse_args()
    app = qt_app()
    from pairscope.app.gui.gc_thread import collect_on_gui_thread
    from pairscope.app.gui.stats_view import _compute
    from pairscope.app.importer import import_file
    from pairscope.app.store import Store

    collector = collect_on_gui_thread()
    folder = Path(tempfile.mkdtemp(prefix="gc-bench-"))
    source = generate(folder, args.items)
    stats_project = folder / "stats.pairscope"
    build_stats_project(stats_project, 2000)
    counter = iter(range(10**6))

    def import_once():
        with Store.create(folder / f"import-{next(counter)}.pairscope") as store:
            import_file(store, source)

    class _Op:  # what _compute needs of its task
        def check(self):
            pass

    def stats_once():
        with Store.open(stats_project, readonly=True) as store:
            _compute(store, _Op())  # type: ignore[arg-type]

    ops = {f"import {args.items:,} items": import_once, "statistics + figures": stats_once}
    results: dict[tuple[str, str], list[tuple[float, float, float, int]]] = {}
    for _ in range(args.rounds):
        for name, fn in ops.items():
            for mode in ("automatic", "GUI-thread timer"):
                if mode == "automatic":
                    collector.timer.stop()
                    gc.enable()
                else:
                    gc.disable()
                    collector.timer.start()
                took, log = run_op(app, fn)
                results.setdefault((name, mode), []).append(
                    (took, max(log.main, default=0.0), sum(log.main), log.elsewhere)
                )
    gc.disable()
    collector.timer.start()
    print(f"median of {args.rounds} rounds")
    print(f"{'op':<24} {'collections':<18} {'op time':>9} {'longest GUI stall':>18}", end="")
    print(f" {'GUI gc total':>13} {'on workers':>11}")
    for (name, mode), rows in results.items():
        med = [statistics.median(col) for col in zip(*rows)]
        print(f"{name:<24} {mode:<18} {med[0]:8.2f}s {med[1] * 1000:16.1f}ms {med[2] * 1000:11.1f}ms {med[3]:11.0f}")


if __name__ == "__main__":
    main()
