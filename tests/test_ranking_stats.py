"""Statistics over rankings with ties (app/stats/rankings.py) and the release metrics beside them:
Kendall's W and Krippendorff's α (ordinal) worked by hand and checked against independent
computations, pairwise accuracy with ½ for a tie, ACC+ and RewardBench 2's best-of-N with
1/#ties, through a real project and ``pairscope stats``."""

from __future__ import annotations

import json
import random

import krippendorff
import numpy as np
import pytest

from helpers import fake_run
from pairscope.app.cli.main import main
from pairscope.app.judge.results import record_verdicts
from pairscope.app.judge.votes import wilson_ci
from pairscope.app.rankings import induced_pairs, ranked_fields
from pairscope.app.records import Item, Label, Reference, Response
from pairscope.app.stats.data import load_stats_data
from pairscope.app.stats.rankings import (
    PAIR_RULE,
    RANKINGS_KEYS,
    alpha_of_coincidences,
    coincidence_parts,
    kendall_w_items,
    ordinal_alpha,
    pair_credit,
    pair_signs,
    reliability_matrix,
)
from pairscope.app.store import Store, VerdictRecord

#: The keys of ``stats --json``'s ``rankings`` (docs/STATISTICS.md, "Rankings").
DOCUMENTED = (
    "annotators", "ranking_labels", "items_ranked", "items_with_reference", "kendall_w",
    "krippendorff_alpha_ordinal", "pairwise_accuracy", "pairwise_agreement", "judges",
)  # fmt: skip

#: One 4-response item ranked by three annotators, with ties (1 = best).
RANKS = {"alice": (1, 2, 2, 3), "bob": (1, 3, 2, 4), "carol": (2, 1, 3, 3)}


def four(ext_id, reference=None):
    responses = tuple(Response(j, f"answer {j}") for j in range(4))
    return Item(ext_id, "Rank these.", responses, reference=reference or Reference())


def pair(ext_id, source_id):
    """A pair of id ``source_id`` (its several pairs differ in content: distinct items)."""
    responses = (Response(0, f"GOOD {ext_id}"), Response(1, f"BAD {ext_id}"))
    return Item(ext_id, "Which?", responses, reference=Reference(ranking=(0, 1)), source_id=source_id)


def rank(store, item_id, annotator, ranks):
    """Store a ranking label as the labeling session does (``ranked_fields``)."""
    outcome, ranking, dense = ranked_fields(ranks)
    store.add_label(Label(item_id=item_id, annotator=annotator, outcome=outcome, ranking=ranking, ranks=dense))


def kendall_w_plainly(rankings):
    """W = 12 S / (m²(n³ − n) − m Σ T) on average ranks, T = Σ (t³ − t) per tie group."""
    m, n = len(rankings), len(rankings[0])
    sums, tie_sum = [0.0] * n, 0
    for ranks in rankings:
        for j, r in enumerate(ranks):
            above = sum(1 for x in ranks if x < r)
            tied = sum(1 for x in ranks if x == r)
            sums[j] += above + (tied + 1) / 2
        for value in set(ranks):
            t = list(ranks).count(value)
            tie_sum += t**3 - t
    s = sum((x - m * (n + 1) / 2) ** 2 for x in sums)
    return 12 * s / (m**2 * (n**3 - n) - m * tie_sum)


def ordinal_alpha_plainly(matrix):
    """Krippendorff's α, ordinal, from the coincidence matrix (Krippendorff 2011, §E)."""
    values = sorted({v for row in matrix for v in row if v is not None})
    o = {(c, k): 0.0 for c in values for k in values}
    for unit in zip(*matrix):
        here = [v for v in unit if v is not None]
        if len(here) < 2:
            continue
        for i, j in ((i, j) for i in range(len(here)) for j in range(len(here)) if i != j):
            o[here[i], here[j]] += 1 / (len(here) - 1)
    n_c = {c: sum(o[c, k] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c, k):
        low, high = sorted((values.index(c), values.index(k)))
        return (sum(n_c[g] for g in values[low : high + 1]) - (n_c[c] + n_c[k]) / 2) ** 2

    observed = sum(o[c, k] * delta(c, k) for c in values for k in values)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values) / (n - 1)
    return 1 - observed / expected


