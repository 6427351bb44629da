"""Rankings with ties: the one implementation (app/rankings.py), how a label holds one, and
that the store, the blind order, the pending journal and a merge keep it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pairscope.app.labeling.pending import _from_json, _to_json
from pairscope.app.labeling.session import LabelingSession, describe, draft_to_label, label_to_draft
from pairscope.app.rankings import (
    RankingError,
    dense_ranks,
    groups_from_ranks,
    induced_pairs,
    order_from_ranks,
    parse_rank_order,
    ranked_fields,
    ranking_text,
    ranks_from_groups,
)
from pairscope.app.records import Item, Label, LabelDraft, Reference, Response
from pairscope.app.store import Store

ROOT = Path(__file__).resolve().parents[1]


def four(ext_id="r4"):
    return Item(
        ext_id=ext_id,
        prompt="Rank them",
        responses=tuple(Response(i, f"answer {i}") for i in range(4)),
        reference=Reference(ranking=(0, 1, 2, 3)),
    )


def test_groups_ranks_order_and_text_convert_into_each_other():
    ranks = ranks_from_groups([[1], [0, 2], [3]], 4)
    assert ranks == (2, 1, 2, 3)
    assert groups_from_ranks(ranks) == ((1,), (0, 2), (3,))
    assert order_from_ranks(ranks) == (1, 0, 2, 3)
    assert ranking_text(groups_from_ranks(ranks)) == "R2 > R1 = R3 > R4"
    assert dense_ranks((1, 1, 3, 4)) == (1, 1, 2, 3)


def test_a_partial_ranking_leaves_the_unranked_sharing_the_next_rank():
    assert ranks_from_groups([[2]], 4) == (2, 2, 1, 2)
    assert ranks_from_groups([], 4) == ()


def test_a_response_ranked_twice_or_unknown_is_refused():
    with pytest.raises(RankingError, match="ranked twice"):
        ranks_from_groups([[0], [0]], 3)
    with pytest.raises(RankingError, match="not one of"):
        ranks_from_groups([[5]], 3)
    with pytest.raises(RankingError):
        dense_ranks((0, 1))


def test_induced_pairs_worked_by_hand():
    # R2 best, R1 = R3 next, R4 last: 5 ordered pairs and one tie (R1, R3).
    pairs = induced_pairs((2, 1, 2, 3))
    assert sorted(p for p in pairs if not p[2]) == [
        (0, 3, False),
        (1, 0, False),
        (1, 2, False),
        (1, 3, False),
        (2, 3, False),
    ]
    assert [p for p in pairs if p[2]] == [(0, 2, True)]


def test_potato_rank_order_with_a_tie():
    # Potato writes a ranking as names best first, ties with '=' ("B,D=A,C").
    assert parse_rank_order("B,D=A,C", ["A", "B", "C", "D"]) == (2, 1, 3, 2)
    with pytest.raises(RankingError, match="'E'"):
        parse_rank_order("B,E", ["A", "B", "C", "D"])


def test_a_ranking_label_prefers_its_single_best_and_is_a_tie_when_the_best_is_shared():
    assert ranked_fields((2, 1, 2, 3)) == ("prefer", (1, 0, 2, 3), (2, 1, 2, 3))
    assert ranked_fields((1, 1, 2, 3)) == ("tie", (0, 1, 2, 3), (1, 1, 2, 3))
    assert ranked_fields((1, 3, 3, 4)) == ("prefer", (0, 1, 2, 3), (1, 2, 2, 3))


def test_a_ranking_made_on_screen_is_stored_by_response_index_through_the_blind_order():
    order = (2, 0, 3, 1)  # screen position 1 shows response 2, …
    draft = LabelDraft(rank_groups=((3,), (1, 4), (2,)))  # R3 > R1 = R4 > R2 as seen
    label = draft_to_label(7, "ann", order, draft)
    # screen 3 -> response 3; screen 1, 4 -> responses 2, 1; screen 2 -> response 0
    assert label.ranks == (3, 2, 2, 1)
    assert (label.outcome, label.preferred, label.ranking) == ("prefer", 3, (3, 1, 2, 0))
    back = label_to_draft(label, order)
    # the last group is the responses left over: it reads back implied
    assert back.rank_groups == ((3,), (1, 4)) and back.preferred_position == 3
    assert draft_to_label(7, "ann", order, back) == label
    assert describe(draft) == "R3 > R1 = R4 > R2"


def test_the_store_keeps_a_ranking_and_refuses_one_that_disagrees_with_its_outcome(tmp_path):
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items([four()])
        item_id = store.item_id("r4")
        outcome, ranking, ranks = ranked_fields((2, 1, 2, 3))
        store.add_label(Label(item_id, "ann", outcome, ranking=ranking, ranks=ranks))
        assert store.current_label(item_id, "ann").ranks == (2, 1, 2, 3)
        with pytest.raises(ValueError, match="mean prefer"):
            store.add_label(Label(item_id, "ann", "tie", ranks=ranks))
        with pytest.raises(ValueError, match="one rank to each"):
            store.add_label(Label(item_id, "ann", "prefer", ranking=(0,), ranks=(1, 2)))
        assert len(store.label_history(item_id)) == 1


def test_undo_and_redo_of_ranking_steps(tmp_path):
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items([four()])
        item_id = store.item_id("r4")
        with LabelingSession(store, "ann") as session:
            session.save(item_id, LabelDraft(rank_groups=((3,),)))
            session.save(item_id, LabelDraft(rank_groups=((3,), (1,))))
            assert session.draft(item_id).rank_groups == ((3,), (1,))
            session.undo()
            assert session.draft(item_id).rank_groups == ((3,),)
            session.redo()
            assert session.draft(item_id).rank_groups == ((3,), (1,))
            order = session.order(item_id)
            assert store.current_label(item_id, "ann").ranks[order[2]] == 1


def test_the_pending_journal_keeps_the_ranks():
    label = Label(3, "ann", "tie", ranking=(0, 1, 2), ranks=(1, 1, 2), uuid="u", created_at="2026-01-01T00:00:00Z")
    assert _from_json(_to_json(label, "x")) == (label, "x")


def test_packs_labelled_with_rankings_merge_back_with_their_ties(tmp_path):
    from pairscope.app.curation.teamwork import merge_projects, pack_project

    main = tmp_path / "main.pairscope"
    with Store.create(main) as store:
        store.add_items([four()])
    wanted = {"alice": ((2,), (1, 3)), "bob": ((1, 2), (4,))}  # screen positions, tied groups
    for name, groups in wanted.items():
        with Store.open(main) as store:
            pack_project(store, tmp_path / f"{name}.pairscope", name)
        with Store.open(tmp_path / f"{name}.pairscope") as pack, LabelingSession(pack, name) as session:
            session.save(pack.item_id("r4"), LabelDraft(rank_groups=groups))
    merge_projects(main, [tmp_path / "alice.pairscope", tmp_path / "bob.pairscope"])
    with Store.open(main) as store, LabelingSession(store, "alice") as alice, LabelingSession(store, "bob") as bob:
        item_id = store.item_id("r4")
        assert alice.draft(item_id).rank_groups == ((2,), (1, 3))
        assert bob.draft(item_id).rank_groups == ((1, 2), (4,))  # response 3 as shown is left: last
        assert store.current_label(item_id, "bob").outcome == "tie"
        assert sorted(store.current_label(item_id, "alice").ranks) == [1, 2, 2, 3]


def test_rankings_have_one_home():
    """Converting ranks, groups and orders lives in app/rankings.py; no other module defines
    functions of those names."""
    names = {"ranks_from_groups", "groups_from_ranks", "order_from_ranks", "induced_pairs", "dense_ranks"}
    for path in [*ROOT.glob("app/**/*.py"), *ROOT.glob("widgets/*.py"), *ROOT.glob("models/*.py")]:
        if path.name == "rankings.py" and path.parent.name == "app":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert not defined & names, f"{path} defines {defined & names}"


def test_a_corrected_reference_ranking_puts_the_reviewed_response_alone_on_top_and_keeps_the_other_ties():
    from dataclasses import replace

    from pairscope.app.curation.export_select import corrected_item
    from pairscope.app.store.references import ReferenceReview

    item = replace(four(), reference=Reference(ranking=(0, 1, 2, 3), ranks=(1, 2, 2, 3)))
    review = ReferenceReview(item_id=1, reviewer="lead", verdict="wrong", corrected=3)
    fixed, record, why = corrected_item(item, review, "corrected")
    assert why == "" and fixed.reference.ranks == (2, 3, 3, 1) and fixed.reference.ranking == (3, 0, 1, 2)
    assert record["original_ranks"] == [1, 2, 2, 3] and record["ranking"] == [3, 0, 1, 2]
