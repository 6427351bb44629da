"""Judge accuracy arithmetic on hand-built verdict sets, under both vote conventions, and
agreement with the per-item verdict (``app.judge.results``) every other reader uses."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from pairscope.app.judge.results import item_verdicts, judge_item, record_verdicts, summarize
from pairscope.app.judge.votes import decide
from pairscope.app.records import Item, Reference, Response
from pairscope.app.stats.data import BOTH_BAD, TIE, RunData, StatsData, load_stats_data
from pairscope.app.stats.judge_metrics import (
    frames_curve,
    pointwise_vs_pairwise,
    run_metrics,
)
from pairscope.app.store import RunRecord, VerdictRecord

NAN = np.nan


def record(run_id=1, mode="pairwise", k=1, both=False, frames=8, model_path="judge", template="t"):
    return RunRecord(
        id=run_id,
        uuid=f"u{run_id}",
        created_at="",
        backend="fake",
        model_path=model_path,
        weights_hash=None,
        template_name=None,
        template_text="",
        template_hash=template,
        mode=mode,
        k=k,
        both_orders=both,
        frames=frames,
        seed=0,
        generation={"temperature": 0.0},
        status="done",
    )


def run_from(rec, samples, first=None, scores=None):
    """Samples per item: an int is a parsed choice, "t" a parsed tie (no choice), "u" unparsed,
    "e" an error, None not stored."""
    n, s = len(samples), max(len(row) for row in samples)
    choices, parsed, judged = np.full((n, s), NAN), np.zeros((n, s), bool), np.zeros((n, s), bool)
    stored = np.zeros((n, s), bool)
    for i, row in enumerate(samples):
        for j, v in enumerate(row):
            stored[i, j] = v is not None
            judged[i, j] = v not in (None, "e")
            parsed[i, j] = isinstance(v, int) or v == "t"
            if isinstance(v, int):
                choices[i, j] = v
    first_shown = np.where(stored, 0.0 if first is None else np.asarray(first, float), NAN)
    run = RunData(rec, choices, first_shown, parsed, judged)
    if scores is not None:
        run.scores = np.asarray(scores, float)
    return run


def stats(categories, ref, tags=None, runs=(), n_responses=None, words=None):
    n = len(ref)
    return StatsData(
        np.arange(n),
        np.array(categories, dtype=object),
        np.full(n, 2) if n_responses is None else np.asarray(n_responses),
        np.asarray(ref, float),
        [tuple(t) for t in (tags or [()] * n)],
        np.ones(n),
        np.ones((n, 2)) if words is None else np.asarray(words, float),
        [],
        {},
        list(runs),
    )


def strip(figures: dict) -> dict:
    """A figure without its confidence intervals (tested on their own below)."""
    return {k: v for k, v in figures.items() if k not in ("ci", "ci_unparsed_wrong")}


def wilson_reference(k, n, z=1.959963984540054):
    """Wilson score interval written out (Wilson 1927)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return centre - half, centre + half


def test_every_accuracy_has_a_wilson_interval_beside_its_n():
    run = run_from(record(k=3), SAMPLES)
    m = run_metrics(stats(CATS, REF, TAGS, [run]), run)
    for figures in (m, m["plurality"]):
        low, high = wilson_reference(figures["correct"], figures["decided"])
        assert figures["overall_ci"] == pytest.approx([low, high])
        low, high = wilson_reference(figures["correct"], figures["scored"] if "scored" in figures else m["scored"])
        assert figures["overall_unparsed_wrong_ci"] == pytest.approx([low, high])
    general = m["plurality"]["per_category"]["general"]
    assert general["ci"] == pytest.approx(list(wilson_reference(1, 2)))
    assert m["per_category"]["knowledge"]["ci"] is None  # n = 0: no interval


def test_accuracy_with_and_without_ties():
    # targets: 0, 1, tie, tie; votes K = 3
    rows = [[0, 0, 1], [1, "t", "t"], ["t", "t", 0], [0, 0, 0]]
    run = run_from(record(k=3), rows)
    m = run_metrics(stats(["a"] * 4, [0, 1, TIE, TIE], runs=[run]), run)
    ties = m["official"]["ties"]
    # with ties: item 0 right (0), item 1 decided tie (wrong), item 2 tie (right), item 3 0 (wrong)
    assert ties["with_ties"]["n"] == 4 and ties["with_ties"]["accuracy"] == 0.5
    # without ties: reference ties and tie decisions left out: item 0 only (right)
    assert ties["without_ties"] == {"n": 1, "accuracy": 1.0, "ci": pytest.approx(list(wilson_reference(1, 1)))}


