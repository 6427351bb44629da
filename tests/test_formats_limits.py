"""The readers' limits, made explicit: nesting depth, path lengths, lone surrogates, integers
beyond 64 bits, non-JSON Parquet values; echoed values bounded and escaped; repeated problems
summarised; an internal error told apart from bad input (exit 70, one line, no traceback)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from helpers import item, write_jsonl
from pairscope.app.cli import main as cli
from pairscope.app.cli.main import main
from pairscope.app.formats import FormatError
from pairscope.app.formats.base import MAX_DEPTH, JSONProblem, loads_json
from pairscope.app.formats.messages import shown, summarise
from pairscope.app.importer import import_file
from pairscope.app.records import ImportProblem
from test_formats_vlrewardbench import _write_parquet, png_bytes


def vl_row(i, **kw):
    return {"id": f"RLAIF-V-{i}", "query": "Q?", "response": ["a", "b"], "human_ranking": [0, 1], **kw}


def vl_line(i, extra: str = "", **kw) -> str:
    """A VL-RewardBench row as JSON text, with ``extra`` (raw JSON members) spliced in."""
    text = json.dumps(vl_row(i, **kw))
    return text[:-1] + (", " + extra if extra else "") + "}"


def fatal(store, path, fmt="vlrewardbench"):
    with pytest.raises(FormatError) as exc:
        import_file(store, path, fmt)
    assert store.info().items == 0
    return exc.value.problems


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# -- shown -------------------------------------------------------------------------------------


def test_shown_truncates_and_escapes():
    assert shown("RLAIF-V-1") == "RLAIF-V-1"
    long = shown("a" * 100_000)
    assert len(long) == 80 and long.endswith("…")
    assert shown("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07"
    assert shown("a\nb\u202ec\ud800") == "a\\nb\\u202ec\\ud800"
    assert shown("x", quote=True) == "'x'"
    path = shown("/data/" + "d/" * 5000 + "file.png", 60, keep_end=True)
    assert len(path) <= 60 and path.startswith("/data/") and path.endswith("file.png")
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    assert len(shown(deep)) < 100  # no RecursionError, nothing unbounded
    assert len(shown(10**5000)) < 100 and len(shown(b"\x00" * 10**6)) < 200
    assert shown([1, "a"]) == "[1, 'a']"


def test_summarise_groups_by_template():
    problems = [ImportProblem("f.jsonl", i, f"human_ranking has a tie: rank {i}", f"id{i}") for i in range(10_000)]
    problems.append(ImportProblem("f.jsonl", 1, "image 'x.png' is not an image"))
    lines = summarise(problems)
    assert lines[:3] == [str(p) for p in problems[:3]]
    assert lines[3] == "… and 9,997 more like this"
    assert lines[4].endswith("image 'x.png' is not an image") and len(lines) == 5


# -- JSON: depth, surrogates, integers -----------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 1_100, 100_000])
def test_deep_nesting_is_a_problem_at_its_line(store, tmp_path, depth):
    nested = "[" * depth + "]" * depth
    path = write_jsonl(tmp_path / "d.jsonl", [vl_line(0), vl_line(1, f'"meta": {nested}')])
    (p,) = fatal(store, path)
    assert p.line == 2 and f"nested deeper than {MAX_DEPTH} levels" in p.message


def test_nesting_up_to_the_limit_is_kept(store, tmp_path):
    depth = MAX_DEPTH - 1
    nested = "[" * depth + "]" * depth
    path = write_jsonl(tmp_path / "d.jsonl", [vl_line(0, f'"meta": {nested}')])
    assert import_file(store, path, "vlrewardbench").added == 1


def test_deep_first_row_is_named_when_detecting_the_format(store, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text("\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    (p,) = fatal(store, path, None)
    assert p.line == 2 and f"nested deeper than {MAX_DEPTH} levels" in p.message


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "a\\ud83d"])
def test_lone_surrogate_is_a_problem_at_its_line(store, tmp_path, escape):
    path = write_jsonl(tmp_path / "s.jsonl", [vl_line(0), vl_line(1, f'"meta": "{escape}"')])
    (p,) = fatal(store, path)
    assert p.line == 2 and "lone surrogate" in p.message


def test_lone_surrogate_in_a_key_or_the_id(store, tmp_path):
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            '{"id": "\\ud800", "query": "Q", "response": ["a", "b"], "human_ranking": [0, 1]}',
            vl_line(1, '"\\udc00": 1'),
        ],
    )
    assert [p.line for p in fatal(store, path)] == [1, 2]


def test_surrogate_pairs_nan_and_infinity_are_fine(store, tmp_path):
    path = write_jsonl(
        tmp_path / "ok.jsonl", [vl_line(0, '"meta": ["\\ud83d\\ude00", NaN, Infinity, -Infinity, 1e400]')]
    )
    assert import_file(store, path, "vlrewardbench").added == 1
    assert item(store, "RLAIF-V-0").extra["meta"][0] == "😀"


@pytest.mark.parametrize(
    ("number", "stored"),
    [("1" * 25, 1.1111111111111111e24), ("-" + "9" * 40, -1e40), ("18446744073709551616", 2.0**64), ("1" * 5000, None)],
)
@pytest.mark.parametrize("nan", ["", ', "x": NaN'])  # orjson reads the row, or json does (NaN)
def test_integers_beyond_64_bits_are_read_as_floats(store, tmp_path, number, stored, nan):
    path = write_jsonl(tmp_path / "i.jsonl", [vl_line(0, f'"meta": {number}{nan}')])
    assert import_file(store, path, "vlrewardbench").added == 1
    assert item(store, "RLAIF-V-0").extra["meta"] == stored  # beyond 1e308: inf, stored as null


def test_64_bit_integers_are_kept(store, tmp_path):
    path = write_jsonl(tmp_path / "i.jsonl", [vl_line(0, f'"meta": [{2**64 - 1}, {-(2**63)}]')])
    assert import_file(store, path, "vlrewardbench").added == 1
    assert item(store, "RLAIF-V-0").extra["meta"] == [2**64 - 1, -(2**63)]


def test_loads_json_raises_only_json_problem():
    for raw in (b"[" * 5000, b'"\\ud800"', b"\xff\xfe{", b"{", "[\ud800]", b"\xef\xbb\xbf{}"):
        with pytest.raises(JSONProblem):
            loads_json(raw)
    assert loads_json(b'{"a": [NaN]}')["a"][0] != 0


def test_byte_order_mark(store, tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(vl_row(0)).encode() + b"\n")
    assert import_file(store, path, "vlrewardbench").added == 1
    path.write_bytes(json.dumps(vl_row(1)).encode() + b"\n\xef\xbb\xbf" + json.dumps(vl_row(2)).encode())
    with pytest.raises(FormatError) as exc:
        import_file(store, path, "vlrewardbench")
    ((p,),) = [exc.value.problems]
    assert p.line == 2 and "byte-order mark" in p.message and store.info().items == 1


def test_utf16_file_says_so(store, tmp_path):
    path = tmp_path / "u16.jsonl"
    path.write_bytes((json.dumps(vl_row(0)) + "\n").encode("utf-16"))
    problems = fatal(store, path)
    assert problems[0].line == 1 and "UTF-16" in problems[0].message


def test_python_list_string_with_a_lone_surrogate(store, tmp_path):
    row = {"id": "s1", "question": "Q?", "step_list": "['STEP1: a\\ud800']", "task_gt": [0]}
    (p,) = fatal(store, write_jsonl(tmp_path / "s.jsonl", [row]), "steps")
    assert p.line == 1 and "lone surrogate" in p.message


# -- media paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("images/" + "漢" * 90 + ".png", "274 bytes"),
        ("img/" + "a" * 256 + ".png", "260 bytes"),
        ("a/" * 2100 + "x.png", "4,205 bytes"),
        ("img/ok.png\x00.txt", "NUL"),
    ],
)
def test_unusable_media_path_is_a_problem_for_that_row(store, tmp_path, ref, why):
    path = write_jsonl(tmp_path / "m.jsonl", [vl_row(0, image_path=ref), vl_row(1)])
    report = import_file(store, path, "vlrewardbench")
    assert report.added == 2
    (p,) = report.problems
    assert p.line == 1 and p.item_id == "RLAIF-V-0" and why in p.message and len(p.message) < 400
    assert item(store, "RLAIF-V-0").media[0].missing


# -- Parquet -------------------------------------------------------------------------------------


def test_parquet_values_json_cannot_hold_are_a_problem(store, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [vl_row(i, image={"bytes": png_bytes(), "path": f"{i}.png"}) for i in range(2)]
    table = pa.Table.from_pylist(rows)
    table = table.append_column("audio", pa.array([b"\x00\x01", b"\x02"], pa.binary()))
    table = table.append_column("took", pa.array([1, 2], pa.duration("s")))
    pq.write_table(table, tmp_path / "x.parquet")
    problems = fatal(store, tmp_path / "x.parquet")
    assert [p.line for p in problems] == [1, 2]
    assert "bytes value (at audio)" in problems[0].message


def test_damaged_parquet_is_a_problem(store, tmp_path):
    _write_parquet(tmp_path / "x.parquet", [vl_row(0, image={"bytes": png_bytes(), "path": "0.png"})])
    data = (tmp_path / "x.parquet").read_bytes()
    for cut in range(8, len(data), max(len(data) // 40, 1)):
        damaged = tmp_path / f"cut{cut}.parquet"
        damaged.write_bytes(data[:cut] + b"\x00garbage" + data[cut + 8 :])
        try:
            import_file(store, damaged, "vlrewardbench")
        except FormatError:
            pass
    assert store.info().items <= 1


# -- the command line ----------------------------------------------------------------------------


def test_echoed_ids_are_bounded_and_escaped(tmp_path, capsys):
    rows = [vl_row(0, id="\x1b]0;pwned\x07" + "x" * 100_000, human_ranking="bad")]
    code, _, err = run(capsys, "import", write_jsonl(tmp_path / "e.jsonl", rows), "--db", tmp_path / "p.pairscope")
    assert code == 1 and "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err
    assert max(len(line) for line in err.splitlines()) < 1_000


def test_repeated_warnings_are_summarised(tmp_path, capsys):
    rows = [vl_row(i, human_ranking=[0, 0]) for i in range(10_000)]
    path = write_jsonl(tmp_path / "ties.jsonl", rows)
    code, _, err = run(capsys, "import", path, "--db", tmp_path / "p.pairscope", "--format", "vlrewardbench")
    assert code == 0 and "… and 9,997 more like this" in err and len(err.splitlines()) < 10


def test_internal_error_exits_70_with_one_line(tmp_path, capsys, monkeypatch):
    import pairscope.app.importer as importer

    def broken(*args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(importer, "import_file", broken)
    monkeypatch.delenv("PAIRSCOPE_DEBUG", raising=False)
    path = write_jsonl(tmp_path / "ok.jsonl", [vl_row(0)])
    code, _, err = run(capsys, "import", path, "--db", tmp_path / "p.pairscope")
    assert code == cli.EXIT_INTERNAL == 70
    assert len(err.strip().splitlines()) == 1 and "internal error" in err and "please report it" in err
    assert "TypeError: a bug" in err and not (tmp_path / "p.pairscope").exists()
    monkeypatch.setenv("PAIRSCOPE_DEBUG", "1")
    assert main(["import", str(path), "--db", str(tmp_path / "p.pairscope")]) == 70
    assert "Traceback" in capsys.readouterr().err


def test_bad_input_still_exits_1(tmp_path, capsys):
    path = write_jsonl(tmp_path / "bad.jsonl", [vl_line(0, '"meta": "\\ud800"')])
    code, _, err = run(capsys, "import", path, "--db", tmp_path / "p.pairscope")
    assert code == 1 and f"{path}:1" in err and "lone surrogate" in err


def test_failed_import_leaves_the_project_intact(tmp_path, capsys):
    db = tmp_path / "p.pairscope"
    assert run(capsys, "import", write_jsonl(tmp_path / "a.jsonl", [vl_row(0)]), "--db", db)[0] == 0
    bad = write_jsonl(tmp_path / "b.jsonl", [vl_row(1), vl_line(2, '"meta": ' + "[" * 2000 + "]" * 2000)])
    assert run(capsys, "import", bad, "--db", db)[0] == 1
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1
    conn.close()
