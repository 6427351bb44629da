"""Length bias on a hand-built dataset: the difference histogram, longer-response preference
and word-count quartiles."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pairscope.app.stats.data import BOTH_BAD, TIE, RunData, StatsData
from pairscope.app.stats.length_bias import (
    diff_histogram,
    length_report,
    longer_preference,
    quartiles,
)
from pairscope.app.store import RunRecord

NAN = np.nan

#                 words          ref   responses   (chosen − rejected) / chosen
ROWS = [
    ([10, 5], 0, 2),  # 0:  0.5
    ([10, 20], 1, 2),  # 1:  0.5
    ([4, 4], 1, 2),  # 2:  0 (equal lengths)
    ([2, 10], 0, 2),  # 3: −4, clipped into the first bin
    ([0, 3], 0, 2),  # 4: chosen has no words → left out
    ([8, 2], NAN, 2),  # 5: no reference
    ([8, 2], 0, 3),  # 6: three responses
    ([5, NAN], 0, 2),  # 7: a response without a word count
    ([3, 6], 1, 2),  # 8:  0.5
    ([7, NAN], NAN, 1),  # 9: a single response
]


def record(run_id, mode="pairwise"):
    return RunRecord(
        id=run_id,
        uuid="u",
        created_at="",
        backend="fake",
        model_path="m",
        weights_hash=None,
        template_name=None,
        template_text="",
        template_hash="t",
        mode=mode,
        k=1,
        both_orders=False,
        frames=8,
        seed=0,
        generation={},
        status="done",
    )


def make_data(runs=(), labels=None):
    n = len(ROWS)
    labels = labels or {}
    return StatsData(
        np.arange(n),
        np.array(["general"] * n, dtype=object),
        np.array([r[2] for r in ROWS]),
        np.array([r[1] for r in ROWS], float),
        [()] * n,
        np.arange(1, n + 1, dtype=float),
        np.array([r[0] for r in ROWS], float),
        sorted(labels),
        labels,
        list(runs),
    )


def one_sample_run(run_id, choices, mode="pairwise"):
    c = np.array(choices, float)[:, None]
    return RunData(record(run_id, mode), c, np.zeros_like(c), ~np.isnan(c), ~np.isnan(c))


def test_diff_histogram_counts_edges_and_guards():
    h = diff_histogram(make_data(), bins=4)
    assert h["edges"] == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert h["counts"] == [1, 0, 1, 3]
    assert (h["n"], h["clipped"], h["zero_chosen"]) == (5, 1, 1)
    assert h["mean"] == pytest.approx(-0.5) and h["median"] == 0.5  # of the unclipped ratios


def test_diff_histogram_default_bins_centre_zero():
    h = diff_histogram(make_data())
    assert len(h["counts"]) == 21 and len(h["edges"]) == 22 and sum(h["counts"]) == 5
    assert h["edges"][10] < 0 < h["edges"][11] and h["counts"][10] == 1  # the equal-length pair
    assert h["counts"][0] == 1 and h["counts"][15] == 3


def test_diff_histogram_of_another_labelling_and_of_nothing():
    h = diff_histogram(make_data(), chosen=np.array([1, 0, TIE, 1, NAN, NAN, NAN, NAN, BOTH_BAD, NAN]))
    assert h["n"] == 3 and h["clipped"] == 0  # exactly −1 is inside the range
    assert h["mean"] == pytest.approx((-1.0 - 1.0 + 0.8) / 3)
    empty = diff_histogram(make_data(), chosen=np.full(len(ROWS), NAN))
    assert empty["n"] == 0 and empty["mean"] is None and empty["median"] is None and sum(empty["counts"]) == 0


def test_longer_preference():
    data = make_data()
    # eligible (two responses, both counted, unequal): 0 (longer 0), 1 (1), 3 (1), 4 (1), 5 (0), 8 (1)
    choices = np.array([0, 0, 1, 1, 0, TIE, 0, 0, 1, NAN])
    assert longer_preference(choices, data) == pytest.approx(3 / 5)  # 0 ✓, 1 ✗, 3 ✓, 4 ✗, 8 ✓
    assert longer_preference(np.array([0, 1, 0, 1, 1, 0, 1, 1, 1, 1.0]), data) == 1.0
    assert longer_preference(np.full(len(ROWS), BOTH_BAD), data) is None
    assert longer_preference(np.full(len(ROWS), NAN), data) is None


def test_quartiles_are_linear_percentiles():
    q = quartiles(make_data())
    assert q["query_words"] == [3.25, 5.5, 7.75]  # 1..10
    # the 18 counted response words sorted: 0 2 2 2 3 3 4 4 5 5 6 7 8 8 10 10 10 20
    assert q["response_words"] == [3.0, 5.0, 8.0]


def test_length_report_is_json_ready():
    runs = [one_sample_run(1, [0, 0, 1, 1, 0, 0, 0, 0, 1, NAN]), one_sample_run(2, [0] * 10, mode="step")]
    labels = {"ann": np.array([0, 1, 1, 1, 1, TIE, NAN, 0, 1, NAN]), "bob": np.full(10, BOTH_BAD)}
    report = length_report(make_data(runs, labels))
    assert report["query_words"] == [3.25, 5.5, 7.75] and report["response_words"] == [3.0, 5.0, 8.0]
    assert report["diff_hist"]["n"] == 5 and report["diff_hist"]["mean"] == pytest.approx(-0.5)
    # run 1: 0 ✓, 1 ✗, 3 ✓, 4 ✗, 5 ✓ (no reference needed), 8 ✓; step runs have no verdicts
    assert report["judge_longer"] == {"1": pytest.approx(4 / 6), "2": None}
    assert report["annotator_longer"] == {"ann": 1.0, "bob": None}  # ann: 0, 1, 3, 4, 8
    assert json.loads(json.dumps(report, allow_nan=False)) == report
