"""Item filters and full-text search on 100,000 items × 3 annotators + 1 judge run.

Target (issue 30): ≤ 100 ms, worst filter, for what the item table does when a filter
changes (``MainWindow.apply_filter`` through the window's controller): the filter's one
query (``store.filtered_items``: row count, pages and rows from one result), the first page
of table rows (200, with this annotator's label summaries: ``LabelingSession.table_rows``)
and the current item's row (``row_of``), on a warm project; painting the table is not
included. Reported per filter: the median and max of N runs, the matching count (a filter
that matches nothing where it should is an error: the bench stops), and the ratio to a
baseline measured in the same process, alternating with that filter's runs (so both see the
same machine load): a bare ``SELECT count(*) FROM items WHERE prompt LIKE '%circle%'``.
The query plans of every filter (the window's one query, the table's page and count) are
checked for full scans of large tables. The whole bench runs in a fresh process; its peak
memory and the machine's load are printed.

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

from _bench_util import load_note, make_item, peak_rss_mb  # noqa: E402
from pairscope.app.judge.results import record_verdicts  # noqa: E402
from pairscope.app.labeling.session import LabelingSession  # noqa: E402
from pairscope.app.records import ERROR_KINDS, ErrorTag, ItemFilter, Reference  # noqa: E402
from pairscope.app.store import Store, VerdictRecord  # noqa: E402
from pairscope.app.store.connection import dumps  # noqa: E402

RARE = "zeppelin"
ANNOTATORS = (("alice", 1.0), ("bob", 0.5), ("carol", 0.2))
PAGE = 200  # the item table fetches pages of this many rows (widgets/item_table.py)
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
        # Through the judge layer: it decides each item's vote (judge_items), which the filters read.
        record_verdicts(store, run, verdicts)
        store.add_to_collection("hard", rng.sample(ids, len(ids) // 20))
        times["verdicts"] = len(verdicts)
        times["judge_s"] = time.perf_counter() - start
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # no ANALYZE: projects have no statistics
    return times


def filters(run_id: int) -> dict[str, ItemFilter]:
    return {
        "none": ItemFilter(),
        "category": ItemFilter(category="reasoning"),
        "id substring": ItemFilter(text="_0012"),
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
    """Query plan lines (the window's one query, a page and a count) that scan a table in
    full, other than items (a NOT IN scans them once), the virtual tables (FTS5 MATCH,
    json_each) and subqueries (co-routines)."""
    from pairscope.app.store.filter_sql import _filter_sql, _ids_sql
    from pairscope.app.store.items import _SUMMARY_SQL

    where, params = _filter_sql(f)
    plan = store.query(f"EXPLAIN QUERY PLAN {_SUMMARY_SQL} WHERE {where} ORDER BY i.id LIMIT {PAGE}", params)
    plan += store.query(f"EXPLAIN QUERY PLAN SELECT count(*) FROM items i WHERE {where}", params)
    ids, ids_params = _ids_sql(f)
    plan += store.query(f"EXPLAIN QUERY PLAN SELECT group_concat(id) FROM ({ids})", ids_params)
    allowed = (
        "SCAN item_text VIRTUAL TABLE",
        "SCAN e VIRTUAL TABLE",
        "SCAN i",
        "SCAN items USING COVERING INDEX",
        "SCAN (subquery",
        "SCAN label_disagreements",  # the set itself: one row per item whose annotators disagree
    )
    return sorted({row[3] for row in plan if row[3].startswith("SCAN") and not row[3].startswith(allowed)})


#: Filters that must match something on the fixture (a filter matching 0 measures an empty table).
MAY_BE_EMPTY = frozenset({"combined: everything", "text: 1-letter prefix"})  # one letter: whole words only


def time_filter(store: Store, session: LabelingSession, f: ItemFilter, current: int) -> tuple[float, int]:
    """What the window does when its filter changes: one query, the first page, the row."""
    start = time.perf_counter()
    filtered = store.filtered_items(f)
    session.table_rows(0, PAGE, filtered)
    filtered.row_of(current)
    return time.perf_counter() - start, filtered.count


def time_baseline(store: Store) -> float:
    start = time.perf_counter()
    store.query("SELECT count(*) FROM items WHERE prompt LIKE '%circle%'")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--plans", action="store_true", help="print every filter's query plan")
    parser.add_argument("--db", type=Path, help="use (or build, if missing) this fixture")
    args = parser.parse_args()
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "filters.pairscope"
        t = time.perf_counter()
        if not path.exists():
            built = build(path, args.items)
            print(
                f"fixture: {args.items} items, {built['labels']} label rows (3 annotators + adjudications), "
                f"{built['verdicts']} verdicts, built in {time.perf_counter() - t:.1f} s "
                f"(items {built['items_s']:.1f} s, labels {built['labels_s']:.1f} s, judge {built['judge_s']:.1f} s)"
            )
        with Store.open(path) as store:
            run_id = store.runs()[0].id
            cases = filters(run_id)
            session = LabelingSession(store, "bob")
            current = args.items // 2
            base = []
            print(f"{'filter':40} {'matches':>8} {'median':>9} {'max':>9} {'LIKE':>8} {'ratio':>6}  full scans")
            worst, worst_ratio, over = 0.0, 0.0, []
            for name, f in cases.items():
                time_filter(store, session, f, current)  # warm
                runs, own_base = [], []
                for _ in range(args.runs):  # subject and baseline alternating
                    runs.append(time_filter(store, session, f, current))
                    own_base.append(time_baseline(store))
                base += own_base
                times = [r[0] for r in runs]
                baseline = med(own_base)  # the LIKE count in the same seconds as this filter's runs
                if runs[0][1] == 0 and name not in MAY_BE_EMPTY:
                    raise SystemExit(f"filter {name!r} matches no item: the bench would time an empty table")
                worst = max(worst, med(times))
                worst_ratio = max(worst_ratio, med(times) / baseline)
                if med(times) > TARGET_S:
                    over.append(name)
                scans = full_scans(store, f)
                print(
                    f"{name:40} {runs[0][1]:>8} {med(times) * 1000:>7.1f}ms {max(times) * 1000:>7.1f}ms "
                    f"{baseline * 1000:>6.1f}ms {med(times) / baseline:>5.1f}x  {'; '.join(scans) if scans else 'none'}"
                )
                if args.plans:
                    from pairscope.app.store.filter_sql import _filter_sql

                    where, params = _filter_sql(f)
                    for row in store.query(f"EXPLAIN QUERY PLAN SELECT count(*) FROM items i WHERE {where}", params):
                        print("      ", row[3])
        print(
            f"baseline: bare SELECT count(*) FROM items WHERE prompt LIKE '%circle%': median {med(base) * 1000:.1f} ms"
            " over all runs (the LIKE column: its median in each filter's runs, which the ratio divides by)"
        )
        print(
            f"slowest filter: {worst * 1000:.1f} ms (one query + first {PAGE} table rows + row_of),"
            f" {worst / med(base):.1f}x the overall LIKE count; highest ratio {worst_ratio:.1f}x   "
            f"target ≤ {TARGET_S * 1000:.0f} ms: {'met' if worst <= TARGET_S else 'NOT met'}"
            f" ({len(cases) - len(over)} of {len(cases)} filters ≤ {TARGET_S * 1000:.0f} ms"
            f"{': over: ' + ', '.join(over) if over else ''})"
        )
        print(f"peak memory: {peak_rss_mb():.0f} MB   machine: {load_note()}")


if __name__ == "__main__":
    main()
