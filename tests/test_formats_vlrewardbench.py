"""VL-RewardBench import: JSONL and Parquet, categories, error tags, bad input."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from helpers import write_jsonl
from pairscope.app.formats import FormatError
from pairscope.app.importer import import_file
from pairscope.app.store import Store
from pairscope.app.taxonomy import parse_error_tag, vlrewardbench_category


def png_bytes(colour="red", size=(8, 6)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, "PNG")
    return buf.getvalue()


def row(id_, ranking=(0, 1), **kw):
    base = {
        "id": id_,
        "query": "<image>\nHow many sinks?",
        "response": ["There are 3 sinks.", "There are 2 sinks."],
        "human_ranking": list(ranking),
        "image_path": "imgs/a.png",
        "models": ["m1", "m2"],
        "judge": "gpt-4o",
        "rationale": "counted",
        "query_source": "wildvision",
        "human_error_analysis": "counting",
        "ground_truth": "3",
    }
    base.update(kw)
    return base


@pytest.fixture
def media_root(tmp_path):
    root = tmp_path / "media"
    (root / "imgs").mkdir(parents=True)
    (root / "imgs" / "a.png").write_bytes(png_bytes())
    return root


@pytest.mark.parametrize(
    "item_id, category, subset",
    [
        ("RLAIF-V-1", "hallucination", "rlaif-v"),
        ("RLHF-V-Dataset_3", "hallucination", "rlhf-v"),
        ("hallucination_pair-77", "hallucination", "hallucination_pair"),
        ("mathverse_12", "reasoning", "mathverse"),
        ("mmmu_pro_4", "reasoning", "mmmu-pro"),
        ("wildvision-battle-9", "general", "wildvision"),
        ("vlfeedback_5", "general", "vlfeedback"),
    ],
)
def test_category_from_id_prefix(item_id, category, subset):
    assert vlrewardbench_category(item_id) == (category, subset)


@pytest.mark.parametrize(
    "raw, kind, subkind, note",
    [
        ("hallucination", "existence", None, None),
        ("attribute", "attribute", None, None),
        ("counting", "counting", None, None),
        ("recognition(object)", "recognition", "object", None),
        ("recognition(text)", "recognition", "text", None),
        ("others, wrong spatial relation", "other", None, "wrong spatial relation"),
        ("completely new thing", "other", None, "completely new thing"),
    ],
)
def test_error_tag_taxonomy(raw, kind, subkind, note):
    tag = parse_error_tag(raw)
    assert (tag.kind, tag.subkind, tag.note, tag.raw) == (kind, subkind, note, raw)


def test_jsonl_import(store, tmp_path, media_root):
    src = write_jsonl(
        tmp_path / "vl.jsonl",
        [
            row("wildvision_1", ranking=(1, 0)),
            row("RLAIF-V-2", human_error_analysis=["recognition(text)", "others, blurry"], query_source=None),
            row("mathverse_3", response=["a", "b", "c", "d"], human_ranking=[2, 0, 3, 1], models=None),
        ],
    )
    report = import_file(store, src, "vlrewardbench", media_root)
    assert report.added == 3 and report.per_category == {"general": 1, "hallucination": 1, "reasoning": 1}
    item = store.get_item(store.item_id("wildvision_1"))
    assert item.prompt == "How many sinks?" and item.prompt_raw.startswith("<image>\n")
    assert item.reference.chosen == 1 and item.reference.ranking == (1, 0)
    assert [r.model for r in item.responses] == ["m1", "m2"]
    assert item.media[0].path == str((media_root / "imgs" / "a.png").resolve())
    assert item.extra == {"judge": "gpt-4o", "rationale": "counted", "query_source": "wildvision"}
    assert item.reference.ground_truth == "3"
    tags = store.get_item(store.item_id("RLAIF-V-2")).reference.error_tags
    assert [(t.kind, t.subkind, t.note) for t in tags] == [("recognition", "text", None), ("other", None, "blurry")]
    bon = store.get_item(store.item_id("mathverse_3"))
    assert len(bon.responses) == 4 and bon.reference.ranking == (1, 3, 0, 2)


def test_reimport_is_idempotent(store, tmp_path, media_root):
    src = write_jsonl(tmp_path / "vl.jsonl", [row(f"wildvision_{i}") for i in range(5)])
    assert import_file(store, src, None, media_root).added == 5  # format detected
    again = import_file(store, src, None, media_root)
    assert (again.added, again.unchanged) == (0, 5)
    assert store.item_count() == 5
    assert store.query("SELECT count(*) FROM imports")[0][0] == 2


def test_missing_image_is_reported_not_fatal(store, tmp_path, media_root):
    src = write_jsonl(tmp_path / "vl.jsonl", [row("wildvision_1"), row("wildvision_2", image_path="imgs/gone.png")])
    report = import_file(store, src, "vlrewardbench", media_root)
    assert report.added == 2 and report.missing_media == 1
    assert report.problems == [] and report.missing_examples == [("wildvision_2", "imgs/gone.png")]
    assert store.info().missing_media == 1


@pytest.mark.parametrize(
    "bad_line, expected",
    [
        ('{"id": "x", "query": "q"', "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        (json.dumps(row("w_9", response="just one string")), "response: expected a list of strings"),
        (json.dumps(row("w_9", response=["only one"])), "at least 2"),
        (json.dumps(row("w_9", human_ranking=[0])), "has 1 ranks for 2 responses"),
        (json.dumps(row("w_9", human_ranking="first")), "human_ranking"),
        (json.dumps(row("w_9", query=None)), "query: expected a string, got null"),
        (json.dumps(row(None)), "id: expected a string or integer"),
    ],
)
def test_malformed_line_imports_nothing(store, tmp_path, media_root, bad_line, expected):
    src = write_jsonl(tmp_path / "vl.jsonl", [row("wildvision_1"), bad_line, row("wildvision_3")])
    with pytest.raises(FormatError) as err:
        import_file(store, src, "vlrewardbench", media_root)
    [problem] = err.value.problems
    assert problem.line == 2 and expected in problem.message
    assert "vl.jsonl:2" in str(err.value)
    assert store.item_count() == 0


def test_a_row_repeating_an_item_with_another_ranking_is_fatal(store, tmp_path, media_root):
    src = write_jsonl(tmp_path / "vl.jsonl", [row("w_1"), row("w_2"), row("w_1", human_ranking=[1, 0])])
    with pytest.raises(FormatError, match=r"vl.jsonl:3 \[item w_1\]: repeats line 1's id, prompt and responses"):
        import_file(store, src, "vlrewardbench", media_root)
    assert store.item_count() == 0


def test_tie_in_ranking_is_kept_as_no_reference(store, tmp_path, media_root):
    src = write_jsonl(tmp_path / "vl.jsonl", [row("w_1", human_ranking=[0, 0])])
    report = import_file(store, src, "vlrewardbench", media_root)
    item = store.get_item(store.item_id("w_1"))
    assert item.reference.ranking is None and item.extra["human_ranking"] == [0, 0]
    assert "tie" in report.problems[0].message


def test_tied_human_ranking_is_stored_as_ranks(store, tmp_path, media_root):
    four = ["a", "b", "c", "d"]
    rows = [row("w_1", human_ranking=[0, 0]), row("mathverse_2", response=four, human_ranking=[1, 0, 2, 0])]
    rows.append(row("w_3", human_ranking=[1, 0]))
    import_file(store, write_jsonl(tmp_path / "vl.jsonl", rows), "vlrewardbench", media_root)
    with Store.open(store.path, readonly=True) as project:  # read back from the project file
        pair = project.get_item(project.item_id("w_1")).reference
        assert pair.ranks == (1, 1) and pair.ranking is None and pair.chosen is None  # no preference, as before
        bon = project.get_item(project.item_id("mathverse_2")).reference
        assert bon.ranks == (2, 1, 3, 1) and bon.ranking is None  # responses 1 and 3 tie best, then 0, then 2
        untied = project.get_item(project.item_id("w_3")).reference
        assert untied.ranks == () and untied.ranking == (1, 0)  # its ranking says all


def _write_parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def test_parquet_extracts_images_content_addressed(store, tmp_path):
    image = png_bytes("blue")
    rows = []
    for i in range(3):
        r = row(f"RLHF-V-{i}")
        del r["image_path"]
        r["image"] = {"bytes": image if i < 2 else png_bytes("green"), "path": f"orig_{i}.png"}
        rows.append(r)
    src = tmp_path / "vl.parquet"
    _write_parquet(src, rows)
    report = import_file(store, src)
    assert report.added == 3 and report.missing_media == 0
    files = sorted(p for p in store.media_dir.rglob("*") if p.is_file())
    assert len(files) == 2  # identical bytes stored once
    item = store.get_item(store.item_id("RLHF-V-0"))
    assert item.media[0].ref == "orig_0.png"
    with Image.open(item.media[0].path) as img:
        assert img.getpixel((0, 0)) == (0, 0, 255)
    assert import_file(store, src).unchanged == 3


def test_truncated_parquet_imports_nothing(store, tmp_path):
    rows = [dict(row(f"RLHF-V-{i}"), image={"bytes": png_bytes(), "path": None}) for i in range(20)]
    src = tmp_path / "vl.parquet"
    _write_parquet(src, rows)
    data = src.read_bytes()
    src.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match="not a readable Parquet file"):
        import_file(store, src)
    assert store.item_count() == 0
    assert not store.media_dir.exists() or not any(p.is_file() for p in store.media_dir.rglob("*"))


def test_bad_row_in_parquet_removes_extracted_images(store, tmp_path):
    good = dict(row("RLHF-V-1"), image={"bytes": png_bytes("red"), "path": "a.png"})
    bad = dict(row("RLHF-V-2"), image={"bytes": png_bytes("blue"), "path": "b.png"}, human_ranking=[0, 1, 2])
    src = tmp_path / "vl.parquet"
    _write_parquet(src, [good, bad])
    with pytest.raises(FormatError, match="vl.parquet:2"):
        import_file(store, src)
    assert store.item_count() == 0
    assert not any(p.is_file() for p in store.media_dir.rglob("*"))


def test_missing_file_and_unknown_map_field(store, tmp_path, media_root):
    with pytest.raises(FormatError, match="no such file"):
        import_file(store, tmp_path / "absent.jsonl", "vlrewardbench")
    src = write_jsonl(tmp_path / "vl.jsonl", [row("w_1")])
    with pytest.raises(FormatError, match="unknown field"):
        import_file(store, src, "vlrewardbench", media_root, {"nonsense": "x"})
    without_query = {k: v for k, v in row("w_2").items() if k != "query"}
    renamed = write_jsonl(tmp_path / "vl2.jsonl", [{**without_query, "question": "Q?"}])
    import_file(store, renamed, "vlrewardbench", media_root, {"query": "question"})
    assert store.get_item(store.item_id("w_2")).prompt == "Q?"
