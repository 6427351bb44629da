"""Imports of files shaped like the PUBLISHED releases of real benchmarks: the field names,
value shapes and folder layouts of each release, with a few rows written by the test.
Nothing is downloaded; every image is a real (tiny) file written with Pillow."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from helpers import item, write_jsonl
from pairscope.app.cli.main import main
from pairscope.app.curation.export import export_project
from pairscope.app.formats import FormatError
from pairscope.app.importer import import_file
from pairscope.app.store import Store
from test_formats_vlrewardbench import _write_parquet, png_bytes


def write_image(path, colour="red"):
    """A real 4x4 image: JPEG for a .jpg name, PNG otherwise (also for suffix-less HF blobs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 4), colour).save(path, "JPEG" if path.suffix == ".jpg" else "PNG")
    return path


def project_items(store):
    return store.query(
        "SELECT ext_id, source_id, category, subset, prompt_raw, ref_ranking, ground_truth, extra"
        " FROM items ORDER BY ext_id"
    )


# -- VL-RewardBench, JSONL release ---------------------------------------------------------------
# Schema read from github.com/vl-rewardbench/VL_RewardBench data/data.jsonl (and cal.py, which
# groups by image_path.split("/")[1]): general/hallucination rows are keyed
# id, image_path, query, response, human_ranking, models, judge, rationale, query_source, meta,
# human_error_analysis; reasoning rows put rationale/models/judge/ground_truth before response
# and have "meta": {} and "human_error_analysis": null.


def vlrb_row(id_, subset, source, tags=("hallucination",), image=True):
    return {
        "id": id_,
        "image_path": f"images/{subset}/{id_}.jpg",
        "query": "<image>\nDescribe the image in detail." if image else "what is the team the man plays for?",
        "response": [f"{id_}: a kitchen with a sink.", f"{id_}: a kitchen with two dogs."],
        "human_ranking": [0, 1],
        "models": ["OmniLMM-12B", "OmniLMM-12B"],
        "judge": "placeholder_judge",
        "rationale": "placeholder_rationale",
        "query_source": source,
        "meta": {"original_dataset": source},
        "human_error_analysis": list(tags),
    }


def vlrb_reasoning(id_, responses, truth):
    return {
        "id": id_,
        "image_path": f"images/reasoning_tasks/{id_}.png",
        "query": "Find the length of AF in terms of AB, BD and DF.",
        "rationale": "### Evaluation of Answers",
        "models": ["gpt-4o-2024-05-13", "qwen-vl-max"],
        "judge": "gpt-4o-2024-05-13",
        "ground_truth": truth,
        "response": list(responses),
        "meta": {},
        "human_ranking": [0, 1],
        "human_error_analysis": None,
    }


# 10 items: 2 general, 5 hallucination (povid's id has no known prefix: only its folder says so),
# 3 reasoning; mathverse_2279 is repeated with the same query and other responses, as in the release.
MATH_A = ("AF = sqrt(AB^2 + BD^2 + DF^2)", "AF = DF * sqrt(AB^2/BD^2 + 1)")
MATH_B = ("AF is 13.", "AF is 12.")
VLRB_ROWS = [
    vlrb_row("LRVInstruction-000000007746", "vlfeedback", "LRVInstruction", ["recognition(object)"]),
    vlrb_row("wildvision-battle-12", "wildvision-battle", "wildvision", []),
    vlrb_row("povid_17", "povid", "COCO"),
    vlrb_row("RLHF-V-Dataset_3", "rlhf-v", "RLHF-V"),
    vlrb_row("RLAIF-V-14", "rlaif-v", "COCO"),
    vlrb_row("RLAIF-V-276", "rlaif-v", "TextVQA", ["recognition(text)"], image=False),
    vlrb_row("RLAIF-V-743", "rlaif-v", "TextVQA", ["others, common sense"]),
    vlrb_reasoning("mathverse_2279", MATH_A, "\\sqrt{AB^2+BD^2+DF^2}"),
    vlrb_reasoning("mmmu_pro_test_Manage_140", ("B. True", "A. False"), "B"),
    vlrb_reasoning("mathverse_2279", MATH_B, "\\sqrt{AB^2+BD^2+DF^2}"),
]
CATEGORIES = {"general": 2, "hallucination": 5, "reasoning": 3}


