"""Annotation-window figures: cold start, next item, label commit, a 100,000-item project.

Each figure is a median over several runs (or a p95 over many steps, median over passes)
next to a baseline measured in the same run, with the ratio and the issue's target:

  cold    process start → first item's media painted, vs a bare QMainWindow process
          (fresh subprocesses, alternating; the ratio is the median of the rounds' ratios):
          ≤ 3× the bare window, also with what ``pairscope PROJECT`` imports first (the whole
          app: app.cli.main, app.gui.launch); torch never imported.
  next    window.move(1) → next item's 12-megapixel JPEG painted, p95 over ~40 steps:
          with prefetch (300 ms "reading" pause per step) ≤ 16 ms; without prefetch
          (the controller is given no neighbours) ≤ 1.5× the raw decode (median of
          ``open_image(path, max_size=DISPLAY_SIZE)`` on the same files, measured before each
          pair of passes; the ratio is the median of the rounds' ratios).
  commit  LabelingSession.save (WAL, synchronous=FULL) p95 ≤ 5 ms, vs a bare sqlite3
          BEGIN/INSERT/COMMIT of a label-like row with the same pragmas, same folder.
  large   100,000 items, 30 % labeled: open to first row, text and status filters
          (apply_filter alone, ≤ 100 ms, vs a bare ``SELECT count(*) ... LIKE``),
          select_row at 20 spread positions, peak RSS ≤ 300 MB (vs a bare QMainWindow
          process), measured in fresh child processes on a fresh copy of the project.

Qt runs offscreen. Fixtures (a demo project, 12 MP JPEGs, the 100k project) are made in a
temporary folder on the same disk and removed afterwards, unless --workdir keeps them
(then they are reused on the next run).

Child processes keep compiled bytecode (.pyc) in a ``pycache`` folder of the work folder
(PYTHONPYCACHEPREFIX), even where PYTHONDONTWRITEBYTECODE is set, so that after the warm-up
they start like an installed app (pip compiles on install) and the repository stays clean.
Without that, every child compiles PairScope's ~60 modules from source, ~0.1 s that the
bare window (site-packages only, already compiled) never pays; ``--no-bytecode-cache``
measures that case.

    python bench/annotation_bench.py [--quick] [--only cold|next|commit|large] [--workdir DIR]
        [--no-bytecode-cache]
"""

from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before any Qt import; child processes inherit it

import argparse
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_util import (
    EventPump,
    build_large_project,
    guard_none_refcount,
    make_item,
    median,
    ms,
    ms_list,
    none_refs,
    paint_watch,
    pct,
    peak_rss_mb,
    qt_app,
    rss_mb,
    verdict,
    wrap_timed,
    write_jpegs,
)

SECTIONS = ("cold", "next", "commit", "large")
ANNOTATOR = "bench"
RARE_WORD = "zebra"  # planted in 1 % of the large project's prompts
LARGE_BUDGET_S = 200  # no further large-project run starts after this (keeps a full run under 10 min)
TEXT_QUERIES = ((RARE_WORD, "1 % of items"), ("qwertyuiop", "no match"), ("circle", "most items"))
HEAVY_MODULES = ("torch", "transformers", "cv2", "pandas", "pyarrow", "numpy", "PIL")


@dataclass(frozen=True)
class Sizes:
    cold_runs: int = 5
    next_items: int = 50
    next_steps: int = 40
    next_passes: int = 3
    read_s: float = 0.3
    commit_labels: int = 300
    commit_runs: int = 3
    large_items: int = 100_000
    large_runs: int = 3
    filter_reps: int = 5
    scroll_positions: int = 20


QUICK = Sizes(
    cold_runs=2,
    next_items=8,
    next_steps=6,
    next_passes=1,
    commit_labels=60,
    commit_runs=1,
    large_items=5_000,
    large_runs=1,
    filter_reps=2,
    scroll_positions=8,
)


# == child processes ==========================================================================
# The two cold-start children are small `python -c` programs so that nothing but what they
# measure is imported. Both print one JSON line whose perf_counter() readings share the
# parent's clock (CLOCK_MONOTONIC on Linux), so "process start → painted" excludes exit.

_CHILD_COMMON = r"""
import time; T0 = time.perf_counter()
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QEvent, QEventLoop, QObject, QTimer
from PySide6.QtWidgets import QApplication
class Paints(QObject):
    count = 0
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            Paints.count += 1
        return False
FLAGS = QEventLoop.ProcessEventsFlag.AllEvents | QEventLoop.ProcessEventsFlag.WaitForMoreEvents
def wait(condition):
    deadline = time.perf_counter() + 60
    while not condition() and time.perf_counter() < deadline:
        app.processEvents(FLAGS)
    if not condition():
        sys.exit("timed out waiting for the first paint")
def report(**extra):
    with open("/proc/self/status") as fh:  # VmHWM, not ru_maxrss: that one is inherited across fork+exec
        status = {l.split(":")[0]: int(l.split()[1]) / 1024 for l in fh if l.startswith(("VmRSS:", "VmHWM:"))}
    print(json.dumps(dict(t0=T0, t_import=T_IMPORT, t_painted=T_PAINTED, rss_mb=status["VmRSS"],
                          peak_rss_mb=status["VmHWM"], modules=len(sys.modules), **extra)), flush=True)
"""

