"""The annotator's next item (``U``) in a judge order, and the Ensemble dialog's read.

Fixture: N two-response items with a reference, R pairwise runs with K = 3 samples each
(no stored confidence, so "least confident" falls back to every item's vote share — the
slowest path), recorded through ``record_verdicts`` as a judge run stores them.

Reported, median of several runs:

- ``U`` in "least confident" and "judges disagree": the first press (ranks every item) and the
  presses after it (:class:`QueueCache`: a stamp query, then the cached ranking without the
  items labeled since); the baseline, measured in the same run, is ``ranked()`` without the
  cache, which is what every press cost before.
- ``load_ensemble`` + kappa for the R runs (the dialog now reads it off the GUI thread).

    python bench/queue_bench.py [--items 2000] [--runs 4] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pairscope.app.judge.ensemble import load_ensemble
from pairscope.app.judge.queue import QueueCache, preference_runs, ranked
from pairscope.app.judge.results import record_verdicts
from pairscope.app.records import Item, Reference, Response
from pairscope.app.store import Store, VerdictRecord

K = 3


def build(path: Path, n_items: int, n_runs: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"q{i}",
                    prompt=f"Question {i}",
                    responses=(Response(0, "first"), Response(1, "second")),
                    reference=Reference(ranking=(0, 1)),
                )
                for i in range(n_items)
            ]
        )
        ids = [s.id for s in store.item_summaries(0, n_items)]
        for r in range(n_runs):
            run = store.create_run(
                backend="fake", model_path=f"judge-{r}", weights_hash=None, template_name=None, template_text="t",
                template_hash="h", mode="pairwise", k=K, both_orders=False, frames=None, seed=r, generation={},
            )  # fmt: skip
            skill = 0.6 + 0.1 * r
            samples = [
                VerdictRecord(run.id, item_id, j, (0, 1), "s", 0 if rng.random() < skill else 1, None, True, None)
                for item_id in ids
                for j in range(K)
            ]
            record_verdicts(store, run, samples)


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def press_times(store: Store, order: str, runs: list[int], repeat: int) -> tuple[float, float, float]:
    """Median seconds: ``ranked()`` without the cache (every press before), the cache's first
    press, and a later press with 39 items labeled since."""
    base, first, again = [], [], []
    labeled = set(range(1, 40))
    for _ in range(repeat):
        base.append(timed(ranked, store, order, "ann", (), runs))
        cache = QueueCache()
        first.append(timed(cache.ranked, store, order, "ann", set(), runs))
        again.append(timed(cache.ranked, store, order, "ann", labeled, runs))
    return statistics.median(base), statistics.median(first), statistics.median(again)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "queue.pairscope"
        build(path, args.items, args.runs)
        print(f"{args.items} items x {args.runs} runs x K={K}; median of {args.repeat}")
        with Store.open(path, readonly=True) as store:
            runs = preference_runs(store)
            for order in ("least_confident", "judges_disagree"):
                b, f, a = press_times(store, order, runs, args.repeat)
                print(
                    f"U, {order}: every press before {b * 1000:.1f} ms; first press {f * 1000:.1f} ms;"
                    f" next presses {a * 1000:.1f} ms ({b / a:.0f}x faster than before)"
                )
            ens = statistics.median(timed(lambda: load_ensemble(store, runs).kappa()) for _ in range(args.repeat))
            print(f"ensemble dialog read (load_ensemble + kappa): {ens * 1000:.0f} ms, off the GUI thread")


if __name__ == "__main__":
    sys.exit(main())
