"""Agreement statistics: every number against its reference implementation, called directly."""

from __future__ import annotations

import json
import time
import warnings
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from pairscope.app.stats import agreement as ag
from pairscope.app.stats.data import BOTH_BAD, TIE, StatsData

NAN = np.nan


def make_data(labels, n_responses=None, ref=None, categories=None) -> StatsData:
    n = len(next(iter(labels.values()))) if labels else len(ref)
    return StatsData(
        item_ids=np.arange(n),
        categories=np.array(categories or ["c"] * n, dtype=object),
        n_responses=np.full(n, 2) if n_responses is None else np.asarray(n_responses),
        ref_chosen=np.full(n, NAN) if ref is None else np.asarray(ref, float),
        error_kinds=[()] * n,
        query_words=np.zeros(n),
        response_words=np.zeros((n, 2)),
        annotators=sorted(labels),
        labels=labels,
    )


def random_labels(rng, n_items, n_annotators, values=(0.0, 1.0, TIE, BOTH_BAD), missing=0.3):
    values = np.asarray(values)
    probabilities = rng.dirichlet(np.ones(len(values)))
    truth = rng.choice(values, n_items, p=probabilities)
    out = {}
    for i in range(n_annotators):
        own = np.where(rng.random(n_items) < 0.6, truth, rng.choice(values, n_items, p=probabilities))
        out[f"ann{i}"] = np.where(rng.random(n_items) < missing, NAN, own)
    return out


# ---- references, called directly -------------------------------------------------------------


def ref_cohen(x, y):
    both = ~np.isnan(x) & ~np.isnan(y)
    if not both.any():
        return NAN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns, then returns NaN, when kappa is undefined
        return cohen_kappa_score(x[both], y[both])


def ref_fleiss(labels):
    matrix = np.column_stack(list(labels.values()))
    full = matrix[~np.isnan(matrix).any(1)]
    if not len(full):
        return NAN
    with np.errstate(all="ignore"):
        return fleiss_kappa(aggregate_raters(full)[0], method="fleiss")


def ref_alpha(labels):
    data = np.vstack(list(labels.values()))
    try:
        with np.errstate(all="ignore"):
            return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    except ValueError:  # one value in the domain, or no unit with two values: undefined
        return NAN


def ref_percent(labels):
    """Brute force: per item with ≥ 2 labels, agreeing pairs / pairs; mean over items."""
    matrix = np.column_stack(list(labels.values()))
    fractions = []
    for row in matrix:
        row = row[~np.isnan(row)]
        if len(row) >= 2:
            pairs = list(combinations(row, 2))
            fractions.append(sum(a == b for a, b in pairs) / len(pairs))
    return np.mean(fractions) if fractions else NAN


def ref_pair_percent(x, y):
    both = ~np.isnan(x) & ~np.isnan(y)
    return np.mean(x[both] == y[both]) if both.any() else NAN


def assert_close(actual, expected):
    assert np.isclose(actual, expected, rtol=0, atol=1e-9, equal_nan=True), (actual, expected)


def assert_all_match_references(labels):
    names = list(labels)
    kappas = ag.cohen_pairs(labels)
    percents = ag.percent_pairs(labels)
    assert list(kappas) == list(combinations(names, 2)) == list(percents)
    for a, b in combinations(names, 2):
        assert_close(kappas[(a, b)], ref_cohen(labels[a], labels[b]))
        assert_close(percents[(a, b)], ref_pair_percent(labels[a], labels[b]))
    defined = [k for k in (ref_cohen(labels[a], labels[b]) for a, b in combinations(names, 2)) if not np.isnan(k)]
    assert_close(ag.cohen_mean(labels), np.mean(defined) if defined else NAN)
    assert_close(ag.fleiss(labels), ref_fleiss(labels))
    assert_close(ag.krippendorff_alpha(labels), ref_alpha(labels))
    assert_close(ag.percent_agreement(labels), ref_percent(labels))


