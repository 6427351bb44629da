"""The judge end to end with tiny random models loaded like real ones: the CLI on the demo
project (images and video), and a run killed mid-way that resumes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from pairscope.app.cli.main import main
from pairscope.app.demo import create_demo_project
from pairscope.app.store import Store
from tiny_models import build_tiny_llava, build_tiny_qwen2_vl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("qwen2vl"))


@pytest.fixture
def demo(tmp_path):
    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    return path


def test_cli_judges_images_and_video_with_a_tiny_qwen2_vl(qwen, demo, capsys):
    with Store.open(demo) as store:
        video_id = store.item_id("video_demo_01")
        image_id = store.item_id("wildvision_demo_01")
    code = main(
        [
            "judge",
            "--db",
            str(demo),
            "--model",
            str(qwen),
            "--k",
            "2",
            "--both-orders",
            "--frames",
            "4",
            "--max-new-tokens",
            "12",
            "--batch-size",
            "4",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "44 items judged" in out and "undecided counted wrong" in out
    with Store.open(demo) as store:
        run = store.runs()[-1]
        assert (run.mode, run.k, run.both_orders, run.frames, run.status) == ("pairwise", 2, True, 4, "done")
        assert run.weights_hash.startswith("sha256:") and run.template_hash
        video = store.verdicts(run.id, video_id)
        assert len(video) == 4 and all(v.error is None for v in video)
        assert len(video[0].media_sent["frame_indices"]) == 4
        assert video[0].media_sent.get("video_frames"), video[0].media_sent  # as the processor fed them
        image = store.verdicts(run.id, image_id)
        assert image[0].media_sent["images"] and image[0].tokens_out > 0
        assert {v.order_shown for v in image} == {(0, 1), (1, 0)}


def test_tiny_llava_judges_through_the_same_path(tmp_path, demo, capsys):
    llava = build_tiny_llava(tmp_path / "llava")
    assert main(["judge", "--db", str(demo), "--model", str(llava), "--limit", "3", "--max-new-tokens", "8"]) == 0
    assert "3 items judged" in capsys.readouterr().out


def test_killed_run_resumes_without_redoing_finished_samples(qwen, demo):
    command = [
        sys.executable,
        "-m",
        "pairscope.app.cli.main",
        "judge",
        "--db",
        str(demo),
        "--model",
        str(qwen),
        "--k",
        "3",
        "--max-new-tokens",
        "24",
        "--batch-size",
        "2",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with Store.open(demo) as store:
            if len(store.verdicts()) >= 10:
                break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Store.open(demo) as store:
        before = store.verdicts()
        run_id = before[0].run_id
        assert 10 <= len(before) < 132 and store.integrity_check() == "ok"
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    with Store.open(demo) as store:
        assert [r.id for r in store.runs()] == [run_id]  # the same run continued
        after = store.verdicts(run_id)
        # 44 pairs × 3 samples (step-wise items have one response)
        assert len(after) == 132 and store.run(run_id).status == "done"
        kept = {(v.item_id, v.sample_idx): v.raw_output for v in after}
        assert all(kept[(v.item_id, v.sample_idx)] == v.raw_output for v in before)
