"""The statistics' columnar read (issue 30): the response shown first, read in numpy from the
concatenated JSON order lists, is what SQL's cut of each list gave; the per-item arrays are in
id order, with every item's error tags on its own row."""

from __future__ import annotations

import sqlite3

import numpy as np

from pairscope.app.records import ErrorTag, Item, Reference, Response
from pairscope.app.stats.data import _first_numbers, load_stats_data

# the old per-row SQL: substr of the list up to its first comma, cast to an integer
_SQL_FIRST = (
    "SELECT CAST(substr(?1, 2, CASE WHEN instr(?1, ',') > 0 THEN instr(?1, ',') - 2 ELSE length(?1) - 2 END)"
    " AS INTEGER)"
)


def test_first_numbers_match_sqls_cut_of_each_order_list():
    lists = ["[0, 1]", "[1, 0]", "[12, 3, 0]", "[2]", "[]", "[ 4, 1]", "[-1, 0]", "[10]", "[3,2,1,0]"]
    conn = sqlite3.connect(":memory:")
    expected = [conn.execute(_SQL_FIRST, (s,)).fetchone()[0] for s in lists]
    assert _first_numbers("".join(lists)).tolist() == expected == [0, 1, 12, 2, 0, 4, -1, 10, 3]
    assert _first_numbers("").tolist() == []


def test_stats_arrays_line_up_with_items_and_their_tags(store):
    items = [
        Item(
            ext_id=f"i{k}",
            prompt="<image> q" if k % 2 else "q",
            responses=(Response(0, "a b"), Response(1, "c")),
            category=("general", "reasoning")[k % 2],
            reference=Reference(
                ranking=(k % 2, 1 - k % 2), error_tags=tuple(ErrorTag(t) for t in ("counting",) * (k % 3))
            ),
        )
        for k in range(7)
    ]
    store.add_items(items)
    data = load_stats_data(store)
    assert list(data.item_ids) == sorted(data.item_ids) and len(data.item_ids) == 7
    assert [len(tags) for tags in data.error_kinds] == [k % 3 for k in range(7)]  # each item its own tags
    assert data.categories.tolist() == [("general", "reasoning")[k % 2] for k in range(7)]
    assert data.ref_chosen.tolist() == [float(k % 2) for k in range(7)]
    assert np.array_equal(data.response_words[:, 0], np.full(7, 2.0))
    assert data.image_tokens.tolist() == [float(k % 2) for k in range(7)]  # counted only where present
