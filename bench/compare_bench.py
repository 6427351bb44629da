"""`pairscope compare` on a 1,250-item VL-RewardBench-shaped project with two imported runs
that differ on ~80 items (issue 25).

Target: compare < 1 s. Reported, median of N runs each: the comparison in process
(``compare_runs``: the one read snapshot, the 2×2, McNemar, the 2,000-resample paired bootstrap
overall and per slice, Holm / Šidák), split into its read and its statistics; the floor — reading
the two runs alone (every stored sample of both, ``Store.verdicts``) — and the ratio to it; and
the command end to end (``pairscope compare`` in a fresh process: start-up, imports, open,
compare, print) beside ``pairscope info`` (start-up and open only) and ``pairscope stats`` on the
same project.

    python bench/compare_bench.py [--items 1250] [--differ 80] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pairscope.app.importer import import_file
from pairscope.app.judge.derived import import_verdicts
from pairscope.app.stats.compare import _item_names, compare_data, compare_runs
from pairscope.app.stats.data import load_stats_data
from pairscope.app.store import Store

PREFIXES = ("RLAIF-V-", "RLHF-V-", "hallucination_pair-", "mathverse_", "mmmu_", "wildvision-battle-")
SOURCES = ("rlaif-v", "rlhf-v", "povid", "mathverse", "mmmu-pro", "wildvision")
TAGS = ("existence", "recognition", "attribute", "counting", "reasoning", "others, wrong sign")


def build(folder: Path, n: int, differ: int) -> tuple[Path, int, int]:
    """The project, run A and run B (B = A except on ``differ`` items)."""
    rng = random.Random(25)
    (folder / "images").mkdir()
    rows, refs = [], {}
    for k in range(n):
        ext = f"{PREFIXES[k % 6]}{k}"
        ref = rng.randrange(2)
        refs[ext] = ref
        rows.append(
            {
                "id": ext,
                "query": "<image>\n" + "word " * rng.randint(5, 40),
                "response": ["a " * rng.randint(20, 200), "b " * rng.randint(20, 200)],
                "human_ranking": [ref, 1 - ref],
                "image_path": f"images/{k}.png",
                "models": ["m1", "m2"],
                "judge": "gpt-4o",
                "rationale": "checked",
                "query_source": SOURCES[k % 6],
                "human_error_analysis": [TAGS[k % 6]],
                "ground_truth": "",
                "meta": {},
            }
        )
    data = folder / "vl.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = folder / "bench.pairscope"
    flipped = set(rng.sample(sorted(refs), differ))
    picks = {"judge-a": {ext: ref if rng.random() < 0.7 else 1 - ref for ext, ref in refs.items()}}
    picks["judge-b"] = {ext: 1 - p if ext in flipped else p for ext, p in picks["judge-a"].items()}
    with Store.create(db) as store:
        import_file(store, data, "vlrewardbench")
        run_ids = []
        for name, by_item in picks.items():
            path = folder / f"{name}.jsonl"
            path.write_text(
                "".join(
                    json.dumps(
                        {"item": ext, "output": f"{name} read both. Overall Judgment: Answer {p + 1} is better."}
                    )
                    + "\n"
                    for ext, p in by_item.items()
                )
            )
            run_ids.append(import_verdicts(store, path, name).id)
    return db, run_ids[0], run_ids[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1250)
    parser.add_argument("--differ", type=int, default=80)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        db, a, b = build(Path(tmp), args.items, args.differ)
        print(f"fixture: {args.items} items, runs {a} and {b} imported in {time.perf_counter() - t:.1f} s")
        full, read, stats, floor = [], [], [], []
        with Store.open(db, readonly=True) as store:
            c = compare_runs(store, a, b)  # warm: imports of statsmodels and scipy
            differ = len(c.flips())
            for _ in range(args.runs):
                t = time.perf_counter()
                compare_runs(store, a, b)
                full.append(time.perf_counter() - t)
                t = time.perf_counter()
                data = load_stats_data(store)
                names = _item_names(store, data)
                read.append(time.perf_counter() - t)
                t = time.perf_counter()
                compare_data(data, names, a, b)
                stats.append(time.perf_counter() - t)
                t = time.perf_counter()
                n_samples = len(store.verdicts(a)) + len(store.verdicts(b))
                floor.append(time.perf_counter() - t)
        cli, info, stats_cli = [], [], []
        exe = [sys.executable, "-m", "pairscope.app.cli.main"]
        for _ in range(max(3, args.runs // 2)):  # alternating, so a busy machine slows both alike
            for times, command in (
                (cli, ["compare", "--run", str(a), "--run", str(b)]),
                (info, ["info"]),
                (stats_cli, ["stats"]),
            ):
                t = time.perf_counter()
                subprocess.run([*exe, *command, "--db", str(db)], check=True, capture_output=True)
                times.append(time.perf_counter() - t)
    o = c.overall
    print(
        f"comparison: {o.n} paired items, {differ} flips (A only right {o.a_only}, B only right {o.b_only}),"
        f" {len(c.slices)} slices, {c.resamples} bootstrap resamples each"
    )
    print(f"compare (in process):    median {med(full):.3f} s   runs {[round(x, 3) for x in full]}")
    print(f"  read (snapshot+names): median {med(read):.3f} s")
    print(f"  statistics:            median {med(stats):.3f} s")
    print(f"floor: read the two runs' {n_samples} samples (Store.verdicts): median {med(floor):.3f} s")
    print(f"ratio:                   {med(full) / med(floor):.1f}x the floor")
    print(f"pairscope compare (fresh process, end to end): median {med(cli):.3f} s   runs {[round(x, 2) for x in cli]}")
    print(f"pairscope info (the same start-up and open, no statistics): median {med(info):.3f} s")
    print(f"pairscope stats (the same project, for scale): median {med(stats_cli):.3f} s")
    print(f"target compare < 1 s: {'met' if med(full) < 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
