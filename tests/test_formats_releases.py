"""The newer reward releases (issue 29) import as published: format detected, categories,
reference, repeated MM-RLHF ids grouped, malformed rows named by file:line."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from helpers import item, write_jsonl
from pairscope.app.formats import FormatError, detect_format
from pairscope.app.importer import import_file
from pairscope.app.store import Store

RELEASES = Path(__file__).parent / "fixtures" / "releases"


def copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copy(RELEASES / name, tmp_path / name))


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("multimodal_rewardbench.json", "multimodal_rewardbench"),
        ("mm_rlhf.jsonl", "mm_rlhf"),
        ("rewardbench2.jsonl", "rewardbench2"),
        ("mr2bench.jsonl", "mr2bench"),
    ],
)
def test_detected_without_map(name, fmt):
    assert detect_format(RELEASES / name).name == fmt


def test_multimodal_rewardbench(store, tmp_path):
    report = import_file(store, copy(tmp_path, "multimodal_rewardbench.json"))
    assert report.format == "multimodal_rewardbench" and report.added == 5
    assert report.per_category == {
        "vqa": 1,
        "safety/bias": 1,
        "safety/toxicity": 1,
        "reasoning/math": 1,
        "reasoning/coding": 1,
    }
    assert item(store, "vqa_001").reference.ranking == (0, 1)
    got = item(store, "hateful_12")
    assert got.reference.ranking == (1, 0) and got.reference.chosen == 1
    assert [r.text for r in got.responses] == [
        "It insults a group.",
        "I will not describe it in detail; it targets a group.",
    ]
    assert got.media[0].ref == "images/meme.png" and got.media_kind == "image"


def test_multimodal_rewardbench_bad_element_names_its_line(store, tmp_path):
    path = tmp_path / "all_data.json"
    path.write_text(
        '[\n {"ID": "a", "Text": "q", "Image": "i.jpg", "Output1": "x", "Output2": "y", "Better": "Output1"},\n'
        ' {"ID": "b", "Text": "q", "Image": "i.jpg", "Output1": "x", "Output2": "y",\n'
        '  "Better": "Output3"}\n]\n'
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path)
    (p,) = exc.value.problems
    assert p.line == 3 and "Better" in p.message and "Output3" in p.message
    assert store.item_keys() == []


def test_mm_rlhf_repeated_id_is_one_group_of_pairs(store, tmp_path):
    report = import_file(store, copy(tmp_path, "mm_rlhf.jsonl"))
    assert report.format == "mm_rlhf" and report.added == 5
    assert report.per_category == {"mcq": 3, "long": 1, "video": 1}
    groups = Counter(group for _, group, _ in store.item_keys())
    assert groups == {"mcq_1": 3, "long_4": 1, "video_9": 1}  # what mm-rlhf ACC+ groups by
    second = item(store, "mcq_1#2")
    assert second.dataset_id == "mcq_1"
    assert [r.text for r in second.responses] == ["B", "Neither."] and second.reference.chosen == 0
    assert second.extra["chosen_reason"] == "The square covers more area."
    assert second.extra["rejected_reason"] == "One of them is larger."
    assert item(store, "video_9").media_kind == "video"


def test_mm_rlhf_row_without_media_names_its_line(store, tmp_path):
    rows = [
        {"id": "s1", "image": "safety/a.jpg", "prompt": "p", "chosen": "c", "rejected": "r", "chosen_reason": "x"},
        {"id": "s2", "prompt": "p", "chosen": "c", "rejected": "r", "chosen_reason": "x"},
    ]
    path = write_jsonl(tmp_path / "mm.jsonl", rows)
    with pytest.raises(FormatError) as exc:
        import_file(store, path)
    (p,) = exc.value.problems
    assert (p.line, p.item_id) == (2, "s2") and "media" in p.message
    assert f"{path.name}:2" in str(p)


def test_rewardbench2_chosen_is_the_reference_best(store, tmp_path):
    report = import_file(store, copy(tmp_path, "rewardbench2.jsonl"))
    assert report.format == "rewardbench2" and report.added == 3
    assert report.per_category == {"math": 1, "focus": 1, "ties": 1}
    got = item(store, "101")
    assert [r.text for r in got.responses] == ["11", "12", "15", "21"]
    assert got.reference.chosen == 0 and [r.model for r in got.responses] == ["m1", "m2", "m3", "m4"]
    ties = item(store, "103")
    assert len(ties.responses) == 4 and ties.reference.ranking is None
    assert ties.extra["chosen"] == ["red", "blue", "yellow"]
    assert any(p.line == 3 and "3 chosen" in p.message for p in report.problems)


def test_rewardbench2_reference_ranks_chosen_over_rejected(store, tmp_path):
    import_file(store, copy(tmp_path, "rewardbench2.jsonl"))
    with Store.open(store.path, readonly=True) as project:  # read back from the project file
        one = item(project, "101").reference
        assert one.ranks == (1, 2, 2, 2) and one.ranking == (0,)  # the three rejected tie second
        ties = item(project, "103").reference  # the Ties subset: three chosen tie at the top
        assert ties.ranks == (1, 1, 1, 2) and ties.ranking is None and ties.chosen is None


def test_rewardbench2_counts_that_disagree_name_the_line(store, tmp_path):
    row = {"id": "1", "prompt": "p", "chosen": ["a"], "rejected": ["b", "c"], "num_correct": 1, "total_completions": 4}
    path = write_jsonl(tmp_path / "rb2.jsonl", [row])
    with pytest.raises(FormatError) as exc:
        import_file(store, path)
    assert exc.value.problems[0].line == 1 and "total_completions" in exc.value.problems[0].message


def test_mr2bench_rankings_best_first_with_ties_kept(store, tmp_path):
    report = import_file(store, copy(tmp_path, "mr2bench.jsonl"))
    assert report.format == "mr2bench" and report.added == 2
    assert report.problems == []  # ties are kept, so nothing to warn about
    with Store.open(store.path, readonly=True) as project:  # read back from the project file
        untied = item(project, "r1")
        assert untied.reference.ranking == (0, 2, 1) and untied.reference.ranks == (1, 3, 2)  # 1 = best
        tied = item(project, "r2")
        assert tied.reference.ranks == (1, 1, 2, 3)  # rankings [1, 1, 3, 4], dense: responses 0 and 1 tie first
        assert tied.reference.ranking == (0, 1, 2, 3) and tied.extra["rankings"] == [1, 1, 3, 4]
        assert tied.media_kind == "video"


def test_mr2bench_bad_rankings_name_the_line(store, tmp_path):
    rows = [{"id": "a", "prompt": "p", "responses": ["x", "y"], "rankings": [1, 2]}]
    rows.append({"id": "b", "prompt": "p", "responses": ["x", "y"], "rankings": [1]})
    path = write_jsonl(tmp_path / "mr2.jsonl", rows)
    with pytest.raises(FormatError) as exc:
        import_file(store, path)
    (p,) = exc.value.problems
    assert (p.line, p.item_id) == (2, "b") and "1 ranks for 2 responses" in p.message


def test_multimodal_rewardbench_one_line_array_is_detected(store, tmp_path):
    rows = [
        {"ID": f"vqa_{i}", "Text": "q", "Image": "i.jpg", "Output1": "x", "Output2": "y", "Better": "Output2"}
        for i in range(3)
    ]
    path = tmp_path / "all_data.json"
    path.write_text(json.dumps(rows))  # minified: the whole array on line 1
    report = import_file(store, path)
    assert (report.format, report.added) == ("multimodal_rewardbench", 3)
    assert item(store, "vqa_2").reference.chosen == 1


def test_multimodal_rewardbench_text_after_the_array_is_a_problem(store, tmp_path):
    path = tmp_path / "all_data.json"
    good = {"ID": "a", "Text": "q", "Image": "i.jpg", "Output1": "x", "Output2": "y", "Better": "Output1"}
    path.write_text("[\n" + json.dumps(good) + "\n]\n{}\n")
    with pytest.raises(FormatError) as exc:
        import_file(store, path)
    assert [(p.line, "after the end" in p.message) for p in exc.value.problems] == [(4, True)]
