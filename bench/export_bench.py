"""Export 10,000 items with images (VL-RewardBench format: JSONL + media + manifest).

Reported: median of N runs of ``export_project``; baseline in the same run: copying the same
image files with ``shutil.copyfile`` into an empty folder (the floor of any export that copies
media). Items reference 10,000 distinct PNGs (so every file is hashed and copied).

    python bench/export_bench.py [--items 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image

from pairscope.app.curation.export import export_project
from pairscope.app.records import Item, MediaRef, Reference, Response
from pairscope.app.store import Store


def build(folder: Path, n: int) -> Path:
    rng = random.Random(2)
    images = folder / "images"
    images.mkdir()
    items = []
    for k in range(n):
        path = images / f"{k}.png"
        Image.new("RGB", (64, 48), (k % 256, (k // 256) % 256, 128)).save(path)
        items.append(
            Item(
                ext_id=f"wildvision_{k}",
                prompt="How many?",
                category="general",
                responses=(Response(0, "a " * rng.randint(10, 80)), Response(1, "b " * rng.randint(10, 80))),
                media=(MediaRef("image", f"images/{k}.png", str(path)),),
                reference=Reference(ranking=(0, 1)),
            )
        )
    project = folder / "p.pairscope"
    with Store.create(project) as store:
        store.add_items(items)
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        project = build(folder, args.items)
        exports, copies = [], []
        for run in range(args.runs):
            target = folder / f"copy{run}"
            target.mkdir()
            start = time.perf_counter()
            for path in (folder / "images").iterdir():
                shutil.copyfile(path, target / path.name)
            copies.append(time.perf_counter() - start)
            start = time.perf_counter()
            with Store.open(project) as store:
                result = export_project(store, folder / f"out{run}", "vlrewardbench", source="reference")
            exports.append(time.perf_counter() - start)
            assert result.n_items == args.items
    med = statistics.median
    print(f"items: {args.items} with one image each; runs: {args.runs}")
    print(
        f"export:   median {med(exports):.2f} s ({args.items / med(exports):,.0f} items/s)"
        f"  runs {[round(x, 2) for x in exports]}"
    )
    print(f"baseline: median {med(copies):.2f} s  (shutil.copyfile of the same images)")
    print(f"ratio:    {med(exports) / med(copies):.1f}x baseline")


if __name__ == "__main__":
    main()