def test_best_of_n_from_item_decisions():
    # 4 items with 4 responses, reference best 2, 0, 3, 1; one 2-response item is left out
    rows = [[2, 2, 2], [0, 0, 1], [1, 1, 1], ["u", "u", 1], [0, 0, 0]]
    run = run_from(record(k=3), rows)
    data = stats(["a"] * 5, [2, 0, 3, 1, 0], n_responses=[4, 4, 4, 4, 2], runs=[run])
    bon = run_metrics(data, run)["official"]["best_of_n"]
    assert bon["items"] == 4 and bon["accuracy"] == 0.5  # items 0 and 1; item 3 has no pick
    assert bon["random"] == 0.25 and bon["first_response"] == 0.25
    assert bon["gain_over_random"] == 0.25 and bon["gain_over_first"] == 0.25


def roundtrips(report):
    assert json.loads(json.dumps(report, allow_nan=False)) == report


# -- the arithmetic ----------------------------------------------------------------------------

CATS = [
    "general",
    "general",
    "general",
    "general",
    "hallucination",
    "hallucination",
    "hallucination",
    "reasoning",
    "reasoning",
    "reasoning",
    "knowledge",
]
REF = [0, 1, 0, NAN, 1, 0, 1, 0, 1, TIE, NAN]
TAGS = [
    ("existence",),
    ("existence", "counting"),
    ("counting",),
    ("existence",),
    ("existence",),
    (),
    ("attribute",),
    (),
    (),
    (),
    (),
]
SAMPLES = [
    [0, 0, 1],  # 0: right
    [0, 0, 0],  # 1: wrong
    [0, 1, "u"],  # 2: tie in votes → undecided
    [1, 1, 1],  # 3: no reference → not scored
    [1, "u", "u"],  # 4: right on one parsed sample
    ["e", "e", "e"],  # 5: errors only → a failed item: not scored (issue 23: infrastructure, not the judge)
    [None] * 3,  # 6: not judged
    ["u", "u", "u"],  # 7: nothing parsed
    [1, "t", 0],  # 8: a judged tie gives no vote; 1–1 → undecided
    [0, 0, 0],  # 9: tie as the target → not scored
    [1, 0, 0],  # 10: no reference
]


def test_every_key_on_a_constructed_run():
    run = run_from(record(k=3), SAMPLES)
    m = run_metrics(stats(CATS, REF, TAGS, [run]), run, categories=["safety"])
    p = m["plurality"]  # the hand-worked figures below are the plurality rule
    head = (m["run_id"], m["mode"], m["frames"], m["k"], m["both_orders"], m["note"])
    assert head == (1, "pairwise", 8, 3, False, None)
    assert (m["judged"], m["scored"], p["decided"], p["correct"], p["unparsed"]) == (10, 6, 3, 2, 3)
    assert m["failed_items"] == 1  # item 5: every sample failed, shown as a failure, not scored
    assert p["overall"] == pytest.approx(2 / 3) and p["overall_unparsed_wrong"] == pytest.approx(2 / 6)
    per = p["per_category"]
    assert list(per) == ["general", "hallucination", "knowledge", "reasoning", "safety"]
    assert strip(per["general"]) == {
        "n": 3,
        "accuracy": 0.5,
        "accuracy_unparsed_wrong": pytest.approx(1 / 3),
        "unparsed": 1,
    }
    assert strip(per["hallucination"]) == {"n": 1, "accuracy": 1.0, "accuracy_unparsed_wrong": 1.0, "unparsed": 0}
    assert strip(per["reasoning"]) == {"n": 2, "accuracy": None, "accuracy_unparsed_wrong": 0.0, "unparsed": 2}
    empty = {"n": 0, "accuracy": None, "accuracy_unparsed_wrong": None, "unparsed": 0}
    assert strip(per["knowledge"]) == empty and strip(per["safety"]) == empty
    assert p["macro"] == pytest.approx(0.75) and p["macro_categories"] == ["general", "hallucination"]
    assert p["macro_unparsed_wrong"] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert p["macro_unparsed_wrong_categories"] == ["general", "hallucination", "reasoning"]
    assert list(p["per_error_type"]) == ["existence", "attribute", "counting"]
    assert strip(p["per_error_type"]["existence"]) == {
        "n": 3,
        "error_rate": pytest.approx(1 / 3),
        "error_rate_unparsed_wrong": pytest.approx(1 / 3),
        "unparsed": 0,
    }
    assert strip(p["per_error_type"]["counting"]) == {
        "n": 2,
        "error_rate": 1.0,
        "error_rate_unparsed_wrong": 1.0,
        "unparsed": 1,
    }
    assert strip(p["per_error_type"]["attribute"]) == {
        "n": 0,
        "error_rate": None,
        "error_rate_unparsed_wrong": None,
        "unparsed": 0,
    }
    assert p["k_curve"] == {"1": 0.8, "3": pytest.approx(2 / 3)}
    assert m["position_consistency"] is None and m["position_consistency_items"] is None
    assert m["first_position_preference"] == pytest.approx(12 / 20)  # every item shown response 0 first
    # official (more than half of the samples present, cal.py): only items 0 (right) and 1 (wrong)
    # have 2+ of 3 votes
    assert (m["decided"], m["correct"], m["unparsed"]) == (2, 1, 4) and m["overall"] == 0.5
    assert m["official"]["k_curve"] == {"1": 0.8, "3": 0.5}
    assert (m["samples_unparsed"], m["samples_failed"]) == (6, 3)
    roundtrips(m)


