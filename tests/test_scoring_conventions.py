"""Every scoring convention of the registry on a worked example, the expected numbers worked out
by hand or by a small script in the test that follows the official file's rule (never PairScope's
code): VL-RewardBench cal.py, VLMEvalKit, lmms-eval, Multimodal RewardBench, MM-RLHF, RewardBench 2,
VideoAlign and the plurality."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pairscope.app.records import CONVENTION_ALIASES, SCORING_CONVENTIONS
from pairscope.app.stats.conventions import MMRB_SEED, REGISTRY, resolve
from pairscope.app.stats.data import TIE
from pairscope.app.stats.scores import ItemKeys, score_run
from test_judge_metrics import record, run_from, stats

A, B = 0, 1  # the reference is response 0 (A) everywhere unless said


def scores_of(samples, categories=None, ref=None, keys=None, k=None, first=None, n_responses=None):
    k = k or max(len(r) for r in samples)
    rows = [list(r) + [None] * (k - len(r)) for r in samples]
    run = run_from(record(k=k), rows, first)
    n = len(rows)
    data = stats(categories or ["general"] * n, [A] * n if ref is None else ref, runs=[run], n_responses=n_responses)
    return score_run(data, run, keys=keys)


def test_the_registry_names_sources_and_documents_every_convention():
    assert tuple(REGISTRY) == SCORING_CONVENTIONS
    for name, c in REGISTRY.items():
        assert c.name == name and c.source and c.rule and c.differs and c.decide.__doc__, name
    assert resolve("official") == "vlrewardbench" and CONVENTION_ALIASES == {"official": "vlrewardbench"}
    with pytest.raises(ValueError, match="vlrewardbench, vlmevalkit"):
        resolve("nope")


def cal_py(rows, categories):
    """cal.py ``classify`` + ``distribution_dataset`` written out: the answers present per item
    (a failed call is not in the inference file), agree > total/2 → agree, reject > total/2 →
    reject; per group agree / (agree + reject); overall = Σ agree / Σ (agree + reject); macro =
    the mean over groups."""
    correct, total = {}, {}
    for answers, group in zip(rows, categories):
        here = [a for a in answers if a in ("A", "B", "u")]
        if not here:
            continue
        agree, reject = here.count("A"), here.count("B")
        if agree > len(here) / 2:
            correct[group] = correct.get(group, 0) + 1
            total[group] = total.get(group, 0) + 1
        elif reject > len(here) / 2:
            total[group] = total.get(group, 0) + 1
    groups = [g for g in total if total[g]]
    overall = sum(correct.get(g, 0) for g in groups) / sum(total[g] for g in groups)
    macro = sum(correct.get(g, 0) / total[g] for g in groups) / len(groups)
    return overall, macro


VOTES = [["A", "A", "u"], ["B"], ["A", "A", "A", "B", "u"], ["A", "B", "u", "u"], ["e", "e"]]
CATS = ["general", "general", "hallucination", "hallucination", "reasoning"]


def _codes(rows):
    return [[{"A": A, "B": B, "u": "u", "e": "e", "t": "t"}[v] for v in r] for r in rows]


def test_vlrewardbench_counts_the_samples_present():
    s = scores_of(_codes(VOTES), CATS, k=5)
    c = s.conventions["vlrewardbench"]
    overall, macro = cal_py(VOTES, CATS)
    assert (overall, macro) == (pytest.approx(2 / 3), pytest.approx(0.75))  # by hand: 2 of 3; (1/2 + 1/1) / 2
    assert c.headline == pytest.approx(overall) and c.macro == pytest.approx(macro)
    assert (c.overall.decided, c.overall.correct, c.overall.undecided) == (3, 2, 1)  # item 3: A 1, B 1, u 2 of 4
    assert s.failed_items == 1 and s.scored == 4  # item 4: both calls failed, not in cal.py's file
    assert s.convention("official") is c


def test_plurality_needs_no_majority():
    rows = [["A", "A", "B", "u", "u"], ["B", "B", "B", "A", "A"], ["A", "A", "A", "B", "u"], ["A", "B", "u"]]
    c = scores_of(_codes(rows)).conventions["plurality"]
    # by hand: A, B, A, tied (undecided) → 2 right of 3 decided; the official vote leaves item 0 out
    assert (c.overall.decided, c.overall.correct) == (3, 2) and c.headline == pytest.approx(2 / 3)


def first_generation(answers):
    """The one generation a K = 1 toolkit scores: the first answer that came back."""
    return next((a for a in answers if a != "e"), None)


def test_vlmevalkit_scores_one_generation_undecided_wrong():
    rows = [["u", "A", "A"], ["A", "B", "B"], ["e", "B", "A"], ["B"], ["A"]]
    cats = ["general", "general", "reasoning", "reasoning", "reasoning"]
    c = scores_of(_codes(rows), cats, k=3).conventions["vlmevalkit"]
    # VLMEvalKit: score 1.0 when the parsed answer names the reference, else 0.0 (a failed parse too);
    # Overall Consistency = Σ score / all items; Macro Accuracy = mean of the category means
    score = [1.0 if first_generation(r) == "A" else 0.0 for r in rows]
    assert c.headline == pytest.approx(sum(score) / len(score)) == pytest.approx(2 / 5)
    general, reasoning = np.mean(score[:2]), np.mean(score[2:])
    assert c.macro_all == pytest.approx((general + reasoning) / 2)


def test_lmms_eval_gives_unparsed_its_coin_and_reports_the_macro():
    rows = [["u"], ["A"], ["B"], ["A"], ["u"]]
    cats = ["general", "general", "hallucination", "reasoning", "reasoning"]
    c = scores_of(_codes(rows), cats).conventions["lmms-eval"]
    # lmms-eval: random.choice([1, 2]) on an unmatched answer — expected credit 1/2; total_score =
    # the mean over categories of the mean score
    credit = [0.5, 1.0, 0.0, 1.0, 0.5]
    by_cat = {}
    for x, cat in zip(credit, cats):
        by_cat.setdefault(cat, []).append(x)
    assert c.headline == pytest.approx(np.mean([np.mean(v) for v in by_cat.values()]))  # (0.75 + 0 + 0.75) / 3
    assert c.overall.correct == pytest.approx(3.0) and c.overall.decided == 5
    assert any("re-parse" in note for note in c.notes) and any("order rule" in note for note in c.notes)


def test_mmrb_flips_its_seeded_coin_per_unparsed_answer():
    rows = [["u"], ["A"], ["u"], ["u"], ["B"], ["u"], ["u"], ["u"]]
    shown_first = [1, 0, 0, 1, 0, 0, 1, 0]  # the response each sample showed as "A"
    c = scores_of(_codes(rows), first=[[f] for f in shown_first]).conventions["mmrb"]
    # 2_get_accuracy.py: random.seed(123); extract_judgment → 'A' if random.random() < 0.5 else 'B'
    # for each unmatched output, in file order; acc = Σ (pred == Label) / all
    random.seed(MMRB_SEED)
    right = 0
    for answers, first in zip(rows, shown_first):
        if answers[0] == "u":
            pred_shown = "A" if random.random() < 0.5 else "B"
            picked = first if pred_shown == "A" else 1 - first
        else:
            picked = 0 if answers[0] == "A" else 1
        right += picked == A
    assert c.overall.decided == len(rows)  # every item decided, by the coin where unparsed
    assert c.headline == pytest.approx(right / len(rows))


def test_mm_rlhf_accuracy_and_acc_plus_over_an_ids_pairs():
    rows = [["A"], ["A"], ["A"], ["B"], ["A"], ["u"]]
    groups = np.array(["g1", "g1", "g2", "g2", "g3", "g4"], dtype=object)
    keys = ItemKeys(groups, np.array([None] * 6, dtype=object))
    c = scores_of(_codes(rows), keys=keys).conventions["mm-rlhf"]
    # by hand: 4 of 6 pairs right (the unparsed one counts wrong); ids g1 (2/2) and g3 (1/1)
    # have every pair right, g2 (1/2) and g4 (0/1) do not → ACC+ 2/4
    assert c.headline == pytest.approx(4 / 6)
    assert c.extra["acc_plus"] == pytest.approx(2 / 4) and c.extra["acc_plus_groups"] == 4
    single = ItemKeys(np.array(["a", "b", "c", "d", "e", "f"], dtype=object), keys.datasets)
    alone = scores_of(_codes(rows), keys=single).conventions["mm-rlhf"]
    assert alone.extra["acc_plus"] is None and any("n/a" in n for n in alone.notes)
    unknown = scores_of(_codes(rows)).conventions["mm-rlhf"]
    assert unknown.extra["acc_plus"] is None and unknown.headline == pytest.approx(4 / 6)


def _pointwise(scores_per_item, ref, k=1):
    """A pointwise run: sample j scores response r at stored index j·n + r."""
    n = len(scores_per_item[0][0]) if isinstance(scores_per_item[0][0], list) else len(scores_per_item[0])
    per = [[s] if not isinstance(s[0], list) else s for s in scores_per_item]
    samples = [[r for _ in range(k) for r in range(n)] for _ in per]
    flat = [[x for sample in item for x in sample] for item in per]
    run = run_from(record(mode="pointwise", k=k), samples, scores=flat)
    for i, item in enumerate(flat):
        for j, x in enumerate(item):
            if x is None:
                run.parsed[i, j] = False
                run.scores[i, j] = np.nan
    data = stats(["general"] * len(per), ref, runs=[run], n_responses=[n] * len(per))
    return score_run(data, run)


def test_rewardbench2_gives_one_over_the_ties_at_the_top():
    item_scores = [[5, 3, 2, 1], [5, 5, 2, 1], [3, 5, 2, 1], [4, 4, 4, 4]]
    c = _pointwise(item_scores, [0, 0, 0, 0]).conventions["rewardbench2"]

    def results(scores):  # rewardbench/utils.py reroll_and_score_dataset, the chosen one first
        scores = np.array(scores)
        return 1 / np.sum(scores == scores.max()) if scores[0] == scores.max() else 0

    expected = np.mean([results(s) for s in item_scores])
    assert expected == pytest.approx((1 + 1 / 2 + 0 + 1 / 4) / 4)
    assert c.headline == pytest.approx(expected)
    assert c.extra["ties_score"] is None and any("Ties score n/a" in n for n in c.notes)


def videoalign_with_ties(h, m):
    """VideoAlign calc_accuracy.py ``calc_accuracy_with_ties``, step by step: the pairs sorted
    by |m| become model ties one at a time, the best accuracy seen wins."""

    def stats_at(pairs, ties):
        c = thm = 0
        for idx, (hi, mi) in enumerate(pairs):
            if idx in ties:
                thm += hi == 0
            elif hi != 0 and hi * mi > 0:
                c += 1
        return (c + thm) / len(pairs)

    pairs = sorted(zip(h, m), key=lambda x: abs(x[1]))
    best = float("-inf")
    for i in range(len(pairs)):
        best = max(best, stats_at(pairs, set(range(i + 1))))
    return best


def test_videoalign_with_ties_by_tie_calibration_and_without():
    # (score A, score B) per pair and the human label: A better (ref 0), B better (ref 1), tie
    pairs = [(9, 1), (2, 8), (5, 5), (6, 5.5), (4, 4.2), (3, 7), (5, 5), (8, 2), (1, 1.1), (5, 6)]
    ref = [0, 1, TIE, 0, TIE, 1, 1, 0, TIE, 0]
    s = _pointwise([list(p) for p in pairs], ref)
    c = s.conventions["videoalign"]
    h = [1 if r == 0 else -1 if r == 1 else 0 for r in ref]
    m = [a - b for a, b in pairs]
    assert c.extra["with_ties"] == pytest.approx(videoalign_with_ties(h, m))
    # calc_accuracy_without_ties: C / (C + D + Tm) at ε = -1 over pairs the human did not tie
    strict = [(hi, mi) for hi, mi in zip(h, m) if hi != 0]
    assert c.extra["without_ties"] == pytest.approx(sum(hi * mi > 0 for hi, mi in strict) / len(strict))
    assert c.headline == pytest.approx(c.extra["with_ties"])
    assert c.overall.scored == 10  # tie targets count here, unlike every other convention


def test_one_run_scored_every_way_side_by_side_differs_as_documented():
    rows = _codes([["A", "u", "u"], ["u", "A", "B"], ["B", "A", "A"], ["A", "A", "B"]])
    s = scores_of(rows, k=3)
    heads = {name: c.headline for name, c in s.conventions.items()}
    assert list(heads) == list(SCORING_CONVENTIONS)
    # by hand: cal.py — item 0 has 1 of 3 (undecided), item 1 1 of 3 (undecided), item 2 A 2 of 3,
    # item 3 A 2 of 3 → 2 of 2; VLMEvalKit's first generation: A, u, B, A → 2 of 4
    assert heads["vlrewardbench"] == 1.0 and heads["vlmevalkit"] == 0.5
    # plurality: A (1 named), tie (A 1, B 1) undecided, A, A → 3 of 3
    assert heads["plurality"] == 1.0
