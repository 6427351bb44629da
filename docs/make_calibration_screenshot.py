"""Screenshot of the calibration figure in the Statistics view (offscreen; no X server needed).

The demo project is judged by two scripted judges that return log-probabilities
(tests/test_confidence.py ``LogprobBackend``): on each item a judge draws how sure it is,
p ~ U(0.5, 1), and is right with probability p^1.6 — a judge somewhat over-confident, as small
VLM judges are. Run A is K = 1; run B is K = 3 in both orders (its item confidence is the
mean over six samples). The figure shows the mechanics on known data, not a real model.

    .venv/bin/python docs/make_calibration_screenshot.py

writes docs/screenshot-calibration.png (Figures → Calibration). With a folder as argument it
also writes the Judge runs tab (calibration table, reliability bins and the inline figure) there.
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

from pairscope.app.judge.session import JudgeConfig, JudgeSession  # noqa: E402
from pairscope.app.store import Store  # noqa: E402
from test_confidence import LogprobBackend  # noqa: E402

SHOT = "screenshot-calibration.png"


def overconfident_judge(store: Store, ids: list[int], seed: int, sharpness: float = 1.6):
    """(script, confidence) for ``LogprobBackend``: per item and answer order a confidence p ~
    U(0.5, 1); the verdict names the reference's chosen response with probability p^sharpness."""
    rng = random.Random(seed)
    chosen = {}
    for item_id in ids:
        item = store.get_item(item_id)
        if len(item.responses) == 2 and item.reference.chosen is not None:
            chosen[item.responses[item.reference.chosen].text] = item.responses[1 - item.reference.chosen].text
    drawn: dict[str, tuple[str, float]] = {}

    def draw(request) -> tuple[str, float]:
        if request.prompt not in drawn:
            for good, bad in chosen.items():
                g, b = request.prompt.find(good), request.prompt.find(bad)
                if g >= 0 and b >= 0:
                    right = 1 if g < b else 2
                    break
            else:
                right = rng.choice([1, 2])
            p = rng.uniform(0.5, 1.0)
            position = right if rng.random() < p**sharpness else 3 - right
            drawn[request.prompt] = (f"Overall Judgment: Answer {position} is better", p)
        return drawn[request.prompt]

    return (lambda request: draw(request)[0]), (lambda request: draw(request)[1])


def simulate(store: Store) -> None:
    simulate_labels(store)
    ids = [s.id for s in store.item_summaries(0, 1000)]
    for name, seed, config in (("judge-a", 1, JudgeConfig(k=1)), ("judge-b", 2, JudgeConfig(k=3, both_orders=True))):
        script, confidence = overconfident_judge(store, ids, seed)
        JudgeSession(store, LogprobBackend(name, script=script, confidence=confidence), config).judge(ids)


def main() -> None:
    shots = [(str(ROOT / "docs" / SHOT), ("Figures", "Calibration"))]
    if len(sys.argv) > 1:
        folder = Path(sys.argv[1])
        folder.mkdir(parents=True, exist_ok=True)
        shots.append((str(folder / "judge-runs.png"), ("Judge runs", None)))
    shoot_stats_view(simulate, shots)
    print(f"wrote docs/{SHOT}")


if __name__ == "__main__":
    main()