@pytest.fixture
def project(tmp_path):
    """Two items ranked by three annotators (item i1 as RANKS, i2 with alice and bob agreeing),
    one with a reference ranking; two ids (g1, g2) of two pairs each, judged by a fake run that
    gets g1's pairs right and one of g2's wrong."""
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                four("i1", Reference(ranking=(0, 1, 2, 3), ranks=(1, 2, 3, 3))),
                four("i2"),
                *(pair(f"g{g}-{k}", f"g{g}") for g in (1, 2) for k in (1, 2)),
            ]
        )
        i1, i2 = store.item_id("i1"), store.item_id("i2")
        for name, ranks in RANKS.items():
            rank(store, i1, name, ranks)
        rank(store, i2, "alice", (1, 2, 3, 4))
        rank(store, i2, "bob", (1, 2, 3, 4))
        run = fake_run(store)
        pairs = [item_id for item_id, group, _ in store.item_keys() if group in ("g1", "g2")]  # g1, g1, g2, g2
        record_verdicts(
            store,
            run,
            [
                VerdictRecord(run.id, item_id, 0, (0, 1), f"Response {c + 1}", c, None, True, "")
                for item_id, c in zip(pairs, (0, 0, 0, 1), strict=True)
            ],
        )
    return path


def test_kendall_w_by_hand_with_ties():
    # average ranks: alice (1, 2.5, 2.5, 4), bob (1, 3, 2, 4), carol (2, 1, 3.5, 3.5)
    # rank sums R = (4, 6.5, 8, 11.5), mean m(n + 1)/2 = 7.5 → S = 12.25 + 1 + 0.25 + 16 = 29.5
    # ties: alice one pair, carol one pair → Σ T = 6 + 6 = 12
    # W = 12 · 29.5 / (9 · 60 − 3 · 12) = 354 / 504
    assert kendall_w_plainly(list(RANKS.values())) == pytest.approx(354 / 504)
    from pairscope.app.stats.data import RankRows

    label_ranks = {name: RankRows(np.array([0]), np.array([ranks], float)) for name, ranks in RANKS.items()}
    rows, w = kendall_w_items(label_ranks, np.array([4]))
    assert rows.tolist() == [0] and w[0] == pytest.approx(354 / 504)


def test_ordinal_alpha_on_ranks_matches_krippendorff():
    from pairscope.app.stats.data import RankRows

    label_ranks = {name: RankRows(np.array([0]), np.array([ranks], float)) for name, ranks in RANKS.items()}
    matrix, units = reliability_matrix(label_ranks, np.array([4]))
    # units = the item's four responses; each row an annotator's ranks as given
    hand = [list(RANKS["alice"]), list(RANKS["bob"]), list(RANKS["carol"])]
    assert matrix.tolist() == hand and units.tolist() == [0, 0, 0, 0]
    reference = krippendorff.alpha(reliability_data=np.array(hand, float), level_of_measurement="ordinal")
    assert ordinal_alpha(matrix) == pytest.approx(reference)
    assert ordinal_alpha(matrix) == pytest.approx(ordinal_alpha_plainly(hand))


def test_alpha_of_a_resample_is_krippendorff_on_the_resampled_items():
    """The bootstrap's α (drawn items' coincidences summed) equals ``krippendorff.alpha`` on
    the reliability matrix of the drawn items, each repeated as often as drawn."""
    from pairscope.app.stats.data import RankRows

    rng = np.random.default_rng(2)
    n_items, n = 6, 4
    label_ranks = {}
    for k, name in enumerate(("a", "b", "c")):
        rows = np.array([i for i in range(n_items) if (i + k) % 4])  # not everyone ranks every item
        label_ranks[name] = RankRows(rows, rng.integers(1, 4, (len(rows), n)).astype(float))
    matrix, units = reliability_matrix(label_ranks, np.full(n_items, n))
    parts = coincidence_parts(matrix, units)
    items = np.unique(units)
    for weights in ([1] * len(items), [2, 0, 1, 3, 1, 0][: len(items)]):
        repeated = np.concatenate([matrix[:, units == item] for item, w in zip(items, weights) for _ in range(w)], 1)
        expected = krippendorff.alpha(reliability_data=repeated, level_of_measurement="ordinal")
        o = np.tensordot(np.array(weights, float), parts, axes=1)[None]
        assert alpha_of_coincidences(o)[0] == pytest.approx(expected)
    assert alpha_of_coincidences(parts.sum(0)[None])[0] == pytest.approx(ordinal_alpha(matrix))


