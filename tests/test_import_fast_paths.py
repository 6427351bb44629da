"""The import's cheaper per-row paths (issue 30) give what the plain ones gave: word counts
equal ``len(text.split())`` for any text, and display ids (``id#2``) are probed as before when
the batch itself brings the id that a conflicting item would move to."""

from __future__ import annotations

import random

from pairscope.app.records import Item, Reference, Response
from pairscope.app.store.item_rows import word_count

WHITESPACE_AND_CONTROLS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2003\u2028\x00\x07\x7f"


def test_word_count_is_str_split_for_every_kind_of_space():
    rng = random.Random(0)
    alphabet = WHITESPACE_AND_CONTROLS + "ab é"
    for _ in range(50_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert word_count(text) == len(text.split()), repr(text)
    assert word_count("two  spaces here") == 3 and word_count(" lead and trail ") == 3
    assert word_count("tab\tsplits") == 2 and word_count("") == 0 and word_count("   ") == 0


def _item(ext_id: str, prompt: str) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        responses=(Response(0, "a"), Response(1, "b")),
        reference=Reference(ranking=(0, 1)),
    )


def test_display_ids_when_the_batch_brings_the_probed_id(store):
    store.add_items([_item("a", "first")])
    # one batch: another "a" (another prompt: a distinct item, shown as "a#2") and an item whose
    # dataset id is literally "a#2": the ids the batch looked up and did not find are free, and
    # one taken earlier in the same batch is not free any more
    result = store.add_items([_item("a", "second"), _item("a#2", "third")])
    assert [i.ext_id for i in result.added] == ["a#2", "a#2#2"]
    assert store.get_item(store.item_id("a#2")).prompt == "second"
    assert store.get_item(store.item_id("a#2#2")).prompt == "third"
    again = store.add_items([_item("a", "second"), _item("a#2", "third"), _item("a", "first")])
    assert again.added == [] and len(again.unchanged) == 3  # re-import: unchanged, nothing added
