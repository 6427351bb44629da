"""Fuzzed imports: every bad input gets a bounded ``file:line`` message, never a traceback.

A deterministic generator (``random.Random(seed)``) takes valid rows of every registered
format (JSONL layouts and the two Parquet ones) and mutates them: deep nesting, huge
strings and ids, lone surrogates, wrong types, NaN/Infinity, integers beyond 64 bits,
control characters, long path components and paths, NUL bytes, truncated lines, BOMs,
binary garbage, other encodings, duplicate keys… Each case is imported through the CLI
(``pairscope import``) and must:

- exit 0 or 1 (never a traceback, never the internal-error code);
- print bounded messages: no raw control characters, no line or stderr beyond a bound;
- be all-or-nothing: a failed import leaves the project as it was (a new project file is
  not left behind); a successful one adds or recognises exactly the file's rows;
- leave a project that passes ``PRAGMA integrity_check``.

The fast set runs 480 cases (40 per target, 12 targets); ``-m slow`` runs 3,600 more (3 seeds × 100 per target).
``python tests/test_fuzz_import.py`` runs both and counts tracebacks and failed checks.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import re
import sqlite3
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pairscope.app.cli.main import main
from pairscope.app.formats import FORMATS

# -- valid seed rows --------------------------------------------------------------------------


def _png() -> bytes:
    """A valid 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"\x00\xff\x00\x00"
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


PNG = _png()
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 16


def seeds(target: str, rng: random.Random) -> list[dict]:
    """A few valid rows of ``target`` (distinct ids, media that exist)."""
    n = rng.randint(2, 5)
    rows: list[dict]
    if target == "jsonl":
        rows = [
            {
                "id": f"g{i}",
                "prompt": f"How many apples in picture {i}?",
                "responses": ["Two.", "Three.", "Four."],
                "ranking": [1, 0, 2],
                "image": "img/ok.png",
                "category": "counting",
                "strength": 2,
                "error_tags": ["counting"],
                "ground_truth": "3",
            }
            if i % 2
            else {"id": f"g{i}", "prompt": f"What happens {i}?", "chosen": "Jumps.", "rejected": "Sits."}
            for i in range(n)
        ]
    elif target in ("vlrewardbench", "parquet-vlrewardbench"):
        rows = [
            {
                "id": f"RLAIF-V-{i}",
                "query": f"<image>\nWhat is in picture {i}?",
                "response": ["A cat.", "A dog."],
                "human_ranking": [0, 1] if i % 2 else [1, 0],
                "image_path": "images/povid/ok.png",
                "models": ["m1", "m2"],
                "human_error_analysis": ["hallucination"],
                "query_source": "povid",
            }
            for i in range(n)
        ]
        if target.startswith("parquet"):
            for row in rows:
                row["image"] = {"bytes": PNG, "path": row.pop("image_path")}
    elif target == "trl":
        rows = [
            {"prompt": f"Describe {i}.", "chosen": "Good.", "rejected": "Bad.", "images": ["img/ok.png"]}
            if i % 2
            else {
                "prompt": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": f"Q{i}?"}]}],
                "chosen": [{"role": "assistant", "content": "Yes."}],
                "rejected": [{"role": "assistant", "content": "No."}],
                "images": [{"path": "img/ok.png"}],
            }
            for i in range(n)
        ]
    elif target == "steps":
        rows = []
        for i in range(n):
            kind = i % 3
            if kind == 0:
                rows.append(
                    {
                        "id": f"ab{i:02x}",
                        "image": ["img/ok.png"],
                        "question": f"Add {i} and 2.",
                        "step_list": ["STEP1: read", "STEP2: add"],
                        "reasoning_error": "STEP1: read\nSTEP2: add wrongly",
                        "task_gt": [0, 1],
                        "category": "math",
                    }
                )
            elif kind == 1:
                rows.append(
                    {
                        "image": ["img/ok.png"],
                        "question": f"Count {i}.",
                        "answer": "4",
                        "response": {"steps": ["look", "count"], "process_correctness": [1, -1]},
                        "policy_model": "m",
                        "data_source": "src",
                    }
                )
            else:
                rows.append(
                    {
                        "id": f"bon{i}",
                        "question": f"Solve {i}.",
                        "responses": [
                            {"steps": ["a", "b"], "task_gt": [0, 0], "model": "m1"},
                            {"steps": "['c', 'd']", "task_gt": [0, 1], "model": "m2"},
                        ],
                    }
                )
    elif target == "videorewardbench":
        rows = [
            {
                "id": f"v{i}",
                "video": "vid/ok.mp4",
                "prompt": f"What happens in clip {i}?",
                "chosen": "A run.",
                "rejected": "A walk.",
                "dimension": "Long-Form Perception",
                "preference_strength": 2,
            }
            for i in range(n)
        ]
    elif target in ("hf-preference", "parquet-hf-preference"):
        rows = [
            {
                "ds_name": "RLAIF-V",
                "question": f"Describe picture {i}.",
                "chosen": "A cat.",
                "rejected": "A dog.",
                "origin_dataset": "VQAv2",
                "origin_split": "train",
                "idx": str(i),
                "image_path": "img/ok.png",
            }
            for i in range(n)
        ]
        if target.startswith("parquet"):
            for row in rows:
                row["image"] = {"bytes": PNG, "path": f"{row['idx']}.png"}
    elif target == "multimodal_rewardbench":
        rows = [
            {
                "ID": f"math_{i}",
                "Text": f"Solve problem {i}.",
                "Image": "img/ok.png",
                "Output1": "4",
                "Output2": "5",
                "Better": "Output1",
                "Category": "reasoning",
            }
            for i in range(n)
        ]
    elif target == "mm_rlhf":
        rows = [
            {
                "id": f"mcq_{i // 2}",  # ids repeat across a prompt's pairs
                "image": "img/ok.png",
                "prompt": f"Question {i // 2}?",
                "chosen": "A",
                "rejected": f"B{i}",
                "chosen_reason": "right",
                "rejected_reason": "wrong",
            }
            for i in range(n)
        ]
    elif target == "rewardbench2":
        rows = [
            {
                "id": str(i),
                "prompt": f"Prompt {i}",
                "chosen": ["good"],
                "rejected": ["bad", "worse", "worst"],
                "num_correct": 1,
                "num_rejected": 3,
                "total_completions": 4,
                "subset": "Math",
            }
            for i in range(n)
        ]
    elif target == "mr2bench":
        rows = [
            {
                "id": f"r{i}",
                "prompt": f"Rank clip {i}.",
                "responses": ["a", "b", "c"],
                "rankings": [1, 2, 2],
                "image": None,
                "video": "vid/ok.mp4",
            }
            for i in range(n)
        ]
    else:  # pragma: no cover
        raise AssertionError(target)
    return rows


