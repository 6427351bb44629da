"""Item filters: each field alone and combined, full-text search, schema migration 2 (FTS
backfill and the trigger-kept tables), saved filters."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import replace

import pytest

from pairscope.app.judge.results import clear_failed, ensure_item_verdicts, item_verdicts, record_verdicts
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import ErrorTag, Item, ItemFilter, Label, LabelDraft, Reference, Response
from pairscope.app.store import LATEST_VERSION, MIGRATIONS, Store, VerdictRecord
from pairscope.app.store.items import _SUMMARY_SQL, _filter_sql
from pairscope.app.store.schema import migrate
from pairscope.app.store.search import (
    MAX_TERMS,
    check_index,
    delete_filter,
    fts_query,
    rebuild_index,
    save_filter,
    saved_filters,
)


def item(ext_id, prompt, responses, category="general", ranking=(0, 1), tags=()):
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        category=category,
        responses=tuple(Response(i, text) for i, text in enumerate(responses)),
        reference=Reference(ranking=ranking, error_tags=tuple(ErrorTag(t) for t in tags)),
    )


ITEMS = [
    item(
        "vl-a1",
        "Count the red circles",
        ["There are two circles.", "There are three circles."],
        ranking=(0, 1),
        tags=("counting",),
    ),
    item("vl-a2", "What colour is the sign?", ["The sign is blue.", "The sign is green."], ranking=(1, 0)),
    item(
        "vl-b1",
        "Who sits at the café table?",
        ["A person sits near the table.", "Nobody and nothing."],
        category="reasoning",
        ranking=(0, 1),
        tags=("existence",),
    ),
    item(
        "vl-b2",
        "Explain the e-mail",
        ["RÉSUMÉ attached to it", "A zeppelin overhead"],
        category="reasoning",
        ranking=None,
    ),
    item("vl-c1", "Describe the photo", ["A small dog", "A large cat"], category="hallucination", ranking=(1, 0)),
    item(
        "vl-c2", "Describe the video", ["A running horse", "A sleeping horse"], category="hallucination", ranking=(0, 1)
    ),
]
NAMES = [i.ext_id for i in ITEMS]


def prefer(session: LabelingSession, item_id: int, response: int, **kw) -> LabelDraft:
    """A draft preferring a response index, in this annotator's screen terms."""
    return LabelDraft(outcome="prefer", preferred_position=session.order(item_id).index(response) + 1, **kw)


def verdict(run, item_id, sample, choice, parsed=True, error=None):
    return VerdictRecord(
        run, item_id, sample, (0, 1) if sample % 2 == 0 else (1, 0), "raw", choice, None, parsed, None, error=error
    )


def add_verdicts(store, run_id, verdicts):
    """Verdicts through the one write path (samples and the item verdicts they change)."""
    record_verdicts(store, store.run(run_id), verdicts)


def make_run(store, mode="pairwise", k=2, both=True, tag="h"):
    return store.create_run(
        backend="fake",
        model_path="m",
        weights_hash=None,
        template_name=mode,
        template_text="t",
        template_hash=tag,
        mode=mode,
        k=k,
        both_orders=both,
        frames=None,
        seed=0,
        generation={},
    )


