"""The statistics' fourth-pass shortcuts (issue 30) give exactly what the plain paths give:
decisions counted column by column are ``argmax``'s; the Wilson interval written out is
statsmodels' to the bit; a judge-human kappa by ``bincount`` is ``cohen_pairs``' (and
scikit-learn's); error tags read per kind keep each item's tags in their order; the report's
length and calibration sections reuse the runs' official verdicts without changing them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from helpers import fake_run
from pairscope.app.judge.votes import decide_counts, wilson_ci
from pairscope.app.records import ErrorTag, Item, Reference, Response
from pairscope.app.stats.agreement import _pair_kappa, cohen_pairs, judge_human_kappa
from pairscope.app.stats.calibration import calibration_report
from pairscope.app.stats.data import BOTH_BAD, TIE, load_stats_data
from pairscope.app.stats.length_bias import length_report
from pairscope.app.stats.report import _category_counts, compute_stats
from pairscope.app.store import VerdictRecord


def _decide_by_argmax(counts: np.ndarray, convention: str, planned) -> np.ndarray:
    out = np.full(counts.shape[0], np.nan)
    if counts.shape[1] == 0:
        return out
    top, winner = counts.max(axis=1), counts.argmax(axis=1)
    if convention == "official":
        decided = (top > 0) & (2 * top > np.asarray(planned))
    else:
        decided = (top > 0) & ((counts == top[:, None]).sum(axis=1) == 1)
    out[decided] = winner[decided]
    return out


@pytest.mark.parametrize("width", [0, 1, 2, 3, 5, 16, 17, 40])
def test_decisions_counted_by_column_are_argmaxs(width):
    rng = np.random.default_rng(width)
    for dtype in (np.int32, np.int64):
        counts = rng.integers(0, 4, (500, width)).astype(dtype)
        for planned in (rng.integers(0, 9, 500).astype(np.int32), 3):
            for convention in ("official", "plurality"):
                got = decide_counts(counts, convention, planned)
                assert np.array_equal(got, _decide_by_argmax(counts, convention, planned), equal_nan=True)


def test_the_wilson_interval_is_statsmodels_to_the_bit():
    from statsmodels.stats.proportion import proportion_confint

    rng = random.Random(4)
    cases = [(0, 1), (1, 1), (0, 7), (7, 7), (2.5, 9), (99_999, 100_000), (1, 100_000)]
    cases += [(rng.randint(0, n), n) for n in (rng.randint(1, 200_000) for _ in range(2000))]
    cases += [(rng.randint(0, 2 * n) / 2, n) for n in (rng.randint(1, 500) for _ in range(500))]
    for successes, n in cases:
        count = int(successes) if float(successes).is_integer() else float(successes)
        low, high = proportion_confint(count, n, alpha=0.05, method="wilson")
        assert wilson_ci(successes, n) == [float(low), float(high)]
    low, high = proportion_confint(3, 10, alpha=0.1, method="wilson")  # another alpha: statsmodels itself
    assert wilson_ci(3, 10, alpha=0.1) == [float(low), float(high)]
    assert wilson_ci(0, 0) is None


def test_judge_human_kappa_by_bincount_is_cohen_pairs():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(2)
    for trial in range(60):
        n = int(rng.integers(0, 400))
        judge = rng.choice([0.0, 1.0, 2.0, np.nan], n, p=[0.4, 0.3, 0.1, 0.2])
        human = rng.choice([0.0, 1.0, TIE, BOTH_BAD, np.nan], n)
        if trial % 7 == 0:
            judge = np.where(np.isnan(judge), np.nan, 1.0)  # one category: kappa undefined (NaN)
        got = judge_human_kappa(judge, {"ann": human})["ann"]
        want = cohen_pairs({"\0judge": judge, "ann": human})[("\0judge", "ann")]
        assert got == want or (np.isnan(got) and np.isnan(want))
        both = ~np.isnan(judge) & ~np.isnan(human)
        if len(np.unique(np.concatenate([judge[both], human[both]]))) > 1:
            assert got == pytest.approx(cohen_kappa_score(judge[both], human[both]), abs=1e-12)
    assert _pair_kappa(np.array([0.5, 1.0]), np.array([1.0, 1.0])) is None  # not integer codes: the plain path
    assert _pair_kappa(np.array([-9.0, 1.0]), np.array([1.0, 1.0])) is None
    odd = judge_human_kappa(np.array([0.5, 1.0, 0.5]), {"ann": np.array([0.5, 1.0, 1.0])})["ann"]
    assert (
        odd == cohen_pairs({"\0judge": np.array([0.5, 1.0, 0.5]), "ann": np.array([0.5, 1.0, 1.0])})[("\0judge", "ann")]
    )


def test_error_tags_read_per_kind_keep_each_items_order(store):
    kinds = ("existence", "counting", "attribute", "other")
    rng = random.Random(6)
    tag_lists = [tuple(rng.choice(kinds) for _ in range(rng.choice([0, 1, 1, 2, 3, 4]))) for _ in range(60)]
    store.add_items(
        [
            Item(
                ext_id=f"i{k}",
                prompt="q",
                responses=(Response(0, "a"), Response(1, "b")),
                reference=Reference(ranking=(0, 1), error_tags=tuple(ErrorTag(t) for t in tags)),
            )
            for k, tags in enumerate(tag_lists)
        ]
    )
    data = load_stats_data(store)
    by_ext = dict(store.query("SELECT id, ext_id FROM items"))
    assert [tag_lists[int(by_ext[int(i)][1:])] for i in data.item_ids] == data.error_kinds


def test_the_reports_length_and_calibration_reuse_the_official_verdicts(store):
    store.add_items(
        [
            Item(
                ext_id=f"i{k}",
                prompt="q",
                responses=(Response(0, "a " * k), Response(1, "b")),
                reference=Reference(ranking=(k % 2, 1 - k % 2)),
            )
            for k in range(30)
        ]
    )
    ids = [int(r[0]) for r in store.query("SELECT id FROM items ORDER BY id")]
    run = fake_run(store, k=3)
    rng = random.Random(1)
    verdicts = [
        VerdictRecord(
            run.id, i, s, (0, 1), "x", rng.choice([0, 1, None]), None, rng.random() < 0.9, None, confidence=rng.random()
        )
        for i in ids
        for s in range(3)
    ]
    store.add_verdicts(verdicts)
    data = load_stats_data(store)
    report = compute_stats(store, bootstrap=0, data=data)
    assert report["length"] == length_report(data)
    assert report["calibration"] == calibration_report(data, data.runs)
    assert report["calibration"][str(run.id)]["n"] > 0


def test_category_counts_in_first_appearance_order():
    assert _category_counts(np.array(["b", "a", "b"], dtype=object)) == {"b": 2, "a": 1}
    assert list(_category_counts(np.array(["b", "a", "b", "c"], dtype=object))) == ["b", "a", "c"]
    assert _category_counts(np.array([1, "1", None], dtype=object)) == {"1": 2, "None": 1}  # counted as str