def write_vlrb(folder, images=True):
    """``folder/data.jsonl`` (the row RLAIF-V-14 repeated byte for byte) and, optionally,
    the images under ``folder/images/<subset>/``."""
    lines = [json.dumps(r) for r in VLRB_ROWS]
    lines.insert(5, lines[4])
    folder.mkdir(parents=True, exist_ok=True)
    if images:
        for i, path in enumerate(dict.fromkeys(r["image_path"] for r in VLRB_ROWS)):
            write_image(folder / path, (20 * i, 100, 200))
    return write_jsonl(folder / "data.jsonl", lines)


def test_vlrewardbench_release_through_the_cli(tmp_path, capsys):
    src, db = write_vlrb(tmp_path / "VL_RewardBench"), tmp_path / "p.pairscope"
    assert main(["import", str(src), "--db", str(db)]) == 0  # no --format: detected
    out, err = capsys.readouterr()
    assert "(vlrewardbench): 10 added, 0 unchanged" in out
    assert "1 identical duplicates skipped" in out and "mathverse_2279#2 (mathverse_2279)" in out
    assert "missing media" not in out and "warning" not in err
    with Store.open(db, readonly=True) as store:
        assert store.categories() == CATEGORIES
        assert item(store, "povid_17").category == "hallucination"  # from images/povid/, as cal.py does
        second = item(store, "mathverse_2279#2")
        assert (second.source_id, second.dataset_id) == ("mathverse_2279", "mathverse_2279")
        assert [r.text for r in second.responses] == list(MATH_B)
        first = item(store, "mathverse_2279")
        assert first.source_id is None and [r.text for r in first.responses] == list(MATH_A)
        assert all(m.path for i in range(1, 11) for m in store.get_item(i).media)
    assert main(["import", str(src), "--db", str(db)]) == 0
    assert "0 added, 10 unchanged" in capsys.readouterr().out


def test_vlrewardbench_report_reimport_and_export_round_trip(store, tmp_path):
    folder = tmp_path / "VL_RewardBench"
    src = write_vlrb(folder)
    report = import_file(store, src)
    assert (report.format, report.added, report.identical_duplicates) == ("vlrewardbench", 10, 1)
    assert report.renamed == [("mathverse_2279#2", "mathverse_2279")] and report.per_category == CATEGORIES
    again = import_file(store, src)
    assert (again.added, again.unchanged, again.renamed) == (0, 10, [])

    out = tmp_path / "export"
    export_project(store, out, "vlrewardbench", source="reference")
    rows = [json.loads(line) for line in (out / "vlrewardbench.jsonl").read_text(encoding="utf-8").splitlines()]
    ids = [r["id"] for r in rows]
    assert ids.count("mathverse_2279") == 2 and not any("#" in i for i in ids)
    assert {tuple(r["response"]) for r in rows if r["id"] == "mathverse_2279"} == {MATH_A, MATH_B}
    assert sorted(r["image_path"] for r in rows) == sorted(r["image_path"] for r in VLRB_ROWS)
    for r in rows:  # the dataset's relative path, with the file copied there
        assert r["image_path"].startswith("images/")
        assert (out / r["image_path"]).read_bytes() == (folder / r["image_path"]).read_bytes()

    with Store.create(tmp_path / "second.pairscope") as store2:
        back = import_file(store2, out / "vlrewardbench.jsonl", media_root=out)
        assert back.renamed == [("mathverse_2279#2", "mathverse_2279")] and back.missing_media == 0
        assert project_items(store2) == project_items(store)
        assert store2.categories() == CATEGORIES