@pytest.fixture
def project(store):
    store.add_items(ITEMS)
    ids = {name: store.item_id(name) for name in NAMES}
    alice, bob, carol = (LabelingSession(store, n) for n in ("alice", "bob", "carol"))
    # alice: a1 → 0 (as the reference), a2 → 0 (against it; an error type she later removed),
    # b1 tie, b2 → 1 (no reference), c1 discarded, c2 labelled then cleared.
    alice.save(ids["vl-a1"], prefer(alice, ids["vl-a1"], 0))
    alice.save(ids["vl-a2"], prefer(alice, ids["vl-a2"], 0, error_types=(ErrorTag("attribute"),)))
    alice.save(ids["vl-a2"], prefer(alice, ids["vl-a2"], 0))
    alice.save(ids["vl-b1"], LabelDraft(outcome="tie"))
    alice.save(ids["vl-b2"], prefer(alice, ids["vl-b2"], 1))
    alice.save(ids["vl-c1"], LabelDraft(outcome="discard", discard_reasons=("media_unusable",)))
    alice.save(ids["vl-c2"], LabelDraft(outcome="tie"))
    alice.save(ids["vl-c2"], LabelDraft())  # cleared
    # bob: a1 → 1 (disagrees with alice and the reference), a2 discarded then → 0, b1 tie,
    # c1 → 1 with a counting error.
    bob.save(ids["vl-a1"], prefer(bob, ids["vl-a1"], 1))
    bob.save(ids["vl-a2"], LabelDraft(outcome="discard", discard_reasons=("both_wrong",)))
    bob.save(ids["vl-a2"], prefer(bob, ids["vl-a2"], 0))
    bob.save(ids["vl-b1"], LabelDraft(outcome="tie"))
    bob.save(ids["vl-c1"], prefer(bob, ids["vl-c1"], 1, error_types=(ErrorTag("counting"),)))
    # carol: a2 → 1 then → 0 (agrees in the end), b1 both bad (disagrees with the ties).
    carol.save(ids["vl-a2"], prefer(carol, ids["vl-a2"], 1))
    carol.save(ids["vl-a2"], prefer(carol, ids["vl-a2"], 0))
    carol.save(ids["vl-b1"], LabelDraft(outcome="both_bad"))
    # adjudications: a1 decided; b1 decided, then cleared.
    store.add_label(Label(ids["vl-a1"], "dana", "prefer", ranking=(0, 1), kind="adjudication"))
    store.add_label(Label(ids["vl-b1"], "dana", "tie", kind="adjudication"))
    store.add_label(Label(ids["vl-b1"], "dana", "cleared", kind="adjudication"))
    store.add_to_collection("hard", [ids["vl-a2"], ids["vl-c1"]])

    run = make_run(store)  # pairwise, k=2, both orders: samples 0..3, pairs (0,1), (2,3)
    add_verdicts(
        store,
        run.id,
        [
            # a1: 0, 0, 0, unparsed → 0 = reference: right; consistent
            verdict(run.id, ids["vl-a1"], 0, 0),
            verdict(run.id, ids["vl-a1"], 1, 0),
            verdict(run.id, ids["vl-a1"], 2, 0),
            verdict(run.id, ids["vl-a1"], 3, None, parsed=False),
            # a2: 0, 0, 1, 1 → tied votes: unparsed; consistent
            *(verdict(run.id, ids["vl-a2"], s, c) for s, c in enumerate((0, 0, 1, 1))),
            # b1: 1, 0, 1, 1 → 1 ≠ reference 0: wrong; pair (0, 1) disagrees: inconsistent
            *(verdict(run.id, ids["vl-b1"], s, c) for s, c in enumerate((1, 0, 1, 1))),
            # b2: 0, 0, 0, judged tie → 0 but no reference: neither; pair (2, 3) disagrees
            *(verdict(run.id, ids["vl-b2"], s, c) for s, c in enumerate((0, 0, 0, None))),
            # c1: nothing parsed, one error → unparsed
            verdict(run.id, ids["vl-c1"], 0, None, parsed=False),
            verdict(run.id, ids["vl-c1"], 1, None, parsed=False),
            verdict(run.id, ids["vl-c1"], 2, None, parsed=False, error="timeout"),
        ],
    )
    store.project_ids = ids
    store.run_id = run.id
    return store


def names(store, f: ItemFilter) -> set[str]:
    """The ext ids a filter selects, checking that the count and the pages agree."""
    rows = store.item_summaries(0, 1000, filter=f)
    assert store.count_items(f) == len(rows)
    assert [r.id for r in rows] == sorted(r.id for r in rows)
    # What the window reads: the one query's count, pages and rows agree with the above.
    filtered = store.filtered_items(f)
    assert filtered.count == len(rows) and filtered.page(0, 1000) == rows
    assert filtered.page(1, 2) == rows[1:3]
    for row, summary in enumerate(rows):
        assert filtered.row_of(summary.id) == row == store.count_items(f, before_id=summary.id)
    return {r.ext_id for r in rows}


def everything_but(*excluded):
    return set(NAMES) - set(excluded)


# -- each filter alone ----------------------------------------------------------------------


def test_no_filter_and_category(project):
    assert names(project, ItemFilter()) == set(NAMES)
    assert names(project, ItemFilter(category="reasoning")) == {"vl-b1", "vl-b2"}
    assert names(project, ItemFilter(category="nope")) == set()
    assert project.item_summaries(0, 10, category="hallucination")[0].ext_id == "vl-c1"  # old signature


def test_status_labeled_and_unlabeled(project):
    assert names(project, ItemFilter(status="labeled", annotator="alice")) == everything_but("vl-c2")
    assert names(project, ItemFilter(status="unlabeled", annotator="alice")) == {"vl-c2"}
    assert names(project, ItemFilter(status="labeled", annotator="bob")) == {"vl-a1", "vl-a2", "vl-b1", "vl-c1"}
    assert names(project, ItemFilter(status="unlabeled", annotator="carol")) == everything_but("vl-a2", "vl-b1")
    assert names(project, ItemFilter(status="labeled", annotator="nobody")) == set()
    assert names(project, ItemFilter(status="unlabeled", annotator="nobody")) == set(NAMES)
    # without an annotator: anyone's current label
    assert names(project, ItemFilter(status="labeled")) == everything_but("vl-c2")
    assert names(project, ItemFilter(status="unlabeled")) == {"vl-c2"}
    # adjudications are not labels
    assert names(project, ItemFilter(status="labeled", annotator="dana")) == set()