def test_both_orders_consistency_and_position_preference():
    samples = [[0, 0, 0, 0], [0, 1, 0, 0], [1, 0, "u", 1], ["t", "t", 1, 1]]
    first = [[0, 1, 1, 0], [0, 1, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0]]
    run = run_from(record(k=2, both=True), samples, first)
    m = run_metrics(stats(["general"] * 4, [0, 0, 0, 0], runs=[run]), run)
    p = m["plurality"]
    assert (p["overall"], p["overall_unparsed_wrong"], p["unparsed"]) == (0.5, 0.5, 0)
    assert m["position_consistency"] == pytest.approx(5 / 7)  # pairs with both orders parsed
    assert m["position_consistency_items"] == 0.5
    assert m["first_position_preference"] == pytest.approx(9 / 13)
    assert p["k_curve"] == {"1": 1.0}  # only the first pair: item 0 decided and right
    # official: more than 2 of the 2K = 4 samples: items 0 (4 of 4) and 1 (3 of 4), both right
    assert (m["overall"], m["overall_unparsed_wrong"], m["unparsed"]) == (1.0, 0.5, 2)


def test_target_override_excludes_ties_both_bad_and_missing():
    run = run_from(record(), [[0], [1], [0], [1], ["u"]])
    data = stats(["a", "a", "b", "b", "b"], [0, 0, 0, 0, 0], runs=[run])
    m = run_metrics(data, run, target=np.array([0, 0, TIE, BOTH_BAD, 1]))
    assert (m["scored"], m["decided"], m["correct"]) == (3, 2, 1)
    assert m["overall"] == 0.5 and m["overall_unparsed_wrong"] == pytest.approx(1 / 3)
    assert m["per_category"]["a"]["accuracy"] == 0.5 and m["per_category"]["b"]["n"] == 1
    assert m["macro"] == 0.5 and m["macro_categories"] == ["a"]
    assert m["macro_unparsed_wrong"] == pytest.approx(0.25)  # a: 1/2, b: 0/1


def test_nothing_judged_divides_by_nothing():
    run = run_from(record(k=5), [[None] * 5] * 3)
    m = run_metrics(stats(["a", "b", "c"], [0, 1, NAN], [("counting",)] * 3, [run]), run)
    assert (m["judged"], m["scored"], m["decided"], m["unparsed"]) == (0, 0, 0, 0)
    assert m["overall"] is m["overall_unparsed_wrong"] is m["macro"] is m["macro_unparsed_wrong"] is None
    assert m["macro_categories"] == [] and m["k_curve"] == {"1": None, "3": None, "5": None}
    assert m["per_error_type"]["counting"]["error_rate"] is None and m["first_position_preference"] is None
    roundtrips(m)


def test_step_runs_have_no_accuracy_and_pointwise_without_scores_is_unparsed():
    run = run_from(record(mode="step"), [[0, 1], [0, 1]])
    m = run_metrics(stats(["a", "a"], [0, 1], runs=[run]), run)
    assert m["overall"] is None and m["k_curve"] == {} and m["note"] and m["judged"] == 2
    assert m["official"] is None and m["plurality"] is None
    roundtrips(m)
    run = run_from(record(mode="pointwise"), [[0, 1], [0, 1]])
    m = run_metrics(stats(["a", "a"], [0, 1], runs=[run]), run)
    assert m["overall"] is None and m["decided"] == 0 and m["samples_unparsed"] == 2
    roundtrips(m)


