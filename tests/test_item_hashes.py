"""An item's content hash and identity key are stored in every project: a re-import matches
items by them, so they must stay byte for byte what earlier versions computed (the digests
below were computed by the code of 2026-12-02, before the import's speed-ups of issue 30).
The import's word count, which has a fast path for ASCII, is ``len(text.split())``."""

from __future__ import annotations

from pairscope.app.records import ErrorTag, Item, MediaRef, Reference, Response, Step
from pairscope.app.store.item_rows import content_hash, identity_key, word_count


def _plain() -> Item:
    return Item(
        ext_id="a",
        prompt="Which circle?",
        responses=(Response(0, "left"), Response(1, "right")),
        reference=Reference(ranking=(0, 1)),
    )


def _everything() -> Item:
    return Item(
        ext_id="RLAIF-V-7#2",
        source_id="RLAIF-V-7",
        prompt="Caf\u00e9  na\u00efve\tline\n\u65e5\u672c \U0001f642",
        prompt_raw="<image>\nCaf\u00e9  na\u00efve\tline\n\u65e5\u672c \U0001f642",
        responses=(
            Response(0, "z last", "m-a", (Step("s1", True), Step("s2", None))),
            Response(1, "a first", None, (Step("t", False),)),
            Response(2, "", "m-c"),
        ),
        media=(MediaRef("image", "images/0.png", "/abs/images/0.png"), MediaRef("video", "v.mp4", None, "not found")),
        category="hallucination",
        subset="povid",
        source_format="vlrewardbench",
        reference=Reference(
            ranking=(2, 0, 1),
            strength="0.75",
            ground_truth="B",
            error_tags=(
                ErrorTag("recognition", "text", None, "recognition(text)"),
                ErrorTag("other", None, "blurry", "others, blurry"),
            ),
            ranks=(2, 3, 1),
        ),
        extra={"meta": {"z": [1, 2.5, None, True], "a": "\u00fc"}, "big": 2**63 + 5, "nan": float("nan"), 3: "int key"},
    )


def test_content_hash_and_identity_are_those_projects_store():
    assert content_hash(_plain()) == "1f6a41fd34bfd354fe9c206f5a30aa2e633b47ed"
    assert identity_key(_plain()) == "77a99705e437c1d4b4d11b7c9624e3e3d765e76d"
    assert content_hash(_everything()) == "98adb3b14fdd2685f80c614cfe8f8064f826df3c"
    assert identity_key(_everything()) == "8400071bbb9d12341f2acdb2af2ec4c94711d43c"


def test_word_count_is_str_split_for_every_ascii_character():
    for a in range(128):
        for b in range(128):
            text = f"x{chr(a)}{chr(b)}y"
            assert word_count(text) == len(text.split()), repr(text)
            edge = f"{chr(a)}{chr(b)}"
            assert word_count(edge) == len(edge.split()), repr(edge)