TARGETS = (
    "jsonl",
    "vlrewardbench",
    "trl",
    "steps",
    "videorewardbench",
    "hf-preference",
    "multimodal_rewardbench",
    "mm_rlhf",
    "rewardbench2",
    "mr2bench",
    "parquet-vlrewardbench",
    "parquet-hf-preference",
)
#: Targets written as one JSON array (an element per line) rather than JSONL.
ARRAY_TARGETS = ("multimodal_rewardbench",)
FORMAT_OF = {t: t.removeprefix("parquet-") for t in TARGETS}


# -- mutations --------------------------------------------------------------------------------


@dataclass
class Raw:
    """JSON text spliced into a row as is (what ``json.dumps`` cannot or will not write)."""

    text: str


@dataclass
class Case:
    target: str
    data: bytes
    suffix: str
    rows: int  # the file's data rows (non-blank lines, or Parquet rows)
    fmt: str | None = None
    mutations: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)  # --map, --allow-outside-media


CONTROL = ("\x1b]0;pwned\x07", "\x00", "\r", "\x1b[2J", "\u202e", "\x7f", "a\nb", "\u0085")
LONG_PATHS = (
    "images/" + "漢" * 90 + ".png",  # 270-byte component
    "img/" + "a" * 256 + ".png",
    "a/" * 2100 + "x.png",  # > 4096 bytes in all
    "img/ok.png\x00.txt",
    "../../../etc/passwd",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "img",
    "img/" + "\x1b]0;x\x07.png",
    "img/\ud800.png",
    "",
    " ",
    "img/ok.png/",
    "img/not-an-image.png",
    "vid/ok.mp4",
    "img/ok.png",
)


