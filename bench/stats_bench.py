"""All statistics on 100,000 items × 3 annotators + 2 judge runs (plots excluded).

Target (issue 5): ≤ 1 s. Reported: loading the arrays from the project, computing every
statistic (agreement with and without bootstrap CIs, both runs' accuracy tables, length
bias), median of N runs; baseline in the same run: one Cohen's kappa on one annotator pair
with scikit-learn over the same arrays (the floor of "one library call").

    python bench/stats_bench.py [--items 100000] [--runs 3] [--bootstrap 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from pairscope.app.records import ErrorTag, Item, Label, Reference, Response
from pairscope.app.stats.agreement import agreement_report
from pairscope.app.stats.data import load_stats_data
from pairscope.app.stats.judge_metrics import run_metrics
from pairscope.app.stats.length_bias import length_report
from pairscope.app.store import Store, VerdictRecord

CATEGORIES = ("general", "hallucination", "reasoning")
KINDS = ("existence", "recognition", "attribute", "counting", "reasoning", "other")


def build(path: Path, n: int) -> None:
    rng = random.Random(1)
    with Store.create(path) as store:
        items = [
            Item(
                ext_id=f"i{k}",
                prompt="word " * rng.randint(5, 30),
                category=CATEGORIES[k % 3],
                responses=(Response(0, "a " * rng.randint(10, 120)), Response(1, "b " * rng.randint(10, 120))),
                reference=Reference(
                    ranking=(0, 1) if rng.random() < 0.5 else (1, 0), error_tags=(ErrorTag(KINDS[k % 6]),)
                ),
            )
            for k in range(n)
        ]
        store.add_items(items)
        ids = [s.id for s in store.item_summaries(0, n)]
        refs = dict(store.query("SELECT id, ref_chosen FROM items"))
        with store.transaction():
            for name in ("alice", "bob", "carol"):
                for item_id in ids:
                    roll = rng.random()
                    if roll < 0.8:
                        best = refs[item_id] if rng.random() < 0.85 else 1 - refs[item_id]
                        store.add_label(Label(item_id, name, "prefer", ranking=(best, 1 - best), display_order=(0, 1)))
                    elif roll < 0.9:
                        store.add_label(Label(item_id, name, "tie", display_order=(0, 1)))
        for k, both in ((3, False), (2, True)):
            run = store.create_run(
                backend="fake",
                model_path="m",
                weights_hash=None,
                template_name="pairwise",
                template_text="t",
                template_hash=f"h{k}",
                mode="pairwise",
                k=k,
                both_orders=both,
                frames=8,
                seed=0,
                generation={},
            )
            verdicts = []
            for item_id in ids:
                for s in range(2 * k if both else k):
                    order = (0, 1) if rng.random() < 0.5 else (1, 0)
                    parsed = rng.random() < 0.95
                    choice = (refs[item_id] if rng.random() < 0.7 else 1 - refs[item_id]) if parsed else None
                    verdicts.append(VerdictRecord(run.id, item_id, s, order, "x", choice, None, parsed, None))
            store.add_verdicts(verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    from sklearn.metrics import cohen_kappa_score

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stats.pairscope"
        t = time.perf_counter()
        build(path, args.items)
        print(f"fixture: {args.items} items, 3 annotators, 2 judge runs built in {time.perf_counter() - t:.1f} s")
        load, compute, compute_ci, base = [], [], [], []
        with Store.open(path) as store:
            for _ in range(args.runs):
                t = time.perf_counter()
                data = load_stats_data(store)
                load.append(time.perf_counter() - t)
                t = time.perf_counter()
                agreement_report(data, bootstrap=0)
                for run in data.runs:
                    run_metrics(data, run)
                length_report(data)
                compute.append(time.perf_counter() - t)
                t = time.perf_counter()
                agreement_report(data, bootstrap=args.bootstrap)
                compute_ci.append(time.perf_counter() - t)
                a, b = data.labels["alice"], data.labels["bob"]
                both = ~np.isnan(a) & ~np.isnan(b)
                t = time.perf_counter()
                cohen_kappa_score(a[both], b[both])
                base.append(time.perf_counter() - t)
    med = statistics.median
    total = med(load) + med(compute)
    print(f"load arrays:        median {med(load):.3f} s   runs {[round(x, 3) for x in load]}")
    print(f"all statistics:     median {med(compute):.3f} s   runs {[round(x, 3) for x in compute]}  (no bootstrap)")
    print(f"agreement with {args.bootstrap}-resample bootstrap CIs: median {med(compute_ci):.3f} s")
    print(f"baseline: one sklearn cohen_kappa_score on one pair: median {med(base):.3f} s")
    print(f"ratio:              {med(compute) / med(base):.1f}x baseline (statistics, no bootstrap)")
    print(f"load + statistics:  {total:.3f} s   target ≤ 1 s: {'met' if total <= 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
