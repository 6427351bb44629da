"""Export media: a missing file never erases its reference, copying is a stated choice
(``--media copy|reference``), missing files are counted once, and ``--out`` may be relative.

The official loading step is VL-RewardBench's ``inference.py``:
``os.path.join(images_dir, item["image_path"])`` — reproduced exactly below."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from helpers import write_jsonl
from pairscope.app.cli.main import main
from pairscope.app.curation.export import EXPORT_FORMATS, export_project
from pairscope.app.demo import create_demo_project
from pairscope.app.importer import import_file
from pairscope.app.store import Store

#: (id prefix, the release's image folder): the six subsets of VL-RewardBench.
SUBSETS = (
    ("wildvision-battle-", "wildvision-battle"),
    ("vlfeedback_", "vlfeedback"),
    ("povid_", "povid"),
    ("RLHF-V-", "rlhf-v"),
    ("RLAIF-V-", "rlaif-v"),
    ("mathverse_", "reasoning_tasks"),
)


def release_rows(n: int) -> list[dict]:
    """``n`` VL-RewardBench-shaped rows whose ``image_path`` is ``images/<subset>/<file>``."""
    rows = []
    for i in range(n):
        prefix, folder = SUBSETS[i % len(SUBSETS)]
        rows.append(
            {
                "id": f"{prefix}{i}",
                "query": f"<image>\nQuestion {i}?",
                "response": [f"answer {i} A", f"answer {i} B"],
                "human_ranking": [0, 1] if i % 3 else [1, 0],
                "image_path": f"images/{folder}/{i:05d}.jpg",
                "models": ["m1", "m2"],
                "judge": "human",
                "query_source": folder,
                "human_error_analysis": [],
            }
        )
    return rows


def official_image_path(images_dir: str, item: dict) -> str:
    """VL-RewardBench's inference.py, verbatim: ``os.path.join(images_dir, item["image_path"])``."""
    return os.path.join(images_dir, item["image_path"])


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture
def release_without_images(tmp_path):
    """A 1,000-row VL-RewardBench file downloaded without its image folder, imported."""
    (tmp_path / "release").mkdir()
    src = write_jsonl(tmp_path / "release" / "vl_rewardbench.jsonl", release_rows(1000))
    path = tmp_path / "proj" / "p.pairscope"
    with Store.create(path) as store:
        report = import_file(store, src, "vlrewardbench")
    assert report.added == 1000 and report.missing_media == 1000
    return path


def test_export_without_media_keeps_every_reference_for_the_official_loader(release_without_images, tmp_path):
    out = tmp_path / "out"
    with Store.open(release_without_images) as store:
        result = export_project(store, out, "vlrewardbench", source="reference")
    rows = read_rows(out / "vlrewardbench.jsonl")
    original = {r["id"]: r for r in release_rows(1000)}
    assert len(rows) == 1000
    # the dataset's own path, as the release writes it, on every row
    assert all(r["image_path"] == original[r["id"]]["image_path"] for r in rows)
    images_dir = str(tmp_path / "downloaded")
    joined = [official_image_path(images_dir, r) for r in rows]  # raised TypeError on a null before
    assert joined[0] == os.path.join(images_dir, original[rows[0]["id"]]["image_path"])
    # the image folder downloaded later: the official step opens every row's image
    for r in rows[:12]:
        path = Path(official_image_path(images_dir, r))
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (4, 4), "red").save(path, "JPEG")
        with Image.open(official_image_path(images_dir, r)) as image:
            assert image.size == (4, 4)
    # counted once, never one warning per item
    assert result.missing_media == 1000 and result.items_missing_media == 1000
    assert result.warnings == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["missing_media"] == 1000
    assert manifest["media"]["mode"] == "copy" and manifest["media"]["missing"]["files"] == 1000
    assert len(manifest["media"]["missing"]["examples"]) <= 20
    assert str(tmp_path) not in (out / "vlrewardbench.jsonl").read_text()
    assert str(tmp_path) not in (out / "manifest.json").read_text()


def test_export_then_reimport_gives_the_same_items_and_missing_count(release_without_images, tmp_path):
    out = tmp_path / "out"
    with Store.open(release_without_images) as store:
        export_project(store, out, "vlrewardbench", source="reference")
        before = {s.ext_id: store.get_item(s.id) for s in store.item_summaries(0, 2000)}
        missing_before = store.info().missing_media
    with Store.create(tmp_path / "again.pairscope") as again:
        report = import_file(again, out / "vlrewardbench.jsonl", "vlrewardbench", media_root=out)
        assert report.added == 1000 and report.missing_media == missing_before == 1000
        after = {s.ext_id: again.get_item(s.id) for s in again.item_summaries(0, 2000)}
        assert again.info().missing_media == missing_before
    assert set(after) == set(before)
    for ext_id, new in after.items():
        old = before[ext_id]
        for name in ("prompt", "prompt_raw", "responses", "category", "subset", "reference", "extra"):
            assert getattr(new, name) == getattr(old, name), (ext_id, name)
        assert [m.ref for m in new.media] == [m.ref for m in old.media]