def deep(rng: random.Random) -> Raw:
    depth = rng.choice((60, 99, 100, 101, 130, 254, 256, 300, 999, 1025, 1100, 5000, 100_000))
    open_, close = rng.choice((("[", "]"), ('{"a":', "}")))
    return Raw(open_ * depth + "1" + close * depth)


def wild_value(rng: random.Random) -> Any:
    """A value of the wrong type, size or content."""
    pick = rng.randrange(22)
    if pick == 0:
        return deep(rng)
    if pick == 1:
        return "x" * rng.choice((5_000, 100_000, 1_000_000))
    if pick == 2:
        return rng.choice(("\ud800", "a\udfffb", "\udc00" * 3, "ok\ud83d"))
    if pick == 3:
        return rng.choice((None, True, False, 0, -1, 1.5, "", [], {}, [None], {"a": None}, "str", [[]], [{}]))
    if pick == 4:
        return Raw(rng.choice(("NaN", "Infinity", "-Infinity", "1e400", "-0")))
    if pick == 5:
        return Raw(rng.choice(("1" * 25, "-" + "9" * 40, "1" * 5000, "18446744073709551616", "9" * 19)))
    if pick == 6:
        return rng.choice(CONTROL) * rng.choice((1, 3, 1000))
    if pick == 7:
        return rng.choice(LONG_PATHS)
    if pick == 8:
        return [rng.choice(LONG_PATHS) for _ in range(rng.randint(1, 3))]
    if pick == 9:
        return {"bytes": None, "path": rng.choice(LONG_PATHS)}
    if pick == 10:
        return [rng.choice((0, 1, -1, 2, 0.5, True, "1", None)) for _ in range(rng.randint(0, 4))]
    if pick == 11:
        return "[" + ", ".join(rng.choice(("'a'", "1", "'\\ud800'", "x", "[[[[", "'STEP1: a'")) for _ in range(3)) + "]"
    if pick == 12:
        return "STEP1: a\nSTEP2: b\n" * rng.choice((1, 5000))
    if pick == 13:
        return [{"role": rng.choice(("user", None, 3)), "content": rng.choice(("t", [], [{"type": "text"}], None))}]
    if pick == 14:
        return {"steps": rng.choice((["a"], "", None, [1])), "process_correctness": rng.choice(([1], [], "x"))}
    if pick == 15:
        return [{"steps": ["a"], "task_gt": [rng.choice((0, 1, 5))]}] * rng.randint(1, 3)
    if pick == 16:
        return "\x1b]0;" + "id" * rng.choice((1, 50_000)) + "\x07"
    if pick == 17:
        return list(range(rng.choice((3, 10_000))))
    if pick == 18:
        return {str(i): i for i in range(rng.choice((2, 5_000)))}
    if pick == 19:
        return Raw(json.dumps("a") + " " * 10)  # odd whitespace inside a row
    if pick == 20:
        return "\ufeff" + "bom inside"
    return rng.choice(("<image>\n", "hallucination", "recognition(text)", "others, wrong colour"))


