"""Generic JSONL import: default field names, --map overrides, ranking checks, clear errors."""

from __future__ import annotations

import re

import pytest
from PIL import Image

from helpers import item, write_jsonl
from pairscope.app.formats import FormatError
from pairscope.app.importer import import_file


def problems_by_line(exc):
    return {p.line: p.message for p in exc.value.problems}


@pytest.fixture
def media(tmp_path):
    Image.new("RGB", (4, 4), "green").save(tmp_path / "a.png")
    (tmp_path / "v.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    return tmp_path


def test_default_field_names(store, tmp_path, media):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {
                "id": "g1",
                "prompt": "How many apples?",
                "responses": ["Two.", "Three.", "Four."],
                "ranking": [1, 0, 2],
                "image": "a.png",
                "category": "counting",
                "subset": "fruit",
                "strength": 2,
                "error_tags": ["counting", "hallucination"],
                "ground_truth": "3",
            },
            {"id": "g2", "prompt": "What happens?", "chosen": "He jumps.", "rejected": "He sits.", "video": ["v.mp4"]},
        ],
    )
    report = import_file(store, path, "jsonl")
    assert report.added == 2 and report.problems == []
    got = item(store, "g1")
    assert [r.text for r in got.responses] == ["Two.", "Three.", "Four."]
    assert got.reference.ranking == (1, 0, 2) and got.reference.chosen == 1
    assert (got.category, got.subset) == ("counting", "fruit")
    assert (got.reference.strength, got.reference.ground_truth) == ("2", "3")
    assert [t.kind for t in got.reference.error_tags] == ["counting", "existence"]
    assert got.media[0].kind == "image" and got.media[0].path == str((media / "a.png").resolve())
    assert got.source_format == "jsonl" and got.extra == {}
    pair = item(store, "g2")
    assert [r.text for r in pair.responses] == ["He jumps.", "He sits."] and pair.reference.ranking == (0, 1)
    assert pair.category == "general" and pair.media_kind == "video"


def test_map_overrides_with_dotted_paths(store, tmp_path):
    conversation = [{"from": "human", "value": "Describe it."}, {"from": "gpt", "value": "A bridge."}]
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {
                "uid": "m1",
                "conversation": conversation,
                "outputs": {"good": "A bridge.", "bad": "A tunnel."},
                "domain": "scenes",
            },
        ],
    )
    mapping = {
        "id": "uid",
        "prompt": "conversation.0.value",
        "chosen": "outputs.good",
        "rejected": "outputs.bad",
        "category": "domain",
    }
    import_file(store, path, "jsonl", mapping=mapping)
    got = item(store, "m1")
    assert got.prompt == "Describe it." and [r.text for r in got.responses] == ["A bridge.", "A tunnel."]
    assert got.category == "scenes"
    # Objects read only through a dotted path stay in extra, so nothing is lost on export.
    assert got.extra == {"conversation": conversation, "outputs": {"good": "A bridge.", "bad": "A tunnel."}}


def test_chosen_index(store, tmp_path):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"id": "pair", "prompt": "Q", "responses": ["a", "b"], "label": 1},
            {"id": "bon", "prompt": "Q", "responses": ["a", "b", "c"], "label": 2},
            {"id": "both", "prompt": "Q", "responses": ["a", "b"], "label": 0, "ranking": [0, 1]},
            {"id": "none", "prompt": "Q", "responses": ["a", "b"]},
        ],
    )
    import_file(store, path, "jsonl", mapping={"chosen_index": "label"})
    assert item(store, "pair").reference.ranking == (1, 0)
    assert item(store, "bon").reference.ranking == (2,)
    assert item(store, "both").reference.ranking == (0, 1)
    assert item(store, "none").reference.ranking is None


def test_missing_fields_say_what_to_map(store, tmp_path):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"id": 1, "prompt": "Q", "responses": ["a", "b"]},
            {"id": 2, "responses": ["a", "b"]},
            {"id": 3, "question": "Q"},
            {"id": 4, "question": "Q", "chosen": "a"},
        ],
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "jsonl", mapping={"prompt": "question"})
    by_line = problems_by_line(exc)
    assert by_line[1] == by_line[2] == "prompt: no key 'question' in this row (use --map prompt=KEY)"
    assert "responses: no key 'responses' (nor chosen + rejected)" in by_line[3]
    assert "--map chosen=KEY --map rejected=KEY" in by_line[3]
    assert by_line[4] == "rejected: no key 'rejected' in this row (use --map rejected=KEY)"
    assert store.item_count() == 0