def test_cli_counts_missing_media_once(release_without_images, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--format", "vlrewardbench", "--out", str(out), "--source", "reference"]
    assert main(["export", "--db", str(release_without_images), *argv]) == 0
    stdout, stderr = capsys.readouterr()
    assert len(stderr.splitlines()) <= 2, stderr  # was one line per item (1,000)
    assert "1,000 media files missing on 1,000 items" in stdout and stdout.count("media files missing") == 1, stdout
    assert str(tmp_path / "release") not in stdout + stderr


def test_missing_media_keep_their_reference_in_every_format(release_without_images, tmp_path):
    with Store.open(release_without_images) as store:
        ids = [s.id for s in store.item_summaries(0, 6)]
        for fmt in ("trl", "jsonl"):
            out = tmp_path / fmt
            result = export_project(store, out, fmt, source="reference", item_ids=ids)
            assert result.missing_media == 6
            text = (out / EXPORT_FORMATS[fmt].filename).read_text()
            assert str(tmp_path) not in text  # never an absolute machine path in a row
            rows = {r["id"]: r for r in read_rows(out / EXPORT_FORMATS[fmt].filename)}
            refs = {r["id"]: r["image_path"] for r in release_rows(6)}
            for ext_id, row in rows.items():
                if fmt == "trl":
                    images = row["images"]
                    paths = [i if isinstance(i, str) else i.get("path") for i in images]
                    assert paths == [refs[ext_id]]  # was []
                else:
                    assert row["image"] == [refs[ext_id]]
                    [media] = row["media"]
                    assert media["path"] == media["ref"] == refs[ext_id] and media["sha256"] is None
                    assert media["problem"] and "/" not in media["problem"]


def test_media_reference_copies_nothing_and_says_so(tmp_path):
    src = tmp_path / "src"
    (src / "images" / "povid").mkdir(parents=True)
    Image.new("RGB", (4, 4), "red").save(src / "images" / "povid" / "a.png")
    rows = release_rows(3)
    for row in rows:
        row["image_path"] = "images/povid/a.png"
    write_jsonl(src / "data.jsonl", rows)
    with Store.create(tmp_path / "p.pairscope") as store:
        import_file(store, src / "data.jsonl", "vlrewardbench")
        copied = export_project(store, tmp_path / "copy", "vlrewardbench", source="reference")
        referenced = export_project(store, tmp_path / "ref", "vlrewardbench", source="reference", media="reference")
        with pytest.raises(ValueError, match="media"):
            export_project(store, tmp_path / "bad", "vlrewardbench", media="embed-ish")
    assert copied.media == "copy" and referenced.media == "reference"
    assert (tmp_path / "copy" / "images" / "povid" / "a.png").is_file()
    assert not (tmp_path / "ref" / "images").exists() and referenced.missing_media == 0
    for name in ("copy", "ref"):
        assert {r["image_path"] for r in read_rows(tmp_path / name / "vlrewardbench.jsonl")} == {"images/povid/a.png"}
    manifest = json.loads((tmp_path / "ref" / "manifest.json").read_text())
    assert manifest["media"]["mode"] == "reference" and manifest["counts"]["media_files"] == 0
    assert "images_dir" in manifest["media"]["paths"] or "dataset" in manifest["media"]["paths"]


def test_media_choice_is_in_the_cli_help(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    text = capsys.readouterr().out
    assert "--media {copy,reference}" in text and "default" in text.rsplit("--media {copy,reference}")[-1][:400]


# -- relative --out (issue 22, item 4) ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["vlrewardbench", "trl", "jsonl"])
def test_relative_out_works_for_every_format_on_the_demo(fmt, tmp_path, monkeypatch, capsys):
    demo = tmp_path / "demo.pairscope"
    create_demo_project(demo)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # was: "'…/out_rel/images/x.png' is not in the subpath of 'out_rel'"
    code = main(["export", "--db", str(demo), "--format", fmt, "--out", "out_rel", "--source", "reference"])
    _, err = capsys.readouterr()
    assert code == 0, err
    out = work / "out_rel"
    rows = read_rows(out / EXPORT_FORMATS[fmt].filename)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["media_files"] > 0 and manifest["counts"]["missing_media"] == 0
    assert manifest["source"]["project"] == "demo.pairscope"  # by name, not an absolute path
    for name in manifest["files"]:
        assert (out / name).is_file()
    if fmt == "vlrewardbench":  # the official loading step on the export itself
        images = [r for r in rows if isinstance(r.get("image_path"), str)]
        assert images and all(Path(official_image_path(str(out), r)).is_file() for r in images)