BARE_CHILD = (
    _CHILD_COMMON
    + r"""
from PySide6.QtWidgets import QMainWindow
T_IMPORT = time.perf_counter()
app = QApplication(["bench"])
heartbeat = QTimer(interval=25); heartbeat.start()
window = QMainWindow()
window.resize(1600, 1000)
paints = Paints(); window.installEventFilter(paints)
window.show()
wait(lambda: Paints.count > 0)
app.processEvents()
T_PAINTED = time.perf_counter()
report()
os._exit(0)
"""
)

APP_CHILD = (
    _CHILD_COMMON
    + r"""
from PySide6.QtWidgets import QGraphicsView
if sys.argv[4] == "cli":  # what `pairscope PROJECT` imports before its window: the entry point
    import pairscope.app.cli.main, pairscope.app.gui.launch
from pairscope.app.store import Store
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
T_IMPORT = time.perf_counter()
app = QApplication(["bench"])
heartbeat = QTimer(interval=25); heartbeat.start()
window = MainWindow(AnnotationController(Store.open(sys.argv[1]), sys.argv[2]), settings=None, start_item=None)
window.resize(1600, 1000)
T_WINDOW = time.perf_counter()
paints = Paints(); window.media.findChild(QGraphicsView).viewport().installEventFilter(paints)
shown = []
window.controller.media_ready.connect(lambda media: shown.append(Paints.count) if media.images else None)
window.show()
wait(lambda: shown and Paints.count > shown[-1] and window.media.image_count() > 0)
app.processEvents()
T_PAINTED = time.perf_counter()
report(t_window=T_WINDOW, heavy=[m for m in sys.argv[3].split(",") if m in sys.modules],
       none_refs=sys.getrefcount(None))
window.close()  # closes the project (not timed)
os._exit(0)
"""
)


CHILD_ENV: dict[str, str] | None = None  # the children's environment (None: this process's); see main()


def child_env(work: Path, bytecode_cache: bool) -> dict[str, str] | None:
    """The children's environment: bytecode cached under ``work/pycache`` (see the module
    docstring), or None to leave the environment as it is."""
    if not bytecode_cache:
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def run_child(args: list[str], timeout: float = 300) -> tuple[dict, float]:
    """Run ``python ARGS``; returns (its last JSON line, perf_counter() just before the spawn)."""
    spawned = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *args], check=False, capture_output=True, text=True, timeout=timeout, env=CHILD_ENV
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}): {' '.join(args[:3])}\n{proc.stderr[-3000:]}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"child printed no result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1]), spawned


def bare_window_child() -> dict:
    result, spawned = run_child(["-c", BARE_CHILD])
    result["start_to_paint"] = result["t_painted"] - spawned
    return result


# == 1. cold start ============================================================================