def test_wrong_types_and_bad_rankings(store, tmp_path):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"id": "ok", "prompt": "Q", "responses": ["a", "b"]},
            {"id": "r1", "prompt": "Q", "responses": ["only one"]},
            {"id": "r2", "prompt": "Q", "responses": ["a", 2]},
            {"id": "k1", "prompt": "Q", "responses": ["a", "b"], "ranking": [0, 2]},
            {"id": "k2", "prompt": "Q", "responses": ["a", "b"], "ranking": [1, 1]},
            {"id": "k3", "prompt": "Q", "responses": ["a", "b"], "ranking": "0,1"},
            {"id": "c1", "prompt": "Q", "responses": ["a", "b"], "chosen_index": 5},
            {"id": "c2", "prompt": "Q", "responses": ["a", "b"], "chosen_index": 1, "ranking": [0, 1]},
            {"id": "c3", "prompt": "Q", "responses": ["a", "b"], "chosen_index": True},
            {"id": "x1", "prompt": "Q", "responses": ["a", "b"], "chosen": "a"},
            {"id": "x2", "prompt": "Q", "chosen": "a", "rejected": "b", "ranking": [1, 0]},
            {"id": "p1", "prompt": {"text": "Q"}, "responses": ["a", "b"]},
            {"id": "m1", "prompt": "Q", "responses": ["a", "b"], "image": 7},
            {"id": "s1", "prompt": "Q", "responses": ["a", "b"], "strength": [1]},
            {"id": "t1", "prompt": "Q", "responses": ["a", "b"], "category": ["x"]},
            {"id": "e1", "prompt": "Q", "responses": ["a", "b"], "error_tags": [{"kind": "counting"}]},
        ],
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "jsonl")
    by_line = problems_by_line(exc)
    assert sorted(by_line) == list(range(2, 17))
    assert by_line[2] == "responses: expected at least 2 responses, got 1"
    assert by_line[3] == "responses[1]: expected a string, got int"
    assert by_line[4] == "ranking: index 2 is out of range for 2 responses (0..1)"
    assert "repeats" in by_line[5] and "ranking" in by_line[6]
    assert "out of range" in by_line[7] and "disagrees" in by_line[8] and "True" in by_line[9]
    assert "both present" in by_line[10] and "only apply to a responses list" in by_line[11]
    assert by_line[12] == "prompt: expected a string, got dict"
    assert "image" in by_line[13] and "strength" in by_line[14] and "category" in by_line[15]
    assert by_line[16].startswith("error_tags: expected a tag or a list of tags")
    assert exc.value.problems[0].item_id == "r1"
    assert store.item_count() == 0


def test_bad_json_is_named_by_line(store, tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", [{"prompt": "Q", "responses": ["a", "b"]}, "", "{oops", '"a string"'])
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "jsonl")
    assert [p.line for p in exc.value.problems] == [3, 4]
    assert store.item_count() == 0


def test_ids_media_extra_reimport_and_duplicates(store, tmp_path, media):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"prompt": "Q", "responses": ["a", "b"], "image": ["a.png", "lost.png"], "annotator": {"name": "kim"}},
            {"prompt": "Q", "responses": ["a", "c"]},
        ],
    )
    report = import_file(store, path, "jsonl")
    assert report.added == 2 and report.missing_media == 1
    ids = [s.ext_id for s in store.item_summaries()]
    assert all(re.fullmatch(r"jsonl-[0-9a-f]{12}", i) for i in ids)
    assert report.problems == [] and report.missing_examples == [(ids[0], "lost.png")]
    assert store.get_item(store.item_id(ids[0])).extra == {"annotator": {"name": "kim"}}
    again = import_file(store, path, "jsonl")
    assert (again.added, again.unchanged) == (0, 2)

    dup = write_jsonl(tmp_path / "dup.jsonl", [{"prompt": "Q", "responses": ["a", "b"]}] * 2)
    assert import_file(store, dup, "jsonl").identical_duplicates == 1
    assert store.item_count() == 3


def test_not_detected_without_format(store, tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", [{"prompt": "Q", "responses": ["a", "b"]}])
    with pytest.raises(FormatError, match="pass --format"):
        import_file(store, path)