def paths_in(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path into a row."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(prefix + (k,))
            out += paths_in(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append(prefix + (i,))
            out += paths_in(v, prefix + (i,))
    return out


def set_path(row: dict, path: tuple, value: Any) -> None:
    node: Any = row
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


def mutate_row(row: dict, rng: random.Random, parquet: bool) -> str:
    """Change one thing in ``row``; return what was done."""
    paths = paths_in(row)
    op = rng.randrange(6)
    if op == 0 and row:
        key = rng.choice(list(row))
        del row[key]
        return f"drop {key}"
    if op == 1 and row:
        key = rng.choice(list(row))
        row[rng.choice(("ID", "", key + " ", "\x1b", "id", "image", "video", "responses"))] = row.pop(key)
        return f"rename {key}"
    if op == 2:
        row[rng.choice(("meta", "id", "image", "images", "video", "extra\x00", "\ud800"))] = wild_value(rng)
        return "add key"
    path = rng.choice(paths) if paths else ("id",)
    value = wild_value(rng)
    if parquet and isinstance(value, Raw):
        value = value.text[:50]
    set_path(row, path, value)
    return f"set {'.'.join(map(str, path))[:40]}"


def dumps_row(row: Any, rng: random.Random) -> str:
    """JSON text for a row, with :class:`Raw` values spliced in."""
    raws: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, Raw):
            raws.append(value.text)
            return f"__RAW_{len(raws) - 1}__"
        if isinstance(value, bytes):
            return value.decode("latin-1")
        raise TypeError(type(value))

    text = json.dumps(row, ensure_ascii=rng.random() < 0.5, default=default)
    for i, raw in enumerate(raws):
        text = text.replace(f'"__RAW_{i}__"', raw, 1)
    return text


def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """File-level damage."""
    op = rng.randrange(12)
    lines = data.split(b"\n")
    if op == 0 and data:
        return data[: rng.randrange(len(data))], "truncate"
    if op == 1:
        return b"\xef\xbb\xbf" + data, "bom"
    if op == 2 and len(lines) > 1:
        i = rng.randrange(len(lines))
        lines[i] = b"\xef\xbb\xbf" + lines[i]
        return b"\n".join(lines), "bom inside"
    if op == 3:
        i = rng.randrange(len(lines))
        lines.insert(i, bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))))
        return b"\n".join(lines), "garbage line"
    if op == 4 and data:
        i = rng.randrange(len(data))
        return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[i:], "garbage bytes"
    if op == 5:
        return data.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass"), "utf-16"
    if op == 6:
        return data.replace(b"\n", b"\r\n"), "crlf"
    if op == 7 and len(lines) > 1:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return b"\n".join(lines), "duplicate line"
    if op == 8:
        return rng.choice((b"", b"\n\n", b"   ", b"[]\n", b"null\n", b'"x"\n', b"[1, 2]\n", b"{}\n")), "tiny file"
    if op == 9 and len(lines) > 1:
        i = rng.randrange(len(lines))
        if lines[i].startswith(b"{") and len(lines[i]) > 2:
            lines[i] = lines[i][:-1] + b', "id": "dup", "id": "dup2"}'
        return b"\n".join(lines), "duplicate key"
    if op == 10:
        return b"[" + b",".join(x for x in lines if x.strip()) + b"]", "one JSON array"
    return data + b"\n" + b" " * rng.choice((10, 100_000)) + b"\n", "long blank line"


def jsonl_case(target: str, rng: random.Random) -> Case:
    rows: list[Any] = seeds(target, rng)
    mutations = []
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
        i = rng.randrange(len(rows))
        mutations.append(f"row {i}: {mutate_row(rows[i], rng, parquet=False)}")
    if rng.random() < 0.1:  # a row repeating another's id with other content
        twin = copy.deepcopy(rows[0])
        if isinstance(twin, dict):
            twin["extra_field"] = "other"
        rows.append(twin)
        mutations.append("same identity, other content")
    array = target in ARRAY_TARGETS
    if array:
        text = "[\n" + ",\n".join(dumps_row(r, rng) for r in rows) + "\n]\n"
    else:
        text = "".join(dumps_row(r, rng) + "\n" for r in rows)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.35:
        data, what = mutate_bytes(data, rng)
        mutations.append(what)
    lines = [line for line in data.split(b"\n") if line.strip()]
    n_rows = sum(1 for line in lines if line.lstrip().startswith(b"{")) if array else len(lines)
    return Case(target, data, ".json" if array else ".jsonl", n_rows, mutations=mutations)