def section_cold(sizes: Sizes, work: Path) -> None:
    from pairscope.app.demo import create_demo_project

    assert time.get_clock_info("perf_counter").monotonic
    demo = work / "demo.pairscope"
    if not demo.exists():
        create_demo_project(demo)

    def app_child(entry: str) -> dict:
        result, spawned = run_child(["-c", APP_CHILD, str(demo), ANNOTATOR, ",".join(HEAVY_MODULES), entry])
        result["start_to_paint"] = result["t_painted"] - spawned
        result["interpreter"] = result["t0"] - spawned
        return result

    bare_window_child(), app_child("window"), app_child("cli")  # warm-up: page cache, .pyc, display order
    rounds: list[tuple[dict, dict, dict]] = []
    for n in range(sizes.cold_runs):  # fresh processes, alternating (the order turns), so drift hits all alike
        runs = {"bare": bare_window_child, "app": lambda: app_child("window"), "cli": lambda: app_child("cli")}
        order = list(runs)[n % 3 :] + list(runs)[: n % 3]
        done = {name: runs[name]() for name in order}
        rounds.append((done["bare"], done["app"], done["cli"]))
    bare = [r[0] for r in rounds]
    app = [r[1] for r in rounds]
    cli = [r[2] for r in rounds]

    def m(runs, key, since=None):
        """Median over the runs of ``key`` (minus ``since``, run by run: not a difference of medians)."""
        return median(r[key] - (r[since] if since else 0.0) for r in runs)

    def ratio(which: int) -> tuple[float, list[float]]:
        """Median of the per-round ratios to the bare window of the same round, and those ratios."""
        each = [r[which]["start_to_paint"] / r[0]["start_to_paint"] for r in rounds]
        return median(each), each

    b, a, c = m(bare, "start_to_paint"), m(app, "start_to_paint"), m(cli, "start_to_paint")
    torch = any("torch" in r["heavy"] for r in app + cli)
    heavy = sorted({h for r in app + cli for h in r["heavy"]})
    load = os.getloadavg()
    print(
        f"== cold start: process start → first item painted ({sizes.cold_runs} rounds of fresh processes,"
        f" alternating, after one warm-up; demo project; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})"
    )
    print(
        f"bare window: median {b:.2f} s  runs {[round(r['start_to_paint'], 2) for r in bare]}"
        f"  (import Qt {m(bare, 't_import', 't0'):.2f} s)"
    )
    for name, runs in (("PairScope:", app), ("whole app:", cli)):
        print(
            f"{name:12} median {m(runs, 'start_to_paint'):.2f} s  runs {[round(r['start_to_paint'], 2) for r in runs]}"
        )
        print(
            f"  interpreter start {m(runs, 'interpreter'):.2f} s, imports {m(runs, 't_import', 't0'):.2f} s, "
            f"MainWindow() {m(runs, 't_window', 't_import'):.3f} s, "
            f"show → media painted {m(runs, 't_painted', 't_window'):.3f} s (medians of per-run differences)"
        )
    (ra, ras), (rc, rcs) = ratio(1), ratio(2)
    print(f"ratio:       {ra:.2f}x bare window (per round: {', '.join(f'{x:.2f}' for x in ras)}; medians {a / b:.2f}x)")
    print(
        f"whole app:   {rc:.2f}x bare window (per round: {', '.join(f'{x:.2f}' for x in rcs)}; medians {c / b:.2f}x);"
        " the window with what `pairscope PROJECT` imports first (app.cli.main, app.gui.launch)"
    )
    print(
        f"modules:     {m(app, 'modules'):.0f} (whole app {m(cli, 'modules'):.0f}) vs {m(bare, 'modules'):.0f};"
        f" heavy ones loaded: {', '.join(heavy) or 'none'} (checked: {', '.join(HEAVY_MODULES)})"
    )
    print(f"RSS at paint: {m(app, 'rss_mb'):.0f} MB vs {m(bare, 'rss_mb'):.0f} MB")
    print(
        f"references to None at first paint: {m(app, 'none_refs'):,.0f} (what PySide6's refcount bug eats away,"
        " see the next section)"
    )
    print(f"torch_imported={torch}")
    print(f"target ≤ 3x bare window: {verdict(ra <= 3)}; whole app: {verdict(rc <= 3)}")
    print(f"target torch not imported: {verdict(not torch)}")


# == 2. next item =============================================================================


def _repaint_costs(window, canvas) -> dict[str, float]:
    """Median time of a synchronous repaint() of the parts a step repaints (diagnostic)."""
    parts = {
        "whole window": window,
        "image view": canvas.viewport(),
        "item table": window.table.viewport(),
        "responses": window.responses,
        "label panel": window.panel,
    }
    costs = {}
    for name, widget in parts.items():
        samples = []
        for _ in range(7):
            start = time.perf_counter()
            widget.repaint()
            samples.append(time.perf_counter() - start)
        costs[name] = median(samples)
    return costs


def _next_pass(
    app, pump, project: Path, annotator: str, steps: int, prefetch: bool, read_s: float, costs: dict | None = None
) -> list[dict]:
    """Open a window with a fresh cache and step through ``steps`` items with move(1);
    with ``costs``, fill it with :func:`_repaint_costs` at the end."""
    from PySide6.QtWidgets import QGraphicsView

    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow
    from pairscope.app.store import Store

    controller = AnnotationController(Store.open(project), annotator)
    if not prefetch:  # the window still asks for neighbours; the controller drops them
        open_item = controller.open
        controller.open = lambda item_id, neighbours=(): open_item(item_id, ())
    window = MainWindow(controller)
    window.resize(1600, 1000)
    canvas = window.media.findChild(QGraphicsView)
    paints = paint_watch(app, canvas.viewport())
    state: dict = {"target": controller.current.item.id, "at": None}

    def on_ready(media) -> None:
        if media.item_id == state["target"]:
            state["at"] = paints.count  # the window's own slot (connected first) has shown it

    def painted() -> bool:
        return state["at"] is not None and paints.count > state["at"]

    controller.media_ready.connect(on_ready)
    window.show()
    pump.until(painted, what="the first image")
    parts: dict[str, float] = {}
    wrap_timed(controller, "open", parts)
    wrap_timed(controller.store, "display_order", parts)
    wrap_timed(controller.store, "get_item", parts)
    wrap_timed(window.responses, "show_responses", parts)
    wrap_timed(window.media, "show_images", parts)
    results = []
    refs_before = none_refs()
    try:
        for _ in range(steps):
            pump.idle(read_s)
            row = window.table.current_row()
            state["target"], state["at"] = window.table.model().row(row + 1).summary.id, None
            parts.clear()
            start = time.perf_counter()
            window.move(1)
            sync = time.perf_counter() - start
            hit = state["at"] is not None  # shown from the cache before move() returned
            end = pump.until(painted, what="the next image", watch=paints)
            results.append({"total": end - start, "sync": sync, "hit": hit, **parts})
        for step in results:  # (the paint watch's own install/removeEventFilter calls add ~2 per paint)
            step["none_lost"], step["none_at_open"] = (refs_before - none_refs()) / steps, refs_before
        if costs is not None:
            costs.update(_repaint_costs(window, canvas))
    finally:
        window.close()
        window.deleteLater()
        pump.idle(0.05)
    if results:  # memory the closed windows still hold
        results[-1]["rss_after"] = rss_mb()
    return results


