"""Each benchmark of issue 30 runs at a small size and measures something: a bench that
silently times an empty table, a failed import or nothing at all fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run_bench(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def figure(text: str, pattern: str) -> float:
    match = re.search(pattern, text)
    assert match, f"no {pattern!r} in:\n{text}"
    return float(match.group(1).replace(",", ""))


def test_import_bench_imports_every_row_and_reports_its_floor(tmp_path):
    out = run_bench("import_bench.py", "--items", "300", "--runs", "1", "--no-reimport", "--sql-alone")
    assert "300 added" in out
    assert figure(out, r"schema's SQL alone: +median ([\d.]+) s") > 0
    assert figure(out, r"import \(whole process\): median ([\d.]+) s") > 0
    assert figure(out, r"floor  \(whole process\): median ([\d.]+) s") > 0
    assert figure(out, r"peak memory: +import (\d+) MB") > 20  # a real process, measured
    assert figure(out, r"\(([\d,]+) bytes/item\)") > 100


def test_stats_bench_opens_computes_and_reports_its_floor(tmp_path):
    out = run_bench("stats_bench.py", "--items", "300", "--runs", "1", "--bootstrap", "5")
    assert figure(out, r"stats, open \+ compute: median ([\d.]+) s") > 0
    assert figure(out, r"floor .*?: median ([\d.]+) s") > 0
    assert "ratio:" in out and "first opening" in out


def test_filter_bench_times_no_empty_filter(tmp_path):
    out = run_bench("filter_bench.py", "--items", "2000", "--runs", "1")
    rows = dict(
        (m.group(1), int(m.group(2)))
        for m in (re.match(r"^(\S.*?) +(\d+) +[\d.]+ms", line) for line in out.splitlines())
        if m
    )
    assert len(rows) >= 25, out
    judge = {name: n for name, n in rows.items() if name.startswith("judge")}
    assert len(judge) >= 5 and all(judge.values()), judge  # verdicts recorded through the judge layer
    assert "slowest filter:" in out


def test_annotation_bench_paints_real_items_against_its_baselines():
    out = run_bench("annotation_bench.py", "--quick", "--only", "cold", "--only", "next")
    assert figure(out, r"bare window: median ([\d.]+) s") > 0
    assert figure(out, r"PairScope: +median ([\d.]+) s") > 0
    assert figure(out, r"whole app: +median ([\d.]+) s") > 0
    assert "torch_imported=False" in out
    assert figure(out, r"raw decode: +median ([\d.]+) ms") > 1  # a real 12 MP JPEG decoded
    hits = re.search(r"prefetch: .*?cache hits (\d+)/(\d+)", out)
    assert hits and int(hits.group(2)) > 0 and hits.group(1) == hits.group(2), out  # each step was measured
    assert figure(out, r"no prefetch: +p95 ([\d.]+) ms") > figure(out, r"prefetch: +p95 ([\d.]+) ms")