def parquet_case(target: str, rng: random.Random) -> Case:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = seeds(target, rng)
    mutations = []
    for _ in range(rng.choice((0, 1, 1, 2))):
        i = rng.randrange(len(rows))
        op = rng.randrange(5)
        if op == 0:
            rows[i]["image"] = rng.choice(
                (
                    {"bytes": b"not an image", "path": "x.png"},
                    {"bytes": b"", "path": rng.choice(LONG_PATHS)},
                    {"bytes": None, "path": None},
                    {"bytes": MP4, "path": "v.mp4"},
                    {"bytes": b"\x89PNG" + b"\x00" * 10, "path": "\x1b]0;x\x07"},
                )
            )
            mutations.append("image")
        else:
            mutations.append(f"row {i}: {mutate_row(rows[i], rng, parquet=True)}")
    extra_columns = rng.random() < 0.3
    try:
        table = pa.Table.from_pylist(rows)
        if extra_columns:
            n = table.num_rows
            column = rng.choice(
                (
                    pa.array([b"\x00\x01"] * n, pa.binary()),
                    pa.array([None] * n, pa.null()),
                    pa.array([2**64 - 1] * n, pa.uint64()),
                    pa.array([[[[1]]]] * n),
                    pa.array([{"k": b"v"}] * n),
                    pa.array([[("a", 1)]] * n, pa.map_(pa.string(), pa.int64())),
                    pa.array([1] * n, pa.duration("s")),
                    pa.array([0] * n, pa.date32()),
                    pa.array(["\x1b]0;x\x07"] * n),
                )
            )
            table = table.append_column(rng.choice(("extra", "image", "images", "id", "meta", "\x1b")), column)
            mutations.append(f"column {column.type}")
    except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeEncodeError, RecursionError):
        table = pa.Table.from_pylist(seeds(target, rng))  # the mutation does not fit a column: no mutation
        mutations = []
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    data = buffer.getvalue()
    if rng.random() < 0.15:
        cut = rng.randrange(len(data))
        data = data[:cut] if rng.random() < 0.5 else data[:cut] + b"\x00garbage" + data[cut + 8 :]
        mutations.append("damaged file")
    return Case(target, data, ".parquet", table.num_rows, mutations=mutations)


MAP_FIELDS = ("id", "prompt", "question", "query", "image", "images", "video", "chosen", "responses", "steps")
MAP_KEYS = ("question", "meta.0", "id.0.1", "a" * 300, "\x1b]0;x\x07", "response.steps", "image", "\u202e")


def make_case(target: str, rng: random.Random) -> Case:
    case = parquet_case(target, rng) if target.startswith("parquet") else jsonl_case(target, rng)
    roll = rng.random()
    if roll < 0.3:
        case.fmt = FORMAT_OF[target]
    elif roll < 0.4:
        case.fmt = rng.choice(sorted(FORMATS))
    if rng.random() < 0.1:
        case.args += ["--allow-outside-media"]
    if rng.random() < 0.1:
        case.args += ["--map", f"{rng.choice(MAP_FIELDS)}={rng.choice(MAP_KEYS)}"]
    return case


def cases(seed: int, per_target: int) -> list[Case]:
    rng = random.Random(seed)
    return [make_case(target, rng) for _ in range(per_target) for target in TARGETS]


# -- running a case ---------------------------------------------------------------------------


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def run_import(case: Case, workdir: Path, db: Path, index: int) -> Outcome:
    source = workdir / f"case{index}{case.suffix}"
    source.write_bytes(case.data)
    argv = ["import", str(source), "--db", str(db)]
    if case.fmt:
        argv += ["--format", case.fmt]
    argv += case.args
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    source.unlink()
    return Outcome(code, out.getvalue(), err.getvalue())


def media_folder(workdir: Path) -> None:
    (workdir / "img").mkdir()
    (workdir / "img" / "ok.png").write_bytes(PNG)
    (workdir / "img" / "not-an-image.png").write_bytes(b"#!/bin/sh\n")
    (workdir / "images" / "povid").mkdir(parents=True)
    (workdir / "images" / "povid" / "ok.png").write_bytes(PNG)
    (workdir / "vid").mkdir()
    (workdir / "vid" / "ok.mp4").write_bytes(MP4)


