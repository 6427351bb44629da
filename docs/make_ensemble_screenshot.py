"""Screenshots of the ensemble review on the demo project (offscreen; no X server needed).

Three scripted judges (tests/fake_backend.py) judge the demo:
K = 1, K = 3 and K = 3 in both orders, right about 85, 75 and 70 % of the time except on a
third of the pairs, which all of them find hard (25 %). The window's
ensemble is all three; the review panel shows their verdicts side by side on an item they
split on, and the Ensemble dialog shows accuracy, kappa and the wrong counts.

    .venv/bin/python docs/make_ensemble_screenshot.py

writes docs/screenshot-ensemble.png (the window) and docs/screenshot-ensemble-dialog.png.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "docs"))

from make_stats_screenshot import simulate_labels  # noqa: E402
from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from fake_backend import FakeBackend  # noqa: E402
from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.controller import AnnotationController  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.gui.main_window import MainWindow  # noqa: E402
from pairscope.app.judge.ensemble import load_ensemble  # noqa: E402
from pairscope.app.judge.session import JudgeConfig, JudgeSession  # noqa: E402
from pairscope.app.store import Store  # noqa: E402


def judge_script(store: Store, ids: list[int], seed: int, right: float):
    """A judge right with probability ``right``, but only 25 % on the items every judge finds
    hard (every third pair): the errors of small judges go together, as on real benchmarks.
    It finds the reference's chosen text in the prompt (see make_dashboard_screenshot.py)."""
    rng = random.Random(seed)
    pairs = {}
    for n, item_id in enumerate(ids):
        item = store.get_item(item_id)
        if len(item.responses) == 2 and item.reference.chosen is not None:
            good = item.responses[item.reference.chosen].text
            pairs[good] = (item.responses[1 - item.reference.chosen].text, n % 3 == 0)

    def judge(request) -> str:
        position, hard = rng.choice([1, 2]), False
        for good, (bad, is_hard) in pairs.items():
            g, b = request.prompt.find(good), request.prompt.find(bad)
            if g >= 0 and b >= 0:
                position, hard = (1 if g < b else 2), is_hard
                break
        roll = rng.random()
        if roll < 0.04:
            return "Both answers have merits; I cannot decide."
        if roll > (0.25 if hard else right) + 0.04:
            position = 3 - position
        return f"Overall Judgment: Answer {position} is better"

    return judge


def simulate(store: Store) -> list[int]:
    simulate_labels(store)
    ids = [s.id for s in store.item_summaries(0, 1000)]
    configs = [("qwen2-vl-2b", 0.85, JudgeConfig(k=1)), ("llava-ov-0.5b", 0.75, JudgeConfig(k=3))]
    configs.append(("internvl2-1b", 0.7, JudgeConfig(k=3, both_orders=True)))
    for seed, (name, right, config) in enumerate(configs, start=1):
        JudgeSession(store, FakeBackend(name, script=judge_script(store, ids, seed, right)), config).judge(ids)
    return [r.id for r in store.runs()]


def split_item(store: Store, runs: list[int]) -> int:
    """An item the judges split on, with labels (the first such, by id)."""
    ensemble = load_ensemble(store, runs)
    for item in ensemble.items:
        outcomes = set(item.outcomes.values())
        if (
            len(item.outcomes) == len(runs)
            and {"right", "wrong"} <= outcomes
            and store.item_current_labels(item.item_id)
        ):
            return item.item_id
    return ensemble.items[0].item_id


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    project = folder / "demo.pairscope"
    create_demo_project(project)
    with Store.open(project) as store:
        runs = simulate(store)
        target = split_item(store, runs)
    app = QApplication(sys.argv[:1])
    collect_on_gui_thread()  # as the app does: a closed dialog is never freed off the GUI thread
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(AnnotationController(Store.open(project), "ann"), settings)
    window.resize(1500, 900)
    window.show()
    dialog = window.shortcuts.show_ensemble()
    dialog.apply_to_window()
    window.table.select_row(window.controller.row_of(target))
    window.review_dock.show()
    window.review_dock.raise_()
    window.resizeDocks([window.review_dock], [440], Qt.Orientation.Horizontal)
    for _ in range(20):
        app.processEvents()
    dialog.raise_()
    dialog.resize(820, 700)
    while dialog.reading:  # the runs are read off the GUI thread
        app.processEvents()
    for _ in range(20):
        app.processEvents()
    window.grab().save(str(ROOT / "docs" / "screenshot-ensemble.png"))
    dialog.name.setText("hard-majority")
    dialog.grab().save(str(ROOT / "docs" / "screenshot-ensemble-dialog.png"))
    dialog.close()
    window.close()
    print("wrote docs/screenshot-ensemble.png, docs/screenshot-ensemble-dialog.png")


if __name__ == "__main__":
    main()