def test_pairwise_accuracy_counts_a_tie_half():
    reference = (1, 2, 3, 3)  # responses 2 and 3 tie: that pair is left out → 5 pairs
    # alice (1, 1, 2, 3): 0-1 tied by alice ½; 0-2, 0-3, 1-2, 1-3 as the reference 1 each → 4.5 / 5
    # bob (3, 1, 2, 2): 0-1, 0-2, 0-3 reversed 0; 1-2, 1-3 right → 2 / 5
    signs = pair_signs(np.array([[1, 1, 2, 3], [3, 1, 2, 2]], float))
    credit, pairs = pair_credit(signs, pair_signs(np.array([reference] * 2, float)))
    assert pairs.tolist() == [5, 5] and (credit / pairs).tolist() == pytest.approx([0.9, 0.4])
    # agreement alice ↔ bob over all 6 pairs: ½ (0-1 alice ties), 0, 0, 1, 1, ½ (2-3 bob ties)
    credit, pairs = pair_credit(signs[:1], signs[1:], agreement=True)
    assert pairs.tolist() == [6] and credit.tolist() == [3.0]
    assert "left out" in PAIR_RULE and "1/2" in PAIR_RULE


def test_pair_signs_are_the_induced_pairs():
    """The vectorised relation per pair equals ``app.rankings.induced_pairs`` row by row."""
    rng = random.Random(5)
    rows = [tuple(rng.randint(1, 3) for _ in range(5)) for _ in range(40)]
    signs = pair_signs(np.array(rows, float))
    for ranks, row in zip(rows, signs):
        expected = []
        for a, b, tied in sorted(induced_pairs(ranks), key=lambda p: (min(p[:2]), max(p[:2]))):
            expected.append(0.0 if tied else (1.0 if a < b else -1.0))
        assert row.tolist() == expected