def section_next(sizes: Sizes, work: Path) -> None:
    from pairscope.app.gui import media_loader
    from pairscope.app.gui.media_loader import DISPLAY_SIZE
    from pairscope.app.media import open_image
    from pairscope.app.store import Store
    from pairscope.widgets.qimage import pil_to_qimage

    guarded = guard_none_refcount()
    started = time.perf_counter()
    photos = write_jpegs(work / f"photos-{sizes.next_items}", sizes.next_items)
    made = time.perf_counter() - started
    project = work / "next.pairscope"
    for p in work.glob("next.pairscope*"):
        p.unlink()
    rng = random.Random(3)
    with Store.create(project) as store:
        store.add_items([make_item(rng, i, str(p), p.name) for i, p in enumerate(photos)])

    app = qt_app()
    used = photos[: sizes.next_steps + 1]
    open_image(used[0], max_size=DISPLAY_SIZE)  # warm-up
    raw, converted = [], []
    round_raw: list[float] = []  # the raw decode's median in each round: the baseline of that round's passes

    def decode_round() -> None:
        nonlocal shown_size
        times = []
        for path in used:
            start = time.perf_counter()
            img = open_image(path, max_size=DISPLAY_SIZE)
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            pil_to_qimage(img)
            converted.append(time.perf_counter() - start)
            shown_size = img.size
        raw.extend(times)
        round_raw.append(median(times))

    shown_size = (0, 0)
    pump = EventPump(app)
    modes: dict[bool, list] = {True: [], False: []}
    costs: dict[str, float] = {}
    for n in range(sizes.next_passes):
        decode_round()  # alternating with the window's passes, so that load hits both alike
        for prefetch in (True, False):  # alternating; each pass a new window, cache and annotator
            annotator = f"{'pre' if prefetch else 'no'}fetch-{n}"
            modes[prefetch].append(
                _next_pass(
                    app,
                    pump,
                    project,
                    annotator,
                    sizes.next_steps,
                    prefetch,
                    sizes.read_s,
                    costs if n == 0 and prefetch else None,
                )
            )
    pump.stop()

    raw_med = median(raw)
    mb = median(p.stat().st_size for p in used) / 1e6
    print(
        f"== next item: move(1) → next {describe_image(photos[0])} JPEG painted"
        f" ({len(used)} files, median {mb:.1f} MB, made in {made:.0f} s;"
        f" {sizes.next_steps} steps × {sizes.next_passes} passes; p95 by nearest rank)"
    )
    print(
        f"raw decode:   median {ms(raw_med)}  rounds {ms_list(round_raw)} ms (open_image →"
        f" {shown_size[0]}×{shown_size[1]}, before each pair of passes; + pil_to_qimage {ms(median(converted))})"
    )
    for prefetch, passes in modes.items():
        p95s = [pct([s["total"] for s in steps], 95) for steps in passes]
        flat = [s for steps in passes for s in steps]
        hits = sum(s["hit"] for s in flat)
        name = "prefetch" if prefetch else "no prefetch"
        print(
            f"{name + ':':13} p95 {ms(median(p95s))}  passes {ms_list(p95s)} ms;"
            f" p50 {ms(median(s['total'] for s in flat))}, max {ms(max(s['total'] for s in flat))};"
            f" cache hits {hits}/{len(flat)}; RSS after each pass {rss_list(passes)} MB"
            + (
                f"; {sizes.read_s * 1000:.0f} ms pause per step; neighbours decoded from"
                f" {getattr(media_loader, 'PREFETCH_DELAY_S', 0) * 1000:.0f} ms after the item is shown"
                if prefetch
                else ""
            )
        )

        def part(key, rows=flat):
            return median(s.get(key, 0.0) for s in rows)

        print(
            f"  per step (medians): move() returns after {ms(part('sync'))}: controller.open {ms(part('open'))}"
            f" (display_order {ms(part('display_order'))}, get_item ×{4 if prefetch else 1} {ms(part('get_item'))}"
            f"{', show_images ' + ms(part('show_images')) if prefetch else ''}),"
            f" show_responses {ms(part('show_responses'))}; show_images {ms(part('show_images'))};"
            f" then painted after {ms(median(s['total'] - s['sync'] for s in flat))}"
        )
        if prefetch:
            print("  repaint() alone (median of 7): " + ", ".join(f"{k} {ms(v)}" for k, v in costs.items()))
            print(f"target p95 ≤ 16 ms: {verdict(median(p95s) <= 0.016)}")
        else:
            each = [p95 / base for p95, base in zip(p95s, round_raw, strict=True)]
            ratio = median(each)
            print(
                f"ratio:        p95 {ratio:.2f}x raw decode median (median of the rounds' ratios"
                f" {', '.join(f'{x:.2f}' for x in each)}; medians {median(p95s) / raw_med:.2f}x)"
            )
            print(f"target ≤ 1.5x raw decode: {verdict(ratio <= 1.5)}")
    flat = [s for passes in modes.values() for steps in passes for s in steps]
    lost, at_open = median(s["none_lost"] for s in flat), median(s["none_at_open"] for s in flat)
    print(
        f"stability:    each step drops {lost:.0f} references to None (PySide6 6.12 void-call refcount bug,"
        f" Python {sys.version_info.major}.{sys.version_info.minor}); with {at_open:,.0f} when the window is up,"
        f" an unguarded process aborts (none_dealloc) after ~{at_open / max(lost, 1):.0f} items"
        + ("; this process was guarded" if guarded else "")
    )


