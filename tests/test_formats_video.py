"""VideoRewardBench import: key spellings, dimensions, strength, media, errors, idempotence."""

from __future__ import annotations

import re

import pytest

from helpers import item, write_jsonl
from pairscope.app.formats import FormatError
from pairscope.app.importer import import_file


def row(**kw):
    base = {
        "id": "v1",
        "video": "clips/a.mp4",
        "prompt": "What does the man pick up?",
        "chosen": "A red cup.",
        "rejected": "A blue hat.",
        "dimension": "Long-Form Perception",
        "preference_strength": 3,
    }
    base.update(kw)
    return base


@pytest.fixture
def clips(tmp_path):
    (tmp_path / "clips").mkdir()
    for name in ("a.mp4", "b.mp4", "c.mp4"):
        (tmp_path / "clips" / name).write_bytes(b"\x00\x00\x00\x18ftypmp42")
    return tmp_path / "clips"


def test_happy_path(store, tmp_path, clips):
    path = write_jsonl(
        tmp_path / "vrb.jsonl",
        [
            row(),
            row(id="v2", video="clips/b.mp4", dimension="safety", preference_strength="strong"),
        ],
    )
    report = import_file(store, path, "videorewardbench")
    assert (report.added, report.missing_media, report.problems) == (2, 0, [])
    assert report.per_category == {"long-form perception": 1, "safety": 1}
    got = item(store, "v1")
    assert got.prompt == "What does the man pick up?"
    assert [r.text for r in got.responses] == ["A red cup.", "A blue hat."]
    assert got.reference.ranking == (0, 1) and got.reference.chosen == 0
    assert got.reference.strength == "3"
    assert (got.category, got.subset) == ("long-form perception", "Long-Form Perception")
    assert got.source_format == "videorewardbench"
    assert got.media_kind == "video"
    assert got.media[0].ref == "clips/a.mp4"
    assert got.media[0].path == str((clips / "a.mp4").resolve())
    assert item(store, "v2").reference.strength == "strong"


def test_key_spellings_video_list_and_detection(store, tmp_path, clips):
    path = write_jsonl(
        tmp_path / "vrb.jsonl",
        [
            {
                "idx": 7,
                "video_path": "clips/a.mp4",
                "question": "Q1",
                "chosen_response": "yes",
                "rejected_response": "no",
                "task_type": "short_form",
                "margin": 0.5,
            },
            {
                "sample_id": "s2",
                "videos": ["clips/b.mp4", "clips/c.mp4"],
                "instruction": "Q2",
                "preferred": "good",
                "dispreferred": "bad",
                "aspect": "Knowledge",
            },
        ],
    )
    report = import_file(store, path)  # no --format: detected from the first row
    assert report.format == "videorewardbench" and report.added == 2
    first = item(store, "7")
    assert (first.prompt, first.category, first.subset) == ("Q1", "short-form perception", "short_form")
    assert [r.text for r in first.responses] == ["yes", "no"] and first.reference.strength == "0.5"
    second = item(store, "s2")
    assert [m.ref for m in second.media] == ["clips/b.mp4", "clips/c.mp4"]
    assert all(m.kind == "video" and not m.missing for m in second.media)
    assert second.category == "knowledge" and second.reference.strength is None


def test_map_override(store, tmp_path, clips):
    path = write_jsonl(
        tmp_path / "vrb.jsonl",
        [
            {"id": "m1", "clip": "clips/a.mp4", "text_input": "Q", "chosen": "a", "rejected": "b", "prompt": "ignored"},
        ],
    )
    import_file(store, path, "videorewardbench", mapping={"video": "clip", "prompt": "text_input"})
    got = item(store, "m1")
    assert got.prompt == "Q" and got.media[0].ref == "clips/a.mp4"
    assert got.extra == {"prompt": "ignored"}  # the unmapped alias is not consumed


