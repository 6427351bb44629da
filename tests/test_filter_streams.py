"""The window's one filter query (``store.filtered_items``) reads large selections another way
than the table's pages do (a set's ids straight from its index, negated sets merged away,
issue 30): on a project with many labels, verdicts and repeated words it must select exactly
the items, in exactly the order, that the filter condition does."""

from __future__ import annotations

import json
import random

import pytest

from helpers import fake_run
from pairscope.app.judge.results import record_verdicts
from pairscope.app.records import ErrorTag, Item, ItemFilter, Label, Reference, Response
from pairscope.app.store import VerdictRecord
from pairscope.app.store.filter_sql import _filter_sql, _ids_sql, _order_sql

WORDS = ("red", "blue", "circle", "square", "dog", "cat", "two", "three")
CATEGORIES = ("general", "reasoning", "hallucination")
ANNOTATORS = ("alice", "bob", "carol")
OUTCOMES = ("prefer", "prefer", "tie", "both_bad", "discard", "cleared", "unrated")


@pytest.fixture
def busy(store):
    """300 items with random words, three annotators' labels (relabelled, cleared), a few
    adjudications, a both-orders judge run over most items and a collection."""
    rng = random.Random(7)
    items = [
        Item(
            ext_id=f"it_{k:04d}" + ("_circle" if k % 37 == 0 else ""),
            prompt=" ".join(rng.choices(WORDS, k=5)),
            category=rng.choice(CATEGORIES),
            responses=(Response(0, " ".join(rng.choices(WORDS, k=4))), Response(1, rng.choice(WORDS))),
            reference=Reference(
                ranking=(0, 1) if k % 2 else (1, 0),
                error_tags=(ErrorTag(rng.choice(("counting", "attribute"))),) if k % 5 == 0 else (),
            ),
        )
        for k in range(300)
    ]
    store.add_items(items)
    ids = [s.id for s in store.item_summaries(0, 1000)]
    for name, share in zip(ANNOTATORS, (0.9, 0.5, 0.2), strict=True):
        for item_id in rng.sample(ids, int(len(ids) * share)):
            for _ in range(rng.choice((1, 1, 2))):
                outcome = rng.choice(OUTCOMES)
                preferred = rng.choice((0, 1))
                store.add_label(
                    Label(
                        item_id,
                        name,
                        outcome,
                        ranking=(preferred, 1 - preferred) if outcome == "prefer" else (),
                        error_types=(ErrorTag("counting"),) if rng.random() < 0.2 else (),
                        discard_reasons=("needs_expert",) if outcome == "discard" else (),
                    )
                )
    for item_id in rng.sample(ids, 30):
        outcome = rng.choice(("prefer", "tie", "cleared"))
        ranking = (0, 1) if outcome == "prefer" else ()
        store.add_label(Label(item_id, "dana", outcome, ranking=ranking, kind="adjudication"))
    run = fake_run(store, k=1, both_orders=True)
    verdicts = []
    for item_id in rng.sample(ids, 250):
        for s in range(2):
            parsed = rng.random() < 0.9
            choice = rng.choice((0, 1)) if parsed else None
            verdicts.append(
                VerdictRecord(run.id, item_id, s, (0, 1) if s == 0 else (1, 0), "x", choice, None, parsed, None)
            )
    record_verdicts(store, run, verdicts)
    store.add_to_collection("hard", rng.sample(ids, 40))
    store.run_id = run.id
    return store


def the_condition(store, f: ItemFilter) -> list[int]:
    """The ids the filter's condition selects, in table order, read the pages' way."""
    where, params = _filter_sql(f)
    order, order_params = _order_sql(f)
    return [
        r[0] for r in store.query(f"SELECT i.id FROM items i WHERE {where} ORDER BY {order}", (*params, *order_params))
    ]


