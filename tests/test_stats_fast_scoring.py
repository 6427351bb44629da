"""The statistics' cheap paths (issue 30) give what the plain ones give: a run's samples read as
one packed number each through the covering index of migration 11 are the samples stored;
every slice's accuracies counted at once are one ``Accuracy.count`` per slice; the vote counts
of a K and the tie decisions read from shared counts are the cumulative table's and
``decide_with_ties``'s; the item keys read by column follow the items in any order."""

from __future__ import annotations

import random

import numpy as np
import pytest

from helpers import fake_run
from pairscope.app.judge.votes import ERROR, TIE, UNPARSED, Accuracy, present_counts, vote_counts
from pairscope.app.records import Item, MediaRef, Reference, Response
from pairscope.app.stats.conventions import ScoringInput, group_codes
from pairscope.app.stats.data import load_stats_data
from pairscope.app.stats.scores import Slice, _tie_decisions, decide_with_ties, load_item_keys
from pairscope.app.store import VerdictRecord
from pairscope.app.store.stats_queries import _RUN_VERDICTS


def _items(store, n: int) -> list[int]:
    store.add_items(
        [
            Item(
                ext_id=f"i{k}",
                prompt=f"question {k}",
                responses=tuple(Response(r, f"answer {r}") for r in range(3 if k % 4 == 0 else 2)),
                media=(MediaRef("image", f"images/set{k % 3}/{k}.png"),) if k % 2 else (),
                reference=Reference(ranking=(0, 1)),
                source_id=f"g{k // 2}" if k % 5 else None,
            )
            for k in range(n)
        ]
    )
    return [int(r[0]) for r in store.query("SELECT id FROM items ORDER BY id")]


def test_a_runs_samples_read_packed_are_the_samples_stored(store):
    ids = _items(store, 40)
    run = fake_run(store, k=150)
    rng = random.Random(3)
    verdicts = []
    for item_id in ids:
        for s in rng.sample(range(150), 4):  # sample indices up to 149, some items without some samples
            order = (1, 0) if rng.random() < 0.5 else (0, 1)
            kind = rng.random()
            error = "out of memory" if kind < 0.2 else None
            parsed = error is None and kind > 0.35
            choice = rng.choice([None, 0, 1, 2]) if parsed else None  # None when parsed: a tie
            verdicts.append(VerdictRecord(run.id, item_id, s, order, "x", choice, None, parsed, None, error=error))
    store.add_verdicts(verdicts)
    [data_run] = load_stats_data(store).runs
    row = {item_id: i for i, item_id in enumerate(ids)}
    assert data_run.choices.shape == (40, 1 + max(v.sample_idx for v in verdicts))
    for v in store.verdicts(run.id):  # each stored sample, read one by one, is where the arrays say
        i, s = row[v.item_id], v.sample_idx
        assert data_run.judged[i, s] == (v.error is None)
        assert data_run.parsed[i, s] == v.parsed
        expected = v.choice if v.parsed and v.choice is not None else None
        assert (None if np.isnan(data_run.choices[i, s]) else data_run.choices[i, s]) == expected
        assert data_run.first_shown[i, s] == v.order_shown[0]
    stored = {(row[v.item_id], v.sample_idx) for v in verdicts}
    empty = [(i, s) for i in range(40) for s in range(data_run.choices.shape[1]) if (i, s) not in stored]
    assert all(np.isnan(data_run.first_shown[i, s]) and not data_run.judged[i, s] for i, s in empty)


def test_the_verdict_read_walks_the_covering_index_alone(store):
    plan = " ".join(str(r[3]) for r in store.query("EXPLAIN QUERY PLAN " + _RUN_VERDICTS, (1,)))
    assert "COVERING INDEX verdicts_run_read" in plan, plan