def test_status_adjudicated(project):
    assert names(project, ItemFilter(status="adjudicated")) == {"vl-a1"}
    assert names(project, ItemFilter(status="not_adjudicated")) == everything_but("vl-a1")


def test_judge_filters(project):
    run = project.run_id
    assert names(project, ItemFilter(judge_run=run)) == everything_but("vl-c2")
    assert names(project, ItemFilter(judge_run=run, judge="right")) == {"vl-a1"}
    assert names(project, ItemFilter(judge_run=run, judge="wrong")) == {"vl-b1"}
    assert names(project, ItemFilter(judge_run=run, judge="unparsed")) == {"vl-a2", "vl-c1"}
    assert names(project, ItemFilter(judge_run=run, judge="inconsistent")) == {"vl-b1", "vl-b2"}
    assert names(project, ItemFilter(judge_run=run + 99)) == set()


def test_judge_sets_match_the_item_verdict(project):
    """The filters read the one item verdict (``app.judge.results.item_verdicts``)."""
    run = project.run(project.run_id)
    ref = dict(project.query("SELECT id, ref_chosen FROM items"))
    expected = {"right": set(), "wrong": set(), "undecided": set(), "inconsistent": set(), "failed": set()}
    for item_id, j in item_verdicts(project, run).items():
        if j.choice() is None:
            expected["undecided"].add(item_id)
        elif ref[item_id] is not None:
            expected["right" if j.choice() == ref[item_id] else "wrong"].add(item_id)
        if j.consistent is False:
            expected["inconsistent"].add(item_id)
        if j.failed:
            expected["failed"].add(item_id)
    for judge, ids in expected.items():
        rows = project.item_summaries(0, 100, filter=ItemFilter(judge_run=run.id, judge=judge))
        assert {r.id for r in rows} == ids, judge


def test_judge_modes_orders_and_cleared_errors(project):
    ids = project.project_ids
    single = make_run(project, both=False, tag="single")  # samples 0 and 1 are not an order pair
    single = make_run(project, k=3, both=False, tag="single3")
    add_verdicts(
        project,
        single.id,
        [
            verdict(single.id, ids["vl-a1"], 0, 0),
            verdict(single.id, ids["vl-a1"], 1, 1),
            verdict(single.id, ids["vl-c2"], 0, None, parsed=False, error="oom"),
        ],
    )
    assert names(project, ItemFilter(judge_run=single.id, judge="inconsistent")) == set()
    assert names(project, ItemFilter(judge_run=single.id, judge="undecided")) == {"vl-a1", "vl-c2"}
    assert names(project, ItemFilter(judge_run=single.id, judge="failed")) == {"vl-c2"}  # an error is not unparsed
    assert names(project, ItemFilter(judge_run=single.id)) == {"vl-a1", "vl-c2"}
    clear_failed(project, project.run(single.id))  # deletes the errored sample: c2 is no longer judged
    assert names(project, ItemFilter(judge_run=single.id)) == {"vl-a1"}
    assert names(project, ItemFilter(judge_run=single.id, judge="undecided")) == {"vl-a1"}
    assert names(project, ItemFilter(judge_run=single.id, judge="failed")) == set()
    add_verdicts(project, single.id, [verdict(single.id, ids["vl-a1"], 2, 1)])  # 2 of K=3 name 1: wrong
    assert names(project, ItemFilter(judge_run=single.id, judge="wrong")) == {"vl-a1"}
    assert names(project, ItemFilter(judge_run=single.id, judge="unparsed")) == set()

    # pointwise runs vote too: per sample, the unique top score wins (vl-a1's reference is 0)
    pointwise = make_run(project, mode="pointwise", k=1, both=False, tag="pw")
    scored = [
        replace(verdict(pointwise.id, ids[name], r, r), order_shown=(r,), scores=(score,))
        for name, scores in (("vl-a1", (8, 3)), ("vl-a2", (9, 2)), ("vl-b2", (5, 5)))
        for r, score in enumerate(scores)
    ]
    add_verdicts(project, pointwise.id, scored)
    assert names(project, ItemFilter(judge_run=pointwise.id)) == {"vl-a1", "vl-a2", "vl-b2"}
    assert names(project, ItemFilter(judge_run=pointwise.id, judge="right")) == {"vl-a1"}
    assert names(project, ItemFilter(judge_run=pointwise.id, judge="wrong")) == {"vl-a2"}
    assert names(project, ItemFilter(judge_run=pointwise.id, judge="undecided")) == {"vl-b2"}  # equal scores


