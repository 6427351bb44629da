"""Bounded inputs that are neither a dataset nor a judge server (issue 31, item 5): a model
folder's ``config.json``, and the one bounded JSON reader every reader of outside JSON uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pairscope.app.json_guard import MAX_DEPTH, JSONProblem, loads_json
from pairscope.models import _hf_utils
from pairscope.models.base import JudgeError

APP = Path(__file__).resolve().parents[1] / "app"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_100, 100_000])
def test_the_json_guard_refuses_deep_nesting_with_one_error(depth):
    for raw in ("[" * depth + "]" * depth, b'{"a": ' + b"[" * depth + b"]" * depth + b"}"):
        with pytest.raises(JSONProblem, match=f"nested deeper than {MAX_DEPTH} levels"):
            loads_json(raw)
    assert loads_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert loads_json(b'{"a": [NaN, 1e999]}')["a"][1] == float("inf")


def test_outside_json_is_read_through_the_guard():
    """The journal, merge's checks, the label schema and the dataset formats read outside JSON
    with ``json_guard.loads_json``: no bare ``json.loads`` there."""
    readers = ["labeling/pending.py", "labeling/schema.py", "store/merge_checks.py", "formats/base.py"]
    for name in readers:
        source = (APP / name).read_text(encoding="utf-8")
        assert not re.search(r"\b(?:json|orjson)\.loads\(", source), name
        assert "loads_json" in source, name


@pytest.mark.parametrize(
    "config, problem",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"model_type": ' + "[" * 200 + "]" * 200 + "}", "nested too deeply"),
        ("{not json", "cannot be read as JSON"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_a_model_config_that_is_not_one_is_a_judge_error(tmp_path, config, problem):
    """Deep JSON in ``config.json`` was a raw RecursionError (the CLI's exit 70)."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(config)
    with pytest.raises(JudgeError, match=problem):
        _hf_utils.check_model_folder(str(folder))


def test_a_huge_model_config_is_refused_unread(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    with (folder / "config.json").open("w") as fh:
        fh.write('{"model_type": "qwen2_vl", "pad": "' + "x" * (_hf_utils.MAX_CONFIG_BYTES + 10) + '"}')
    with pytest.raises(JudgeError, match="larger than"):
        _hf_utils.check_model_folder(str(folder))


def test_the_cli_says_a_deep_config_is_not_a_model(tmp_path, capsys):
    from pairscope.app.cli.main import main
    from pairscope.app.records import Item, Response
    from pairscope.app.store import Store

    db = tmp_path / "p.pairscope"
    with Store.create(db) as store:
        store.add_items([Item(ext_id="a", prompt="q", responses=(Response(0, "x"), Response(1, "y")))])
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"a": 1})[:-1] + ', "b": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert main(["judge", "--db", str(db), "--model", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "config.json" in err and "nested too deeply" in err and "internal error" not in err
