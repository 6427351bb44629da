"""Command-line typos never open the window (issue 24, build 4): an unknown command is a
usage error with a suggestion, a path that does not exist says so, ``--help`` shows the
window's usage, and a judge run whose samples all failed exits non-zero."""

from __future__ import annotations

import subprocess
import sys

import pytest

import fake_backend  # noqa: F401  (registers the "fake" backend)
from pairscope.app.cli.main import main
from pairscope.app.records import Item, MediaRef, Reference, Response
from pairscope.app.store import Store


def run_cli(*args, tmp_path):
    """``pairscope ARGS`` as a user runs it, with no screen: a window would fail loudly."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QT_QPA_PLATFORM": "minimal"}
    return subprocess.run(
        [sys.executable, "-m", "pairscope.app.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


@pytest.mark.parametrize(("typed", "meant"), [("statz", "stats"), ("imprt", "import"), ("Export", "export")])
def test_a_mistyped_command_is_a_usage_error_with_a_suggestion_and_no_window(tmp_path, typed, meant):
    done = run_cli(typed, "x.jsonl", tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"did you mean {meant}?" in done.stderr
    assert "Cannot open" not in done.stderr and "unrecognized arguments" not in done.stderr


def test_a_path_that_does_not_exist_says_so_without_opening_the_window(tmp_path):
    done = run_cli("missing/proj.pairscope", tmp_path=tmp_path)
    assert done.returncode == 1
    assert "missing/proj.pairscope does not exist" in done.stderr and "commands:" in done.stderr
    assert not (tmp_path / "missing").exists()  # nothing made


def test_help_lists_the_window_usage(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "pairscope [DB]" in out and "open the window" in out and "COMMAND" in out


def test_a_command_s_help_names_the_command_not_the_window_usage(capsys):
    """``pairscope demo -h`` starts ``usage: pairscope demo``: the window's usage text is the
    top-level help's, not every command's prefix."""
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert capsys.readouterr().out.startswith("usage: pairscope demo [-h] path")


def test_a_judge_run_whose_samples_all_failed_exits_non_zero(tmp_path, capsys):
    project = tmp_path / "p.pairscope"
    with Store.create(project) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"m{i}",
                    prompt="q",
                    responses=(Response(0, "a"), Response(1, "b")),
                    media=(MediaRef("image", f"gone{i}.png", None, "not found"),),
                    reference=Reference(ranking=(0, 1)),
                )
                for i in range(3)
            ]
        )
    code = main(["judge", "--db", str(project), "--model", "m", "--backend", "fake"])
    out = capsys.readouterr().out
    assert "3 of 3 samples failed" in out
    assert code == 1
