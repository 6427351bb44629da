"""A closed standard output (``pairscope info | head -1``) ends a command quietly with exit
status 0: no traceback, no "error: [Errno 32] Broken pipe" (issue 22, item 8). Real pipes,
real processes: the installed ``pairscope`` script as a shell runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairscope.app.records import Item, MediaRef, Reference, Response
from pairscope.app.store import Store

PAIRSCOPE = Path(sys.executable).with_name("pairscope")
TIMEOUT_S = 300  # a hang guard: each command needs a few seconds


@pytest.fixture(scope="module")
def big_project(tmp_path_factory):
    """5,000 items whose images are missing: ``info --missing`` prints ~0.5 MB, far more
    than a pipe holds, so ``head -1`` closes the pipe while pairscope is still writing."""
    path = tmp_path_factory.mktemp("pipes") / "p.pairscope"
    problem = "image not found (looked in: /data/vl-rewardbench/images/wildvision-battle/…)"
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    f"wildvision-battle-{n}",
                    "Which is right?",
                    (Response(0, "A"), Response(1, "B")),
                    media=(MediaRef("image", f"images/wildvision-battle/{n:05d}.jpg", None, problem),),
                    reference=Reference(ranking=(0, 1)),
                )
                for n in range(5000)
            ]
        )
    return path


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("head") is None, reason="needs bash and head")
def test_info_piped_into_head_ends_quietly_under_pipefail(big_project):
    command = f"'{PAIRSCOPE}' info --db '{big_project}' --missing | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=TIMEOUT_S)
    # was: "error: [Errno 32] Broken pipe" on stderr and status 1 (the pipeline failed under pipefail)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout == f"project: {big_project}\n"


def closed_stdout(*args: str) -> subprocess.CompletedProcess:
    """Run pairscope with a stdout pipe whose reader has already gone (every write: EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(PAIRSCOPE), *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S
        )
    finally:
        os.close(write)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["info", "--db", "{db}"],
        ["info", "--db", "{db}", "--json"],
        ["stats", "--db", "{db}", "--bootstrap", "5"],
        ["export", "--db", "{db}", "--format", "jsonl", "--out", "{tmp}/out"],
        ["schema", "--db", "{db}", "show"],
        ["demo", "{tmp}/demo.pairscope"],
        ["--help"],
        ["export", "--help"],
    ],
    ids=lambda a: " ".join(a[:2]).replace("{db}", "db"),
)
def test_every_printing_command_ends_quietly_on_a_closed_stdout(args, big_project, tmp_path):
    argv = [a.format(db=big_project, tmp=tmp_path) for a in args]
    done = closed_stdout(*argv)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr and "error" not in done.stderr
