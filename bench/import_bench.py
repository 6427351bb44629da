"""Import a generated 100,000-item VL-RewardBench JSONL and print the figures.

Target (issue 2): ≤ 5 s on the project's 2-core machine. Reported: median of N runs of
the full import (parse, validate, resolve media, one transaction), the database size,
a re-import (idempotent, adds nothing), and the ratio against a baseline measured in
the same run: json.loads of every line plus one bare INSERT per line into a one-table
SQLite file in one transaction — the floor any importer pays.

    python bench/import_bench.py [--items 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image

from pairscope.app.gc_pause import gc_paused
from pairscope.app.importer import import_file, open_source
from pairscope.app.store import Store

WORDS = (
    "the a red blue green circle square there are two three four left right of image shows "
    "count object text sign person table answer because first second visible near small large"
).split()
PREFIXES = ("wildvision_battle_", "RLAIF-V-", "RLHF-V-", "hallucination_pair-", "mathverse_", "mmmu_pro_")
TAGS = ("hallucination", "attribute", "counting", "recognition(object)", "recognition(text)", "others, blurry")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(folder: Path, n_items: int, n_images: int = 1000) -> Path:
    """Write ``n_items`` rows referencing ``n_images`` real small PNGs."""
    rng = random.Random(7)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for i in range(n_images):
        Image.new("RGB", (4, 4), (i % 256, 0, 0)).save(folder / "images" / f"{i}.png")
    path = folder / "bench.jsonl"
    with open(path, "w") as fh:
        for i in range(n_items):
            row = {
                "id": f"{PREFIXES[i % len(PREFIXES)]}{i}",
                "query": "<image>\n" + sentence(rng, rng.randint(8, 30)),
                "response": [sentence(rng, rng.randint(30, 120)) for _ in range(2)],
                "human_ranking": rng.choice([[0, 1], [1, 0]]),
                "image_path": f"images/{i % n_images}.png",
                "models": ["model-a", "model-b"],
                "query_source": PREFIXES[i % len(PREFIXES)].rstrip("-_"),
                "human_error_analysis": rng.choice(TAGS),
                "ground_truth": str(rng.randint(0, 9)),
            }
            fh.write(json.dumps(row) + "\n")
    return path


def baseline(path: Path, db: Path) -> float:
    start = time.perf_counter()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE rows (id TEXT PRIMARY KEY, body TEXT)")
    conn.execute("BEGIN")
    with open(path, "rb") as fh:
        conn.executemany("INSERT INTO rows VALUES (?, ?)", ((json.loads(line)["id"], line) for line in fh))
    conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - start


def parse_only(path: Path) -> float:
    """The format's parse and checks alone (no project): how much of the import is Python."""
    start = time.perf_counter()
    with gc_paused():
        dataset_format, ctx = open_source(path, "vlrewardbench", path.parent)
        count = sum(1 for _ in dataset_format.parse(ctx))
    assert count > 0
    return time.perf_counter() - start


def full_import(path: Path, db: Path) -> tuple[float, float, int]:
    start = time.perf_counter()
    with Store.create(db) as store:
        report = import_file(store, path, "vlrewardbench", media_root=path.parent)
    elapsed = time.perf_counter() - start
    assert report.added > 0 and report.missing_media == 0, report
    start = time.perf_counter()
    with Store.open(db) as store:
        again = import_file(store, path, "vlrewardbench", media_root=path.parent)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    reimport = time.perf_counter() - start
    assert again.added == 0 and again.unchanged == report.added
    return elapsed, reimport, db.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = generate(folder, args.items)
        size_mb = path.stat().st_size / 1e6
        base, full, again, sizes, parse = [], [], [], [], []
        for run in range(args.runs):
            base.append(baseline(path, folder / f"base{run}.db"))
            parse.append(parse_only(path))
            t, r, s = full_import(path, folder / f"p{run}.pairscope")
            full.append(t)
            again.append(r)
            sizes.append(s)
        med = statistics.median
        print(f"items: {args.items}  source: {size_mb:.1f} MB JSONL  runs: {args.runs}")
        print(
            f"import:    median {med(full):.2f} s  ({args.items / med(full):,.0f} items/s)"
            f"  runs {[round(x, 2) for x in full]}"
        )
        print(f"baseline:  median {med(base):.2f} s  (json.loads + bare INSERT per line)")
        print(f"ratio:     {med(full) / med(base):.2f}x baseline")
        print(f"parse:     median {med(parse):.2f} s  (read + validate + build items, no project)")
        print(f"re-import: median {med(again):.2f} s (adds nothing)")
        print(f"db size:   {med(sizes) / 1e6:.1f} MB ({med(sizes) / args.items:.0f} bytes/item)")
        print(f"target ≤ 5 s: {'met' if med(full) <= 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