def test_pointwise_votes_by_the_higher_score():
    # samples j·n + r; item 0: 7>3 then 5=5 (no vote) → 0; item 1: 2<9 both times → 1;
    # item 2: second score unparsed in sample 0 → only sample 1 votes → 0; item 3: 3 responses.
    samples = [[0, 1, 0, 1, None, None], [0, 1, 0, 1, None, None], [0, "u", 0, 1, None, None], [0, 1, 2, 0, 1, 2]]
    scores = [[7, 3, 5, 5, NAN, NAN], [2, 9, 2, 9, NAN, NAN], [8, NAN, 6, 1, NAN, NAN], [1, 4, 4, 1, 2, 9]]
    run = run_from(record(mode="pointwise", k=2), samples, scores=scores)
    m = run_metrics(stats(["a"] * 4, [0, 0, 0, 2], n_responses=[2, 2, 2, 3], runs=[run]), run)
    p = m["plurality"]
    # item 3: sample 0 ties 4–4 (no vote), sample 1 → 2
    assert (p["decided"], p["correct"], p["overall"]) == (4, 3, 0.75)
    assert p["k_curve"] == {"1": 0.5}  # first sample only: items 0 (right) and 1 (wrong) decided
    # official, K = 2: only item 1 has both votes (for response 1: wrong)
    assert (m["decided"], m["correct"], m["overall"]) == (1, 0, 0.0)
    assert m["position_consistency"] is None and m["first_position_preference"] is None


def test_pointwise_matches_the_item_verdict():
    rng = np.random.default_rng(3)
    n, k = 300, 3
    scores = np.where(rng.random((n, 2 * k)) < 0.85, rng.integers(1, 5, (n, 2 * k)), NAN)
    ref = rng.integers(0, 2, n)
    samples = [[(j % 2) if not np.isnan(scores[i, j]) else "u" for j in range(2 * k)] for i in range(n)]
    rec = record(mode="pointwise", k=k)
    run = run_from(rec, samples, scores=scores)
    m = run_metrics(stats(["a"] * n, ref, runs=[run]), run)
    for convention in ("official", "plurality"):
        decided = correct = 0
        for i in range(n):
            verdicts = [
                VerdictRecord(
                    1, i, j, (j % 2,), "x", j % 2 if ok else None, (float(scores[i, j]) if ok else None,), ok, None
                )
                for j in range(2 * k)
                for ok in [not np.isnan(scores[i, j])]
            ]
            choice = judge_item(rec, verdicts, 2).choice(convention)
            decided += choice is not None
            correct += choice is not None and choice == ref[i]
        assert 0 < m[convention]["decided"] == decided < n and m[convention]["correct"] == correct


# -- the two conventions, against formulas written out here --------------------------------------


def official_reference(row, k):
    """VL-RewardBench cal.py ``classify``: ``total_count = agree + reject + doesntMatch`` over the
    answers its inference file holds — unparsed text and judged ties ("doesntMatch") are in it,
    failed calls ("e", dropped from the file) and missing samples (None) are not; right if
    agree > total_count/2, wrong if reject > total_count/2, else no majority (two responses;
    A = response 0). Issue 23: it used to be K/2 here, missing samples counted in K."""
    agree = sum(1 for v in row if v == 0)
    reject = sum(1 for v in row if v == 1)
    total = sum(1 for v in row if v not in ("e", None))
    return 0 if agree > total / 2 else 1 if reject > total / 2 else None


def test_the_three_item_example_official_50_plurality_67():
    # A = the reference answer (response 0), B the other, U unparsed; K = 5
    rows = [["A", "A", "B", "U", "U"], ["B", "B", "B", "A", "A"], ["A", "A", "A", "B", "U"]]
    samples = [[{"A": 0, "B": 1, "U": "u"}[x] for x in row] for row in rows]
    run = run_from(record(k=5), samples)
    m = run_metrics(stats(["a"] * 3, [0, 0, 0], runs=[run]), run)
    assert m["official"]["overall"] == pytest.approx(0.5)  # item 1 has no majority: 1 right of 2 decided
    assert m["plurality"]["overall"] == pytest.approx(2 / 3)
    assert m["overall"] == m["official"]["overall"] and m["vote"] == "official"
    assert m["samples_unparsed"] == 3 and m["samples_failed"] == 0


