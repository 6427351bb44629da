"""Assignment with overlap and gold items (issue 28): the invariants of the plan, the stored
rounds, top-up, gold scoring and the packs, through the real store and pack code."""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest

from helpers import good_bad_items
from pairscope.app.cli.main import main
from pairscope.app.curation.assign import (
    STRATEGIES,
    assign_project,
    gold_count,
    gold_from_reference,
    parse_gold,
    plan_assignment,
)
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, Response
from pairscope.app.stats.team_report import gold_correct
from pairscope.app.store import Store
from pairscope.app.store.assignments import assignments, gold_items, set_gold_items

ANNOTATORS = ["ana", "ben", "chen", "dia"]


def coverage(plan: dict[str, list[int]]) -> Counter:
    return Counter(i for items in plan.values() for i in items)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("n_items, k, team", [(10, 2, 3), (31, 3, 4), (7, 1, 4), (50, 4, 4)])
def test_each_item_gets_exactly_k_annotators_balanced_within_one(strategy, n_items, k, team):
    items = list(range(1, n_items + 1))
    cats = {i: "abc"[i % 3] for i in items}
    for seed in range(5):
        plan, short = plan_assignment(items, ANNOTATORS[:team], k, strategy=strategy, seed=seed, categories=cats)
        assert short == []
        assert set(coverage(plan).values()) == {k} and set(coverage(plan)) == set(items)
        sizes = [len(v) for v in plan.values()]
        assert max(sizes) - min(sizes) <= 1, (strategy, seed, sizes)
        assert all(len(set(v)) == len(v) for v in plan.values())  # nobody gets an item twice


def test_stratified_balances_each_category_too():
    items = list(range(1, 41))
    cats = {i: ("x" if i <= 10 else "y") for i in items}
    plan, _ = plan_assignment(items, ANNOTATORS[:3], 2, strategy="stratified-by-category", seed=3, categories=cats)
    for cat in "xy":
        per = [sum(cats[i] == cat for i in v) for v in plan.values()]
        assert max(per) - min(per) <= 1, per


def test_the_plan_is_deterministic_by_seed_and_differs_between_seeds():
    items = list(range(1, 40))
    one = plan_assignment(items, ANNOTATORS[:3], 2, strategy="random", seed=7)
    assert plan_assignment(items, ANNOTATORS[:3], 2, strategy="random", seed=7) == one
    assert plan_assignment(items, ANNOTATORS[:3], 2, strategy="random", seed=8) != one


def test_top_up_never_reassigns_labeled_items_and_fills_what_is_missing():
    items = list(range(1, 13))
    labeled = {1: {"ana", "ben"}, 2: {"ana"}, 3: {"chen"}}
    held = {2: {"ana", "ben"}, 4: {"ana", "ben"}, 5: {"gone"}}  # 'gone' left the team
    plan, short = plan_assignment(items, ANNOTATORS[:3], 2, seed=1, labeled=labeled, held=held)
    got = {i: {a for a, v in plan.items() if i in v} for i in items}
    assert got[1] == set()  # labeled by two already
    assert got[2] == set() and got[4] == set()  # held by two of the team
    assert len(got[3]) == 1 and "chen" not in got[3]  # one more, never the one who labeled it
    assert len(got[5]) == 2 and "gone" not in got[5]  # a holder who left does not count
    for i in items:
        assert not got[i] & labeled.get(i, set()) and not got[i] & held.get(i, set())
        assert len(got[i]) + len((labeled.get(i, set()) | held.get(i, set())) & {"ana", "ben", "chen"}) == 2
    assert short == []


def test_least_labeled_first_under_a_cap():
    items = list(range(1, 11))
    labeled = {i: {"x"} for i in range(1, 6)}  # items 1-5 have a label by someone outside
    plan, _ = plan_assignment(items, ["ana"], 1, strategy="least-labeled", labeled=labeled, per_annotator=5)
    assert plan["ana"] == [6, 7, 8, 9, 10]


def test_overlap_larger_than_the_team_is_refused():
    with pytest.raises(ValueError, match="needs at least 3 annotators"):
        plan_assignment([1, 2], ["ana", "ben"], 3)


