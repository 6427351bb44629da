"""Two judges side by side (issue 25): the paired 2×2 table on a hand-worked project, McNemar's
exact p against statsmodels and an independent binomial test, the paired bootstrap against an
independent numpy computation, Holm / Šidák against ``multipletests``, both-orders consistency,
the N-run matrix, the CLI (text and --json) and the research API. Projects are built through
the real paths: a VL-RewardBench-shaped file imported with ``pairscope import``, runs made with
``pairscope import-verdicts`` (both-orders runs with ``record_verdicts``)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from PIL import Image
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from helpers import fake_run, write_jsonl
from pairscope.app.cli.main import main as cli_main
from pairscope.app.judge.results import record_verdicts
from pairscope.app.stats.compare import FLIP_KINDS, compare_many, compare_runs, mcnemar_exact, paired_bootstrap_ci
from pairscope.app.stats.compare_report import comparison_dict, forest_figure
from pairscope.app.store import Store, VerdictRecord

#: id → (reference ranking, A's choice, B's choice); "-" = the run did not judge the item, None:
#: a sample without a verdict (undecided). Hand-worked below.
HAND = {
    "wildvision-battle-1": ((0, 1), 0, 0),  # both right
    "wildvision-battle-2": ((1, 0), 1, 1),  # both right
    "RLAIF-V-3": ((0, 1), 0, 0),  # both right
    "mathverse_4": ((0, 1), 0, 0),  # both right
    "RLAIF-V-5": ((0, 1), 0, 1),  # A right, B wrong
    "RLAIF-V-6": ((1, 0), 0, 1),  # B right, A wrong
    "mathverse_7": ((0, 1), 1, 0),  # B right, A wrong
    "wildvision-battle-8": ((0, 1), 1, 0),  # B right, A wrong
    "mathverse_9": ((1, 0), 0, 0),  # both wrong
    "wildvision-battle-10": ((0, 1), 0, None),  # B undecided: left out (a flip if undecided counts wrong)
    "vlfeedback_11": ((0, 0), 0, 1),  # a tie reference: judged by both, unscored, they disagree
    "RLAIF-V-12": ((0, 1), 0, "-"),  # only A judged it
    "mathverse_13": ((1, 0), "-", 1),  # only B judged it
}
TAGS = {"RLAIF-V-5": ["counting"], "RLAIF-V-6": ["counting", "existence"], "mathverse_7": ["existence"]}


def png(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 4), "white").save(path, "PNG")


def vlrb_row(id_, ranking, source="wildvision", tags=("counting",)):
    return {
        "id": id_,
        "query": f"<image>\nQuestion {id_}?",
        "response": [f"{id_} first answer", f"{id_} second answer"],
        "human_ranking": list(ranking),
        "image_path": "images/a.png",
        "models": ["m1", "m2"],
        "judge": "gpt-4o",
        "rationale": "checked",
        "query_source": source,
        "human_error_analysis": list(tags),
        "ground_truth": "",
        "meta": {},
    }


def import_project(tmp_path, rows, runs):
    """``pairscope import`` a VL-RewardBench-shaped file, then ``pairscope import-verdicts`` each
    run (name → rows of the verdict JSONL); returns the project path and name → run id."""
    png(tmp_path / "images" / "a.png")
    data = write_jsonl(tmp_path / "vl.jsonl", rows)
    db = tmp_path / "p.pairscope"
    assert cli_main(["import", str(data), "--db", str(db), "--format", "vlrewardbench"]) == 0
    ids = {}
    for name, verdicts in runs.items():
        path = write_jsonl(tmp_path / f"{name}.jsonl", verdicts)
        assert cli_main(["import-verdicts", str(path), "--db", str(db), "--name", name]) == 0
        with Store.open(db) as store:
            ids[name] = max(r.id for r in store.runs())
    return db, ids


def rationale(judge, choice):
    """A judge's output: shown in the dataset order, so Answer 1 is response 0."""
    if choice is None:
        return f"{judge} looked at both answers and could not make up its mind."
    return f"{judge} checked the image against both answers. Overall Judgment: Answer {choice + 1} is better."