def test_disagreement(project):
    # a1: alice 0 vs bob 1; b1: ties vs carol's both bad. a2 agrees in the end (carol changed
    # her label); c1: alice discarded, so only bob states a preference.
    assert names(project, ItemFilter(disagreement="annotators")) == {"vl-a1", "vl-b1"}
    assert names(project, ItemFilter(disagreement="reference")) == {"vl-a1", "vl-a2"}
    assert names(project, ItemFilter(disagreement="reference", annotator="alice")) == {"vl-a2"}
    assert names(project, ItemFilter(disagreement="reference", annotator="bob")) == {"vl-a1", "vl-a2"}
    assert names(project, ItemFilter(disagreement="reference", annotator="carol")) == {"vl-a2"}


def test_error_types(project):
    assert names(project, ItemFilter(error_type="counting")) == {"vl-a1", "vl-c1"}
    assert names(project, ItemFilter(error_type="counting", error_source="reference")) == {"vl-a1"}
    assert names(project, ItemFilter(error_type="counting", error_source="labels")) == {"vl-c1"}
    assert names(project, ItemFilter(error_type="existence")) == {"vl-b1"}
    assert names(project, ItemFilter(error_type="attribute")) == set()  # alice removed it


def test_discard_reason_and_collection(project):
    assert names(project, ItemFilter(discard_reason="media_unusable")) == {"vl-c1"}
    assert names(project, ItemFilter(discard_reason="both_wrong")) == set()  # bob changed his label
    assert names(project, ItemFilter(collection="hard")) == {"vl-a2", "vl-c1"}
    assert names(project, ItemFilter(collection="missing")) == set()


# -- combinations ---------------------------------------------------------------------------


def test_filters_combine_with_and(project):
    run = project.run_id
    assert names(project, ItemFilter(category="general", disagreement="annotators")) == {"vl-a1"}
    assert names(project, ItemFilter(status="labeled", annotator="bob", judge_run=run, judge="unparsed")) == {
        "vl-a2",
        "vl-c1",
    }
    assert names(project, ItemFilter(status="unlabeled", annotator="carol", judge_run=run)) == {
        "vl-a1",
        "vl-b2",
        "vl-c1",
    }
    assert names(project, ItemFilter(disagreement="annotators", judge_run=run, judge="inconsistent")) == {"vl-b1"}
    assert names(project, ItemFilter(collection="hard", error_type="counting")) == {"vl-c1"}
    assert names(project, ItemFilter(text="sign", disagreement="reference", annotator="alice")) == {"vl-a2"}
    assert names(project, ItemFilter(status="not_adjudicated", judge_run=run, judge="right")) == set()
    assert names(
        project,
        ItemFilter(
            text="circles",
            status="adjudicated",
            judge_run=run,
            judge="right",
            error_type="counting",
            category="general",
            annotator="alice",
        ),
    ) == {"vl-a1"}
    # a large set (bob's labels) tested per item behind a small one (the collection)
    assert names(project, ItemFilter(collection="hard", status="unlabeled", annotator="bob")) == set()
    assert names(project, ItemFilter(collection="hard", status="labeled", annotator="bob", judge_run=run)) == {
        "vl-a2",
        "vl-c1",
    }


def test_every_combination_equals_the_intersection(project):
    run = project.run_id
    singles = [
        ItemFilter(category="reasoning"),
        ItemFilter(text="the"),
        ItemFilter(status="labeled", annotator="bob"),
        ItemFilter(status="unlabeled", annotator="carol"),
        ItemFilter(status="not_adjudicated"),
        ItemFilter(judge_run=run),
        ItemFilter(judge_run=run, judge="unparsed"),
        ItemFilter(disagreement="annotators"),
        ItemFilter(error_type="counting"),
        ItemFilter(collection="hard"),
        ItemFilter(discard_reason="media_unusable"),
    ]
    fields = (
        "category",
        "text",
        "status",
        "annotator",
        "judge_run",
        "judge",
        "disagreement",
        "error_type",
        "collection",
        "discard_reason",
    )
    rng = random.Random(0)
    for _ in range(60):
        chosen = rng.sample(singles, rng.randint(2, 4))
        merged: dict = {}
        if (
            len({(f.status, f.annotator) for f in chosen if f.status}) > 1
            or len({(f.judge_run, f.judge) for f in chosen if f.judge_run}) > 1
        ):
            continue  # one status and one judge setting per filter
        for f in chosen:
            merged.update({k: getattr(f, k) for k in fields if getattr(f, k) not in (None, "")})
        expected = set(NAMES)
        for f in chosen:
            expected &= names(project, f)
        assert names(project, ItemFilter(**merged)) == expected, merged


