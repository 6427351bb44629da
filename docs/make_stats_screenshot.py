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
from pairscope.app.gui.stats_view import StatsView  # noqa: E402
from pairscope.app.judge.session import JudgeConfig, JudgeSession  # noqa: E402
from pairscope.app.labeling import LabelingSession  # noqa: E402
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


def main() -> None:
    project = Path(tempfile.mkdtemp()) / "demo.pairscope"
    create_demo_project(project)
    with Store.open(project) as store:
        simulate(store)
    app = QApplication(sys.argv[:1])
    store = Store.open(project)
    view = StatsView(store)
    view.resize(1200, 800)
    view.show()

    def shoot() -> None:
        if view.report is None:
            QTimer.singleShot(200, shoot)
            return
        view.grab().save(str(ROOT / "docs" / "screenshot-stats-summary.png"))
        view.tabs.setCurrentIndex(view.tabs.indexOf(view.figure_tabs))
        titles = [view.figure_tabs.tabText(i) for i in range(view.figure_tabs.count())]
        view.figure_tabs.setCurrentIndex(titles.index("Accuracy per category"))
        QTimer.singleShot(
            500, lambda: (view.grab().save(str(ROOT / "docs" / "screenshot-stats-judge.png")), view.close(), app.quit())
        )

    QTimer.singleShot(500, shoot)
    app.exec()
    print("wrote docs/screenshot-stats-summary.png and docs/screenshot-stats-judge.png")


if __name__ == "__main__":
    main()