# ---- equality with the references ------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_every_statistic_equals_its_reference_on_random_data(seed):
    rng = np.random.default_rng(seed)
    values = [(0.0, 1.0), (0.0, 1.0, TIE, BOTH_BAD), (0.0, 1.0, 2.0, 3.0, TIE)][seed % 3]
    labels = random_labels(
        rng, int(rng.integers(20, 400)), int(rng.integers(2, 6)), values, missing=float(rng.uniform(0, 0.6))
    )
    assert_all_match_references(labels)


def test_strict_variant_equals_references_on_strict_data_only():
    rng = np.random.default_rng(7)
    labels = random_labels(rng, 300, 4, (0.0, 1.0, 2.0, TIE, BOTH_BAD), missing=0.2)
    n_responses = rng.choice([2, 3], 300, p=[0.8, 0.2])
    strict = ag.strict_labels(labels, n_responses)
    for name, coded in labels.items():
        keep = (n_responses == 2) & np.isin(coded, [0.0, 1.0])
        np.testing.assert_array_equal(strict[name], np.where(keep, coded, NAN))
    assert_all_match_references(strict)

    report = ag.agreement_report(make_data(labels, n_responses), bootstrap=0)["strict"]
    assert_close(report["fleiss"], ref_fleiss(strict))
    assert_close(report["krippendorff_alpha"], ref_alpha(strict))
    assert_close(report["cohen_pairs"]["ann0|ann1"], ref_cohen(strict["ann0"], strict["ann1"]))


def test_many_annotators_with_sparse_labels_still_match():
    # 30 annotators × 5 codes overflows a single mixed-radix row key, exercising re-densifying
    rng = np.random.default_rng(3)
    labels = random_labels(rng, 150, 30, (0.0, 1.0, 2.0, TIE, BOTH_BAD), missing=0.05)
    p = ag._Profiles(labels)
    assert len(p.codes) == len(
        {tuple(r) for r in np.column_stack(list(labels.values())).tolist() if sum(not np.isnan(v) for v in r) >= 2}
    )
    assert_close(ag.krippendorff_alpha(labels), ref_alpha(labels))
    assert_close(ag.percent_agreement(labels), ref_percent(labels))
    assert_close(ag.fleiss(labels), ref_fleiss(labels))
    kappas = ag.cohen_pairs(labels)
    for a, b in list(kappas)[::37]:
        assert_close(kappas[(a, b)], ref_cohen(labels[a], labels[b]))


# ---- hand-worked examples from the references' documentation ---------------------------------


def test_fleiss_1971_wikipedia_example_is_0_210():
    table = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    # 14 raters: rater j gives subject i the j-th of its 14 sorted ratings
    ratings = np.array([np.repeat(np.arange(5), row) for row in table], dtype=float)
    labels = {f"r{j}": ratings[:, j] for j in range(14)}
    assert round(fleiss_kappa(table), 3) == 0.210
    assert_close(ag.fleiss(labels), fleiss_kappa(table))
    assert round(ag.fleiss(labels), 3) == 0.210