def test_row_of_an_item_under_a_filter(project):
    session = LabelingSession(project, "alice")
    f = ItemFilter(judge_run=project.run_id, judge="unparsed")
    assert session.row_of(project.project_ids["vl-c1"], f) == 1
    assert [r.summary.ext_id for r in session.table_rows(0, 10, f)] == ["vl-a2", "vl-c1"]
    filtered = project.filtered_items(f)
    assert filtered.row_of(project.project_ids["vl-c1"]) == 1
    assert filtered.row_of(project.project_ids["vl-b1"]) == 1  # not selected: the row it would have
    assert [r.summary.ext_id for r in session.table_rows(0, 10, filtered)] == ["vl-a2", "vl-c1"]


# -- full-text search -----------------------------------------------------------------------


def test_text_finds_words_in_prompts_and_responses(project):
    assert names(project, ItemFilter(text="zeppelin")) == {"vl-b2"}  # a response word
    assert names(project, ItemFilter(text="colour")) == {"vl-a2"}  # a prompt word
    assert names(project, ItemFilter(text="sign blue")) == {"vl-a2"}  # every word, anywhere
    assert names(project, ItemFilter(text="sign zeppelin")) == set()
    assert names(project, ItemFilter(text="HORSE")) == {"vl-c2"}  # case-insensitive
    assert names(project, ItemFilter(text="cafe")) == {"vl-b1"}  # accents ignored both ways
    assert names(project, ItemFilter(text="résumé")) == {"vl-b2"}


def test_text_prefixes_phrases_and_ids(project):
    assert names(project, ItemFilter(text="zepp")) == {"vl-b2"}
    assert names(project, ItemFilter(text="circ")) == {"vl-a1"}
    assert names(project, ItemFilter(text="sleep hor")) == {"vl-c2"}
    assert names(project, ItemFilter(text='"three circles"')) == {"vl-a1"}
    assert names(project, ItemFilter(text='"circles three"')) == set()  # a phrase keeps its order
    assert names(project, ItemFilter(text='"circ"')) == set()  # quoted: whole words only
    assert names(project, ItemFilter(text="e-mail")) == {"vl-b2"}
    assert names(project, ItemFilter(text="do")) == set()  # short words are whole words: not "dog"
    assert names(project, ItemFilter(text="dog")) == {"vl-c1"}
    # the id matches as a plain substring, with LIKE's wildcards literal
    assert names(project, ItemFilter(text="-b")) == {"vl-b1", "vl-b2"}
    assert names(project, ItemFilter(text="a1")) == {"vl-a1"}
    assert names(project, ItemFilter(text="vl_")) == set()
    assert names(project, ItemFilter(text="vl%")) == set()