def test_stats_json_and_text_show_rankings_and_acc_plus(project, capsys):
    assert main(["stats", "--db", str(project), "--json", "--bootstrap", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    rankings = report["rankings"]
    assert tuple(rankings) == RANKINGS_KEYS == DOCUMENTED  # docs/STATISTICS.md, "Rankings"
    assert set(rankings["kendall_w"]) == {"mean", "items", "ci", "bootstrap"}
    assert set(rankings["krippendorff_alpha_ordinal"]) == {"alpha", "items", "units", "ci", "bootstrap"}
    assert set(rankings["pairwise_accuracy"]) == {"rule", "annotators", "all"}
    assert set(rankings["pairwise_accuracy"]["all"]) == {"items", "pairs", "credit", "accuracy", "ci"}
    assert set(rankings["pairwise_agreement"]) == {"pairs", "mean"}
    assert set(rankings["pairwise_agreement"]["pairs"]["alice|bob"]) == {"items", "pairs", "credit", "agreement", "ci"}
    assert set(rankings["judges"]) == set(report["judges"])
    assert rankings["annotators"] == ["alice", "bob", "carol"]
    assert (rankings["ranking_labels"], rankings["items_ranked"], rankings["items_with_reference"]) == (5, 2, 1)
    # W: i1 as worked by hand (354/504), i2 alice and bob agree fully (1.0) → mean over 2 items
    w = rankings["kendall_w"]
    assert w["items"] == 2 and w["mean"] == pytest.approx((354 / 504 + 1.0) / 2)
    assert w["ci"][0] <= w["mean"] <= w["ci"][1] and w["bootstrap"] == 50
    alpha = rankings["krippendorff_alpha_ordinal"]
    raw = np.array([[1, 2, 2, 3, 1, 2, 3, 4], [1, 3, 2, 4, 1, 2, 3, 4], [2, 1, 3, 3, *[np.nan] * 4]])
    expected = krippendorff.alpha(reliability_data=raw, level_of_measurement="ordinal")
    assert (alpha["items"], alpha["units"]) == (2, 8) and alpha["alpha"] == pytest.approx(expected)
    # against i1's reference (1, 2, 3, 3): alice 4.5/5 (see the worked example), bob (1, 3, 2, 4):
    # 0-1, 0-2, 0-3, 1-3 right, 1-2 reversed → 4/5; carol (2, 1, 3, 3): 0-1 reversed, 0-2, 0-3,
    # 1-2, 1-3 right → 4/5
    accuracy = rankings["pairwise_accuracy"]
    assert {n: a["accuracy"] for n, a in accuracy["annotators"].items()} == pytest.approx(
        {"alice": 0.9, "bob": 0.8, "carol": 0.8}
    )
    assert accuracy["all"]["pairs"] == 15 and accuracy["all"]["accuracy"] == pytest.approx(12.5 / 15)
    assert set(rankings["pairwise_agreement"]["pairs"]) == {"alice|bob", "alice|carol", "bob|carol"}
    assert rankings["pairwise_agreement"]["pairs"]["alice|bob"]["items"] == 2
    # ACC+ by hand: g1's two pairs right, g2's second wrong → 1 of 2 ids
    [run] = report["judges"].values()
    assert run["acc_plus"] == {
        "acc_plus": 0.5,
        "groups": 2,
        "groups_right": 1,
        "ci": pytest.approx(wilson_ci(1, 2)),
        "convention": "mm-rlhf",
    }
    assert run["overall_unparsed_wrong"] == pytest.approx(3 / 4)

    assert main(["stats", "--db", str(project), "--bootstrap", "0"]) == 0
    text = capsys.readouterr().out
    assert "Rankings: 2 items ranked (5 ranking labels by 3 annotators), 1 with a reference ranking" in text
    assert f"Kendall's W (tie-corrected) mean {(354 / 504 + 1) / 2:.3f}" in text
    assert "alice vs reference ranking: 90.0%" in text
    assert "ACC+ (mm-rlhf): 50.0%" in text and "of 2 ids (1 with every pair right)" in text


def test_a_project_without_rankings_has_no_rankings_section(tmp_path, capsys):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items([pair(f"p{k}", None) for k in range(3)])
        for name in ("alice", "bob"):
            for k in range(3):
                store.add_label(Label(item_id=store.item_id(f"p{k}"), annotator=name, outcome="prefer", ranking=(0, 1)))
        data = load_stats_data(store)
    assert data.label_ranks == {} and data.reference_ranks is None
    assert main(["stats", "--db", str(path), "--json", "--bootstrap", "0"]) == 0
    assert "rankings" not in json.loads(capsys.readouterr().out)
    assert main(["stats", "--db", str(path), "--bootstrap", "0"]) == 0
    assert "Rankings" not in capsys.readouterr().out


def test_loaded_rankings_follow_the_current_label(project):
    """A changed ranking replaces the old one; a label changed to a plain preference ranks
    nothing (carol, who ranked i1 only, is no ranker any more); bob's ranking stays."""
    with Store(project) as store:
        i1 = store.item_id("i1")
        rank(store, i1, "alice", (4, 3, 2, 1))
        store.add_label(Label(item_id=i1, annotator="carol", outcome="prefer", ranking=(1,)))
        data = load_stats_data(store)
    row = int(np.searchsorted(data.item_ids, i1))
    assert data.label_ranks["alice"].ranks[data.label_ranks["alice"].rows == row].tolist() == [[4, 3, 2, 1]]
    assert "carol" not in data.label_ranks  # she ranked i1 only
    assert data.label_ranks["bob"].ranks[data.label_ranks["bob"].rows == row].tolist() == [[1, 3, 2, 4]]
    assert data.reference_ranks is not None and data.reference_ranks.ranks.tolist() == [[1, 2, 3, 3]]


def test_rewardbench2_best_of_n_gives_one_over_the_ties_at_the_top():
    """The convention's Best-of-N over 4-response items credits a tie at the top 1/#tied, as its
    overall does (rewardbench/utils.py: ``1 / np.sum(scores == max)`` when the chosen is at max)."""
    from test_scoring_conventions import _pointwise

    item_scores = [[5, 3, 2, 1], [5, 5, 2, 1], [3, 5, 2, 1], [4, 4, 4, 4]]
    c = _pointwise(item_scores, [0, 0, 0, 0]).conventions["rewardbench2"]
    expected = (1 + 1 / 2 + 0 + 1 / 4) / 4
    assert c.best_of_n.accuracy.accuracy_all == pytest.approx(expected)
    assert c.overall.accuracy_all == pytest.approx(expected)
    assert c.overall.ci_all == pytest.approx(wilson_ci(1.75, 4))


def test_a_judge_ranking_is_scored_over_induced_pairs(tmp_path, capsys):
    """A run's signal ranks the responses: a pairwise judge naming response 0 ties the other
    three (½ each where the reference orders them), a pointwise one ranks by its scores."""
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items([four("i1", Reference(ranking=(0, 1, 2, 3), ranks=(1, 2, 3, 3)))])
        i1 = store.item_id("i1")
        pairwise = fake_run(store)
        record_verdicts(store, pairwise, [VerdictRecord(pairwise.id, i1, 0, (0, 1, 2, 3), "R1", 0, None, True, "")])
        pointwise = fake_run(store, mode="pointwise", model_path="scorer")
        scores = (9, 5, 5, 1)  # sample r scores response r (K = 1)
        record_verdicts(
            store,
            pointwise,
            [
                VerdictRecord(pointwise.id, i1, r, (r,), f"Score: {s}", None, (s,), True, "")
                for r, s in enumerate(scores)
            ],
        )
    assert main(["stats", "--db", str(path), "--json", "--bootstrap", "0"]) == 0
    judges = json.loads(capsys.readouterr().out)["rankings"]["judges"]
    # reference (1, 2, 3, 3): pairs 0-1, 0-2, 0-3, 1-2, 1-3 (2-3 tied: left out)
    # pairwise, response 0 named: 0 above all (3 right), 1, 2, 3 tied (1-2, 1-3: ½ each) → 4 / 5
    # pointwise (9, 5, 5, 1): 0-1, 0-2, 0-3, 1-3 right, 1-2 tied ½ → 4.5 / 5
    assert {run: (j["mode"], j["pairs"], j["accuracy"]) for run, j in judges.items()} == {
        str(pairwise.id): ("pairwise", 5, pytest.approx(0.8)),
        str(pointwise.id): ("pointwise", 5, pytest.approx(0.9)),
    }
    assert main(["stats", "--db", str(path), "--bootstrap", "0"]) == 0
    assert f"judge run {pointwise.id} (pointwise) vs reference ranking: 90.0%" in capsys.readouterr().out


def test_the_statistics_window_shows_the_ranking_figures_beside_the_pairwise_ones(qtbot, project):
    from pairscope.app.gui.stats_view import StatsView

    with Store.open(project) as store:
        view = StatsView(store)
        qtbot.addWidget(view)
        view.show()
        qtbot.waitUntil(lambda: view.report is not None, timeout=30000)
        rankings = view.report["rankings"]
        agreement, reference = view.sections["rankings_0"], view.sections["rankings_1"]
        model = agreement.table.model()
        assert model.text(0, 0) == "Kendall's W (mean over items)"
        assert model.text(0, 1) == f"{rankings['kendall_w']['mean']:.3f}" == f"{(354 / 504 + 1.0) / 2:.3f}"
        assert model.text(1, 1) == f"{rankings['krippendorff_alpha_ordinal']['alpha']:.3f}"
        rows = {reference.table.model().text(r, 0): r for r in range(reference.table.model().rowCount())}
        assert {"alice", "bob", "carol"} <= set(rows)
        assert reference.table.model().text(rows["bob"], 3) == "80.0"  # 4 of 5 induced pairs
        page = view.pages["Annotators"]
        assert agreement in page.findChildren(type(agreement)) and reference in page.findChildren(type(reference))
        view.close()
        qtbot.waitUntil(lambda: not view._op.running, timeout=30000)