@pytest.mark.parametrize("k", [1, 5, 9])
def test_official_matches_cal_py_rule_on_random_runs(k):
    rng = random.Random(k)
    rows = [[rng.choice([0, 0, 1, "u", "t", "e", None]) for _ in range(k)] for _ in range(3000)]
    run = run_from(record(k=k), rows)
    ref = [0] * len(rows)
    m = run_metrics(stats(["a"] * len(rows), ref, runs=[run]), run)
    expected = [official_reference(r, k) for r in rows]
    judged = [r for r, e in zip(rows, expected) if any(v not in ("e", None) for v in r)]  # failed items: not scored
    decided = [e for r, e in zip(rows, expected) if any(v is not None for v in r) and e is not None]
    assert m["official"]["decided"] == len(decided)
    assert m["official"]["correct"] == sum(1 for e in decided if e == 0)
    assert m["official"]["overall_unparsed_wrong"] == pytest.approx(sum(1 for e in decided if e == 0) / len(judged))


def test_both_orders_official_counts_2k_samples():
    # K = 2 both orders → 4 vote samples: 3 of 4 name response 0 → official 0; 2 of 4 → none
    run = run_from(record(k=2, both=True), [[0, 0, 0, 1], [0, 1, 0, 1], [0, 0, "u", "u"]])
    m = run_metrics(stats(["a"] * 3, [0, 0, 0], runs=[run]), run)
    assert (m["official"]["decided"], m["official"]["correct"]) == (1, 1)
    assert (m["plurality"]["decided"], m["plurality"]["correct"]) == (2, 2)
    assert m["official"]["k_curve"] == {"1": 1.0}  # first sample in both orders: only item 0 has 2 of 2


def test_decide_edge_shapes():
    for convention in ("official", "plurality"):
        assert np.isnan(decide(np.full((3, 0), NAN), convention)).all()
        assert np.isnan(decide(np.full((2, 3), NAN), convention)).all()
        assert decide(np.zeros((0, 3)), convention).shape == (0,)


# -- agreement with judge_results on a real project --------------------------------------------


def test_same_numbers_as_judge_results_summary(store):
    store.add_items(
        [
            Item(
                ext_id=f"it{i}",
                prompt="q",
                responses=(Response(0, "a"), Response(1, "b")),
                category=("general", "hallucination")[i % 2],
                reference=Reference(ranking=None if i % 7 == 3 else ((0, 1) if i % 3 else (1, 0))),
            )
            for i in range(60)
        ]
    )
    ids = [s.id for s in store.item_summaries(0, 100)]
    rng = random.Random(1)
    for both in (False, True):
        run = store.create_run(
            backend="fake",
            model_path="m",
            weights_hash=None,
            template_name=None,
            template_text="",
            template_hash="t",
            mode="pairwise",
            k=3,
            both_orders=both,
            frames=8,
            seed=0,
            generation={},
        )
        verdicts = []
        for item_id in ids[:-5]:  # the last five are not judged
            for s in range(6 if both else 3):
                kind = rng.random()
                order = (0, 1) if rng.random() < 0.5 else (1, 0)
                ok = kind < 0.8
                verdicts.append(
                    VerdictRecord(
                        run.id,
                        item_id,
                        s,
                        order,
                        "x",
                        rng.randrange(2) if ok else None,
                        None,
                        ok,
                        None,
                        error="media: gone" if kind > 0.93 else None,
                    )
                )
        record_verdicts(store, run, verdicts)
        data = load_stats_data(store)
        [rd] = [r for r in data.runs if r.run.id == run.id]
        ours, theirs = run_metrics(data, rd), summarize(store, run)
        assert ours["judged"] == theirs.items
        per_item = item_verdicts(store, run)
        ref = dict(store.query("SELECT id, ref_chosen FROM items"))
        for convention in ("official", "plurality"):
            mine, summary = ours[convention], theirs.conventions[convention]
            assert (mine["correct"], mine["decided"]) == (summary.correct, summary.decided)
            assert mine["overall"] == pytest.approx(summary.accuracy)
            assert mine["overall_unparsed_wrong"] == pytest.approx(summary.accuracy_undecided_wrong)
            # and the filters' stored verdict is the same item by item
            rows = store.item_verdict_rows(run.id)
            for item_id, v in per_item.items():
                column = 1 if convention == "official" else 3
                assert rows[item_id][column] == v.choice(convention)
        assert ours["samples_failed"] == theirs.failed and ours["samples_unparsed"] == theirs.unparsed
        assert ours["judged"] == len(ids) - 5 and 0 < ours["unparsed"] and 0 < ours["correct"]
        assert sum(1 for i in per_item if ref[i] is not None) == ours["scored"]
        if both:
            assert ours["position_consistency_items"] == pytest.approx(theirs.consistency)