def test_gold_count_is_the_share_of_the_pack():
    assert gold_count(16, 0.1) == 2 and gold_count(9, 0.1) == 1 and gold_count(0, 0.5) == 0
    assert gold_count(10, 0.5) == 10
    with pytest.raises(ValueError):
        gold_count(10, 1.0)


@pytest.fixture
def project(tmp_path):
    store = Store.create(tmp_path / "lead.pairscope")
    store.add_items(good_bad_items(30))
    store.add_to_collection("goldset", [store.item_id(f"it{i}") for i in range(24, 30)])
    yield store
    store.close()


def test_assign_stores_the_round_and_writes_one_pack_each(project, tmp_path):
    gold, skipped = gold_from_reference(project, "goldset")
    set_gold_items(project, gold)
    assert skipped == 0 and set(gold_items(project)) == set(project.collection_item_ids("goldset"))
    result = assign_project(project, ["ana", "ben", "chen"], 2, tmp_path / "packs", gold_share=0.1, seed=5)
    rows = assignments(project)
    regular = Counter(r.item_id for r in rows if not r.gold)
    assert set(regular.values()) == {2} and len(regular) == 24  # gold items are not in the overlap pool
    assert result.new == {"ana": 16, "ben": 16, "chen": 16} and result.gold == {"ana": 2, "ben": 2, "chen": 2}
    assert all(r.batch == result.batch and r.strategy == "balanced" and r.seed == 5 for r in rows)
    for name in ("ana", "ben", "chen"):
        pack_path = tmp_path / "packs" / f"{name}.pairscope"
        with Store.open(pack_path, readonly=True) as pack:
            assert pack.item_count() == 18
            assert pack.collections() == {}  # the gold source collection is not in the pack
            assert pack.query("SELECT count(*) FROM gold_items")[0][0] == 0
            assert pack.query("SELECT count(*) FROM assignments")[0][0] == 0
    # Again, nothing labeled yet: every item is held by two; nothing new, no reissue.
    again = assign_project(project, ["ana", "ben", "chen"], 2, tmp_path / "packs", gold_share=0.1, force=True)
    assert again.new == {"ana": 0, "ben": 0, "chen": 0} and again.gold == {"ana": 0, "ben": 0, "chen": 0}
    assert len(assignments(project)) == len(rows)


def test_a_new_annotator_tops_up_what_one_who_left_did_not_label(project, tmp_path):
    assign_project(project, ["ana", "ben"], 1, None, seed=2)
    bens = [a.item_id for a in assignments(project, "ben")]
    session = LabelingSession(project, "ben")
    for i in bens[:5]:
        session.save(i, LabelDraft(preferred_position=1))
    top = assign_project(project, ["ana", "dia"], 1, tmp_path / "t", seed=2)
    batch = [a for a in assignments(project) if a.batch == top.batch]
    assert {a.item_id for a in batch} == set(bens[5:])  # only what ben left unlabeled, once each
    assert len(batch) == len({a.item_id for a in batch}) and top.new == {"ana": 5, "dia": 5}
    with Store.open(tmp_path / "t" / "dia.pairscope", readonly=True) as pack:
        assert pack.item_count() == 5  # dia's new items
    with Store.open(tmp_path / "t" / "ana.pairscope", readonly=True) as pack:
        assert pack.item_count() == 15 + 5  # ana's earlier items (none labeled) and the new ones


def test_gold_scoring_rule():
    from pairscope.app.records import Label
    from pairscope.app.store.assignments import GoldItem

    assert gold_correct(Label(1, "a", "prefer", (0, 1)), GoldItem(1, "prefer", 0))
    assert not gold_correct(Label(1, "a", "prefer", (1, 0)), GoldItem(1, "prefer", 0))
    assert not gold_correct(Label(1, "a", "tie"), GoldItem(1, "prefer", 0))
    assert gold_correct(Label(1, "a", "tie"), GoldItem(1, "tie"))
    assert not gold_correct(Label(1, "a", "discard"), GoldItem(1, "both_bad"))
    assert parse_gold(3, "1") == GoldItem(3, "prefer", 1) and parse_gold(3, "both bad") == GoldItem(3, "both_bad")