def hand_rows():
    rows = [vlrb_row(i, ranking, tags=TAGS.get(i, ("attribute",))) for i, (ranking, _a, _b) in HAND.items()]
    runs = {}
    for name, col in (("judge-a", 1), ("judge-b", 2)):
        runs[name] = [{"item": i, "output": rationale(name, v[col])} for i, v in HAND.items() if v[col] != "-"]
    return rows, runs


@pytest.fixture
def hand(tmp_path):
    rows, runs = hand_rows()
    return import_project(tmp_path, rows, runs)


def test_hand_worked_two_by_two(hand):
    db, runs = hand
    with Store.open(db) as store:
        c = compare_runs(store, runs["judge-a"], runs["judge-b"])
    o = c.overall
    # both right 1 2 3 4; A only 5; B only 6 7 8; both wrong 9; 10 undecided by B; 11 unscored
    assert (o.both_right, o.a_only, o.b_only, o.both_wrong, o.n) == (4, 1, 3, 1, 9)
    assert o.accuracy_a == pytest.approx(5 / 9) and o.accuracy_b == pytest.approx(7 / 9)
    assert o.difference == pytest.approx(2 / 9)
    assert o.p == pytest.approx(2 * (1 + 4) / 16)  # two-sided binomial, 1 of 4 discordant at ½: 0.625
    assert c.undecided == {"a": 0, "b": 1, "both": 0} and c.unscored == 1
    assert c.only_a == ("RLAIF-V-12",) and c.only_b == ("mathverse_13",)
    assert [(i.kind, i.ext_id) for i in c.flips()] == [
        ("A right, B wrong", "RLAIF-V-5"),
        ("B right, A wrong", "RLAIF-V-6"),
        ("B right, A wrong", "mathverse_7"),
        ("B right, A wrong", "wildvision-battle-8"),
        ("disagree", "wildvision-battle-10"),
        ("disagree", "vlfeedback_11"),
    ]
    by = {(s.kind, s.value): s.paired for s in c.slices}
    # categories by id prefix: wildvision general, RLAIF-V hallucination, mathverse reasoning
    assert {k[1]: (q.both_right, q.a_only, q.b_only, q.both_wrong) for k, q in by.items() if k[0] == "category"} == {
        "general": (2, 0, 1, 0),
        "hallucination": (1, 1, 1, 0),
        "reasoning": (1, 0, 1, 1),
    }
    # an item counts once in each of its error types: counting 5 6, existence 6 7, attribute the rest
    assert (by["error type", "counting"].a_only, by["error type", "counting"].b_only) == (1, 1)
    assert (by["error type", "existence"].b_only, by["error type", "existence"].n) == (2, 2)
    assert by["error type", "attribute"].n == 6  # 1 2 3 4 8 9
    assert by["source", "wildvision"].n == 9
    assert {k[1] for k in by if k[0] == "dataset"} == {"wildvision", "rlaif-v", "mathverse"}


def test_undecided_counted_wrong_turns_the_undecided_item_into_a_flip(hand):
    db, runs = hand
    with Store.open(db) as store:
        c = compare_runs(store, runs["judge-a"], runs["judge-b"], undecided_wrong=True)
    assert (c.overall.both_right, c.overall.a_only, c.overall.b_only, c.overall.n) == (4, 2, 3, 10)
    assert [i.ext_id for i in c.flips() if i.kind == FLIP_KINDS[0]] == ["RLAIF-V-5", "wildvision-battle-10"]