@pytest.mark.parametrize("with_credit", [False, True])
def test_every_slices_accuracies_at_once_are_one_count_per_slice(with_credit):
    rng = np.random.default_rng(5)
    n = 500
    verdict = rng.choice([0.0, 1.0, 2.0, np.nan, -9.0], n)
    target = rng.choice([0.0, 1.0, np.nan], n)
    scored = rng.random(n) < 0.8
    credit = rng.choice([0.0, 1.0, 0.5, 1 / 3], n) if with_credit else None
    names = ["a", "b", "c", "unused"]
    codes = rng.integers(-1, 3, n)  # -1: in no slice
    coded = Slice(names, codes).accuracies(verdict, target, scored, credit)
    members = rng.random((6, 3)) < 0.5  # six tag tuples over three tags
    tuples = rng.integers(0, 6, n)
    tagged = Slice(["x", "y", "z"], tuples, members).accuracies(verdict, target, scored, credit)
    for j, name in enumerate(names):
        one = Accuracy.count(verdict, target, scored & (codes == j), credit)
        assert coded[name] == one and type(coded[name].correct) is type(one.correct)
    for j, name in enumerate(["x", "y", "z"]):
        assert tagged[name] == Accuracy.count(verdict, target, scored & members[tuples, j], credit)
    assert Slice([]).accuracies(verdict, target, scored, credit) == {}


def _random_votes(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    return rng.choice(
        [0.0, 1.0, 2.0, TIE, UNPARSED, ERROR, np.nan], (n, width), p=[0.3, 0.25, 0.05, 0.1, 0.1, 0.1, 0.1]
    )


def test_counts_of_the_first_cells_and_tie_decisions_match_the_tables():
    rng = np.random.default_rng(9)
    for width in (1, 2, 5, 6):
        votes = _random_votes(rng, 300, width)
        inp = ScoringInput(
            votes, np.zeros(300), np.ones(300, bool), np.ones(300, bool), 1, width, np.full(300, 3), votes
        )
        cumulative, present = vote_counts(votes, cumulative=True), present_counts(votes, cumulative=True)
        for column in range(width):
            counts, here = inp.counts_at(column)
            assert np.array_equal(counts, cumulative[:, column]) and np.array_equal(here, present[:, column])
        for convention in ("official", "plurality"):
            fast, plain = _tie_decisions(inp, convention), decide_with_ties(votes, convention)
            assert np.array_equal(fast, plain, equal_nan=True)
    no_votes = np.full((4, 3), np.nan)
    inp = ScoringInput(no_votes, np.zeros(4), np.ones(4, bool), np.ones(4, bool), 1, 3, np.full(4, 2), no_votes)
    assert inp.counts_at(2)[0].shape == (4, 0)
    assert np.array_equal(_tie_decisions(inp, "official"), decide_with_ties(no_votes, "official"), equal_nan=True)


def test_group_codes_number_equal_ids_alike():
    groups = np.array(["b", "a", "b", None, "c", None, "a"], dtype=object)
    codes = group_codes(groups)
    assert codes.tolist() == [0, 1, 0, 2, 3, 2, 1]
    assert group_codes(np.array(["x", "y", "z"], dtype=object)).tolist() == [0, 1, 2]  # every id once
    assert group_codes(np.array([], dtype=object)).tolist() == []


def test_item_keys_follow_the_items_in_any_order(store):
    _items(store, 12)
    data = load_stats_data(store)
    by_id = {item_id: (group, ref) for item_id, group, ref in store.item_keys()}
    keys = load_item_keys(store, data)
    assert keys.groups.tolist() == [by_id[i][0] for i in data.item_ids]
    expected = [ref.split("/")[1] if ref else None for _, ref in (by_id[i] for i in data.item_ids)]
    assert keys.datasets.tolist() == expected and "set1" in expected and None in expected
    data.item_ids = np.array([*data.item_ids[::-1][:-1], 10**9])  # another order, and an item the store lacks
    keys = load_item_keys(store, data)
    assert keys.groups.tolist() == [by_id[int(i)][0] if int(i) in by_id else None for i in data.item_ids]
    assert keys.datasets[-1] is None and keys.groups[-1] is None