HOSTILE = [
    '"',
    '""',
    '"""',
    "AND OR (",
    "(",
    ")",
    "NOT",
    "AND",
    "OR",
    "NEAR(a b)",
    "NEAR",
    "*",
    "a*b",
    "^start",
    "col:zeppelin",
    "prompt:zeppelin",
    "{prompt}: x",
    "-zeppelin",
    "+",
    "zeppelin)",
    "'",
    "\\",
    "%",
    "_",
    "\x00",
    "a\x00b",
    "🙂",
    "\u0301",
    "x" * 5000,
    " ".join(["AND"] * 500),
    '"' * 33,
    "zeppelin OR horse",
    "zeppelin NOT horse",
    "zeppelin AND",
    "NEAR(zeppelin horse, 2)",
    "ｚｅｐｐｅｌｉｎ",
    "\ue000",
    "ꙮ",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_search_text_never_raises(project, text):
    matched = names(project, ItemFilter(text=text))
    assert matched <= set(NAMES)


def test_operators_are_searched_as_words(project):
    assert names(project, ItemFilter(text="AND")) == {"vl-b1"}  # "Nobody and nothing."
    assert names(project, ItemFilter(text="zeppelin OR horse")) == set()  # not an OR: "or" is a word too
    assert names(project, ItemFilter(text="zeppelin)")) == {"vl-b2"}
    assert names(project, ItemFilter(text="NEAR(zeppelin")) == set()
    assert names(project, ItemFilter(text='"')) == set()


def test_fts_query_quotes_everything():
    assert fts_query("") is None and fts_query("  ( ) * ") is None
    assert fts_query("circ") == '"circ"*'
    assert fts_query("a ok") == '"a" "ok"'
    assert fts_query('"red circle" big') == '"red circle" "big"*'
    assert fts_query('say "hi') == '"say"* "hi"'  # an unbalanced quote is not a phrase
    assert fts_query("e-mail") == '"e mail"*'
    assert fts_query('x"y') == '"x y"'
    assert len(fts_query(" ".join(f"w{i}xx" for i in range(100))).split()) == MAX_TERMS


def test_new_items_are_indexed_and_the_index_checks_out(project):
    project.add_items([item("late", "A walrus appears", ["tusks", "whiskers"])])
    assert names(project, ItemFilter(text="walrus")) == {"late"}
    assert names(project, ItemFilter(text="whisk")) == {"late"}
    assert check_index(project)
    rebuild_index(project)
    assert names(project, ItemFilter(text="walrus")) == {"late"} and check_index(project)
    # an unchanged re-import adds no second row
    assert project.add_items([item("late", "A walrus appears", ["tusks", "whiskers"])]).unchanged == ["late"]
    assert project.query("SELECT count(*) FROM item_text WHERE item_text MATCH 'walrus'")[0][0] == 1


def test_queries_use_indexes(project):
    """No filter scans labels, verdicts or the derived tables in full."""
    run = project.run_id
    filters = [
        ItemFilter(status="labeled", annotator="a"),
        ItemFilter(status="unlabeled"),
        ItemFilter(status="adjudicated"),
        ItemFilter(judge_run=run),
        ItemFilter(judge_run=run, judge="wrong"),
        ItemFilter(judge_run=run, judge="inconsistent"),
        ItemFilter(disagreement="annotators"),
        ItemFilter(disagreement="reference", annotator="a"),
        ItemFilter(error_type="counting"),
        ItemFilter(discard_reason="x"),
        ItemFilter(collection="c"),
        ItemFilter(text="circles"),
        ItemFilter(collection="c", status="labeled", annotator="a", judge_run=run, judge="right"),
    ]
    for f in filters:
        where, params = _filter_sql(f)
        plan = [
            row[3]
            for sql in (
                f"{_SUMMARY_SQL} WHERE {where} ORDER BY i.id LIMIT 500",
                f"SELECT count(*) FROM items i WHERE {where}",
            )
            for row in project.query(f"EXPLAIN QUERY PLAN {sql}", params)
        ]
        scans = [
            line
            for line in plan
            if line.startswith("SCAN")
            and not line.startswith(
                ("SCAN item_text VIRTUAL TABLE", "SCAN e VIRTUAL TABLE", "SCAN i", "SCAN items USING COVERING INDEX")
            )
        ]
        assert scans == [], (f, plan)


# -- the trigger-kept tables agree with the definitions ---------------------------------------


def test_current_labels_follow_time_then_insertion_order(store):
    """label_current = the newest row by created_at, the later insert at equal times, even
    when rows arrive out of time order (merged from another project)."""
    store.add_items([item(f"r{i}", "p", ["x", "y"]) for i in range(8)])
    ids = [s.id for s in store.item_summaries(0, 100)]
    rng = random.Random(4)
    times = [f"2025-01-01T00:00:0{k}.000000+00:00" for k in range(4)]  # few distinct times: many ties
    outcomes = ["prefer", "tie", "both_bad", "discard", "cleared", "unrated"]
    newest: dict[tuple, tuple[str, str, str]] = {}  # worked out here: (time, then insert order)
    for _ in range(300):
        outcome = rng.choice(outcomes)
        label = Label(
            rng.choice(ids),
            rng.choice(["a", "b", "c"]),
            outcome,
            ranking=(rng.randint(0, 1),) if outcome == "prefer" else (),
            kind=rng.choice(["label", "label", "adjudication"]),
            created_at=rng.choice(times),
        )
        stored = store.add_label(label)
        key = (label.item_id, label.annotator, label.kind)
        if key not in newest or label.created_at >= newest[key][0]:
            newest[key] = (label.created_at, stored.uuid, outcome)
    for item_id in ids:
        for name in ("a", "b", "c"):
            for kind in ("label", "adjudication"):
                want = newest.get((item_id, name, kind))
                current = store.current_label(item_id, name, kind)
                if want is None or want[2] == "cleared":
                    assert current is None
                else:
                    assert current is not None and (current.uuid, current.outcome) == want[1:]
    # labeled / unlabeled agree with current_labels
    for name in ("a", "b", "c"):
        labeled = {s.id for s in store.item_summaries(0, 100, filter=ItemFilter(status="labeled", annotator=name))}
        assert labeled == {i for i, label in store.current_labels(name).items() if label.is_labeled}


def test_random_verdicts_match_vote(store):
    store.add_items([item(f"v{i}", "p", ["x", "y", "z"], ranking=(i % 3, (i + 1) % 3)) for i in range(30)])
    ids = [s.id for s in store.item_summaries(0, 100)]
    run = make_run(store, k=3)
    rng = random.Random(9)
    rows = []
    for item_id in ids:
        for s in range(rng.randint(1, 6)):
            parsed = rng.random() < 0.8
            rows.append(verdict(run.id, item_id, s, rng.choice([0, 1, 2, None]) if parsed else None, parsed))
    rng.shuffle(rows)
    for k in range(0, len(rows), 7):
        add_verdicts(store, run.id, rows[k : k + 7])
    ref = dict(store.query("SELECT id, ref_chosen FROM items"))
    for item_id in ids:
        j = reference_vote(store.verdicts(run.id, item_id), k=3)
        got = store.query(
            "SELECT choice, plurality_choice, inconsistent FROM judge_items WHERE run_id = ? AND item_id = ?",
            (run.id, item_id),
        )[0]
        assert got == (j["official"], j["plurality"], int(j["consistent"] is False)), item_id
        in_right = bool(names_ids(store, ItemFilter(judge_run=run.id, judge="right")) & {item_id})
        assert in_right == (j["official"] is not None and j["official"] == ref[item_id])


def reference_vote(verdicts, k):
    """Both conventions written out separately from the implementation (both orders: 2K samples).
    official: a response named by more than half of the samples present (VL-RewardBench cal.py:
    ``agree > total_count / 2`` over the answers its file holds — unparsed ones count, failed
    and missing ones do not; issue 23: it was all 2K here); plurality: the unique most named
    among parsed samples; consistent: every pair (2j, 2j+1) with two verdicts agrees."""
    named = [v.choice for v in verdicts if v.error is None and v.parsed and v.choice is not None]
    counts = {c: named.count(c) for c in set(named)}
    present = sum(1 for v in verdicts if v.error is None and v.sample_idx < 2 * k)
    official = next((c for c, n in counts.items() if n > present / 2), None)
    top = max(counts.values(), default=0)
    winners = [c for c, n in counts.items() if n == top]
    plurality = winners[0] if top and len(winners) == 1 else None
    by_sample = {v.sample_idx: v for v in verdicts if v.sample_idx < 2 * k}
    pairs = [(by_sample.get(2 * j), by_sample.get(2 * j + 1)) for j in range(k)]
    judged = [(a, b) for a, b in pairs if a and b and a.parsed and b.parsed and not a.error and not b.error]
    consistent = None if not judged else all(a.choice == b.choice for a, b in judged)
    return {"official": official, "plurality": plurality, "consistent": consistent}


def names_ids(store, f):
    return {s.id for s in store.item_summaries(0, 1000, filter=f)}


# -- migration 2 ----------------------------------------------------------------------------


def test_migration_2_backfills_a_version_1_project(tmp_path):
    path = tmp_path / "old.pairscope"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, MIGRATIONS[:1])
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.execute("BEGIN")
    for item_id, ext, prompt, texts, ref in [
        (1, "o1", "Count the boats", ("Two boats", "Three boats"), 0),
        (2, "o2", "Name the bird", ("A pelican", "A heron"), 1),
        (3, "o3", "Read the sign", ("STOP", "Naïve café"), None),
    ]:
        conn.execute(
            "INSERT INTO items (id, ext_id, source_format, category, prompt, media_kind, n_responses,"
            " ref_chosen, content_hash) VALUES (?, ?, 'jsonl', 'general', ?, 'none', 2, ?, ?)",
            (item_id, ext, prompt, ref, ext),
        )
        for idx, text in enumerate(texts):
            conn.execute("INSERT INTO responses (item_id, idx, text) VALUES (?, ?, ?)", (item_id, idx, text))
    conn.execute("INSERT INTO ref_error_tags (item_id, idx, kind) VALUES (2, 0, 'recognition')")
    conn.execute("INSERT INTO annotators (id, name, created_at) VALUES (1, 'ann', 'x'), (2, 'ben', 'x')")
    for k, (item_id, who, created, outcome, preferred, errors) in enumerate(
        [
            (1, 1, "2025-01-01T00:00:01", "prefer", 1, "[]"),
            (1, 1, "2025-01-01T00:00:02", "prefer", 0, "[]"),  # newer: ann now agrees with the reference
            (2, 1, "2025-01-01T00:00:01", "prefer", 0, '[{"kind":"counting","note":null,"raw":null,"subkind":null}]'),
            (2, 2, "2025-01-01T00:00:01", "tie", None, "[]"),
            (3, 2, "2025-01-01T00:00:03", "tie", None, "[]"),
            (3, 2, "2025-01-01T00:00:03", "cleared", None, "[]"),  # same time, later row: cleared
        ]
    ):
        conn.execute(
            "INSERT INTO labels (uuid, item_id, annotator_id, created_at, outcome, preferred, ranking,"
            " error_types) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                f"u{k}",
                item_id,
                who,
                created,
                outcome,
                preferred,
                json.dumps([preferred] if preferred is not None else []),
                errors,
            ),
        )
    conn.execute(
        "INSERT INTO judge_runs (id, uuid, created_at, backend, model_path, template_text, template_hash,"
        " mode, k, both_orders, seed) VALUES (1, 'r', 'x', 'fake', 'm', 't', 'h', 'pairwise', 1, 1, 0)"
    )
    for item_id, sample, choice, parsed in [(1, 0, 0, 1), (1, 1, 0, 1), (2, 0, 0, 1), (2, 1, 1, 1), (3, 0, None, 0)]:
        conn.execute(
            "INSERT INTO verdicts (run_id, item_id, sample_idx, order_shown, choice, parsed, created_at)"
            " VALUES (1, ?, ?, '[0, 1]', ?, ?, 'x')",
            (item_id, sample, choice, parsed),
        )
    conn.execute("COMMIT")
    conn.close()

    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION >= 2
        # migration 3 gave every item its identity (dataset id + content)
        assert store.query("SELECT count(*) FROM items WHERE identity IS NULL")[0][0] == 0
        assert [r[0] for r in store.query("SELECT name FROM schema_migrations ORDER BY version")][
            1
        ] == "full-text search and filter indexes"
        assert check_index(store)
        assert names(store, ItemFilter(text="pelican")) == {"o2"}
        assert names(store, ItemFilter(text="boat")) == {"o1"}
        assert names(store, ItemFilter(text="naive cafe")) == {"o3"}
        assert names(store, ItemFilter(status="labeled", annotator="ann")) == {"o1", "o2"}
        assert names(store, ItemFilter(status="labeled", annotator="ben")) == {"o2"}
        assert names(store, ItemFilter(disagreement="annotators")) == {"o2"}
        assert names(store, ItemFilter(disagreement="reference")) == {"o2"}
        assert names(store, ItemFilter(error_type="counting")) == {"o2"}
        assert names(store, ItemFilter(error_type="recognition")) == {"o2"}
        # the judge layer decides the verdicts of a project made before schema 4 when it first opens it
        assert ensure_item_verdicts(store) and not ensure_item_verdicts(store)
        assert names(store, ItemFilter(judge_run=1, judge="right")) == {"o1"}
        assert names(store, ItemFilter(judge_run=1, judge="unparsed")) == {"o2", "o3"}
        assert names(store, ItemFilter(judge_run=1, judge="inconsistent")) == {"o2"}
        # the triggers work on the migrated file too
        store.add_label(Label(3, "ann", "prefer", ranking=(1, 0)))
        assert names(store, ItemFilter(status="labeled", annotator="ann")) == {"o1", "o2", "o3"}
        store.add_items([item("o4", "A new heron", ["x", "y"])])
        assert names(store, ItemFilter(text="heron")) == {"o2", "o4"}