def test_gold_refuses_a_response_the_item_lacks(project):
    with pytest.raises(ValueError, match="has no response 5"):
        set_gold_items(project, [parse_gold(project.item_id("it0"), "5")])
    assert gold_items(project) == {}


def test_cli_assign_gold_and_report(project, tmp_path, capsys):
    db = str(project.path)
    project.close()
    assert main(["gold", "--db", db, "--reference-of", "goldset"]) == 0
    assert main(["gold", "--db", db, "--items", "it0", "--expect", "tie"]) == 0
    assert main(["gold", "--db", db, "--list"]) == 0
    out = capsys.readouterr().out
    assert "6 gold items" in out and "it0\ttie\tmarked" in out and "it24\t0\treference:goldset" in out
    args = ["assign", "--db", db, "--annotators", "ana,ben,chen", "--overlap", "2", "--out", str(tmp_path / "p")]
    assert main([*args, "--gold-share", "0.1", "--strategy", "random"]) == 0
    out = capsys.readouterr().out
    assert "ana: 16 new items + 2 gold" in out or "ana: 15 new items + 2 gold" in out
    assert main(["assign", "--db", db, "--annotators", "ana,ana", "--overlap", "1"]) == 1
    assert "given twice" in capsys.readouterr().err
    assert main(["team-report", "--db", db]) == 0
    assert "ana: 0/" in capsys.readouterr().out


def test_pack_is_refused_over_existing_files_and_nothing_is_stored(project, tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "ana.pairscope").write_text("mine")
    with pytest.raises(ValueError, match="already exist"):
        assign_project(project, ["ana", "ben"], 1, tmp_path / "p")
    assert assignments(project) == []
    assert (tmp_path / "p" / "ana.pairscope").read_text() == "mine"


def test_assignments_are_never_reissued_at_the_store(project):
    from pairscope.app.store.assignments import Assignment, add_assignments

    row = Assignment(project.item_id("it0"), "ana", "b1", "", "balanced", 0)
    add_assignments(project, [row])
    with pytest.raises(ValueError, match="never reissued"):
        add_assignments(project, [row])
    conn = sqlite3.connect(project.path)
    assert conn.execute("SELECT count(*) FROM assignments").fetchone()[0] == 1
    conn.close()


def test_items_of_a_category_mix(tmp_path):
    store = Store.create(tmp_path / "c.pairscope")
    items = [
        Item(ext_id=f"{c}{i}", prompt="p", category=c, responses=(Response(0, "x"), Response(1, "y")))
        for c in ("math", "ocr")
        for i in range(6)
    ]
    store.add_items(items)
    assign_project(store, ["ana", "ben", "chen"], 1, None, strategy="stratified-by-category")
    per = Counter((a.annotator, store.get_item(a.item_id).category) for a in assignments(store))
    assert set(per.values()) == {2}
    store.close()


def test_team_report_json_counts_what_was_labeled(project, capsys):
    import json

    assign_project(project, ["ana", "ben"], 2, None)
    session = LabelingSession(project, "ana")
    for i in [a.item_id for a in assignments(project, "ana")][:7]:
        session.save(i, LabelDraft(outcome="tie"))
    db = str(project.path)
    project.close()
    assert main(["team-report", "--db", db, "--json"]) == 0
    rows = {r["annotator"]: r for r in json.loads(capsys.readouterr().out)["annotators"]}
    assert (rows["ana"]["done"], rows["ana"]["assigned"]) == (7, 30)
    assert (rows["ben"]["done"], rows["ben"]["assigned"]) == (0, 30)
    assert rows["ana"]["gold_accuracy"] is None and rows["ana"]["flags"] == []


def test_a_pack_that_cannot_be_written_stores_nothing_and_removes_the_packs_made(project, tmp_path):
    (tmp_path / "p" / "ben.pairscope").mkdir(parents=True)  # a folder where ben's pack would go
    with pytest.raises((OSError, ValueError)):
        assign_project(project, ["ana", "ben"], 1, tmp_path / "p", force=True)
    assert assignments(project) == []
    assert not (tmp_path / "p" / "ana.pairscope").exists()
