"""Import a generated VL-RewardBench JSONL with ``pairscope import`` and print the figures.

Target (issue 30): the whole ``pairscope import`` process ≤ 2.5× its floor, peak memory
≤ 250 MB at 100,000 rows and not growing with rows. Each run is a fresh process, subject and
floor alternating: the subject is ``pairscope import`` (interpreter start, parse, validate,
resolve media, one transaction, the report printed); the floor (same run, same file) is
``json.loads`` of every line plus ``executemany`` of the same fields (an items and a
responses table, no index, no full-text index; WAL, ``synchronous=FULL`` and the page cache
PairScope uses) in one transaction, as a fresh process too.
Reported: medians of N runs of each, their ratio, the ratio of their CPU times (user + sys of
each child, start-up included: on a busy machine the walls swing more), each one's peak memory
(VmHWM of the child), the project's bytes per item, and one re-import (adds nothing).
``--sql-alone`` also times, in the same rounds, what no import can avoid on this schema: the
project's own inserts of the first run's rows, prepared in memory before the clock starts
(items with their indexes, responses, steps, media, error tags, the full-text index, the
commit; no parsing, no Python per row beyond ``executemany``), against the floor's in-process time.

    python bench/import_bench.py [--items 100000] [--runs 3] [--no-reimport]
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

WORDS = (
    "the a red blue green circle square there are two three four left right of image shows "
    "count object text sign person table answer because first second visible near small large"
).split()
PREFIXES = ("wildvision_battle_", "RLAIF-V-", "RLHF-V-", "hallucination_pair-", "mathverse_", "mmmu_pro_")
TAGS = ("hallucination", "attribute", "counting", "recognition(object)", "recognition(text)", "others, blurry")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n)).capitalize() + "."


def generate(folder: Path, n_items: int, n_images: int = 1000) -> Path:
    """Write ``n_items`` rows referencing ``n_images`` real small PNGs."""
    import orjson
    from PIL import Image

    rng = random.Random(7)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for i in range(n_images):
        Image.new("RGB", (4, 4), (i % 256, 0, 0)).save(folder / "images" / f"{i}.png")
    path = folder / "bench.jsonl"
    with open(path, "wb") as fh:
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
            fh.write(orjson.dumps(row) + b"\n")
    return path


# -- the children ----------------------------------------------------------------------------


def child_floor(src: Path, db: Path) -> None:
    """The floor: json.loads per line + executemany of the same fields, one transaction."""
    import json

    start = time.perf_counter()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA cache_size=-65536")  # PairScope's own page cache (app/store/connection.py)
    conn.execute(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, ext_id TEXT, prompt TEXT, ranking TEXT, image TEXT,"
        " source TEXT, tags TEXT, ground_truth TEXT)"
    )
    conn.execute("CREATE TABLE responses (item_id INTEGER, idx INTEGER, text TEXT, model TEXT)")
    conn.execute("BEGIN")
    items, responses = [], []

    def flush() -> None:
        conn.executemany("INSERT INTO items VALUES (?,?,?,?,?,?,?,?)", items)
        conn.executemany("INSERT INTO responses VALUES (?,?,?,?)", responses)
        items.clear()
        responses.clear()

    with open(src, "rb") as fh:
        for n, line in enumerate(fh, start=1):
            row = json.loads(line)
            items.append(
                (
                    n,
                    row["id"],
                    row["query"],
                    json.dumps(row["human_ranking"]),
                    row["image_path"],
                    row["query_source"],
                    row["human_error_analysis"],
                    row["ground_truth"],
                )
            )
            for idx, (text, model) in enumerate(zip(row["response"], row["models"])):
                responses.append((n, idx, text, model))
            if len(items) >= 2000:
                flush()
    flush()
    conn.execute("COMMIT")
    conn.close()
    report_child(seconds=time.perf_counter() - start, cpu_s=time.process_time())


def child_sql(src: Path, db: Path) -> None:
    """The schema's SQL alone: the rows of the imported project ``src`` inserted into a fresh
    project ``db`` through the store's own connection and statements, batch by batch as the
    import writes them, the full-text index filled at the end, one transaction."""
    from pairscope.app.store import Store
    from pairscope.app.store.item_rows import ItemBatch

    with sqlite3.connect(src) as conn:

        def rows(sql: str) -> list[tuple]:
            return conn.execute(sql).fetchall()

        items = rows(
            "SELECT id, ext_id, source_format, category, subset, prompt, prompt_words, prompt_raw, media_kind,"
            " n_responses, ref_ranking, ref_chosen, ref_strength, ground_truth, extra, content_hash, import_id,"
            " missing_media, source_id, identity, ref_ranks FROM items ORDER BY id"
        )
        by_item: dict[str, dict[int, list[tuple]]] = {}
        for name, sql in (
            ("responses", "SELECT item_id, idx, text, words, model FROM responses"),
            ("steps", "SELECT * FROM steps"),
            ("media", "SELECT * FROM media"),
            ("tags", "SELECT * FROM ref_error_tags"),
        ):
            table: dict[int, list[tuple]] = {}
            for row in rows(sql):
                table.setdefault(row[0], []).append(row)
            by_item[name] = table
    Store.create(db).close()
    batches = []
    for start in range(0, len(items), 2000):
        part = items[start : start + 2000]
        ids = [r[0] for r in part]
        batches.append(
            ItemBatch(
                None,  # type: ignore[arg-type]  (no report here)
                items=part,
                **{name: [r for i in ids for r in by_item[name].get(i, [])] for name in by_item},
            )
        )
    store = Store.open(db)
    start = time.perf_counter()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO imports (id, path, format, sha256, imported_at, added, unchanged, options)"
            " VALUES (1, 'bench', 'vlrewardbench', '', '', 0, 0, '{}')"
        )
        for batch in batches:
            store.write_batch(batch, index=False)
        store.index_items(items[0][0], items[-1][0])
    seconds = time.perf_counter() - start
    store.close()
    assert _items_in(db) == len(items), "the schema's inserts stored fewer items than the import"
    report_child(seconds=seconds, cpu_s=time.process_time())


def child_import(src: Path, db: Path) -> None:
    """The subject: ``pairscope import``, as the command line runs it."""
    import contextlib
    import io

    from pairscope.app.cli.main import main

    start = time.perf_counter()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["import", str(src), "--db", str(db), "--format", "vlrewardbench", "--media-root", str(src.parent)])
    assert code == 0, out.getvalue() + err.getvalue()
    report_child(seconds=time.perf_counter() - start, cpu_s=time.process_time(), output=out.getvalue()[:400])


def _child(argv: list[str]) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", *argv]


def _items_in(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM items").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-reimport", action="store_true")
    parser.add_argument("--no-floor", action="store_true", help="the import alone (a memory check at 1M rows)")
    parser.add_argument("--sql-alone", action="store_true", help="also time the schema's own inserts of prepared rows")
    parser.add_argument("--child", nargs=3, metavar=("WHAT", "SRC", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, src, db = args.child
        {"floor": child_floor, "import": child_import, "sql": child_sql}[what](Path(src), Path(db))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        src = generate(folder, args.items)
        made = time.perf_counter() - t
        print(f"items: {args.items:,}  source: {src.stat().st_size / 1e6:.1f} MB JSONL (made in {made:.0f} s)")
        subject, floor, sizes, sql = [], [], [], []
        for run in range(args.runs):  # alternating, fresh processes
            db = folder / f"p{run}.pairscope"
            subject.append(run_child(_child(["import", str(src), str(db)])))
            assert _items_in(db) == args.items, "the import added fewer items than the file holds"
            sizes.append(db.stat().st_size)
            if args.sql_alone:
                sql.append(run_child(_child(["sql", str(db), str(folder / f"sql{run}.pairscope")])))
                for leftover in folder.glob(f"sql{run}.pairscope*"):
                    leftover.unlink()
            if run or args.runs == 1:
                db.unlink()
            if not args.no_floor:
                floor.append(run_child(_child(["floor", str(src), str(folder / f"floor{run}.db")])))
                (folder / f"floor{run}.db").unlink()
        again = None
        if not args.no_reimport:
            again = run_child(_child(["import", str(src), str(folder / "p0.pairscope")])) if args.runs > 1 else None
        wall = [r["wall_s"] for r in subject]
        fwall = [r["wall_s"] for r in floor] or [float("nan")]
        floor = floor or [{"peak_mb": float("nan")}]
        peak = [r["peak_mb"] for r in subject]
        print(
            f"import (whole process): median {median(wall):.2f} s  runs {[round(x, 2) for x in wall]}"
            f"  ({args.items / median(wall):,.0f} items/s; in-process {median(r['seconds'] for r in subject):.2f} s)"
        )
        print(
            f"floor  (whole process): median {median(fwall):.2f} s  runs {[round(x, 2) for x in fwall]}"
            "  (json.loads + executemany of the same fields, one transaction)"
        )
        print(
            f"ratio:                  {median(wall) / median(fwall):.2f}x floor   target ≤ 2.5x:"
            f" {'met' if median(wall) / median(fwall) <= 2.5 else 'NOT met'}"
        )
        cpu = [r["cpu_s"] for r in subject]
        fcpu = [r["cpu_s"] for r in floor if "cpu_s" in r] or [float("nan")]
        print(
            f"CPU time (user + sys):  import {median(cpu):.2f} s, floor {median(fcpu):.2f} s:"
            f" {median(cpu) / median(fcpu):.2f}x (less swayed by the machine's load than the walls)"
        )
        print(
            f"peak memory:            import {median(peak):.0f} MB (runs {[round(x) for x in peak]}),"
            f" floor {median(r['peak_mb'] for r in floor):.0f} MB   target ≤ 250 MB:"
            f" {'met' if median(peak) <= 250 else 'NOT met'}"
        )
        if sql and not args.no_floor:
            alone, fin = median(r["seconds"] for r in sql), median(r["seconds"] for r in floor)
            print(
                f"schema's SQL alone:     median {alone:.2f} s in process (prepared rows, no parsing), floor in"
                f" process {fin:.2f} s: {alone / fin:.2f}x — the least any import of this schema can be"
            )
        print(f"project size:           {median(sizes) / 1e6:.1f} MB ({median(sizes) / args.items:,.0f} bytes/item)")
        if again is not None:
            print(f"re-import:              {again['wall_s']:.2f} s (adds nothing), peak {again['peak_mb']:.0f} MB")
        print(f"machine:                {load_note()}")
        print("first lines of the report:", subject[0]["output"].splitlines()[0] if subject[0]["output"] else "")


if __name__ == "__main__":
    main()
