"""The committed demo dataset (resources/demo): well-formed, complete, reproducible and right."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from pairscope.app.media import open_image, sample_frames, video_info
from pairscope.app.records import VIDEOREWARDBENCH_DIMENSIONS
from pairscope.app.taxonomy import parse_error_tags, vlrewardbench_category

DEMO = Path(__file__).resolve().parents[1] / "resources" / "demo"
# The generator is a dev tool outside the installed package (packaging/demo_build.py).
_spec = importlib.util.spec_from_file_location("demo_build", DEMO.parents[1] / "packaging" / "demo_build.py")
demo_build = importlib.util.module_from_spec(_spec)
sys.modules["demo_build"] = demo_build  # dataclasses look their module up
_spec.loader.exec_module(demo_build)
JSONL = ("images.jsonl", "videos.jsonl", "steps.jsonl")


def _rows(name: str) -> list[dict]:
    lines = (DEMO / name).read_text(encoding="utf-8").splitlines()
    assert lines and all(line.strip() for line in lines), f"{name}: empty or blank lines"
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def images():
    return _rows("images.jsonl")


def test_every_line_parses_and_ids_are_unique(images):
    ids = [r["id"] for name in JSONL for r in _rows(name)]
    assert len(ids) == len(set(ids))
    for r in images:
        assert r["query"].startswith("<image>\n")
        assert sorted(r["human_ranking"]) == list(range(len(r["response"])))
        assert len(r["models"]) == len(r["response"]) and isinstance(r["ground_truth"], str)
        assert all(isinstance(t, str) and t for t in r["response"])


def test_coverage(images):
    assert len(images) >= 40
    categories = {vlrewardbench_category(r["id"])[0] for r in images}
    assert categories == {"general", "hallucination", "reasoning"}
    tags = {(t.kind, t.subkind) for r in images for t in parse_error_tags(r["human_error_analysis"])}
    for wanted in [
        ("existence", None),
        ("recognition", "object"),
        ("recognition", "text"),
        ("attribute", None),
        ("counting", None),
        ("reasoning", None),
    ]:
        assert wanted in tags
    assert any(kind == "other" for kind, _ in tags)
    assert [len(r["response"]) for r in images].count(4) == 1
    assert all(len(r["response"]) in (2, 4) for r in images)
    pairs = [r for r in images if len(r["response"]) == 2]
    first = sum(r["human_ranking"] == [0, 1] for r in pairs)
    assert abs(first - len(pairs) / 2) <= 1  # the correct answer is not always in one place


def test_videos_and_steps_files():
    videos, steps = _rows("videos.jsonl"), _rows("steps.jsonl")
    assert len(videos) == 3 and len(steps) == 3
    for v in videos:
        assert v["dimension"] in VIDEOREWARDBENCH_DIMENSIONS
        assert v["chosen"] != v["rejected"] and 1 <= v["preference_strength"] <= 3
    kinds = set()
    for s in steps:
        kinds.add(type(s["steps"]))
        parsed = ast.literal_eval(s["steps"]) if isinstance(s["steps"], str) else s["steps"]
        assert len(parsed) == len(s["task_gt"]) and set(s["task_gt"]) <= {0, 1}
        assert all(step.startswith(f"STEP{i + 1}:") for i, step in enumerate(parsed))
        assert s["category"] == "reasoning" and s["answer"]
    assert kinds == {list, str}


def test_all_media_exist_and_open():
    images = _rows("images.jsonl")
    paths = [r["image_path"] for r in images] + [p for s in _rows("steps.jsonl") for p in s["images"]]
    for rel in paths:
        img = open_image(DEMO / rel)
        assert img.size == demo_build.SIZE
    for v in _rows("videos.jsonl"):
        path = DEMO / v["video"]
        assert path.stat().st_size < 200_000
        info = video_info(path)
        assert info.frame_count >= 24 and info.fps == pytest.approx(12) and (info.width, info.height) == (160, 120)
        assert len(sample_frames(path, 4)) == 4
    size = sum(f.stat().st_size for f in DEMO.rglob("*") if f.is_file())
    assert size < 3_000_000


def test_regenerating_gives_identical_jsonl(tmp_path):
    counts = demo_build.build(tmp_path)
    assert counts == {name: len(_rows(name)) for name in JSONL}
    for name in JSONL + ("README.md",):
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), name
    copied = sorted(p.name for p in (tmp_path / "images").iterdir())
    assert copied == sorted(p.name for p in (DEMO / "images").iterdir())


# -- the answers are right: measured from the pixels, not from the generator's bookkeeping ------


def _shapes(img, colour: str) -> list[str]:
    """Classify each blob of exactly ``colour`` by how much of its bounding box it fills."""
    mask = np.all(np.asarray(img) == demo_build.COLOURS[colour], axis=-1).astype(np.uint8)
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    kinds = []
    for _x, _y, w, h, area in stats[1:n]:
        if area < 40:
            continue
        fill = area / (w * h)
        kinds.append("square" if fill > 0.9 else "circle" if fill > 0.65 else "triangle")
    return kinds


def _bold_number(text: str) -> int:
    return int(re.findall(r"\*\*(\d+)\*\*", text)[-1])


def test_counting_ground_truth_matches_the_pixels(images):
    checked = 0
    for r in images:
        m = re.fullmatch(r"<image>\nHow many (\w+) (circle|square|triangle)s are there in the image\?", r["query"])
        if not m:
            continue
        colour, kind = m.groups()
        drawn = _shapes(open_image(DEMO / r["image_path"]), colour).count(kind)
        assert drawn == int(r["ground_truth"]), (r["id"], drawn, r["ground_truth"])
        best = r["human_ranking"].index(0)
        for i, text in enumerate(r["response"]):
            assert (_bold_number(text) == drawn) == (i == best), (r["id"], i, text)
        checked += 1
    assert checked >= 7


def test_point_totals_match_the_pixels(images):
    checked = 0
    for r in images:
        if "total score" not in r["query"]:
            continue
        img = open_image(DEMO / r["image_path"])
        total = 2 * _shapes(img, "red").count("circle") + 3 * _shapes(img, "blue").count("square")
        assert total == int(r["ground_truth"]) == _bold_number(r["response"][r["human_ranking"].index(0)])
        checked += 1
    assert checked == 2


def test_ball_video_moves_left_to_right():
    v = next(v for v in _rows("videos.jsonl") if "ball" in v["prompt"])
    xs = []
    for f in sample_frames(DEMO / v["video"], 6):
        rgb = np.asarray(f.image).astype(int)
        red = (rgb[..., 0] > 150) & (rgb[..., 1] < 100) & (rgb[..., 2] < 100)
        xs.append(np.nonzero(red)[1].mean())
    assert xs == sorted(xs) and xs[-1] - xs[0] > 100
    assert "left" in v["chosen"].split("right")[0]  # the chosen answer says left ... right


def test_step_item_panels_match_the_answer():
    item = next(s for s in _rows("steps.jsonl") if len(s["images"]) == 2)
    circles = sum(_shapes(open_image(DEMO / p), "red").count("circle") for p in item["images"])
    assert circles == int(item["answer"])