def project_items(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute("SELECT count(*) FROM items").fetchone()[0]
    finally:
        conn.close()


COUNTS = re.compile(r": (\d+) added, (\d+) unchanged, (\d+) conflicting")
DUPLICATES = re.compile(r"(\d+) identical duplicates skipped")
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MAX_ERR = 20_000
MAX_LINE = 1_000


def check_case(case: Case, workdir: Path, db: Path, index: int) -> None:
    """Run one case and assert everything the module docstring promises."""
    fresh = index % 4 == 0  # a quarter go into a new project, the rest into one with items
    target_db = workdir / f"fresh{index}.pairscope" if fresh else db
    before = 0 if fresh else project_items(db)
    result = run_import(case, workdir, target_db, index)
    where = f"case {index} ({case.target}, --format {case.fmt} {case.args}, {case.mutations})"
    assert "Traceback" not in result.err, where
    assert result.code in (0, 1), f"{where}: exit {result.code}\n{result.err[:2000]}"
    assert len(result.err) <= MAX_ERR, f"{where}: {len(result.err)} characters on stderr"
    for line in result.err.splitlines() + result.out.splitlines():
        assert len(line) <= MAX_LINE, f"{where}: a {len(line)}-character line: {line[:200]!r}"
        assert not RAW_CONTROL.search(line), f"{where}: raw control character in {line[:200]!r}"
    if result.code == 1:
        assert result.err.startswith("error: nothing imported."), f"{where}: {result.err[:500]!r}"
        assert f"case{index}{case.suffix}" in result.err, f"{where}: the file is not named: {result.err[:500]!r}"
        if fresh:
            assert not target_db.exists(), f"{where}: a failed import left a new project behind"
        else:
            assert project_items(db) == before, f"{where}: a failed import changed the project"
        return
    counts = COUNTS.search(result.out)
    assert counts, f"{where}: {result.out[:500]!r}"
    added, unchanged, conflicting = map(int, counts.groups())
    duplicates = DUPLICATES.search(result.out)
    identical = int(duplicates.group(1)) if duplicates else 0
    assert added + unchanged + conflicting + identical == case.rows, f"{where}: {result.out[:500]!r}"
    assert project_items(target_db) == before + added, where
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target_db}{suffix}").unlink(missing_ok=True)


def run_cases(tmp_path: Path, seed: int, per_target: int) -> int:
    workdir = tmp_path / "data"
    workdir.mkdir()
    media_folder(workdir)
    db = tmp_path / "project.pairscope"
    baseline = workdir / "baseline.jsonl"
    baseline.write_text(json.dumps({"id": "base", "prompt": "P", "chosen": "a", "rejected": "b"}) + "\n")
    assert main(["import", str(baseline), "--db", str(db)]) == 0
    all_cases = cases(seed, per_target)
    for index, case in enumerate(all_cases):
        check_case(case, workdir, db, index)
    return len(all_cases)


def test_the_generator_is_deterministic_and_covers_every_format():
    first, second = cases(7, 3), cases(7, 3)
    assert [c.data for c in first] == [c.data for c in second]
    assert {FORMAT_OF[t] for t in TARGETS} == set(FORMATS)


def test_fuzzed_imports_fast_set(tmp_path, monkeypatch):
    monkeypatch.delenv("PAIRSCOPE_DEBUG", raising=False)
    assert run_cases(tmp_path, seed=1, per_target=40) == 40 * len(TARGETS)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_fuzzed_imports_slow_set(tmp_path, monkeypatch, seed):
    monkeypatch.delenv("PAIRSCOPE_DEBUG", raising=False)
    assert run_cases(tmp_path, seed=seed, per_target=100) == 100 * len(TARGETS)


if __name__ == "__main__":  # pragma: no cover - the report's figures: python tests/test_fuzz_import.py
    import sys
    import tempfile
    from collections import Counter

    os.environ.pop("PAIRSCOPE_DEBUG", None)
    totals: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    runs = [(1, 40), (2, 100), (3, 100), (4, 100)]  # the fast set, then the slow set
    for seed, per_target in runs:
        with tempfile.TemporaryDirectory() as tmp:
            workdir, db = Path(tmp) / "data", Path(tmp) / "project.pairscope"
            workdir.mkdir()
            media_folder(workdir)
            (workdir / "b.jsonl").write_text(json.dumps({"id": "b", "prompt": "P", "chosen": "a", "rejected": "b"}))
            with contextlib.redirect_stdout(io.StringIO()):
                main(["import", str(workdir / "b.jsonl"), "--db", str(db)])
            for index, case in enumerate(cases(seed, per_target)):
                totals["cases"] += 1
                try:
                    check_case(case, workdir, db, index)
                except AssertionError as exc:  # exit 70, unbounded or raw output, not all-or-nothing
                    totals["assertion"] += 1
                    kinds["assert: " + str(exc).split("]): ", 1)[-1][:70]] += 1
                except BaseException as exc:  # a traceback the user would have seen
                    totals["traceback"] += 1
                    kinds[f"{type(exc).__name__}: {str(exc)[:60]}"] += 1
                for stale in workdir.glob("fresh*"):
                    stale.unlink()
    print(dict(totals), file=sys.stderr)
    for kind, n in kinds.most_common(30):
        print(f"{n:6d}  {kind!r}", file=sys.stderr)
