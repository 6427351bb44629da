"""Judge ensembles and hard-sample mining (issue 13, point 3): per-item wrong counts, the
judge×judge kappa matrix, the hard set on a constructed ensemble with hand-computed items, the
CLI, the review panel's side-by-side table and the Ensemble dialog."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PySide6.QtCore import Qt
from sklearn.metrics import cohen_kappa_score

from helpers import fake_run, show_active
from pairscope.app.cli.ensemble import VOTES
from pairscope.app.cli.main import main as cli_main
from pairscope.app.judge.ensemble import build_hard_set, load_ensemble, parse_runs, save_hard_set
from pairscope.app.judge.results import record_verdicts
from pairscope.app.judge.review import review_data
from pairscope.app.judge.votes import CONVENTIONS
from pairscope.app.records import Item, Reference, Response
from pairscope.app.store import Store, VerdictRecord

U = "unparsed"
T = "tie"
#: item (ext id) → run → its K = 3 trials: a response index, "tie" or "unparsed". Response 0
#: is the reference of every item but "noref". Hand-worked below.
TRIALS = {
    "i1": {"A": [0, 0, 0], "B": [0, 0, 1], "C": [0, 0, 0]},  # all right          → 0 judges wrong
    "i2": {"A": [1, 1, 0], "B": [0, 0, 0], "C": [0, 1, 0]},  # A wrong            → 1
    "i3": {"A": [1, 1, 1], "B": [1, 1, 0], "C": [0, 0, 1]},  # A, B wrong         → 2
    "i4": {"A": [1, 1, 1], "B": [1, 0, 1], "C": [1, 1, 1]},  # all wrong          → 3
    "i5": {"A": [1, U, U], "B": [1, 1, U], "C": [0, 1, U]},  # B wrong; A, C no majority
    "i6": {"A": [1, 1, 0], "B": [T, T, 0]},  # A wrong; B no majority; C did not judge it
    "noref": {"A": [1, 1, 1], "B": [1, 1, 1], "C": [1, 1, 1]},  # no reference: never counted
}
#: Hand-computed from TRIALS.
JUDGES_WRONG = {"i1": 0, "i2": 1, "i3": 2, "i4": 3, "i5": 1, "i6": 1}
TRIALS_WRONG = {"i1": 1, "i2": 3, "i3": 6, "i4": 8, "i5": 4, "i6": 4}  # ties count wrong
HARD = {
    (1, False): ["i2", "i3", "i4", "i5", "i6"],
    (2, False): ["i3", "i4"],
    (3, False): ["i4"],
    (2, True): ["i3", "i4", "i5", "i6"],  # undecided counts as failing
    (3, True): ["i4", "i5"],
}


def build(path):
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=ext,
                    prompt=f"Question {ext}",
                    responses=(Response(0, f"GOOD {ext}"), Response(1, f"BAD {ext}")),
                    reference=Reference(ranking=None if ext == "noref" else (0, 1)),
                    category="c",
                )
                for ext in TRIALS
            ]
        )
        runs = {name: fake_run(store, model_path=f"judge-{name}", k=3).id for name in "ABC"}
        for name, run_id in runs.items():
            run = store.run(run_id)
            samples = []
            for ext, by_run in TRIALS.items():
                item_id = store.item_id(ext)
                for j, said in enumerate(by_run.get(name, [])):
                    order = (0, 1) if (j + item_id) % 2 else (1, 0)  # the trials' random orders
                    samples.append(
                        VerdictRecord(
                            run_id,
                            item_id,
                            j,
                            order,
                            f"sample {j}: {said}",
                            said if isinstance(said, int) else None,
                            None,
                            said != U,
                            None,
                        )
                    )
            record_verdicts(store, run, samples)
    return path, runs


@pytest.fixture
def project(tmp_path):
    return build(tmp_path / "ens.pairscope")


def ext_ids(store, ids):
    by_id = {store.item_id(ext): ext for ext in TRIALS}
    return [by_id[i] for i in ids]


def test_wrong_counts_and_hard_sets_match_the_hand_computed_ones(project):
    path, runs = project
    with Store.open(path) as store:
        ens = load_ensemble(store, [runs["A"], runs["B"], runs["C"]])
        items = {ext_ids(store, [i.item_id])[0]: i for i in ens.items}
        assert set(items) == set(JUDGES_WRONG)  # the item without a reference is left out
        assert {e: i.judges_wrong for e, i in items.items()} == JUDGES_WRONG
        assert {e: i.trials_wrong for e, i in items.items()} == TRIALS_WRONG
        assert items["i6"].trials == 6  # C did not judge it: two runs × K = 3
        assert ens.wrong_distribution() == {0: 1, 1: 3, 2: 1, 3: 1}
        for (m, undecided), expected in HARD.items():
            assert ext_ids(store, ens.hard_set(m, undecided)) == expected, (m, undecided)
        with pytest.raises(ValueError, match="between 1 and"):
            ens.hard_set(4)
        acc = {a.run_id: a for a in ens.accuracy}
        # A: i1 right, i2 i3 i4 i6 wrong, i5 undecided → 1/5; B: i1 i2 right, i3 i4 i5 wrong, i6 undecided.
        assert (acc[runs["A"]].correct, acc[runs["A"]].decided, acc[runs["A"]].undecided) == (1, 5, 1)
        assert (acc[runs["B"]].correct, acc[runs["B"]].decided, acc[runs["B"]].undecided) == (2, 5, 1)
        assert (acc[runs["C"]].correct, acc[runs["C"]].decided, acc[runs["C"]].judged) == (3, 4, 5)


def test_kappa_matrix_equals_sklearn_on_the_items_both_decided(project):
    path, runs = project
    with Store.open(path) as store:
        ens = load_ensemble(store, list(runs.values()))
        kappa = ens.kappa()
        for a in ens.run_ids:
            assert kappa[a, a] == 1.0
            for b in ens.run_ids:
                if a == b:
                    continue
                va, vb = ens.verdicts[a], ens.verdicts[b]
                shared = sorted(i for i in va if i in vb and va[i].official is not None and vb[i].official is not None)
                expected = cohen_kappa_score([va[i].official for i in shared], [vb[i].official for i in shared])
                assert kappa[a, b] == pytest.approx(expected, abs=1e-12), (a, b)
                assert kappa[a, b] == kappa[b, a]


def test_the_ensemble_reads_the_one_vote(project):
    """A judge's verdict is the stored item verdict (judge_items): no second vote rule."""
    path, runs = project
    with Store.open(path) as store:
        ens = load_ensemble(store, list(runs.values()))
        for run_id in ens.run_ids:
            stored = store.item_verdict_rows(run_id)
            for item_id, verdict in ens.verdicts[run_id].items():
                assert stored[item_id][1] == verdict.official