# -- saved filters --------------------------------------------------------------------------


def test_saved_filters_round_trip(tmp_path):
    path = tmp_path / "p.pairscope"
    mine = ItemFilter(
        text='"red circle" zepp',
        status="unlabeled",
        annotator="alice",
        judge_run=3,
        judge="wrong",
        error_type="counting",
        error_source="labels",
        collection="hard",
    )
    with Store.create(path) as store:
        assert saved_filters(store) == {}
        save_filter(store, "to check", mine)
        save_filter(store, "all", ItemFilter())
        save_filter(store, "adjudicate", ItemFilter(disagreement="annotators", status="not_adjudicated"))
    with Store.open(path) as store:
        saved = saved_filters(store)
        assert saved == {
            "adjudicate": ItemFilter(disagreement="annotators", status="not_adjudicated"),
            "all": ItemFilter(),
            "to check": mine,
        }
        assert list(saved) == ["adjudicate", "all", "to check"]
        save_filter(store, "all", ItemFilter(category="general"))  # replaces
        assert saved_filters(store)["all"] == ItemFilter(category="general")
        assert delete_filter(store, "all") is True
        assert delete_filter(store, "all") is False
        assert set(saved_filters(store)) == {"adjudicate", "to check"}
        with pytest.raises(ValueError):
            save_filter(store, "  ", ItemFilter())
        # a filter saved by a newer version: unknown fields are ignored
        store.set_meta(
            "saved_filters",
            json.dumps({"future": {"category": "general", "mood": "happy"}, "newer": {"status": "someday"}}),
        )
        assert saved_filters(store) == {"future": ItemFilter(category="general")}
        store.set_meta("saved_filters", "not json")
        assert saved_filters(store) == {}


def test_item_filter_rejects_unknown_values():
    with pytest.raises(ValueError):
        ItemFilter(status="done")
    with pytest.raises(ValueError):
        ItemFilter(judge="wrong")  # needs a run
    with pytest.raises(ValueError):
        ItemFilter(judge_run=1, judge="bad")
    with pytest.raises(ValueError):
        ItemFilter(disagreement="everyone")
    with pytest.raises(ValueError):
        ItemFilter(error_type="x", error_source="both")
    assert ItemFilter(judge_run=1).judge is None