def test_missing_images_are_summarised_once(tmp_path, capsys):
    src, db = write_vlrb(tmp_path / "VL_RewardBench", images=False), tmp_path / "p.pairscope"
    assert main(["import", str(src), "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert "10 of 10 items added have no media file; first 5: LRVInstruction-000000007746:" in err
    assert f"pairscope info --db {db} --missing" in err
    assert "'images/'" in err and "--media-root" in err
    assert err.count("warning:") == 1
    assert sum("not found" in line for line in err.splitlines()) == 0
    assert main(["info", "--db", str(db), "--missing"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  item ")]
    assert len(listed) == 10
    assert {line.split(":")[0][len("  item ") :] for line in listed} == {r["id"] for r in VLRB_ROWS} | {
        "mathverse_2279#2"
    }


# -- media must stay inside the dataset folder -----------------------------------------------------


@pytest.fixture
def escaping_release(tmp_path):
    """A VL-RewardBench-shaped file whose rows point inside, outside and at a non-image."""
    data = tmp_path / "release"
    write_image(data / "images" / "ok.png", "green")
    (data / "images" / "notes.txt").write_text("api_key = hunter2\n")
    secret = write_image(tmp_path / "outside" / "secret.png", "purple")
    absolute = write_image(tmp_path / "elsewhere" / "abs.png", "orange")
    blob = write_image(tmp_path / "hf_cache" / "blobs" / "9f2c1e", "teal")  # HF cache: a link into blobs/
    os.symlink(blob, data / "images" / "linked.png")
    refs = ["images/ok.png", str(absolute), "../outside/secret.png", "images/notes.txt", "images/linked.png"]
    rows = [
        {"id": f"RLAIF-V-{i}", "image_path": ref, "query": "Q?", "response": ["a", "b"], "human_ranking": [0, 1]}
        for i, ref in enumerate(refs, start=1)
    ]
    return write_jsonl(data / "data.jsonl", rows), secret, absolute, blob


def test_media_outside_the_dataset_are_refused_per_item(store, tmp_path, escaping_release):
    src, secret, absolute, blob = escaping_release
    report = import_file(store, src)
    assert report.added == 5 and not any(p.fatal for p in report.problems)
    problems = {p.item_id: (p.line, p.message) for p in report.problems}
    assert set(problems) == {"RLAIF-V-2", "RLAIF-V-3", "RLAIF-V-4"}
    assert problems["RLAIF-V-2"][0] == 2 and "leaves the media root" in problems["RLAIF-V-2"][1]
    assert problems["RLAIF-V-3"][0] == 3 and "leaves the media root" in problems["RLAIF-V-3"][1]
    assert problems["RLAIF-V-4"][0] == 4 and "is not an image or a video file" in problems["RLAIF-V-4"][1]
    paths = {i: item(store, f"RLAIF-V-{i}").media[0].path for i in range(1, 6)}
    assert paths[2] is None and paths[3] is None and paths[4] is None
    assert paths[1] and Path(paths[5]).read_bytes() == blob.read_bytes()  # symlink inside: accepted

    out = tmp_path / "export"
    export_project(store, out, "vlrewardbench", source="reference")
    exported = [p.read_bytes() for p in out.rglob("*") if p.is_file()]
    assert secret.read_bytes() not in exported and absolute.read_bytes() not in exported
    assert not any(b"hunter2" in data for data in exported if not data.startswith(b"{"))
    assert blob.read_bytes() in exported


def test_allow_outside_media_accepts_paths_but_not_text_files(tmp_path, escaping_release, capsys):
    src = escaping_release[0]
    with Store.create(tmp_path / "api.pairscope") as store:
        report = import_file(store, src, allow_outside_media=True)
        assert [p.item_id for p in report.problems] == ["RLAIF-V-4"]
        assert "is not an image or a video file" in report.problems[0].message
        assert item(store, "RLAIF-V-2").media[0].path and item(store, "RLAIF-V-3").media[0].path
        assert item(store, "RLAIF-V-4").media[0].path is None
    db = tmp_path / "cli.pairscope"
    assert main(["import", str(src), "--db", str(db), "--allow-outside-media"]) == 0
    err = capsys.readouterr().err
    assert "leaves the media root" not in err and "notes.txt" in err
    with Store.open(db, readonly=True) as store:
        assert [m[0] for m in store.missing_media()] == ["RLAIF-V-4"]


# -- VL-RewardBench, Parquet release --------------------------------------------------------------
# Columns read from the HF dataset card MMInstruction/VL-RewardBench: id, query, response (list),
# image ({"bytes", "path"}), human_ranking, models, judge, rationale, query_source, ground_truth;
# files data/test-0000N-of-00002.parquet.


def hf_vlrb(id_, colour, truth=None):
    return {
        "id": id_,
        "query": "How many flags can be seen?",
        "response": ["Many flags.", "27 flags."],
        "image": {"bytes": png_bytes(colour, (4, 4)), "path": f"{id_}.jpg"},
        "human_ranking": [0, 1],
        "models": ["OmniLMM-12B", "OmniLMM-12B"],
        "judge": "placeholder_judge",
        "rationale": None,
        "query_source": "VQAv2",
        "ground_truth": truth,
    }


def test_vlrewardbench_parquet_folder_in_hf_layout(tmp_path):
    folder = tmp_path / "VL-RewardBench"
    (folder / "data").mkdir(parents=True)
    _write_parquet(
        folder / "data" / "test-00000-of-00002.parquet",
        [hf_vlrb("RLAIF-V-2190", "red"), hf_vlrb("mathverse_3414", "blue", "B")],
    )
    _write_parquet(
        folder / "data" / "test-00001-of-00002.parquet",
        [hf_vlrb("wildvision_7", "green"), hf_vlrb("RLHF-V-Dataset_9", "white")],
    )
    project = tmp_path / "proj" / "p.pairscope"
    with Store.create(project) as store:
        report = import_file(store, folder)
        assert (report.format, report.added, report.missing_media) == ("vlrewardbench", 4, 0)
        assert store.categories() == {"general": 1, "hallucination": 2, "reasoning": 1}
        stored = [p for (p,) in store.query("SELECT path FROM media")]
        assert len(stored) == 4 and all(p and not os.path.isabs(p) for p in stored)
        got = item(store, "mathverse_3414")
        assert got.media[0].ref == "mathverse_3414.jpg" and got.reference.ground_truth == "B"
        assert os.path.isfile(got.media[0].path)
        assert got.media[0].path.startswith(str(store.media_dir.absolute()) + os.sep)
    moved = tmp_path / "moved"
    moved.mkdir()
    for path in tmp_path.joinpath("proj").iterdir():  # the project file and its p_media folder
        shutil.move(str(path), moved / path.name)
    assert not (tmp_path / "proj" / "p_media").exists()
    with Store.open(moved / "p.pairscope", readonly=True) as store:
        path = item(store, "mathverse_3414").media[0].path
        assert path.startswith(str(moved / "p_media")) and os.path.isfile(path)
        with Image.open(path) as img:
            assert img.getpixel((0, 0)) == (0, 0, 255)


# -- VLRMBench step file ----------------------------------------------------------------------------
# Schema read from github.com/JCruan519/VLRMBench benchmark_data/location_error.jsonl:
# id (32 hex), image (list), question, step_list ("STEPk: ...\n\n"), reasoning_error (the perturbed
# solution as one string of STEP lines), task_gt (1 = erroneous step), category.


def vlrmbench(id_, steps, perturbed, task_gt, as_string=False, with_error=True):
    row = {
        "id": id_,
        "image": [f"dynamath/sample_variant1image{id_[:3]}.jpg"],
        "question": "Which of the labeled points is the position of the image?",
        "step_list": repr([s.strip() for s in steps]) if as_string else [f"{s}\n\n" for s in steps],
    }
    if with_error:
        row["reasoning_error"] = "\n\n\n".join(perturbed) + "\n"
    return {**row, "task_gt": task_gt, "category": "location_error"}


def test_vlrmbench_steps_detected_with_errors_from_task_gt(store, tmp_path):
    steps = ["STEP1: The mirror is horizontal.", "STEP2: The image is above the mirror.", "STEP3: Answer A."]
    bad = ["STEP1: The mirror is horizontal.", "STEP2: The image is below the mirror.", "STEP3: Answer A."]
    rows = [
        vlrmbench("4daf94b9d9ef18f9cac639f947276a6f", steps, bad, [0, 1, 0]),
        vlrmbench("3f2e419ea548aa98beb159f3987d59b9", steps[:2], bad[:2], [1, 0], as_string=True),
        vlrmbench("968c89bf51a6ce82b7b7eb92f5ef8dfb", steps, bad, [0, 0, 1], as_string=True, with_error=False),
    ]
    for r in rows:
        write_image(tmp_path / r["image"][0])
    report = import_file(store, write_jsonl(tmp_path / "location_error.jsonl", rows))
    assert (report.format, report.added, report.missing_media, report.problems) == ("steps", 3, 0, [])
    assert store.query("SELECT count(*) FROM steps")[0][0] == sum(len(r["task_gt"]) for r in rows)
    first = item(store, "4daf94b9d9ef18f9cac639f947276a6f")
    (response,) = first.responses
    assert [s.text for s in response.steps] == bad  # the solution task_gt marks
    assert [s.correct for s in response.steps] == [True, False, True]
    assert first.category == "location_error" and first.media[0].path
    (listed,) = item(store, "3f2e419ea548aa98beb159f3987d59b9").responses
    assert [(s.text, s.correct) for s in listed.steps] == [(bad[0], False), (bad[1], True)]
    (literal,) = item(store, "968c89bf51a6ce82b7b7eb92f5ef8dfb").responses
    assert [(s.text, s.correct) for s in literal.steps] == list(zip(steps, [True, True, False]))


# -- VisualProcessBench -----------------------------------------------------------------------------
# Schema read from the HF dataset card OpenGVLab/VisualProcessBench (test.jsonl): image (list of
# paths), question, answer, response {"steps", "process_correctness": 1 / 0 / -1}, policy_model,
# data_source.


def test_visualprocessbench_rows(store, tmp_path):
    rows = [
        {
            "image": ["images/MathVerse/1.png"],
            "question": "Find x.",
            "answer": "5",
            "response": {"steps": ["Angle sum is 180.", "So x = 4.", "Answer: 4"], "process_correctness": [1, -1, 0]},
            "policy_model": "InternVL2.5-8B",
            "data_source": "MathVerse",
        },
        {
            "image": ["images/MMMU/2.png"],
            "question": "Which option?",
            "answer": "B",
            "response": {"steps": ["Read the chart.", "B"], "process_correctness": [1, 1]},
            "policy_model": "Qwen2-VL-72B",
            "data_source": "MMMU",
        },
    ]
    write_image(tmp_path / "images" / "MathVerse" / "1.png")
    write_image(tmp_path / "images" / "MMMU" / "2.png")
    report = import_file(store, write_jsonl(tmp_path / "test.jsonl", rows))
    assert (report.format, report.added, report.missing_media) == ("steps", 2, 0)
    assert store.categories() == {"MathVerse": 1, "MMMU": 1}
    by_source = {}
    for (ext_id,) in store.query("SELECT ext_id FROM items"):
        got = item(store, ext_id)
        by_source[got.category] = got
    (response,) = by_source["MathVerse"].responses
    assert [s.correct for s in response.steps] == [True, False, None]
    assert response.model == "InternVL2.5-8B" and by_source["MathVerse"].reference.ground_truth == "5"
    assert by_source["MMMU"].responses[0].model == "Qwen2-VL-72B" and by_source["MMMU"].media[0].path


# -- RLAIF-V-Dataset ------------------------------------------------------------------------------
# Columns read from the HF dataset card openbmb/RLAIF-V-Dataset: ds_name, image ({"bytes", "path"}),
# question, chosen, rejected, origin_dataset, origin_split, idx (string), image_path; Parquet files
# RLAIF-V-Dataset_00N.parquet at the top of the repository.


def rlaif_row(idx, colour):
    return {
        "ds_name": "RLAIF-V",
        "image": {"bytes": png_bytes(colour, (4, 4)), "path": None},
        "question": f"Describe image {idx}.",
        "chosen": "A red bus.",
        "rejected": "A red bus and a cat.",
        "origin_dataset": "COCO",
        "origin_split": '{"model": "OmniLMM-12B", "type": "detailed_description"}',
        "idx": str(idx),
        "image_path": f"RLAIF-V-Dataset/images/{idx}.jpg",
    }


def test_rlaif_v_parquet_folder(store, tmp_path):
    folder = tmp_path / "RLAIF-V-Dataset"
    folder.mkdir()
    _write_parquet(folder / "RLAIF-V-Dataset_000.parquet", [rlaif_row(0, "red"), rlaif_row(1, "blue")])
    _write_parquet(folder / "RLAIF-V-Dataset_001.parquet", [rlaif_row(2, "green")])
    report = import_file(store, folder)
    assert (report.format, report.added, report.missing_media) == ("hf-preference", 3, 0)
    got = item(store, "1")
    assert got.prompt == "Describe image 1." and got.reference.ranking == (0, 1)
    assert [r.text for r in got.responses] == ["A red bus.", "A red bus and a cat."]
    assert got.media[0].path.startswith(str(store.media_dir.absolute()))
    with Image.open(got.media[0].path) as img:
        assert img.getpixel((0, 0)) == (0, 0, 255)
    assert got.extra["ds_name"] == "RLAIF-V" and got.extra["origin_dataset"] == "COCO"
    assert got.extra["image_path"] == "RLAIF-V-Dataset/images/1.jpg"


# -- MM-RLHF ------------------------------------------------------------------------------------------
# Rows shaped like MM-RLHF's dpo_pairs.jsonl (HF yifanzhang114/MM-RLHF): prompt, chosen, rejected,
# image (a path relative to the release folder).


def test_mm_rlhf_dpo_pairs(store, tmp_path):
    write_image(tmp_path / "long" / "0001.jpg", "yellow")
    rows = [{"prompt": "What is written on the sign?", "chosen": "STOP.", "rejected": "GO.", "image": "long/0001.jpg"}]
    report = import_file(store, write_jsonl(tmp_path / "dpo_pairs.jsonl", rows))
    assert report.format in ("trl", "hf-preference") and report.added == 1 and report.missing_media == 0
    (ext_id,) = [e for (e,) in store.query("SELECT ext_id FROM items")]
    got = item(store, ext_id)
    assert [r.text for r in got.responses] == ["STOP.", "GO."] and got.reference.chosen == 0
    assert got.media[0].ref == "long/0001.jpg" and os.path.isfile(got.media[0].path)


# -- a failed import keeps nothing ------------------------------------------------------------------


def test_malformed_line_in_a_release_imports_nothing(store, tmp_path):
    lines = [json.dumps(r) for r in VLRB_ROWS[:4]] + ['{"id": "RLAIF-V-9", "query": '] + [json.dumps(VLRB_ROWS[4])]
    src = write_jsonl(tmp_path / "data.jsonl", lines)
    with pytest.raises(FormatError, match=r"data.jsonl:5"):
        import_file(store, src)
    assert store.item_count() == 0
