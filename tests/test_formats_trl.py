"""TRL preference import: plain and conversational rows, images, errors, idempotence."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image

from helpers import item, write_jsonl
from pairscope.app.formats import FormatError
from pairscope.app.importer import import_file


def user(*parts):
    return [{"role": "user", "content": list(parts)}]


def assistant(text):
    return [{"role": "assistant", "content": text}]


@pytest.fixture
def png(tmp_path):
    Image.new("RGB", (8, 8), "blue").save(tmp_path / "cat.png")
    return tmp_path / "cat.png"


def test_plain_rows(store, tmp_path, png):
    path = write_jsonl(
        tmp_path / "trl.jsonl",
        [
            {
                "id": "p1",
                "prompt": "Describe the image.",
                "chosen": "A cat.",
                "rejected": "A dog.",
                "images": ["cat.png"],
            },
            {"id": "p2", "prompt": "Hi", "chosen": "Hello", "rejected": "", "image": "cat.png", "category": "chat"},
        ],
    )
    report = import_file(store, path, "trl")
    assert report.added == 2 and report.problems == [] and report.per_category == {"general": 1, "chat": 1}
    got = item(store, "p1")
    assert got.prompt == "Describe the image." and got.prompt_raw is None
    assert [r.text for r in got.responses] == ["A cat.", "A dog."] and got.reference.ranking == (0, 1)
    assert got.media[0].path == str(png.resolve()) and got.source_format == "trl"
    assert got.extra == {}
    assert [r.text for r in item(store, "p2").responses] == ["Hello", ""]


def test_conversational_rows(store, tmp_path, png):
    prompt = user({"type": "image"}, {"type": "text", "text": "What animal is this?"})
    multi = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name it."}]
    parts_answer = [{"role": "assistant", "content": [{"type": "text", "text": "A cat."}]}]
    path = write_jsonl(
        tmp_path / "trl.jsonl",
        [
            {
                "id": "c1",
                "prompt": prompt,
                "chosen": assistant("A cat."),
                "rejected": assistant("A dog."),
                "images": ["cat.png"],
            },
            {"id": "c2", "prompt": multi, "chosen": parts_answer, "rejected": assistant("A dog.")},
            {"id": "c3", "prompt": user({"type": "image"}), "chosen": assistant("A cat."), "rejected": "A dog."},
        ],
    )
    import_file(store, path)  # detected as trl
    got = item(store, "c1")
    assert got.prompt == "What animal is this?"
    assert json.loads(got.prompt_raw) == prompt
    assert [r.text for r in got.responses] == ["A cat.", "A dog."]
    assert got.extra == {"conversational": True}  # chosen/rejected rebuild from their text
    got = item(store, "c2")
    assert got.prompt == "system: Be brief.\nuser: Name it."
    assert got.responses[0].text == "A cat."
    assert got.extra == {"conversational": True, "chosen_raw": parts_answer}
    got = item(store, "c3")  # an image-only prompt has no text but is still a valid row
    assert got.prompt == "" and got.extra == {"conversational": True, "rejected_raw": "A dog."}


def test_derived_ids_missing_image_extra_and_reimport(store, tmp_path, png):
    path = write_jsonl(
        tmp_path / "trl.jsonl",
        [
            {"prompt": "Q", "chosen": "a", "rejected": "b", "images": ["cat.png", "missing.png"], "score_chosen": 8.5},
            {"prompt": "Q", "chosen": "a", "rejected": "c"},
        ],
    )
    report = import_file(store, path, "trl")
    assert report.added == 2 and report.missing_media == 1
    ids = [s.ext_id for s in store.item_summaries()]
    assert all(re.fullmatch(r"trl-[0-9a-f]{12}", i) for i in ids) and ids[0] != ids[1]
    assert report.problems == [] and report.missing_examples == [(ids[0], "missing.png")]
    got = store.get_item(store.item_id(ids[0]))
    assert got.extra == {"score_chosen": 8.5}
    assert [m.missing for m in got.media] == [False, True]
    again = import_file(store, path, "trl")
    assert (again.added, again.unchanged) == (0, 2)


def test_map_override(store, tmp_path):
    path = write_jsonl(
        tmp_path / "trl.jsonl",
        [
            {"uid": "u1", "question": "Q", "chosen": "a", "rejected": "b", "meta": {"pic": None}},
        ],
    )
    import_file(store, path, "trl", mapping={"id": "uid", "prompt": "question"})
    assert item(store, "u1").extra == {"meta": {"pic": None}}


def test_malformed_rows(store, tmp_path):
    path = write_jsonl(
        tmp_path / "trl.jsonl",
        [
            {"id": 1, "prompt": "Q", "chosen": "a", "rejected": "b"},
            {"id": 2, "prompt": "Q", "chosen": 3, "rejected": "b"},
            {"id": 3, "prompt": [{"content": "hi"}], "chosen": "a", "rejected": "b"},
            {"id": 4, "prompt": [{"role": "user", "content": ["raw text"]}], "chosen": "a", "rejected": "b"},
            {"id": 5, "prompt": "Q", "chosen": "a"},
            {"id": 6, "prompt": [], "chosen": "a", "rejected": "b"},
            {"id": 7, "prompt": "Q", "chosen": "a", "rejected": "b", "images": [{"bytes": "..."}]},
            {"id": 8, "prompt": " ", "chosen": "a", "rejected": "b"},
            {"id": 9, "prompt": user({"type": "text", "text": 5}), "chosen": "a", "rejected": "b"},
            "not json at all",
        ],
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "trl")
    assert [p.line for p in exc.value.problems] == [2, 3, 4, 5, 6, 7, 8, 9, 10]  # all problems in one go
    assert exc.value.problems[-1].message.startswith("not valid JSON")
    path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "trl")
    by_line = {p.line: p.message for p in exc.value.problems}
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7, 8, 9]
    assert by_line[2] == "chosen: expected a string or a non-empty list of messages, got int"
    assert by_line[3] == "prompt[0].role: expected a string, got null"
    assert "prompt[0].content[0]" in by_line[4]
    assert by_line[5] == "rejected: no key 'rejected' in this row (use --map rejected=KEY)"
    assert "non-empty list" in by_line[6]
    assert by_line[7] == "images[0]: expected a file path, got {'bytes': '...'}"
    assert "non-empty prompt" in by_line[8]
    assert "prompt[0].content[0].text" in by_line[9]
    assert store.item_count() == 0


def test_duplicate_ids(store, tmp_path):
    row = {"id": "d", "prompt": "Q", "chosen": "a", "rejected": "b"}
    path = write_jsonl(tmp_path / "trl.jsonl", [row, {**row, "category": "other"}])
    with pytest.raises(FormatError) as exc:  # same id, prompt and responses, another category
        import_file(store, path, "trl")
    assert [p.line for p in exc.value.problems] == [2]
    assert store.item_count() == 0
    path = write_jsonl(tmp_path / "trl.jsonl", [row, {**row, "chosen": "z"}, row])
    report = import_file(store, path, "trl")  # other responses: another item; the same row: once
    assert (report.added, report.identical_duplicates, report.renamed) == (2, 1, [("d#2", "d")])