def rss_list(passes: list[list[dict]]) -> str:
    """The process's RSS after each pass (its windows closed), in MB."""
    return ", ".join(f"{steps[-1].get('rss_after', 0.0):.0f}" for steps in passes if steps)


def describe_image(path: Path) -> str:
    from PIL import Image

    with Image.open(path) as img:
        return f"{img.width}×{img.height} ({img.width * img.height / 1e6:.0f} MP)"


# == 3. label commit ==========================================================================

_BASE_TABLE = """CREATE TABLE labels (
    uuid TEXT PRIMARY KEY, item_id INTEGER NOT NULL, annotator_id INTEGER NOT NULL, created_at TEXT NOT NULL,
    kind TEXT NOT NULL, outcome TEXT NOT NULL, ranking TEXT NOT NULL, strength TEXT, error_types TEXT NOT NULL,
    discard_reasons TEXT NOT NULL, note TEXT NOT NULL, display_order TEXT NOT NULL, step_marks TEXT NOT NULL)"""
_BASE_INDEXES = (
    "CREATE INDEX labels_item_annotator ON labels(item_id, annotator_id, kind, created_at)",
    "CREATE INDEX labels_annotator_item ON labels(annotator_id, kind, item_id, created_at)",
)


def filesystem_of(path: Path) -> str:
    """The mount's filesystem type and device (from /proc/mounts), e.g. ``ext4 /dev/vda``."""
    best, found = "", "unknown filesystem"
    try:
        real = str(path.resolve())
        with open("/proc/mounts") as fh:
            for line in fh:
                device, mount, fstype = line.split()[:3]
                if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
                    best, found = mount, f"{fstype} {device}"
    except OSError:
        pass
    return found


