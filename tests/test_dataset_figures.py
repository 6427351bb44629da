"""The seed papers' per-source accuracy and Table 1 figures, from a VL-RewardBench-shaped file
imported and judged (through import-verdicts) the way a user would."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from pairscope.app.importer import import_file
from pairscope.app.judge.derived import import_verdicts
from pairscope.app.stats.report import compute_stats


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), "red").save(buf, "PNG")
    return buf.getvalue()


# id, query_source, error tags, the judge's pick (the reference is response 0 everywhere)
ROWS = [
    ("RLAIF-V-1", "rlaif-v", "counting", 0),
    ("RLAIF-V-2", "rlaif-v", ["existence", "counting"], 1),
    ("RLAIF-V-3", "rlaif-v", "attribute", 0),
    ("povid_1", "povid", "existence", 0),
    ("wildvision_1", "wildvision", "recognition(text)", 1),
    ("mathverse_1", "mathverse", None, 0),
]


#: cal.py's dataset of each row: the folder of ``image_path`` (``item["image_path"].split("/")[1]``)
FOLDERS = {"rlaif-v": "rlaif-v", "povid": "povid", "wildvision": "wildvision-battle", "mathverse": "reasoning_tasks"}


@pytest.fixture
def project(store, tmp_path):
    for folder in FOLDERS.values():
        (tmp_path / "images" / folder).mkdir(parents=True)
        (tmp_path / "images" / folder / "a.png").write_bytes(png())
    lines = [
        json.dumps(
            {
                "id": i,
                "query": "<image>\nHow many sinks are there?",
                "response": ["3 sinks.", "2 sinks."],
                "human_ranking": [0, 1],
                "image_path": f"images/{FOLDERS[source]}/a.png",
                "query_source": source,
                "human_error_analysis": tags,
            }
        )
        for i, source, tags, _ in ROWS
    ]
    path = tmp_path / "vl.jsonl"
    path.write_text("\n".join(lines) + "\n")
    import_file(store, path, "vlrewardbench")
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text("\n".join(json.dumps({"item": i, "choice": pick}) for i, _, _, pick in ROWS) + "\n")
    import_verdicts(store, verdicts, "api-judge")
    return store


def test_accuracy_per_query_source(project):
    report = compute_stats(project, bootstrap=0)
    [run] = report["judges"].values()
    per = run.official.per_query_source  # the row's query_source, kept as its own slice
    assert {s: (g.scored, g.accuracy) for s, g in per.items()} == {
        "mathverse": (1, 1.0),
        "povid": (1, 1.0),
        "rlaif-v": (3, pytest.approx(2 / 3)),
        "wildvision": (1, 0.0),
    }
    assert per["rlaif-v"].ci[0] < 2 / 3 < per["rlaif-v"].ci[1]


def test_accuracy_per_source_is_keyed_as_cal_py_keys_datasets(project):
    """Issue 23: per-source accuracy was keyed by query_source; cal.py keys an item's dataset by
    ``item["image_path"].split("/")[1]`` (rlaif-v, rlhf-v, povid, vlfeedback, wildvision-battle,
    reasoning_tasks), so a wildvision row is "wildvision-battle" and mathverse is "reasoning_tasks"."""
    report = compute_stats(project, bootstrap=0)
    [run] = report["judges"].values()
    per = run.official.per_source
    assert {s: (g.scored, g.correct) for s, g in per.items()} == {
        "povid": (1, 1),
        "reasoning_tasks": (1, 1),
        "rlaif-v": (3, 2),
        "wildvision-battle": (1, 0),
    }


def test_error_type_distribution_counts_tag_occurrences(project):
    report = compute_stats(project, bootstrap=0)["dataset"]
    errors = report["error_types"]
    # 6 tags on 5 items: existence 2, counting 2, attribute 1, recognition 1
    assert (errors["tags"], errors["items_tagged"]) == (6, 5)
    assert {k: v["count"] for k, v in errors["kinds"].items()} == {
        "existence": 2,
        "recognition": 1,
        "attribute": 1,
        "counting": 2,
    }
    assert errors["kinds"]["counting"]["share"] == pytest.approx(2 / 6)
    # "How many sinks are there?" is 5 words; with the <image> token 6
    assert report["words"]["query_without_image_token"] == [5.0, 5.0, 5.0]
    assert report["words"]["query_with_image_token"] == [6.0, 6.0, 6.0]