@pytest.mark.parametrize("b, c", [(0, 0), (1, 3), (3, 1), (7, 19), (40, 45), (0, 12), (200, 150)])
def test_mcnemar_exact_equals_statsmodels_and_the_binomial_test(b, c):
    p = mcnemar_exact(b, c)
    assert p == pytest.approx(mcnemar([[10, b], [c, 5]], exact=True).pvalue, abs=1e-12)
    expected = 1.0 if b + c == 0 else binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue
    assert p == pytest.approx(expected, abs=1e-12)


def independent_bootstrap(right_a, right_b, resamples, seed, level=0.95):
    """The paired bootstrap with the documented seed scheme, written out: a resample's counts of
    items where only B is right, only A is right, both agree."""
    n = len(right_a)
    only_b, only_a = np.sum(right_b & ~right_a), np.sum(right_a & ~right_b)
    counts = np.random.default_rng(seed).multinomial(n, [only_b / n, only_a / n, (n - only_a - only_b) / n], resamples)
    means = (counts[:, 0] - counts[:, 1]) / n
    return tuple(np.percentile(means, [100 * (1 - level) / 2, 100 * (1 + level) / 2]))


def index_bootstrap(right_a, right_b, resamples, seed, level=0.95):
    """The textbook paired bootstrap: n item indices drawn with replacement per resample."""
    d = right_b.astype(float) - right_a.astype(float)
    idx = np.random.default_rng(seed).integers(0, len(d), size=(resamples, len(d)))
    return tuple(np.percentile(d[idx].mean(axis=1), [100 * (1 - level) / 2, 100 * (1 + level) / 2]))