def section_commit(sizes: Sizes, work: Path) -> None:
    from pairscope.app.labeling.session import LabelingSession
    from pairscope.app.records import STRENGTHS, LabelDraft
    from pairscope.app.store import Store
    from pairscope.app.store.connection import utc_now

    saves, bases, parts_all = [], [], []
    for run in range(sizes.commit_runs):
        project, base = work / f"commit{run}.pairscope", work / f"commit{run}-base.db"
        for p in [*work.glob(f"commit{run}.pairscope*"), *work.glob(f"commit{run}-base.db*")]:
            p.unlink()
        rng = random.Random(run)
        store = Store.create(project)
        ids = store.add_items([make_item(rng, i, None, "gone.png") for i in range(sizes.commit_labels)]).ids
        session = LabelingSession(store, ANNOTATOR)
        conn = sqlite3.connect(base, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute(_BASE_TABLE)
        for sql in _BASE_INDEXES:
            conn.execute(sql)
        parts: dict[str, float] = {}
        wrap_timed(store, "add_label", parts)
        app_t, base_t = [], []
        for i, item_id in enumerate(ids):
            session.order(item_id)  # drawn when the window shows the item, before any label
            draft = LabelDraft(outcome="prefer", preferred_position=1 + i % 2, strength=STRENGTHS[i % 3])
            parts.clear()
            start = time.perf_counter()
            assert session.save(item_id, draft) is not None
            app_t.append(time.perf_counter() - start)
            parts_all.append(dict(parts))
            row = (
                str(uuid.uuid4()),
                item_id,
                1,
                utc_now(),
                "label",
                "prefer",
                "[0, 1]",
                "clearly",
                "[]",
                "[]",
                "",
                "[0, 1]",
                "[]",
            )
            start = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO labels VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
            conn.execute("COMMIT")
            base_t.append(time.perf_counter() - start)
        conn.close()
        store.close()
        saves.append(app_t)
        bases.append(base_t)

    def summary(runs):
        p95s = [pct(r, 95) for r in runs]
        flat = [x for r in runs for x in r]
        return median(p95s), p95s, median(flat), max(flat)

    s95, s_runs, s50, smax = summary(saves)
    b95, b_runs, b50, bmax = summary(bases)
    print(
        f"== label commit: LabelingSession.save, WAL + synchronous=FULL ({sizes.commit_labels} labels × "
        f"{sizes.commit_runs} runs; temp folder on {filesystem_of(work)})"
    )
    print(
        f"save:        p95 {ms(s95)}  runs {ms_list(s_runs)} ms; p50 {ms(s50)}, max {ms(smax)};"
        f" of which add_label p50 {ms(median(p['add_label'] for p in parts_all))}"
    )
    print(
        f"baseline:    p95 {ms(b95)}  runs {ms_list(b_runs)} ms; p50 {ms(b50)}, max {ms(bmax)}"
        "  (bare BEGIN IMMEDIATE; INSERT; COMMIT of a label row, same pragmas and indexes)"
    )
    print(f"ratio:       {s95 / b95:.2f}x baseline (p95); save costs {ms(s50 - b50)} more than the bare commit at p50")
    print(f"target p95 ≤ 5 ms: {verdict(s95 <= 0.005)}")


# == 4. a 100,000-item project ================================================================


def child_large(path: Path, reps: int, positions: int) -> None:
    """In a fresh process: open the window on ``path``, filter, scroll; print one JSON line."""
    checkpoints = {"start": rss_mb()}
    guard_none_refcount()
    app = qt_app()
    from PySide6.QtWidgets import QGraphicsView  # noqa: F401 - part of what the window imports anyway

    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow
    from pairscope.app.store import Store

    checkpoints["imports"] = rss_mb()
    pump = EventPump(app)
    out: dict = {}

    opening: dict[str, float] = {}
    start = time.perf_counter()
    controller = AnnotationController(Store.open(path), ANNOTATOR)
    for name in ("categories", "resume_row", "progress", "row_count", "page"):
        wrap_timed(controller, name, opening)
    window = MainWindow(controller)
    window.resize(1600, 1000)
    out["construct_s"] = time.perf_counter() - start
    for name in ("categories", "resume_row", "progress", "row_count", "page"):
        delattr(controller, name)  # unwrap
    out["opening"] = opening
    table_paints = paint_watch(app, window.table.viewport())
    window.show()
    out["open_s"] = pump.until(lambda: table_paints.count > 0, what="the table", watch=table_paints) - start
    out["resume_row"] = window.table.current_row()
    out["rows"] = window.table.model().rowCount()
    pump.idle(0.3)
    checkpoints["window"] = rss_mb()

    parts: dict[str, float] = {}
    for obj, name in (
        (controller, "row_count"),
        (controller, "row_of"),
        (controller, "page"),
        (window.table, "set_items"),
        (window.table, "select_row"),
    ):
        wrap_timed(obj, name, parts)

    def timed_filter() -> dict:
        parts.clear()
        before = table_paints.count
        begin = time.perf_counter()
        window.apply_filter()
        took = time.perf_counter() - begin
        sync_parts = dict(parts)
        painted = pump.until(lambda: table_paints.count > before, what="the filtered table", watch=table_paints) - begin
        rows = window.table.model().rowCount()
        pump.idle(0.05)
        return {"apply": took, "painted": painted, "rows": rows, **sync_parts}

    def set_text(text: str) -> None:
        window.search.blockSignals(True)  # no debounce timer: apply_filter is called by hand
        window.search.setText(text)
        window.search.blockSignals(False)

    def set_status(value) -> None:
        window.status.blockSignals(True)
        window.status.setCurrentIndex(window.status.findData(value))
        window.status.blockSignals(False)

    filters: dict[str, list[dict]] = {}
    clears: list[dict] = []
    for _ in range(reps):
        for query, _what in TEXT_QUERIES:
            set_text(query)
            filters.setdefault(f"text:{query}", []).append(timed_filter())
            set_text("")
            clears.append(timed_filter())
        set_status("unlabeled")
        filters.setdefault("status:unlabeled", []).append(timed_filter())
        set_status(None)
        clears.append(timed_filter())
    out["filters"], out["clears"] = filters, clears
    checkpoints["filters"] = rss_mb()

    # The floor: a bare count on its own connection (default page cache) to the same file.
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    bare: dict[str, list[float]] = {}
    for _ in range(reps + 1):
        for query, _what in TEXT_QUERIES:
            begin = time.perf_counter()
            conn.execute("SELECT count(*) FROM items WHERE prompt LIKE ?", (f"%{query}%",)).fetchone()
            bare.setdefault(query, []).append(time.perf_counter() - begin)
        begin = time.perf_counter()
        conn.execute(
            "SELECT count(*) FROM items WHERE id NOT IN (SELECT l.item_id FROM labels l JOIN annotators a"
            " ON a.id = l.annotator_id WHERE a.name = ?)",
            (ANNOTATOR,),
        ).fetchone()
        bare.setdefault("unlabeled", []).append(time.perf_counter() - begin)
    conn.close()
    out["bare"] = {k: v[1:] for k, v in bare.items()}  # the first round warms the cache
    session = controller.session
    plans = {}
    try:  # a private helper, used for EXPLAIN QUERY PLAN only: skip the plans if it moves
        from pairscope.app.store.items import _filter_sql

        filters = (("text", session.table_filter(RARE_WORD)), ("status", session.table_filter(status="unlabeled")))
        for key, flt in filters:
            where, params = _filter_sql(flt)
            sql = f"EXPLAIN QUERY PLAN SELECT count(*) FROM items i WHERE {where}"
            plans[key] = [r[-1] for r in controller.store.query(sql, params)]
    except (ImportError, TypeError, ValueError, sqlite3.Error) as exc:
        plans["unavailable"] = [f"{type(exc).__name__}: {exc}"]
    out["plans"] = plans

    total = window.table.model().rowCount()
    rows = [round(i * (total - 1) / max(1, positions - 1)) for i in range(positions)]
    scroll = []
    for row in rows:
        parts.clear()
        before = table_paints.count
        begin = time.perf_counter()
        window.table.select_row(row)
        sync = time.perf_counter() - begin
        sync_parts = dict(parts)
        end = pump.until(
            lambda before=before: table_paints.count > before, what="the scrolled table", watch=table_paints
        )
        scroll.append(
            {
                "row": row,
                "total": end - begin,
                "sync": sync,
                "page": parts.get("page", 0.0),
                "page_sync": sync_parts.get("page", 0.0),
            }
        )
        pump.idle(0.05)
    out["scroll"] = scroll
    pump.idle(0.3)
    checkpoints["scroll"] = rss_mb()
    out["rss"] = checkpoints
    out["peak_rss_mb"] = peak_rss_mb()
    pump.stop()
    window.close()
    print(json.dumps(out), flush=True)


def section_large(sizes: Sizes, work: Path) -> None:
    from PIL import Image

    png = work / "small.png"
    if not png.exists():
        Image.new("RGB", (64, 48), "orange").save(png)
    project = work / f"large-{sizes.large_items}.pairscope"
    built = None
    if not project.exists():
        built = build_large_project(project.with_suffix(".tmp"), sizes.large_items, ANNOTATOR, 0.3, png, RARE_WORD)
        project.with_suffix(".tmp").rename(project)

    bare = [bare_window_child() for _ in range(3)]
    runs = []
    copy = work / "large-run.pairscope"
    started = time.perf_counter()
    for _ in range(sizes.large_runs):
        if runs and time.perf_counter() - started > LARGE_BUDGET_S:
            print(f"(stopping after {len(runs)} of {sizes.large_runs} runs: over the {LARGE_BUDGET_S} s budget)")
            break
        for p in work.glob("large-run.pairscope*"):
            p.unlink()
        shutil.copyfile(project, copy)  # each run starts from the same state (no display orders drawn)
        result, _spawned = run_child(
            [
                str(Path(__file__).resolve()),
                "--child-large",
                str(copy),
                "--reps",
                str(sizes.filter_reps),
                "--positions",
                str(sizes.scroll_positions),
            ],
            timeout=900,
        )
        runs.append(result)
    for p in work.glob("large-run.pairscope*"):
        p.unlink()

    def m(values):
        return median(list(values))

    n = sizes.large_items
    print(
        f"== large project: {n:,} items, the first 30 % labeled by the annotator"
        f" ({len(runs)} runs in fresh processes, each on a fresh copy; {sizes.filter_reps} reps per filter)"
    )
    if built:
        print(
            f"fixture:     add_items {built['build_s']:.1f} s, {built['labeled']:,} labels {built['label_s']:.1f} s,"
            f" {built['size_mb']:.0f} MB"
        )
    else:
        print(f"fixture:     reused {project} ({project.stat().st_size / 1e6:.0f} MB)")
    print(
        f"open:        store + MainWindow + show → first rows painted: median {m(r['open_s'] for r in runs):.2f} s"
        f"  runs {[round(r['open_s'], 2) for r in runs]} (MainWindow() {m(r['construct_s'] for r in runs):.2f} s;"
        f" resume row {runs[0]['resume_row']:,} of {runs[0]['rows']:,})"
    )
    opening = runs[0]["opening"]
    print(
        "    in MainWindow(): "
        + ", ".join(f"{k} {m(r['opening'].get(k, 0) for r in runs):.2f} s" for k in opening)
        + " (resume_row → store.first_unlabeled)"
    )
    worst_key, worst = None, 0.0
    bare_like = m(x for r in runs for q, _w in TEXT_QUERIES for x in r["bare"][q])
    for key in runs[0]["filters"]:
        samples = [s for r in runs for s in r["filters"][key]]
        apply_ = m(s["apply"] for s in samples)
        if apply_ > worst:
            worst_key, worst = key, apply_
        kind, _, value = key.partition(":")
        what = dict(TEXT_QUERIES).get(value, "")
        base_key = value if kind == "text" else "unlabeled"
        base = m(x for r in runs for x in r["bare"][base_key])
        label = f"{kind} filter {value!r}" + (f" ({what})" if what else "")
        runs_ms = ms_list(m(s["apply"] for s in r["filters"][key]) for r in runs)
        print(
            f"{label}: apply_filter median {ms(apply_)} (runs {runs_ms}"
            f" ms), {samples[0]['rows']:,} rows, table painted after {ms(m(s['painted'] for s in samples))}"
        )
        print(
            f"    in apply_filter: count {ms(m(s.get('row_count', 0) for s in samples))}, row_of"
            f" {ms(m(s.get('row_of', 0) for s in samples))}, pages {ms(m(s.get('page', 0) for s in samples))},"
            f" select_row (shows the item) {ms(m(s.get('select_row', 0) for s in samples))};"
            f" bare {'LIKE' if kind == 'text' else 'NOT IN'} count {ms(base)} → {apply_ / base:.1f}x"
        )
    clears = [s for r in runs for s in r["clears"]]
    print(f"clear filter: apply_filter median {ms(m(s['apply'] for s in clears))} (back to {clears[0]['rows']:,} rows)")
    print(f"baseline:    SELECT count(*) FROM items WHERE prompt LIKE ? (the three words): median {ms(bare_like)}")
    print(f"ratio:       worst filter ({worst_key}) {worst / bare_like:.2f}x baseline")
    for key, plan in runs[0]["plans"].items():
        print(f"query plan ({key} filter count): " + " | ".join(plan))
    print(f"target filter ≤ 100 ms: {verdict(worst <= 0.1)} (worst: {worst_key} {ms(worst)})")

    scroll = [s for r in runs for s in r["scroll"]]
    print(
        f"scrolling:   select_row at {sizes.scroll_positions} positions → table painted: median"
        f" {ms(m(s['total'] for s in scroll))}, p95 {ms(pct([s['total'] for s in scroll], 95))},"
        f" max {ms(max(s['total'] for s in scroll))}; page loads median {ms(m(s['page'] for s in scroll))}"
        f" (last row: {ms(m(s['page'] for s in scroll if s['row'] == scroll[-1]['row']))})"
    )
    peak, bare_rss = m(r["peak_rss_mb"] for r in runs), m(b["peak_rss_mb"] for b in bare)
    cp = {k: m(r["rss"][k] for r in runs) for k in runs[0]["rss"]}
    print(f"peak RSS:    median {peak:.0f} MB  runs {[round(r['peak_rss_mb']) for r in runs]}")
    print(f"baseline:    bare QApplication + QMainWindow process {bare_rss:.0f} MB")
    print(f"ratio:       {peak / bare_rss:.2f}x baseline")
    print("RSS along the way (median): " + ", ".join(f"{k} {v:.0f} MB" for k, v in cp.items()))
    print(f"target RSS ≤ 300 MB: {verdict(peak <= 300)}")


# == main =====================================================================================


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=SECTIONS, action="append", help="run only this section (repeatable)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a development run of seconds")
    parser.add_argument("--workdir", type=Path, help="keep fixtures here and reuse them (default: a temp folder)")
    parser.add_argument("--large-items", type=int, help="items in the large project (default 100,000)")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="children start with this environment as is (with PYTHONDONTWRITEBYTECODE set, they compile every module)",
    )
    parser.add_argument("--child-large", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=5, help=argparse.SUPPRESS)
    parser.add_argument("--positions", type=int, default=20, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global CHILD_ENV
    if args.child_large:
        child_large(args.child_large, args.reps, args.positions)
        return
    sizes = QUICK if args.quick else Sizes()
    if args.large_items:
        sizes = Sizes(**{**sizes.__dict__, "large_items": args.large_items})
    sections = args.only or list(SECTIONS)
    started = time.perf_counter()
    print(
        f"python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs,"
        f" QT_QPA_PLATFORM={os.environ['QT_QPA_PLATFORM']}{', quick sizes' if args.quick else ''}"
    )
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        work, cleanup = args.workdir, None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="pairscope-bench-")
        work = Path(cleanup.name)
    CHILD_ENV = child_env(work, not args.no_bytecode_cache)
    print(
        "child processes: "
        + (f"bytecode cached in {work / 'pycache'}" if CHILD_ENV else "environment as is")
        + f" (PYTHONDONTWRITEBYTECODE {'set' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'not set'} here)"
    )
    try:
        for name in SECTIONS:
            if name in sections:
                begin = time.perf_counter()
                {"cold": section_cold, "next": section_next, "commit": section_commit, "large": section_large}[name](
                    sizes, work
                )
                print(f"({name}: {time.perf_counter() - begin:.0f} s)\n", flush=True)
    finally:
        if cleanup is not None:
            cleanup.cleanup()
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
