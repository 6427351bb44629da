"""Statistics on a generated project: N items × 3 annotators + 2 judge runs, from opening it.

Target (issue 30): ≤ 1 s and ≤ 1.5× the floor at 100,000 items. Each run is a fresh process,
subject and floor alternating. The subject is what ``pairscope stats`` does: open the project
(identity check, quick check when the file changed), read it (``load_stats_data``) and
compute every statistic (``compute_stats``: agreement, both runs' scores, length bias, steps,
calibration; bootstrap CIs separately). The floor: a bare sqlite3 read of the current labels
and verdicts into numpy, the three annotator pairs' Cohen's kappas (scikit-learn) and each
run's accuracy against the reference. Both are timed inside the process from opening the
file to the last figure (imports excluded, the same for both); whole-process wall times, each
child's CPU time (``time.process_time``: on a loaded machine the steadier ratio) and peak
memory are printed too. The first opening after the fixture is written includes the
quick check; later ones find it cached (``app/store/connection.py``): both are reported.

    python bench/stats_bench.py [--items 100000] [--runs 3] [--bootstrap 200]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_util import load_note, median, report_child, run_child  # noqa: E402

CATEGORIES = ("general", "hallucination", "reasoning")
KINDS = ("existence", "recognition", "attribute", "counting", "reasoning", "other")


def build(path: Path, n: int) -> None:
    """The fixture, through the store and judge layers (labels, verdicts, item votes)."""
    from pairscope.app.judge.results import record_verdicts
    from pairscope.app.records import ErrorTag, Item, Label, Reference, Response
    from pairscope.app.store import Store, VerdictRecord

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
        refs = dict(store.query("SELECT id, ref_chosen FROM items"))
        ids = sorted(refs)
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
            record_verdicts(store, run, verdicts)


# -- the children ----------------------------------------------------------------------------


def child_subject(db: Path, bootstrap: int) -> None:
    """What ``pairscope stats`` does, from opening the project to the last figure."""
    from pairscope.app.project import open_project
    from pairscope.app.stats.report import compute_stats

    start, cpu = time.perf_counter(), time.process_time()
    with open_project(db, readonly=True) as store:
        opened = time.perf_counter()
        report = compute_stats(store, bootstrap=bootstrap)
    seconds = time.perf_counter() - start
    assert report["items"] > 0 and len(report["judges"]) == 2 and report["agreement"], "measured nothing"
    report_child(seconds=seconds, open_s=opened - start, cpu_s=time.process_time() - cpu)


def child_floor(db: Path) -> None:
    """The floor: current labels and verdicts read into numpy, three kappas, runs' accuracy."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    start, cpu = time.perf_counter(), time.process_time()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    items = np.array(conn.execute("SELECT id, coalesce(ref_chosen, -1) FROM items ORDER BY id").fetchall())
    n = int(items[:, 0].max()) + 1
    ref = np.full(n, -1)
    ref[items[:, 0]] = items[:, 1]
    labels = np.array(
        conn.execute(
            "SELECT annotator_id, item_id, CASE outcome WHEN 'prefer' THEN preferred WHEN 'tie' THEN 100 ELSE -1 END"
            " FROM label_current WHERE kind = 'label' AND outcome != 'cleared'"
        ).fetchall()
    )
    coded = {}
    for a in np.unique(labels[:, 0]):
        col = np.full(n, -2)
        mine = labels[labels[:, 0] == a]
        col[mine[:, 1]] = mine[:, 2]
        coded[int(a)] = col
    kappas = []
    names = sorted(coded)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            both = (coded[a] >= 0) & (coded[b] >= 0)
            kappas.append(cohen_kappa_score(coded[a][both], coded[b][both]))
    accuracy = []
    for (run_id,) in conn.execute("SELECT id FROM judge_runs").fetchall():
        v = np.array(
            conn.execute("SELECT item_id, coalesce(choice, -1) FROM verdicts WHERE run_id = ?", (run_id,)).fetchall()
        )
        ok = v[:, 1] >= 0
        accuracy.append(float(np.mean(v[ok, 1] == ref[v[ok, 0]])))
    conn.close()
    assert len(kappas) == 3 and len(accuracy) == 2
    report_child(seconds=time.perf_counter() - start, cpu_s=time.process_time() - cpu)


def _child(argv: list[str]) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", *argv]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--db", type=Path, help="use (or build, if missing) this fixture")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, db, *rest = args.child
        if what == "floor":
            child_floor(Path(db))
        else:
            child_subject(Path(db), int(rest[0]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "stats.pairscope"
        if not db.exists():
            t = time.perf_counter()
            build(db, args.items)
            print(f"fixture: {args.items:,} items, 3 annotators, 2 judge runs built in {time.perf_counter() - t:.1f} s")
        from pairscope.app.store import Store, checked

        Store.open(db).close()  # a reused fixture of an earlier schema: upgraded once, as opening it for writing does
        checked.forget_checked(db)
        first = run_child(_child(["subject", str(db), "0"]))  # the first opening: the quick check runs
        subject, floor = [], []
        for _ in range(args.runs):
            subject.append(run_child(_child(["subject", str(db), "0"])))
            floor.append(run_child(_child(["floor", str(db)])))
        boot = run_child(_child(["subject", str(db), str(args.bootstrap)]))
    s, f = median(r["seconds"] for r in subject), median(r["seconds"] for r in floor)
    print(
        f"stats, open + compute: median {s:.3f} s  runs {[round(r['seconds'], 3) for r in subject]}"
        f"  (open {median(r['open_s'] for r in subject):.3f} s;"
        f" whole process {median(r['wall_s'] for r in subject):.2f} s,"
        f" peak {median(r['peak_mb'] for r in subject):.0f} MB)"
    )
    print(f"first opening (quick check runs): {first['seconds']:.3f} s  (open {first['open_s']:.3f} s)")
    print(
        f"floor (labels + verdicts → numpy, 3 kappas, 2 accuracies): median {f:.3f} s"
        f"  runs {[round(r['seconds'], 3) for r in floor]}  (whole process {median(r['wall_s'] for r in floor):.2f} s,"
        f" peak {median(r['peak_mb'] for r in floor):.0f} MB)"
    )
    print(
        f"ratio: {s / f:.2f}x floor   target ≤ 1 s: {'met' if s <= 1 else 'NOT met'};"
        f" ≤ 1.5x: {'met' if s / f <= 1.5 else 'NOT met'}"
    )
    runs = [round(a["seconds"] / b["seconds"], 2) for a, b in zip(subject, floor)]
    cs, cf = median(r["cpu_s"] for r in subject), median(r["cpu_s"] for r in floor)
    print(
        f"per run (subject / the floor run after it): {runs};"
        f" CPU time (this process's own, less swayed by the machine's load): {cs:.3f} s vs {cf:.3f} s = {cs / cf:.2f}x"
    )
    print(f"with {args.bootstrap}-resample bootstrap CIs: {boot['seconds']:.3f} s")
    print(f"machine: {load_note()}")


if __name__ == "__main__":
    main()
