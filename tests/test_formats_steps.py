"""Step-wise (ViLBench-style) import: step strings, label meanings, Best-of-N, safety, errors."""

from __future__ import annotations

import re

import pytest
from PIL import Image

from helpers import item, write_jsonl
from pairscope.app.formats import FormatError
from pairscope.app.importer import import_file

PY_STEPS = "['STEP1: The triangle has sides 3 and 4.', \"STEP2: So the hypotenuse is 6.\", 'STEP3: Answer: 6']"


def flags(response):
    return [s.correct for s in response.steps]


@pytest.fixture
def png(tmp_path):
    Image.new("RGB", (8, 8), "red").save(tmp_path / "tri.png")
    return tmp_path / "tri.png"


def test_python_style_steps_with_task_gt(store, tmp_path, png):
    path = write_jsonl(
        tmp_path / "steps.jsonl",
        [
            {
                "id": "p1",
                "question": "Find the hypotenuse.",
                "image": "tri.png",
                "response": PY_STEPS,
                "task_gt": [0, 1, 1],
                "answer": "5",
            },
        ],
    )
    report = import_file(store, path, "steps")
    assert report.added == 1 and report.problems == []
    got = item(store, "p1")
    (response,) = got.responses
    assert [s.text for s in response.steps] == [
        "STEP1: The triangle has sides 3 and 4.",
        "STEP2: So the hypotenuse is 6.",
        "STEP3: Answer: 6",
    ]
    assert flags(response) == [True, False, False]  # task_gt: 1 marks an erroneous step
    assert response.text == "\n".join(s.text for s in response.steps)
    assert got.is_stepwise and got.reference.ranking is None and got.reference.ground_truth == "5"
    assert (got.prompt, got.category, got.source_format) == ("Find the hypotenuse.", "reasoning", "steps")
    assert got.media[0].kind == "image" and got.media[0].path == str(png.resolve())


def test_step_shapes_and_label_meanings(store, tmp_path):
    path = write_jsonl(
        tmp_path / "steps.jsonl",
        [
            {"id": "json", "question": "Q", "steps": ["a", "b"], "process_correctness": [1, -1]},
            {
                "id": "text",
                "question": "Q",
                "steps": "Look at it.\nSTEP1: first\ncontinued\nStep 2: second",
                "labels": "[0, 0]",
            },
            {"id": "plain", "question": "Q", "steps": "Just one paragraph of reasoning."},
            {"id": "zero", "question": "Q", "steps": ["x", "y"], "process_correctness": [0, 1]},
        ],
    )
    import_file(store, path, "steps")
    assert flags(item(store, "json").responses[0]) == [True, False]
    text = item(store, "text").responses[0]
    assert [s.text for s in text.steps] == ["Look at it.\nSTEP1: first\ncontinued", "Step 2: second"]
    assert flags(text) == [True, True]
    plain = item(store, "plain").responses[0]
    assert [s.text for s in plain.steps] == ["Just one paragraph of reasoning."] and flags(plain) == [None]
    # VisualProcessBench's card: 1 correct, 0 neutral, -1 incorrect; neutral is neither
    assert flags(item(store, "zero").responses[0]) == [None, True]


def test_key_spellings_and_map(store, tmp_path, png):
    path = write_jsonl(
        tmp_path / "steps.jsonl",
        [
            {
                "idx": 3,
                "query": "Q3",
                "image_paths": ["tri.png"],
                "solution": ["s1", "s2"],
                "step_labels": [1, 0],
                "subject": "geometry",
                "gt_answer": "7",
            },
        ],
    )
    import_file(store, path, "steps")
    got = item(store, "3")
    assert (got.prompt, got.category, got.reference.ground_truth) == ("Q3", "geometry", "7")
    assert flags(got.responses[0]) == [False, True] and len(got.media) == 1

    mapped = write_jsonl(
        tmp_path / "mapped.jsonl",
        [
            {"uid": "m1", "problem": "Q", "chain": ["only step"], "marks": [0]},
        ],
    )
    import_file(store, mapped, "steps", mapping={"question": "problem", "steps": "chain", "labels": "marks"})
    got = item(store, "m1")
    assert got.prompt == "Q" and flags(got.responses[0]) == [True] and got.extra == {}


def test_best_of_n_responses(store, tmp_path):
    path = write_jsonl(
        tmp_path / "bon.jsonl",
        [
            {
                "id": "bon",
                "question": "Q",
                "responses": [
                    {"steps": ["a1", "a2"], "task_gt": [0, 0], "model": "m1"},
                    {"steps": "['b1', 'b2', 'b3']", "process_correctness": [1, 1, 0], "score": 0.2},  # 0: neutral
                ],
            },
        ],
    )
    import_file(store, path, "steps")
    got = item(store, "bon")
    assert [r.index for r in got.responses] == [0, 1]
    assert [r.model for r in got.responses] == ["m1", None]
    assert flags(got.responses[0]) == [True, True] and flags(got.responses[1]) == [True, True, None]
    assert got.extra == {"responses_extra": [{}, {"score": 0.2}]}


