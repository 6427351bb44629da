"""Item filters and full-text search on 100,000 items × 3 annotators + 1 judge run.

Target (item filters): ≤ 100 ms for what the item table does when a filter changes: count
the matching items, then read the first page (500 rows), on a warm project. Reported per
filter: the median of N runs of ``count_items(f)`` + ``item_summaries(0, 500, filter=f)``,
and the matching count; the baseline, measured in the same run, is a bare
``SELECT count(*) FROM items`` (the floor of any count), with each filter's ratio to it.
The query plan of every filter is checked for full scans of large tables.

Fixture: 100k two-response image items like VL-RewardBench's (a rare word in 1 % of
prompts, dataset error tags on ~20 %), alice labels every item, bob half, carol a fifth
(some relabelled, cleared, discarded, with error types), 3 % adjudicated, one pairwise
both-orders judge run (2 samples per item, ~5 % unparsed), a 5,000-item collection.

    python bench/filter_bench.py [--items 100000] [--runs 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_util import make_item  # noqa: E402
from pairscope.app.records import ERROR_KINDS, ErrorTag, ItemFilter, Reference  # noqa: E402
from pairscope.app.store import Store, VerdictRecord  # noqa: E402
from pairscope.app.store.connection import dumps  # noqa: E402

RARE = "zeppelin"
ANNOTATORS = (("alice", 1.0), ("bob", 0.5), ("carol", 0.2))
PAGE = 500
TARGET_S = 0.100


def _stamp(base: datetime, k: int) -> str:
    return (base + timedelta(microseconds=k)).isoformat(timespec="microseconds")


def build(path: Path, n_items: int, seed: int = 3) -> dict:
    """The fixture project (see the module docstring); returns build timings."""
    rng = random.Random(seed)
    times = {}
    start = time.perf_counter()
    with Store.create(path) as store:
        with store.transaction():
            for lo in range(0, n_items, 10_000):
                items = []
                for i in range(lo, min(n_items, lo + 10_000)):
                    item = make_item(rng, i, "small.png", "small.png", RARE)
                    if rng.random() < 0.2:
                        tags = (ErrorTag(rng.choice(ERROR_KINDS)),)
                        item = replace(item, reference=Reference(ranking=item.reference.ranking, error_tags=tags))
                    items.append(item)
                store.add_items(items)
        times["items_s"] = time.perf_counter() - start

        # Labels, written as add_label writes them (one transaction, executemany for speed).
        start = time.perf_counter()
        refs = dict(store.query("SELECT id, ref_chosen FROM items"))
        ids = sorted(refs)
        base = datetime(2025, 1, 1, tzinfo=UTC)
        rows, clock = [], 0
        for name, share in ANNOTATORS:
            annotator_id = store.annotator_id(name)
            for item_id in ids[: int(len(ids) * share)]:
                versions = 2 if rng.random() < 0.1 else 1
                for _ in range(versions):
                    clock += 1
                    roll, ranking, preferred, errors, reasons = rng.random(), [], None, [], []
                    if roll < 0.8:
                        outcome = "prefer"
                        preferred = refs[item_id] if rng.random() < 0.85 else 1 - refs[item_id]
                        ranking = [preferred, 1 - preferred]
                        if rng.random() < 0.15:
                            errors = [{"kind": rng.choice(ERROR_KINDS), "note": None, "raw": None, "subkind": None}]
                    elif roll < 0.88:
                        outcome = "tie"
                    elif roll < 0.93:
                        outcome = "both_bad"
                    elif roll < 0.97:
                        outcome = "discard"
                        reasons = [rng.choice(("both_wrong", "media_unusable", "needs_expert"))]
                    else:
                        outcome = "cleared"
                    rows.append(
                        (
                            str(uuid.uuid4()),
                            item_id,
                            annotator_id,
                            _stamp(base, clock),
                            "label",
                            outcome,
                            dumps(ranking),
                            preferred,
                            "clearly" if preferred is not None else None,
                            dumps(errors),
                            dumps(reasons),
                            "",
                            "[0, 1]",
                            "[]",
                        )
                    )
        judge_id = store.annotator_id("dana")
        for item_id in rng.sample(ids, len(ids) * 3 // 100):
            clock += 1
            best = refs[item_id]
            rows.append(
                (
                    str(uuid.uuid4()),
                    item_id,
                    judge_id,
                    _stamp(base, clock),
                    "adjudication",
                    "prefer",
                    dumps([best, 1 - best]),
                    best,
                    None,
                    "[]",
                    "[]",
                    "",
                    "[0, 1]",
                    "[]",
                )
            )
        with store.transaction() as conn:
            conn.executemany(
                "INSERT INTO labels (uuid, item_id, annotator_id, created_at, kind, outcome, ranking, preferred,"
                " strength, error_types, discard_reasons, note, display_order, step_marks)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
        times["labels"] = len(rows)
        times["labels_s"] = time.perf_counter() - start

        start = time.perf_counter()
        run = store.create_run(
            backend="fake",
            model_path="m",
            weights_hash=None,
            template_name="pairwise",
            template_text="t",
            template_hash="h",
            mode="pairwise",
            k=1,
            both_orders=True,
            frames=8,
            seed=0,
            generation={},
        )
        verdicts = []
        for item_id in ids:
            first = rng.random() < 0.8
            for s in range(2):
                parsed = rng.random() < 0.95
                good = refs[item_id] if (first or s == 0) else 1 - refs[item_id]
                choice = (good if rng.random() < 0.8 else 1 - good) if parsed else None
                verdicts.append(
                    VerdictRecord(run.id, item_id, s, (0, 1) if s == 0 else (1, 0), "x", choice, None, parsed, None)
                )
        store.add_verdicts(verdicts)
        store.add_to_collection("hard", rng.sample(ids, 5_000))
        times["verdicts"] = len(verdicts)
        times["judge_s"] = time.perf_counter() - start
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # no ANALYZE: projects have no statistics
    return times


def filters(run_id: int) -> dict[str, ItemFilter]:
    return {
        "none": ItemFilter(),
        "category": ItemFilter(category="reasoning"),
        "id substring": ItemFilter(text="_0420"),
        "text: rare word": ItemFilter(text=RARE),
        "text: common word": ItemFilter(text="circle"),
        "text: 2 words": ItemFilter(text="red square"),
        "text: 1-letter prefix": ItemFilter(text="s"),
        "text: phrase": ItemFilter(text='"blue circle"'),
        "status labeled (bob)": ItemFilter(status="labeled", annotator="bob"),
        "status unlabeled (carol)": ItemFilter(status="unlabeled", annotator="carol"),
        "status labeled (anyone)": ItemFilter(status="labeled"),
        "adjudicated": ItemFilter(status="adjudicated"),
        "not adjudicated": ItemFilter(status="not_adjudicated"),
        "judged": ItemFilter(judge_run=run_id),
        "judge right": ItemFilter(judge_run=run_id, judge="right"),
        "judge wrong": ItemFilter(judge_run=run_id, judge="wrong"),
        "judge unparsed": ItemFilter(judge_run=run_id, judge="unparsed"),
        "judge inconsistent": ItemFilter(judge_run=run_id, judge="inconsistent"),
        "annotators disagree": ItemFilter(disagreement="annotators"),
        "differs from ref (alice)": ItemFilter(disagreement="reference", annotator="alice"),
        "differs from ref (any)": ItemFilter(disagreement="reference"),
        "error type (any)": ItemFilter(error_type="counting"),
        "error type (labels)": ItemFilter(error_type="counting", error_source="labels"),
        "error type (reference)": ItemFilter(error_type="counting", error_source="reference"),
        "discard reason": ItemFilter(discard_reason="needs_expert"),
        "collection": ItemFilter(collection="hard"),
        "combined: text+judge wrong+unlabeled": ItemFilter(
            text="circle", judge_run=run_id, judge="wrong", status="unlabeled", annotator="bob"
        ),
        "combined: category+disagree+error": ItemFilter(
            category="general", disagreement="annotators", error_type="attribute"
        ),
        "combined: everything": ItemFilter(
            category="general",
            text="red",
            status="labeled",
            annotator="alice",
            judge_run=run_id,
            judge="wrong",
            disagreement="reference",
            error_type="counting",
        ),
    }


def full_scans(store: Store, f: ItemFilter) -> list[str]:
    """Query plan lines (count and page) that scan a table in full, other than items (a
    NOT IN scans them once) and the virtual tables (FTS5 MATCH, json_each)."""
    from pairscope.app.store.items import _SUMMARY_SQL, _filter_sql

    where, params = _filter_sql(f)
    plan = store.query(f"EXPLAIN QUERY PLAN {_SUMMARY_SQL} WHERE {where} ORDER BY i.id LIMIT {PAGE}", params)
    plan += store.query(f"EXPLAIN QUERY PLAN SELECT count(*) FROM items i WHERE {where}", params)
    allowed = ("SCAN item_text VIRTUAL TABLE", "SCAN e VIRTUAL TABLE", "SCAN i", "SCAN items USING COVERING INDEX")
    return sorted({row[3] for row in plan if row[3].startswith("SCAN") and not row[3].startswith(allowed)})


def time_filter(store: Store, f: ItemFilter) -> tuple[float, int]:
    start = time.perf_counter()
    count = store.count_items(f)
    store.item_summaries(0, PAGE, filter=f)
    return time.perf_counter() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--plans", action="store_true", help="print every filter's query plan")
    args = parser.parse_args()
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "filters.pairscope"
        t = time.perf_counter()
        built = build(path, args.items)
        print(
            f"fixture: {args.items} items, {built['labels']} label rows (3 annotators + adjudications), "
            f"{built['verdicts']} verdicts, built in {time.perf_counter() - t:.1f} s "
            f"(items {built['items_s']:.1f} s, labels {built['labels_s']:.1f} s, judge {built['judge_s']:.1f} s)"
        )
        with Store.open(path) as store:
            run_id = store.runs()[0].id
            cases = filters(run_id)
            base = []
            for _ in range(args.runs):
                start = time.perf_counter()
                store.query("SELECT count(*) FROM items")
                base.append(time.perf_counter() - start)
            baseline = med(base)
            print(
                f"baseline: bare SELECT count(*) FROM items: median {baseline * 1e6:.0f} µs "
                "(the ratio column divides by it)"
            )
            print(f"{'filter':40} {'matches':>8} {'median':>9} {'max':>9} {'ratio':>7}  full scans")
            worst = 0.0
            for name, f in cases.items():
                time_filter(store, f)  # warm
                runs = [time_filter(store, f) for _ in range(args.runs)]
                times = [r[0] for r in runs]
                worst = max(worst, med(times))
                scans = full_scans(store, f)
                print(
                    f"{name:40} {runs[0][1]:>8} {med(times) * 1000:>7.1f}ms {max(times) * 1000:>7.1f}ms "
                    f"{med(times) / baseline:>6.0f}x  {'; '.join(scans) if scans else 'none'}"
                )
                if args.plans:
                    from pairscope.app.store.items import _filter_sql

                    where, params = _filter_sql(f)
                    for row in store.query(f"EXPLAIN QUERY PLAN SELECT count(*) FROM items i WHERE {where}", params):
                        print("      ", row[3])
        print(
            f"slowest filter: {worst * 1000:.1f} ms (count + first {PAGE} rows)   "
            f"target ≤ {TARGET_S * 1000:.0f} ms: {'met' if worst <= TARGET_S else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
