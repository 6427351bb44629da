"""The pairscope command line, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pairscope.app.cli.main import main
from pairscope.app.store import Store

PAIRSCOPE = Path(sys.executable).with_name("pairscope")


def vl_row(i, **kw):
    return {
        "id": f"RLAIF-V-{i}",
        "query": "<image>\nQ?",
        "response": ["a", "b"],
        "human_ranking": [1, 0],
        "image_path": f"img{i}.png",
        **kw,
    }


@pytest.fixture
def dataset(tmp_path):
    (tmp_path / "img0.png").write_bytes(b"\x89PNG fake")  # existence is all import checks
    src = tmp_path / "vl.jsonl"
    src.write_text("\n".join(json.dumps(vl_row(i)) for i in range(2)) + "\n")
    return src


def test_import_then_info(tmp_path, dataset, capsys):
    db = tmp_path / "p.pairscope"
    assert main(["import", str(dataset), "--db", str(db), "--media-root", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "2 added" in out and "hallucination: 2" in out and "missing media: 1" in out
    assert "RLAIF-V-1" in err and "img1.png" in err  # the missing image is named with its item
    assert main(["info", "--db", str(db), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {"items", "categories", "labels", "annotators", "judge_runs", "missing_media"} <= set(info)
    assert info["items"] == 2 and info["categories"] == {"hallucination": 2} and info["missing_media"] == 1
    assert info["missing_media_items"][0]["item"] == "RLAIF-V-1"
    assert main(["import", str(dataset), "--db", str(db), "--media-root", str(tmp_path)]) == 0
    assert "0 added, 2 unchanged" in capsys.readouterr().out


def test_malformed_file_exits_nonzero_names_line_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(vl_row(0)) + "\n" + json.dumps(vl_row(1, response="oops")) + "\n")
    db = tmp_path / "p.pairscope"
    assert main(["import", str(src), "--db", str(db), "--format", "vlrewardbench"]) == 1
    err = capsys.readouterr().err
    assert "nothing imported" in err and f"{src}:2" in err and "expected a list of strings" in err
    assert not db.exists()  # a failed import into a new project leaves no project file behind


def test_bad_map_and_unknown_format_are_usage_errors(tmp_path, dataset, capsys):
    db = str(tmp_path / "p.pairscope")
    with pytest.raises(SystemExit) as exit_info:
        main(["import", str(dataset), "--db", db, "--map", "novalue"])
    assert exit_info.value.code == 2 and "FIELD=KEY" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["import", str(dataset), "--db", db, "--format", "nope"])


def test_info_on_missing_or_foreign_file(tmp_path, capsys):
    assert main(["info", "--db", str(tmp_path / "none.pairscope")]) == 1
    assert "no project file" in capsys.readouterr().err
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert main(["info", "--db", str(other)]) == 1
    assert "not a PairScope project" in capsys.readouterr().err


def test_window_without_display_explains_instead_of_aborting(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    proc = subprocess.run(
        [str(PAIRSCOPE), str(tmp_path / "x.pairscope")], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "no display" in proc.stderr and "xvfb-run" in proc.stderr


def test_console_script_demo_creates_the_demo_project(tmp_path):
    db = tmp_path / "demo.pairscope"
    proc = subprocess.run([str(PAIRSCOPE), "demo", str(db)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with Store.open(db) as store:
        info = store.info()
    assert info.items >= 47 and info.missing_media == 0
    assert {"general", "hallucination", "reasoning"} <= set(info.categories)
    again = subprocess.run([str(PAIRSCOPE), "demo", str(db)], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and " 0 added" in again.stdout


def test_a_relative_data_path_resolves_media_inside_its_folder(tmp_path, monkeypatch, capsys):
    """`pairscope import data.jsonl` from the dataset's folder: `images/…` is inside it."""
    from PIL import Image

    (tmp_path / "images" / "povid").mkdir(parents=True)
    Image.new("RGB", (4, 4)).save(tmp_path / "images" / "povid" / "a.png")
    row = vl_row(0, image_path="images/povid/a.png")
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n")
    monkeypatch.chdir(tmp_path)
    assert main(["import", "data.jsonl", "--db", "p.pairscope"]) == 0
    out, err = capsys.readouterr()
    assert "leaves the media root" not in err and "missing media" not in out
    with Store.open(tmp_path / "p.pairscope") as store:
        assert not store.get_item(store.item_id("RLAIF-V-0")).media[0].missing
