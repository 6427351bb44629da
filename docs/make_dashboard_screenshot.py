"""Screenshots of the Statistics dashboard on the demo project (offscreen; no X server needed).

Three simulated annotators label the demo (each agrees with the known right answer about 85 %
of the time; see make_stats_screenshot.py), and two scripted judges (tests/fake_backend.py)
run: one K = 1, one K = 3 in both orders, each right about 75 % of the time, sometimes
answering without a verdict. The tables and figures show the mechanics on known data.

    .venv/bin/python docs/make_dashboard_screenshot.py

writes docs/screenshot-stats-dashboard.png (the Overview tab), screenshot-stats-runs.png,
screenshot-stats-annotators.png and screenshot-stats-figures.png (accuracy vs K). With a folder
as argument it writes every other tab and figure there instead (to look them over).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "docs"))

from make_stats_screenshot import shoot_stats_view, simulate_labels  # noqa: E402

from fake_backend import FakeBackend  # noqa: E402
from pairscope.app.judge.session import JudgeConfig, JudgeSession  # noqa: E402
from pairscope.app.stats.dashboard import FIGURE_TITLES  # noqa: E402
from pairscope.app.store import Store  # noqa: E402

SHOTS = {
    "screenshot-stats-dashboard.png": ("Overview", None),
    "screenshot-stats-runs.png": ("Judge runs", None),
    "screenshot-stats-annotators.png": ("Annotators", None),
    "screenshot-stats-figures.png": ("Figures", "Accuracy vs K"),
}


def scripted_judge(store: Store, ids: list[int], seed: int, right: float = 0.75):
    """A judge right with probability ``right`` on two-response items (it finds the reference's
    chosen text in the prompt), otherwise wrong or, now and then, without a verdict."""
    rng = random.Random(seed)
    chosen = {}
    for item_id in ids:
        item = store.get_item(item_id)
        if len(item.responses) == 2 and item.reference.chosen is not None:
            chosen[item.responses[item.reference.chosen].text] = item.responses[1 - item.reference.chosen].text

    def judge(request) -> str:
        for good, bad in chosen.items():
            g, b = request.prompt.find(good), request.prompt.find(bad)
            if g >= 0 and b >= 0:
                position = 1 if g < b else 2
                break
        else:
            position = rng.choice([1, 2])
        roll = rng.random()
        if roll < 0.06:
            return "Both answers have merits; I cannot decide."
        if roll > right + 0.06:
            position = 3 - position
        return f"Overall Judgment: Answer {position} is better"

    return judge


def simulate(store: Store) -> None:
    simulate_labels(store)
    ids = [s.id for s in store.item_summaries(0, 1000)]
    JudgeSession(store, FakeBackend("judge-a", script=scripted_judge(store, ids, 1)), JudgeConfig(k=1)).judge(ids)
    JudgeSession(
        store, FakeBackend("judge-b", script=scripted_judge(store, ids, 2)), JudgeConfig(k=3, both_orders=True)
    ).judge(ids)


def main() -> None:
    shots = [(str(ROOT / "docs" / name), where) for name, where in SHOTS.items()]
    every = Path(sys.argv[1]) if len(sys.argv) > 1 else None  # a folder: every tab, to look at
    if every is not None:
        every.mkdir(parents=True, exist_ok=True)
        shots = [(str(every / f"{i}-{t}.png"), (t, None)) for i, t in enumerate(("Categories", "Report text"))]
        shots += [(str(every / f"fig-{i}.png"), ("Figures", f)) for i, f in enumerate(FIGURE_TITLES.values())]
    shoot_stats_view(simulate, shots)
    print("wrote", ", ".join(f"docs/{name}" for name in SHOTS))


if __name__ == "__main__":
    main()