def test_derived_id_is_stable_and_reimport_is_idempotent(store, tmp_path, clips):
    rows = [{k: v for k, v in row().items() if k != "id"}, row(id=None, prompt="Another question")]
    path = write_jsonl(tmp_path / "vrb.jsonl", rows)
    first = import_file(store, path, "videorewardbench")
    ids = [s.ext_id for s in store.item_summaries()]
    assert first.added == 2 and all(re.fullmatch(r"vrb-[0-9a-f]{12}", i) for i in ids)
    again = import_file(store, path, "videorewardbench")
    assert (again.added, again.unchanged) == (0, 2)
    assert [s.ext_id for s in store.item_summaries()] == ids


def test_missing_video_is_a_warning(store, tmp_path, clips):
    path = write_jsonl(tmp_path / "vrb.jsonl", [row(id="gone", video="clips/nope.mp4")])
    report = import_file(store, path, "videorewardbench")
    assert report.added == 1 and report.missing_media == 1 and report.items_missing_media == 1
    assert report.problems == []  # summarised once (missing_examples), not one warning per item
    assert report.missing_examples == [("gone", "clips/nope.mp4")] and report.missing_prefix == "clips/"
    media = item(store, "gone").media[0]
    assert media.path is None and media.ref == "clips/nope.mp4"


def test_bad_json_lines_are_named(store, tmp_path):
    path = write_jsonl(tmp_path / "vrb.jsonl", [row(), "{not json", row(id="v3"), "[1, 2]"])
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "videorewardbench")
    assert [p.line for p in exc.value.problems] == [2, 4]
    assert "not valid JSON" in exc.value.problems[0].message
    assert store.item_count() == 0


def test_wrong_types_and_missing_fields_fail_the_whole_file(store, tmp_path, clips):
    path = write_jsonl(
        tmp_path / "vrb.jsonl",
        [
            row(),
            row(id="a", chosen=["not", "text"]),
            {k: v for k, v in row(id="b").items() if k != "video"},
            row(id="c", preference_strength={"level": 2}),
            row(id="d", dimension=5, prompt=""),
            row(id=["x"]),
            {k: v for k, v in row(id="e").items() if k != "rejected"},
        ],
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "videorewardbench")
    by_line = {p.line: p.message for p in exc.value.problems}
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7]
    assert "chosen: expected a string, got list" in by_line[2]
    assert "video:" in by_line[3] and "--map video=KEY" in by_line[3]
    assert "preference_strength" in by_line[4] and "dict" in by_line[4]
    assert "prompt" in by_line[5]
    assert "id:" in by_line[6]
    assert "rejected" in by_line[7]
    assert store.item_count() == 0


def test_a_repeated_id_with_other_content_is_another_item(store, tmp_path, clips):
    path = write_jsonl(tmp_path / "vrb.jsonl", [row(), row(prompt="other"), row(id="v2"), row()])
    report = import_file(store, path, "videorewardbench")
    assert report.added == 3 and report.identical_duplicates == 1 and report.renamed == [("v1#2", "v1")]
    assert item(store, "v1#2").prompt == "other" and item(store, "v1#2").dataset_id == "v1"


def test_a_repeated_item_with_other_fields_is_fatal(store, tmp_path, clips):
    path = write_jsonl(tmp_path / "vrb.jsonl", [row(), row(dimension="safety")])
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "videorewardbench")
    (problem,) = exc.value.problems
    assert problem.line == 2 and "repeats line 1" in problem.message and problem.item_id == "v1"
    assert store.item_count() == 0


def test_unknown_fields_are_kept_verbatim(store, tmp_path, clips):
    meta = {"fps": 30, "frames": [1, 2], "note": None}
    path = write_jsonl(tmp_path / "vrb.jsonl", [row(meta=meta, chosen_model="m-a", video_id="vid-9")])
    import_file(store, path, "videorewardbench")
    assert item(store, "v1").extra == {"meta": meta, "chosen_model": "m-a", "video_id": "vid-9"}


def test_unknown_map_field_is_rejected(store, tmp_path, clips):
    path = write_jsonl(tmp_path / "vrb.jsonl", [row()])
    with pytest.raises(FormatError, match="unknown field"):
        import_file(store, path, "videorewardbench", mapping={"answer": "x"})