# -- across runs -------------------------------------------------------------------------------


def test_frames_curve_on_video_items():
    cats = ["short-form perception", "knowledge", "safety", "general"]
    ref = [0, 1, 0, 0]
    runs = [
        run_from(record(1, frames=4), [[1], [1], ["u"], [0]]),  # video: 1 right of 2 decided, 3 scored
        run_from(record(2, frames=16), [[0], [1], [0], [1]]),  # video: 3/3
        run_from(record(3, frames=16), [[1], [0], [1], [0]]),  # same protocol, later run → replaces 2
        run_from(record(4, frames=8, model_path="other"), [[0]] * 4),  # alone: no curve
        run_from(record(5, frames=8, k=3), [[0, 0, 0]] * 4),  # different K: its own group, alone
        run_from(record(6, mode="step", frames=2), [[0]] * 4),
    ]
    data = stats(cats, ref, runs=runs)
    out = frames_curve(data)
    assert out["video_items"] == 3 and "VideoRewardBench" in out["video_mask"]
    [curve] = out["curves"]
    assert (curve["model_path"], curve["mode"], curve["k"], curve["both_orders"]) == ("judge", "pairwise", 1, False)
    assert curve["points"] == [
        {"frames": 4, "run_id": 1, "n": 3, "accuracy": 0.5, "accuracy_unparsed_wrong": pytest.approx(1 / 3)},
        {"frames": 16, "run_id": 3, "n": 3, "accuracy": 0.0, "accuracy_unparsed_wrong": 0.0},
    ]
    masked = frames_curve(data, video=np.array([False, False, False, True]))
    assert masked["video_items"] == 1 and [p["accuracy"] for p in masked["curves"][0]["points"]] == [1.0, 1.0]
    roundtrips(out)


def test_pointwise_vs_pairwise_compares_the_same_model():
    pair = run_from(record(1, k=1), [[0], [0], ["u"], [1]])
    point = run_from(
        record(2, mode="pointwise", k=1),
        [[0, 1], [0, 1], [0, 1], [None, None]],
        scores=[[9, 1], [2, 3], [5, 4], [NAN, NAN]],
    )
    lone = run_from(record(3, model_path="solo"), [[0]] * 4)
    out = pointwise_vs_pairwise(stats(["a"] * 4, [0, 0, 0, 1], runs=[pair, point, lone]))
    [model] = out["models"]
    assert model["model_path"] == "judge"
    assert model["pairwise"] == [
        {"run_id": 1, "k": 1, "frames": 8, "n": 4, "accuracy": 1.0, "accuracy_unparsed_wrong": 0.75}
    ]
    assert model["pointwise"] == [
        {
            "run_id": 2,
            "k": 1,
            "frames": 8,
            "n": 3,
            "accuracy": pytest.approx(2 / 3),
            "accuracy_unparsed_wrong": pytest.approx(2 / 3),
        }
    ]
    common = model["common"]
    assert (common["pairwise_run"], common["pointwise_run"]) == (1, 2)
    assert common["pairwise"] == {"n": 3, "accuracy": 1.0, "accuracy_unparsed_wrong": pytest.approx(2 / 3)}
    assert common["pointwise"]["accuracy"] == pytest.approx(2 / 3)
    assert common["agreement"] == 0.5  # items 0 and 1 decided by both: agree on 0 only
    roundtrips(out)


def test_annotator_accuracy_with_and_without_ties():
    from pairscope.app.stats.judge_metrics import ties_accuracy

    labels = np.array([0, TIE, 1, NAN, BOTH_BAD])
    ref = np.array([0, 0, 0, 0, 1], dtype=float)
    out = ties_accuracy(labels, ref, ~np.isnan(labels))
    assert (out["with_ties"]["n"], out["with_ties"]["accuracy"]) == (4, 0.25)  # the tie label counts wrong
    assert (out["without_ties"]["n"], out["without_ties"]["accuracy"]) == (3, pytest.approx(1 / 3))