def random_outcomes(n, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.random(n) < 0.7
    b = np.where(rng.random(n) < 0.85, a, ~a) | (rng.random(n) < 0.05)
    return a, b


def test_paired_bootstrap_equals_an_independent_numpy_computation():
    a, b = random_outcomes(700)
    for resamples, seed in ((2000, 0), (500, 7)):
        assert paired_bootstrap_ci(a, b, resamples, seed) == pytest.approx(
            independent_bootstrap(a, b, resamples, seed), abs=1e-12
        )
    # drawing counts is drawing items: the textbook index resampling gives the same interval
    # up to Monte Carlo error (20,000 resamples: well under a percentage point)
    ours = paired_bootstrap_ci(a, b, 20_000, 1)
    textbook = index_bootstrap(a, b, 20_000, 2)
    assert ours == pytest.approx(textbook, abs=0.004)


def test_paired_bootstrap_ci_holds_the_difference_and_narrows_with_n():
    a, b = random_outcomes(200)
    low, high = paired_bootstrap_ci(a, b)
    diff = b.mean() - a.mean()
    assert low <= diff <= high and high > low
    low4, high4 = paired_bootstrap_ci(np.tile(a, 16), np.tile(b, 16))
    assert low4 <= diff <= high4
    assert (high4 - low4) < 0.4 * (high - low)  # 16× the items: about a quarter of the width
    assert paired_bootstrap_ci(a[:0], b[:0]) is None


def test_hand_worked_bootstrap_of_the_project_matches_the_independent_one(hand):
    db, runs = hand
    with Store.open(db) as store:
        c = compare_runs(store, runs["judge-a"], runs["judge-b"], resamples=999, seed=5)
    used = sorted(
        (i for i in c.items if i.outcome_a in ("right", "wrong") and i.outcome_b in ("right", "wrong")),
        key=lambda i: i.item_id,
    )
    a = np.array([i.outcome_a == "right" for i in used])
    b = np.array([i.outcome_b == "right" for i in used])
    assert len(used) == 9
    assert c.overall.ci == pytest.approx(independent_bootstrap(a, b, 999, 5), abs=1e-12)


def big_project(tmp_path, n=400, seed=11):
    """n VL-RewardBench-shaped items over six sources; judge B better than A on some sources."""
    rng = random.Random(seed)
    prefixes = ["RLAIF-V-", "mathverse_", "wildvision-battle-", "mmmu_", "RLHF-V-", "povid_"]
    sources = ["rlaif-v", "mathverse", "wildvision", "mmmu-pro", "rlhf-v", "povid"]
    kinds = ["existence", "recognition", "attribute", "counting"]
    rows, a_rows, b_rows = [], [], []
    for k in range(n):
        j = k % 6
        ext = f"{prefixes[j]}{k}"
        ref = rng.randrange(2)
        rows.append(vlrb_row(ext, (ref, 1 - ref), source=sources[j], tags=[kinds[k % 4]]))
        a_right = rng.random() < 0.65
        b_right = rng.random() < (0.9 if j < 2 else 0.66)
        a_rows.append({"item": ext, "choice": ref if a_right else 1 - ref})
        b_rows.append({"item": ext, "choice": ref if b_right else 1 - ref})
    return import_project(tmp_path, rows, {"a": a_rows, "b": b_rows})


def test_holm_and_sidak_equal_multipletests_within_each_kind_of_slice(tmp_path):
    db, runs = big_project(tmp_path)
    with Store.open(db) as store:
        c = compare_runs(store, runs["a"], runs["b"], resamples=200)
    kinds = {s.kind for s in c.slices}
    assert kinds == {"category", "source", "error type", "dataset"}
    for kind in kinds:
        cells = [s for s in c.slices if s.kind == kind]
        raw = [s.paired.p for s in cells]
        for method, got in (("holm", [s.p_holm for s in cells]), ("sidak", [s.p_sidak for s in cells])):
            with np.errstate(divide="ignore"):  # Šidák: log1p(-1) at p = 1
                expected = list(multipletests(raw, method=method)[1])
            assert got == pytest.approx(expected, abs=1e-12), (kind, method)
        for s in cells:
            q = s.paired
            assert q.p == pytest.approx(
                mcnemar([[q.both_right, q.a_only], [q.b_only, q.both_wrong]], exact=True).pvalue
            )
            assert s.p_holm >= q.p
    by = {(s.kind, s.value): s for s in c.slices}
    # B was made better on rlaif-v and mathverse only: significant there after Holm, not elsewhere
    assert by["source", "rlaif-v"].p_holm < 0.05 and by["source", "wildvision"].p_holm > 0.05
    fig = forest_figure(c)
    assert len(fig.axes[0].get_yticklabels()) == 1 + len(c.slices)
    fig.savefig(tmp_path / "forest.png")
    assert (tmp_path / "forest.png").stat().st_size > 10_000


def both_orders_project(tmp_path):
    """The hand-worked runs, a K = 3 imported run (always the reference) and two both-orders runs
    (K = 1: samples 0 and 1 are the two orders)."""
    rows, runs = hand_rows()
    db, ids = import_project(tmp_path, rows, {**runs, "k3": [
        {"item": i, "sample": s, "choice": v[0][0]} for i, v in HAND.items() for s in range(3)
    ]})  # fmt: skip
    # per item (ref = ranking[0]): C consistent on all; D flips its pick with the order on items 1-3
    with Store.open(db) as store:
        for name, flip in (("C", ()), ("D", ("wildvision-battle-1", "wildvision-battle-2", "RLAIF-V-3"))):
            run = fake_run(store, model_path=f"judge-{name}", both_orders=True)
            samples = []
            for ext, (ranking, _a, _b) in HAND.items():
                item_id = store.item_id(ext)
                ref = ranking[0]
                for s, order in enumerate(((0, 1), (1, 0))):
                    pick = ref if not (ext in flip and s == 1) else 1 - ref
                    samples.append(
                        VerdictRecord(run.id, item_id, s, order, f"Answer {pick + 1}", pick, None, True, None)
                    )
            record_verdicts(store, run, samples)
            ids[name] = run.id
    return db, ids


def test_both_orders_runs_compare_consistency_and_runs_with_other_k_their_own_vote(tmp_path):
    db, ids = both_orders_project(tmp_path)
    with Store.open(db) as store:
        c = compare_runs(store, ids["C"], ids["D"])
        k = compare_runs(store, ids["k3"], ids["C"])
    scored = 12  # every item with a reference both runs judged (13 less the tie)
    assert c.consistency.consistent == {ids["C"]: (scored, scored), ids["D"]: (scored - 3, scored)}
    q = c.consistency.paired
    assert (q.both_right, q.a_only, q.b_only) == (scored - 3, 3, 0)
    assert q.p == pytest.approx(0.25)  # 3 of 3 discordant: 2 × ½³
    # D's three inconsistent items have no official majority of 2 samples: left out
    assert c.undecided == {"a": 0, "b": 3, "both": 0} and c.overall.n == scored - 3
    # K = 3 (always the reference) against both orders: each run's own official vote
    assert k.overall.n == scored and k.overall.both_right == scored
    assert k.consistency.consistent == {ids["C"]: (scored, scored)} and k.consistency.paired is None
    assert any("differ in K or orders" in n for n in k.notes)


def test_matrix_of_three_runs_adjusts_over_all_pairs(tmp_path):
    db, ids = both_orders_project(tmp_path)
    run_ids = [ids["judge-a"], ids["judge-b"], ids["C"]]
    with Store.open(db) as store:
        m = compare_many(store, run_ids)
        pair = compare_runs(store, ids["judge-a"], ids["C"])
    assert list(m.cells) == [(run_ids[0], run_ids[1]), (run_ids[0], run_ids[2]), (run_ids[1], run_ids[2])]
    raw = [cell.paired.p for cell in m.cells.values()]
    assert [cell.p_holm for cell in m.cells.values()] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    assert m.cells[run_ids[0], run_ids[2]].paired == pair.overall


def test_bad_runs_are_clear_errors(hand):
    db, runs = hand
    with Store.open(db) as store:
        with pytest.raises(ValueError, match="no judge run 99 in this project"):
            compare_runs(store, runs["judge-a"], 99)
        with pytest.raises(ValueError, match="two different runs"):
            compare_runs(store, runs["judge-a"], runs["judge-a"])
        with pytest.raises(ValueError, match="convention"):
            compare_runs(store, runs["judge-a"], runs["judge-b"], "coin-flip")


# -- the command line -------------------------------------------------------------------------


def test_cli_text_names_the_table_the_test_and_the_flips(hand, capsys):
    db, runs = hand
    a, b = runs["judge-a"], runs["judge-b"]
    assert cli_main(["compare", "--db", str(db), "--run", str(a), "--run", str(b)]) == 0
    out = capsys.readouterr().out
    assert f"A: run {a} · judge-a · K=1" in out and f"B: run {b} · judge-b · K=1" in out
    assert "official vote; 9 paired items both runs decided" in out
    lines = out.splitlines()
    assert lines[lines.index(next(x for x in lines if x.startswith("A right")))].split() == ["A", "right", "4", "1"]
    assert next(x for x in lines if x.startswith("A wrong")).split() == ["A", "wrong", "3", "1"]
    assert "B − A +22.2 pp" in out and "McNemar exact p = 0.6250" in out
    assert "B right, A wrong: RLAIF-V-6, mathverse_7, wildvision-battle-8" in out
    assert "items only A judged: 1 (RLAIF-V-12)" in out and "items only B judged: 1 (mathverse_13)" in out
    assert "category   hallucination" in out


def test_cli_json_and_three_runs(tmp_path, capsys):
    db, ids = both_orders_project(tmp_path)
    capsys.readouterr()  # the imports' reports
    a, b = ids["judge-a"], ids["judge-b"]
    assert cli_main(["compare", "--db", str(db), "--run", str(a), "--run", str(b), "--json", "--seed", "3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["overall"]["both_right"] == 4 and doc["overall"]["mcnemar_p"] == 0.625
    assert doc["bootstrap"] == {"resamples": 2000, "seed": 3, "level": 0.95}
    assert doc["flips"]["A right, B wrong"] == ["RLAIF-V-5"] and doc["only_b"] == ["mathverse_13"]
    assert {s["kind"] for s in doc["slices"]} == {"category", "source", "error type", "dataset"}
    assert cli_main(["compare", "--db", str(db), "--run", str(a), "--run", str(b), "--run", str(ids["C"])]) == 0
    out = capsys.readouterr().out
    assert "3 runs, official vote" in out and f"run {ids['C']} − run {a}: n=" in out
    assert (
        cli_main(["compare", "--db", str(db), "--run", str(a), "--run", str(b), "--run", str(ids["C"]), "--json"]) == 0
    )
    assert len(json.loads(capsys.readouterr().out)["pairs"]) == 3


def test_cli_refuses_one_run_and_unknown_runs(hand, capsys):
    db, runs = hand
    assert cli_main(["compare", "--db", str(db), "--run", str(runs["judge-a"])]) == 1
    assert "at least two different runs" in capsys.readouterr().err
    assert cli_main(["compare", "--db", str(db), "--run", str(runs["judge-a"]), "--run", "42"]) == 1
    assert "no judge run 42" in capsys.readouterr().err


def test_json_document_round_trips(hand):
    db, runs = hand
    with Store.open(db) as store:
        doc = comparison_dict(compare_runs(store, runs["judge-a"], runs["judge-b"]))
    assert json.loads(json.dumps(doc)) == doc


# -- the research API ---------------------------------------------------------------------------


def test_research_api_returns_the_paired_tables(hand):
    import pairscope

    db, runs = hand
    with pairscope.open(db) as project:
        tables = project.compare(runs["judge-a"], runs["judge-b"])
    items, summary, slices = tables["items"], tables["summary"], tables["slices"]
    assert len(items) == 11 and items.loc[items.ext_id == "RLAIF-V-5", "kind"].item() == "A right, B wrong"
    assert list(items.kind[:4]) == ["A right, B wrong", *["B right, A wrong"] * 3]
    assert summary.loc[0, "both_right"] == 4 and summary.loc[0, "mcnemar_p"] == pytest.approx(0.625)
    assert set(slices.kind) == {"category", "source", "error type", "dataset"}
    assert list(tables["table"].columns) == ["B right", "B wrong"]
    assert tables["table"].loc["A wrong", "B right"] == 3
    assert sorted(tables["only"].ext_id) == ["RLAIF-V-12", "mathverse_13"]


@pytest.mark.parametrize("pvalues", [[0.01, 0.04, 0.03, 0.2], [0.5, 0.5, 0.01], [1.0], [0.001, 1.0, 0.02, 0.02, 0.6]])
def test_holm_equals_multipletests(pvalues):
    from pairscope.app.stats.compare import holm

    assert holm(pvalues) == pytest.approx(list(multipletests(pvalues, method="holm")[1]), abs=1e-15)


def test_compare_never_runs_a_garbage_collection(hand, monkeypatch):
    """The window compares on a background thread, and a collection there can free Qt objects
    off the GUI thread (app/gui/gc_thread.py): statsmodels' Holm calls gc.collect()."""
    import gc

    db, runs = hand
    calls = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or real(*a))
    with Store.open(db) as store:
        c = compare_runs(store, runs["judge-a"], runs["judge-b"])
        compare_many(store, [runs["judge-a"], runs["judge-b"]])
    assert c.slices and calls == []


@pytest.mark.parametrize("pvalues", [[0.01, 0.04, 0.03, 0.2], [1.0, 0.3], [0.0, 0.5], [1e-12, 0.9, 0.99]])
def test_sidak_equals_multipletests(pvalues):
    from pairscope.app.stats.compare import sidak

    with np.errstate(divide="ignore"):
        expected = list(multipletests(pvalues, method="sidak")[1])
    assert sidak(pvalues) == pytest.approx(expected, abs=1e-15)