def test_python_code_in_steps_is_never_run(store, tmp_path):
    marker = tmp_path / "HACKED"
    payload = f"['STEP1: fine', __import__('pathlib').Path({str(marker)!r}).touch()]"
    path = write_jsonl(
        tmp_path / "evil.jsonl",
        [
            {"id": "ok", "question": "Q", "steps": ["a"]},
            {"id": "evil", "question": "Q", "steps": payload},
            {"id": "evil2", "question": "Q", "steps": "[__import__('os').system('echo hacked')]"},
            {"id": "evil3", "question": "Q", "steps": ["a"], "task_gt": "[exec('1')]"},
            {"id": "tuple", "question": "Q", "steps": "[('a', 'b')][0]"},
        ],
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "steps")
    problems = exc.value.problems
    assert [p.line for p in problems] == [2, 3, 4, 5]
    assert all("not a plain list literal" in p.message for p in problems)
    assert problems[0].item_id == "evil"
    assert not marker.exists() and store.item_count() == 0


def test_label_errors(store, tmp_path):
    path = write_jsonl(
        tmp_path / "steps.jsonl",
        [
            {"id": "n", "question": "Q", "steps": PY_STEPS, "task_gt": [0, 1]},
            {"id": "v", "question": "Q", "steps": ["a"], "task_gt": [2]},
            {"id": "b", "question": "Q", "steps": ["a"], "labels": [True]},
            {"id": "s", "question": "Q", "steps": ["a"], "task_gt": "wrong"},
            {"id": "r", "question": "Q", "responses": [{"steps": ["a", "b"], "task_gt": [0]}]},
        ],
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "steps")
    by_line = {p.line: p.message for p in exc.value.problems}
    assert by_line[1] == "task_gt: has 2 labels for 3 steps"
    assert "[0, 1]" in by_line[2] and "got 2" in by_line[2]
    assert "got True" in by_line[3]
    assert "got a string" in by_line[4]
    assert by_line[5] == "responses[0].task_gt: has 1 labels for 2 steps"
    assert store.item_count() == 0


def test_type_and_shape_errors(store, tmp_path):
    path = write_jsonl(
        tmp_path / "steps.jsonl",
        [
            {"id": 1, "question": "Q", "steps": 5},
            {"id": 2, "question": "Q"},
            {"id": 3, "steps": ["a"]},
            {"id": 4, "question": "Q", "steps": "['a', 2]"},
            {"id": 5, "question": "Q", "steps": []},
            {"id": 6, "question": "Q", "responses": ["a", "b"]},
            {"id": 7, "question": "Q", "responses": [{"text": "no steps"}]},
            {"id": 8, "question": "Q", "steps": ["a"], "images": {"path": 1}},
            {"id": 9, "question": "Q", "steps": ["a"], "responses": [{"steps": ["b"]}]},
            {"id": 10, "question": "Q", "steps": "  "},
            {"id": 11, "question": "Q", "steps": "[" * 5000 + "]" * 5000},
        ],
    )
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "steps")
    by_line = {p.line: p.message for p in exc.value.problems}
    assert sorted(by_line) == list(range(1, 12))
    assert "steps: expected a list of step strings, got int" in by_line[1]
    assert "steps:" in by_line[2] and "--map steps=KEY" in by_line[2]
    assert "question:" in by_line[3]
    assert by_line[4] == "steps[1]: expected a step string, got int"
    assert "at least one step" in by_line[5]
    assert "responses[0]" in by_line[6] and "responses[0].steps" in by_line[7]
    assert "images" in by_line[8]
    assert "both present" in by_line[9]
    assert "not a plain list literal" in by_line[11]  # deep nesting: a clear error, no crash
    assert store.item_count() == 0


def test_ids_media_extra_and_reimport(store, tmp_path, png):
    rows = [
        {"question": "Q", "images": ["tri.png", "gone.png"], "steps": ["a"], "task_gt": [0], "source_split": "test"},
        {"question": "Q2", "steps": ["b"], "process_correctness": [1], "task_gt": None},
    ]
    path = write_jsonl(tmp_path / "steps.jsonl", rows)
    report = import_file(store, path)  # detected
    assert report.format == "steps" and report.added == 2 and report.missing_media == 1
    ids = [s.ext_id for s in store.item_summaries()]
    assert all(re.fullmatch(r"steps-[0-9a-f]{12}", i) for i in ids)
    assert report.problems == [] and report.missing_examples == [(ids[0], "gone.png")]
    first, second = (store.get_item(store.item_id(i)) for i in ids)
    assert first.extra == {"source_split": "test"}
    assert flags(second.responses[0]) == [True] and second.extra == {"task_gt": None}
    again = import_file(store, path, "steps")
    assert (again.added, again.unchanged) == (0, 2)

    dup = write_jsonl(tmp_path / "dup.jsonl", [{"id": "x", "question": "Q", "steps": ["a"]}] * 2)
    assert import_file(store, dup, "steps").identical_duplicates == 1  # imported once
    clash = write_jsonl(
        tmp_path / "clash.jsonl",
        [{"id": "y", "question": "Q", "steps": ["a"], "category": c} for c in ("math", "science")],
    )
    with pytest.raises(FormatError, match="repeats line 1's id, prompt and responses"):
        import_file(store, clash, "steps")
    assert store.item_count() == 3