def test_hard_set_is_saved_as_a_collection_with_its_rule(project, tmp_path):
    path, runs = project
    with Store.open(path) as store:
        ens = load_ensemble(store, list(runs.values()))
        hard = build_hard_set(ens, " hard ", 2)
        assert save_hard_set(store, hard) == 2
        assert ext_ids(store, store.collection_item_ids("hard")) == ["i3", "i4"]
        assert "at least 2 of 3 judges fail" in hard.description()
        assert "judge-A" in hard.description() and "K=3" in hard.description()
        with pytest.raises(ValueError, match="exists already"):
            save_hard_set(store, hard)


def test_cli_ensemble_prints_accuracy_kappa_and_distribution(project, capsys):
    path, runs = project
    ids = ",".join(str(runs[n]) for n in "ABC")
    assert cli_main(["ensemble", "--db", str(path), "--runs", ids, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["judges_wrong"] == {"0": 1, "1": 3, "2": 1, "3": 1}
    assert [a["correct"] for a in out["accuracy"]] == [1, 2, 3]
    assert out["kappa"][str(runs["A"])][str(runs["A"])] == 1.0
    assert out["items"] == 6
    assert cli_main(["ensemble", "--db", str(path), "--runs", ids]) == 0
    text = capsys.readouterr().out
    assert "Cohen's kappa between judges" in text and "3 of 3: 1" in text and "judge-B" in text


def test_cli_hard_set_writes_the_collection_export_reads(project, capsys, tmp_path):
    path, runs = project
    ids = ",".join(str(runs[n]) for n in "ABC")
    assert cli_main(["hard-set", "--db", str(path), "--runs", ids, "--min-fail", "3", "--name", "h3"]) == 0
    assert "'h3': 1 items" in capsys.readouterr().out
    assert cli_main(["hard-set", "--db", str(path), "--runs", ids, "--name", "maj", "--undecided-fails"]) == 0
    assert "'maj': 4 items" in capsys.readouterr().out  # default: a majority (2 of 3)
    with Store.open(path, readonly=True) as store:
        assert store.collections() == {"h3": 1, "maj": 4}
    out = tmp_path / "export"
    assert cli_main(["export", "--db", str(path), "--format", "jsonl", "--collection", "h3", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["i4"]
    assert cli_main(["hard-set", "--db", str(path), "--runs", ids, "--min-fail", "3", "--name", "h3"]) == 1
    assert "exists already" in capsys.readouterr().err
    assert cli_main(["ensemble", "--db", str(path), "--runs", "1,99"]) == 1
    assert "no judge run 99" in capsys.readouterr().err


def test_parse_runs_and_cli_conventions():
    assert parse_runs("3, 1,3,2") == [3, 1, 2]
    with pytest.raises(ValueError):
        parse_runs("1;2")
    assert VOTES == CONVENTIONS


def test_review_data_lists_every_judge_side_by_side(project):
    path, runs = project
    with Store.open(path) as store:
        item = store.get_item(store.item_id("i3"))
        data = review_data(store, item, (0, 1), [runs["A"], runs["B"], runs["C"]])
        assert [(r.verdict, r.votes, r.outcome) for r in data.runs] == [
            ("R2", "3 of 3", "wrong"),
            ("R2", "2 of 3", "wrong"),
            ("R1", "2 of 3", "right"),
        ]
        six = review_data(store, store.get_item(store.item_id("i6")), (1, 0), [runs["B"], runs["C"]])
        assert [(r.verdict, r.outcome) for r in six.runs] == [("no majority", "undecided"), ("not judged", "—")]


def test_window_review_panel_and_ensemble_dialog(qtbot, project):
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    path, runs = project
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann")))
    assert window.shortcuts.actions["ensemble"].shortcut().toString() == "Ctrl+Shift+M"
    dialog = window.shortcuts.show_ensemble()
    qtbot.addWidget(dialog)
    assert dialog.chosen() == [runs["A"], runs["B"], runs["C"]]
    # read off the GUI thread: the dialog says so and offers no stale hard set meanwhile
    assert dialog.reading and dialog.hard_count.text() == "Reading 3 judge runs…"
    assert not dialog.save.isEnabled()
    qtbot.waitUntil(lambda: not dialog.reading)
    assert dialog.min_fail.value() == 2 and "2 of 6 items" in dialog.hard_count.text()
    dialog.name.setText("hard")
    assert dialog.save_hard_set() == 2
    assert window.controller.store.collections() == {"hard": 2}
    dialog.apply_to_window()
    assert window.controller.ensemble == (runs["A"], runs["B"], runs["C"])
    window.table.select_row(window.controller.row_of(window.controller.store.item_id("i4")))
    rows = window.review.run_rows()
    assert [r[3] for r in rows] == ["wrong", "wrong", "wrong"]
    assert [r[0] for r in rows] == [f"run {runs[n]} · judge-{n}" for n in "ABC"]
    dialog.close()


def test_ensemble_dialog_keeps_only_the_result_for_the_runs_ticked_last(qtbot, project):
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    path, runs = project
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann")))
    dialog = window.shortcuts.show_ensemble()
    qtbot.addWidget(dialog)
    for row in (2, 1):  # untick C, then B, before the first read ends
        dialog.runs.item(row).setCheckState(Qt.CheckState.Unchecked)
    qtbot.waitUntil(lambda: not dialog.reading and dialog.ensemble is not None)
    qtbot.wait(50)  # a stale result arriving late would replace the tables
    assert dialog.ensemble.run_ids == (runs["A"],) and dialog.of_n.text() == "of 1 judge fail it"
    assert dialog.save.isEnabled()
    dialog.runs.item(0).setCheckState(Qt.CheckState.Unchecked)
    assert dialog.ensemble is None and not dialog.reading and not dialog.save.isEnabled()
    dialog.close()


def test_kappa_is_nan_where_undefined(tmp_path):
    path, runs = build(tmp_path / "p.pairscope")
    with Store.open(path) as store:
        ens = load_ensemble(store, [runs["A"]])
        assert ens.kappa() == {(runs["A"], runs["A"]): 1.0}
        assert not math.isnan(np.float64(ens.kappa()[runs["A"], runs["A"]]))
