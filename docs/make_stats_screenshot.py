"""Screenshots of the Statistics view on the demo project (offscreen, or under xvfb-run).

Three simulated annotators label the demo (each agrees with the known right answer about 85 %
of the time) and a scripted judge (tests/fake_backend.py) that is right about 70 % of the time
runs with K = 3 in both orders: the figures show the mechanics on known data.
    .venv/bin/python docs/make_stats_screenshot.py
writes docs/screenshot-stats-summary.png (the Overview tab) and screenshot-stats-judge.png
(accuracy per category). docs/make_dashboard_screenshot.py shoots the other tabs.
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

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from fake_backend import FakeBackend  # noqa: E402
from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.gui.stats_view import StatsView  # noqa: E402
from pairscope.app.judge.session import JudgeConfig, JudgeSession  # noqa: E402
from pairscope.app.labeling.session import LabelingSession  # noqa: E402
from pairscope.app.records import LabelDraft  # noqa: E402
from pairscope.app.store import Store  # noqa: E402


def simulate_labels(store: Store, seed: int = 7) -> random.Random:
    """alice, bob and carol label every two-response item with a reference (~85 % right)."""
    rng = random.Random(seed)
    ids = [s.id for s in store.item_summaries(0, 1000)]
    for name in ("alice", "bob", "carol"):
        session = LabelingSession(store, name)
        for item_id in ids:
            item = store.get_item(item_id)
            if len(item.responses) != 2 or item.reference.chosen is None:
                continue
            order = session.order(item_id)
            right = order.index(item.reference.chosen) + 1
            roll = rng.random()
            draft = (
                LabelDraft(preferred_position=right, strength="clearly")
                if roll < 0.85
                else LabelDraft(outcome="tie")
                if roll < 0.92
                else LabelDraft(preferred_position=3 - right)
            )
            session.save(item_id, draft)
    return rng


def simulate(store: Store) -> None:
    rng = simulate_labels(store)
    ids = [s.id for s in store.item_summaries(0, 1000)]

    def judge(request):
        return f"Overall Judgment: Answer {rng.choice([1, 2])} is better"

    JudgeSession(store, FakeBackend(script=judge), JudgeConfig(k=3, both_orders=True)).judge(ids)


def shoot_stats_view(simulate, shots: list[tuple[str, tuple[str, str | None]]], size=(1280, 820)) -> None:
    """Make the demo project, ``simulate(store)`` labels and runs, open the Statistics view and
    save ``(path, (tab, figure tab or None))`` grabs once its figures are computed."""
    project = Path(tempfile.mkdtemp()) / "demo.pairscope"
    create_demo_project(project)
    with Store.open(project) as store:
        simulate(store)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    collect_on_gui_thread()  # as the app does: a closed dialog is never freed off the GUI thread
    store = Store.open(project)
    view = StatsView(store)
    view.resize(*size)
    view.show()
    todo = list(shots)

    def shoot() -> None:
        if view.report is None:
            QTimer.singleShot(200, shoot)
            return
        if not todo:
            view.close()
            app.quit()
            return
        name, (tab, sub) = todo.pop(0)
        view.tabs.setCurrentIndex([view.tabs.tabText(i) for i in range(view.tabs.count())].index(tab))
        if sub is not None:
            titles = [view.figure_tabs.tabText(i) for i in range(view.figure_tabs.count())]
            view.figure_tabs.setCurrentIndex(titles.index(sub))
        QTimer.singleShot(400, lambda: (view.grab().save(name), shoot()))

    QTimer.singleShot(300, shoot)
    app.exec()
    store.close()


def main() -> None:
    docs = ROOT / "docs"
    shoot_stats_view(
        simulate,
        [
            (str(docs / "screenshot-stats-summary.png"), ("Overview", None)),
            (str(docs / "screenshot-stats-judge.png"), ("Figures", "Accuracy per category")),
        ],
        size=(1200, 800),
    )
    print("wrote docs/screenshot-stats-summary.png and docs/screenshot-stats-judge.png")


if __name__ == "__main__":
    main()