def filters(run: int) -> list[ItemFilter]:
    fields = [
        {"category": "reasoning"},
        {"text": "circle"},
        {"text": "red square"},
        {"text": '"two circle"'},
        {"text": "_00"},
        {"status": "labeled", "annotator": "bob"},
        {"status": "unlabeled", "annotator": "carol"},
        {"status": "labeled"},
        {"status": "unlabeled"},
        {"status": "adjudicated"},
        {"status": "not_adjudicated"},
        {"judge_run": run},
        {"judge_run": run, "judge": "right"},
        {"judge_run": run, "judge": "wrong"},
        {"judge_run": run, "judge": "unparsed"},
        {"judge_run": run, "judge": "inconsistent"},
        {"judge_run": run, "judge": "failed"},
        {"disagreement": "annotators"},
        {"disagreement": "reference"},
        {"error_type": "counting"},
        {"discard_reason": "needs_expert"},
        {"collection": "hard"},
        {"judge_run": run, "judge": "confident_wrong"},
        {"item_ids": (*range(1, 300, 7), 99_999)},  # an id no item has
    ]
    out = [ItemFilter(), *(ItemFilter(**f) for f in fields)]
    rng = random.Random(1)
    while len(out) < 200:
        merged: dict = {}
        for f in rng.sample(fields, rng.randint(2, 4)):
            if ("status" in f and "status" in merged) or ("judge_run" in f and "judge_run" in merged):
                continue
            merged.update(f)
        out.append(ItemFilter(**merged))
    return out


def test_the_window_query_selects_what_the_condition_does(busy):
    """Every single filter and 175 random combinations: same ids, same order, same count;
    and the large selections do take the other path (else this test would test nothing)."""
    other_path = 0
    for f in filters(busy.run_id):
        expected = the_condition(busy, f)
        filtered = busy.filtered_items(f)
        assert filtered.ids.tolist() == expected, f
        assert filtered.count == len(expected)
        other_path += " FROM items i WHERE " not in _ids_sql(f)[0]
    assert other_path > 50
    assert any(len(the_condition(busy, f)) > 150 for f in filters(busy.run_id)[:25])


def test_status_filters_read_covering_indexes(busy):
    """The status filters' sets come from an index holding every column they read (schema
    migration 12): before it, SQLite read all of ``label_current`` for them."""
    for f in (ItemFilter(status="labeled", annotator="bob"), ItemFilter(status="labeled")):
        sql, params = _ids_sql(f)
        plan = " / ".join(r[3] for r in busy.query(f"EXPLAIN QUERY PLAN {sql}", params))
        assert "SEARCH label_current USING COVERING INDEX label_current_labeled_by" in plan, plan
    sql, params = _ids_sql(ItemFilter())
    plan = " / ".join(r[3] for r in busy.query(f"EXPLAIN QUERY PLAN {sql}", params))
    assert "COVERING INDEX items_ids" in plan, plan


def test_error_types_of_labels_are_found_by_their_kind_alone(store):
    """The labels' error-type filter passes over labels whose JSON does not hold the kind in
    quotes before decoding them: a kind named only in a note is not a match, a kind that JSON
    may escape (not plain letters) is still found, and so is one stored with spaces."""
    store.add_items(
        [
            Item(ext_id=f"e{k}", prompt="p", responses=(Response(0, "a"), Response(1, "b")), reference=Reference())
            for k in range(4)
        ]
    )
    ids = [s.id for s in store.item_summaries(0, 10)]
    tags = [
        (ErrorTag("counting"),),
        (ErrorTag("attribute", note="counting"),),  # "counting" in quotes, but not as the kind
        (ErrorTag("überzählig"),),
        (ErrorTag("attribute"), ErrorTag("counting", subkind="two")),
    ]
    for item_id, errors in zip(ids, tags, strict=True):
        store.add_label(Label(item_id, "alice", "prefer", ranking=(0, 1), error_types=errors))
    with store.transaction() as conn:  # as another JSON writer (a merged file) may have stored it
        spaced = json.dumps([{"kind": "counting", "note": None, "raw": None, "subkind": None}], indent=2)
        conn.execute("UPDATE label_current SET error_types = ? WHERE item_id = ?", (spaced, ids[0]))
    picked = {
        kind: busy_ids(store, ItemFilter(error_type=kind, error_source="labels"))
        for kind in ("counting", "überzählig", "attribute")
    }
    assert picked == {"counting": [ids[0], ids[3]], "überzählig": [ids[2]], "attribute": [ids[1], ids[3]]}


def busy_ids(store, f: ItemFilter) -> list[int]:
    assert store.filtered_items(f).ids.tolist() == the_condition(store, f)
    return the_condition(store, f)