def test_krippendorff_readme_example_nominal_is_0_691():
    data = [
        [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
        [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
        [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
    ]
    labels = {name: np.array(row, float) for name, row in zip("ABC", data)}
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert round(expected, 6) == 0.691358
    assert_close(ag.krippendorff_alpha(labels), expected)


def test_cohen_wikipedia_example_is_0_4():
    # 50 proposals: both yes 20, A yes / B no 5, A no / B yes 10, both no 15 → p_o 0.7, p_e 0.5
    a = np.array([1] * 25 + [0] * 25, float)
    b = np.array([1] * 20 + [0] * 5 + [1] * 10 + [0] * 15, float)
    assert_close(cohen_kappa_score(a, b), 0.4)
    assert_close(ag.cohen_pairs({"A": a, "B": b})[("A", "B")], 0.4)
    assert_close(ag.percent_agreement({"A": a, "B": b}), 0.7)


def test_perfect_agreement_is_one_everywhere():
    codes = np.array([0, 1, TIE, BOTH_BAD, 1, 0, 0, 1], float)
    labels = {"a": codes, "b": codes.copy(), "c": codes.copy()}
    labels["c"][2] = NAN  # a missing label does not break perfect agreement
    assert ag.percent_agreement(labels) == 1.0
    assert all(np.isclose(k, 1.0) for k in ag.cohen_pairs(labels).values())
    assert np.isclose(ag.cohen_mean(labels), 1.0)
    assert np.isclose(ag.fleiss(labels), 1.0)
    assert np.isclose(ag.krippendorff_alpha(labels), 1.0)


def test_undefined_statistics_are_nan_not_errors():
    same = {"a": np.zeros(5), "b": np.zeros(5)}  # one category only: chance agreement is 1
    assert ag.percent_agreement(same) == 1.0
    assert np.isnan(ag.cohen_mean(same)) and np.isnan(ag.fleiss(same)) and np.isnan(ag.krippendorff_alpha(same))
    disjoint = {"a": np.array([0, 1, NAN, NAN]), "b": np.array([NAN, NAN, 0, 1])}
    assert np.isnan(ag.cohen_pairs(disjoint)[("a", "b")]) and np.isnan(ag.percent_agreement(disjoint))
    assert np.isnan(ag.fleiss({"a": np.array([0, 1.0])}))


# ---- the report --------------------------------------------------------------------------------


def assert_plain_json(value):
    """Only dict/list/str/int/float/bool/None, no NaN, no numpy scalars."""
    if isinstance(value, dict):
        assert all(isinstance(k, str) for k in value)
        for v in value.values():
            assert_plain_json(v)
    elif isinstance(value, list):
        for v in value:
            assert_plain_json(v)
    else:
        assert value is None or type(value) in (str, int, float, bool), type(value)
        assert not (isinstance(value, float) and np.isnan(value))


def test_report_keys_values_and_json():
    rng = np.random.default_rng(11)
    labels = random_labels(rng, 200, 3, missing=0.2)
    data = make_data(labels, ref=rng.choice([0.0, 1.0, NAN], 200), categories=list(rng.choice(["x", "y"], 200)))
    report = ag.agreement_report(data, bootstrap=300, seed=5)
    assert_plain_json(report)
    json.dumps(report, allow_nan=False)
    for key in (
        "percent",
        "cohen_pairs",
        "cohen_mean",
        "fleiss",
        "krippendorff_alpha",
        "ci",
        "n_items",
        "annotators",
        "strict",
        "flip_rate",
    ):
        assert key in report
    assert report["annotators"] == ["ann0", "ann1", "ann2"] and report["variant"] == "all"
    assert set(report["cohen_pairs"]) == {"ann0|ann1", "ann0|ann2", "ann1|ann2"}
    assert_close(report["cohen_pairs"]["ann1|ann2"], ref_cohen(labels["ann1"], labels["ann2"]))
    assert_close(report["fleiss"], ref_fleiss(labels))
    assert_close(report["krippendorff_alpha"], ref_alpha(labels))
    assert_close(report["percent"], ref_percent(labels))
    matrix = np.column_stack(list(labels.values()))
    assert report["n_items"] == int(((~np.isnan(matrix)).sum(1) >= 2).sum())
    for stat in ("percent", "cohen_mean", "fleiss", "krippendorff_alpha"):
        low, high = report["ci"][stat]
        assert low <= report[stat] <= high
    for pair, (low, high) in report["ci"]["cohen_pairs"].items():
        assert low <= report["cohen_pairs"][pair] <= high
    assert set(report["strict"]) >= {
        "percent",
        "cohen_pairs",
        "cohen_mean",
        "fleiss",
        "krippendorff_alpha",
        "ci",
        "n_items",
        "annotators",
    }
    assert report["strict"]["n_items"] < report["n_items"]

    strict_top = ag.agreement_report(data, strict=True, bootstrap=300, seed=5)
    assert strict_top["variant"] == "strict"
    assert strict_top["fleiss"] == report["strict"]["fleiss"] and strict_top["ci"] == report["strict"]["ci"]


def test_strict_report_drops_ties_and_both_bad():
    # The annotators agree only on ties/both-bad; on strict preferences they always disagree.
    a = np.array([TIE, BOTH_BAD, TIE, 0, 1, 0, 1], float)
    b = np.array([TIE, BOTH_BAD, TIE, 1, 0, 1, 0], float)
    report = ag.agreement_report(make_data({"a": a, "b": b}), bootstrap=0)
    assert report["percent"] == pytest.approx(3 / 7)
    assert report["strict"]["n_items"] == 4 and report["strict"]["percent"] == 0.0
    assert_close(report["strict"]["cohen_pairs"]["a|b"], ref_cohen(a[3:], b[3:]))
    assert report["strict"]["cohen_pairs"]["a|b"] == pytest.approx(-1.0)
    # a 3-response item is not an A/B preference either
    three = ag.agreement_report(make_data({"a": a, "b": b}, n_responses=[2, 2, 2, 3, 2, 2, 2]), bootstrap=0)
    assert three["strict"]["n_items"] == 3


@pytest.mark.parametrize("labels", [{}, {"solo": np.array([0, 1, TIE, NAN])}])
def test_fewer_than_two_annotators_gives_none(labels):
    data = make_data(labels, ref=[0, 1, 0, NAN], categories=["a", "a", "b", "b"])
    report = ag.agreement_report(data)
    for block in (report, report["strict"]):
        for stat in ("percent", "cohen_mean", "fleiss", "krippendorff_alpha"):
            assert block[stat] is None and block["ci"][stat] is None
        assert block["cohen_pairs"] == {} and block["n_items"] == 0
    assert report["annotators"] == list(labels)
    json.dumps(report, allow_nan=False)
    if labels:
        assert report["flip_rate"]["annotators"]["solo"]["n"] == 2


# ---- bootstrap ---------------------------------------------------------------------------------


def test_bootstrap_ci_contains_estimate_and_is_reproducible():
    labels = random_labels(np.random.default_rng(2), 400, 3, missing=0.25)
    for fn in (ag.percent_agreement, ag.cohen_mean, ag.fleiss, ag.krippendorff_alpha):
        low, high = ag.bootstrap_ci(fn, labels, n=500, seed=9)
        assert low < fn(labels) < high
        assert ag.bootstrap_ci(fn, labels, n=500, seed=9) == (low, high)
        assert ag.bootstrap_ci(fn, labels, n=500, seed=10) != (low, high)


def test_bootstrap_weights_are_exact_recomputations_on_resampled_items():
    """A resample as profile weights gives exactly the references' numbers on the resampled items."""
    rng = np.random.default_rng(4)
    labels = random_labels(rng, 250, 4, missing=0.3)
    p = ag._Profiles(labels)
    matrix = np.column_stack(list(labels.values()))
    rows = np.flatnonzero((~np.isnan(matrix)).sum(1) >= 2)
    picks = [rows[rng.integers(0, len(rows), len(rows))] for _ in range(3)]
    weights = np.stack(
        [np.bincount(p.inverse[np.searchsorted(rows, pick)], minlength=len(p.counts)) for pick in picks]
    ).astype(float)
    stats = ag._evaluate(p, weights)
    for r, pick in enumerate(picks):
        resampled = {k: v[pick] for k, v in labels.items()}
        assert_close(stats["fleiss"][r], ref_fleiss(resampled))
        assert_close(stats["krippendorff_alpha"][r], ref_alpha(resampled))
        assert_close(stats["percent"][r], ref_percent(resampled))
        assert_close(stats["cohen_pairs"][(0, 2)][r], ref_cohen(resampled["ann0"], resampled["ann2"]))


def test_both_resampling_paths_and_the_generic_fallback_agree(monkeypatch):
    labels = random_labels(np.random.default_rng(8), 300, 3, missing=0.2)
    # The generic path is the textbook bootstrap: check it against one written out here.
    generic = ag.bootstrap_ci(lambda lab: ag.krippendorff_alpha(lab), labels, n=1000, seed=1)
    matrix = np.column_stack(list(labels.values()))
    rows = np.flatnonzero((~np.isnan(matrix)).sum(1) >= 2)
    rng = np.random.default_rng(1)
    values = []
    for _ in range(1000):
        pick = rows[rng.integers(0, len(rows), len(rows))]
        values.append(ref_alpha({k: v[pick] for k, v in labels.items()}))
    np.testing.assert_allclose(generic, np.percentile(values, [2.5, 97.5]), rtol=0, atol=1e-9)

    fast = ag.bootstrap_ci(ag.krippendorff_alpha, labels, n=2000, seed=1)
    monkeypatch.setattr(ag, "_MULTINOMIAL_MAX_PROFILES", 0)  # force drawing item indices
    by_index = ag.bootstrap_ci(ag.krippendorff_alpha, labels, n=2000, seed=1)
    p = ag._Profiles(labels)
    weights = next(ag._resample_weights(p, 5, np.random.default_rng(0), 5))
    assert (weights.sum(1) == p.n_items).all()
    # Monte Carlo error of a 2.5% quantile over 1000–2000 resamples is ≈ 0.005 here
    np.testing.assert_allclose(fast, generic, atol=0.03)
    np.testing.assert_allclose(fast, by_index, atol=0.03)


# ---- judge and reference -----------------------------------------------------------------------


def test_judge_human_kappa():
    judge = np.array([0, 1, 1, 0, NAN, 1, 0, 1, 0, 0], float)
    alice = judge.copy()
    alice[4] = 1  # judge undecided there: not compared
    bob = np.array([0, 0, 1, TIE, 1, 1, 1, NAN, 0, 1], float)
    kappas = ag.judge_human_kappa(judge, {"alice": alice, "bob": bob, "nobody": np.full(10, NAN)})
    assert kappas["alice"] == 1.0
    assert_close(kappas["bob"], ref_cohen(judge, bob))
    assert_close(kappas["bob"], cohen_kappa_score([0, 1, 1, 0, 1, 0, 0, 0], [0, 0, 1, TIE, 1, 1, 0, 1]))
    assert np.isnan(kappas["nobody"])
    strict = ag.judge_human_kappa(judge, ag.strict_labels({"bob": bob}, np.full(10, 2)))
    assert_close(strict["bob"], cohen_kappa_score([0, 1, 1, 1, 0, 0, 0], [0, 0, 1, 1, 1, 0, 1]))


def test_reference_flip_rate_per_annotator_and_category():
    categories = ["chat", "chat", "chat", "code", "code", "safety", "safety"]
    ref = np.array([0, 1, 0, 1, 1, NAN, NAN])  # safety has no reference
    alice = np.array([0, 0, TIE, 1, 0, 0, 1], float)  # chat: 1 flip of 2 (tie skipped); code: 1 of 2
    bob = np.array([1, 1, NAN, BOTH_BAD, 1, 1, 0], float)  # chat: 1 of 2; code: 0 of 1
    flips = ag.reference_flip_rate({"alice": alice, "bob": bob}, ref, np.array(categories, dtype=object))
    a = flips["annotators"]["alice"]
    assert (a["n"], a["flips"], a["rate"]) == (4, 2, 0.5)
    assert a["by_category"]["chat"] == {"n": 2, "flips": 1, "rate": 0.5}
    assert a["by_category"]["code"] == {"n": 2, "flips": 1, "rate": 0.5}
    assert a["by_category"]["safety"] == {"n": 0, "flips": 0, "rate": None}
    b = flips["annotators"]["bob"]
    assert (b["n"], b["flips"]) == (3, 1) and b["by_category"]["code"] == {"n": 1, "flips": 0, "rate": 0.0}
    pooled = flips["all"]
    assert (pooled["n"], pooled["flips"]) == (7, 3) and pooled["rate"] == pytest.approx(3 / 7)
    assert pooled["by_category"]["safety"]["rate"] is None
    assert_plain_json(flips)


# ---- speed -------------------------------------------------------------------------------------


def test_100k_items_three_annotators_is_fast():
    rng = np.random.default_rng(0)
    n = 100_000
    labels = random_labels(rng, n, 3, missing=0.1)
    data = make_data(labels, ref=rng.choice([0.0, 1.0], n), categories=list(rng.choice(["a", "b", "c"], n)))
    ag.agreement_report(data, bootstrap=10)  # warm-up
    start = time.perf_counter()
    ag.agreement_report(data, bootstrap=200)
    assert time.perf_counter() - start < 5.0  # ≈ 0.1 s measured; generous for loaded CI machines
