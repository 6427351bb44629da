"""The "label what matters next" queue (issue 13, point 4): the order on a constructed
project, the reasons it gives, reproducibility, and U in a real window following the order
chosen in the menu (remembered per project)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from helpers import fake_run, show_active
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.judge import queue as queue_module
from pairscope.app.judge.queue import QueueCache, next_in_queue, ranked, split_sizes
from pairscope.app.judge.results import record_verdicts
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, Reference, Response
from pairscope.app.store import Store, VerdictRecord

U = "unparsed"
#: item → run → K = 3 trials (response index or unparsed); response 0 is every reference.
TRIALS = {
    "q1": {"A": [0, 0, 0], "B": [0, 0, 0], "C": [0, 0, 0]},  # all agree
    "q2": {"A": [0, 0, 0], "B": [1, 1, 1], "C": [0, 0, 0]},  # 2–1
    "q3": {"A": [0, 0, 0], "B": [1, 1, 1], "C": [U, U, U]},  # 1–1–1 (C: no majority)
    "q4": {"A": [1, 1, 0], "B": [1, 1, 1]},  # agree (R1, R1)
    "q5": {"A": [0, 0, 1], "B": [1, 1, 0], "C": [1, 1, 1]},  # 2–1
    "q6": {},  # not judged
    "q7": {"A": [0, 0, 0], "B": [1, 1, 1], "C": [0, 1, 1]},  # 2–1, but "ann" labeled it
    "q8": {"A": [1, 1, 1], "B": [0, 0, 0]},  # 1–1
}
#: (ext id, response index | outcome) labels of the other annotators; "ann" labeled q7.
LABELS = {
    "bob": {"q2": 0, "q4": 0, "q5": 0, "q6": 1, "q7": 0},
    "cat": {"q2": 1, "q4": 0, "q5": "tie", "q6": "both_bad", "q7": 1},
    "dan": {"q5": 0, "q6": "tie"},
    "ann": {"q7": 0},
}
#: Stored confidence: run A's samples of q1 (another helper fills confidence; NULL elsewhere).
CONFIDENCE = {("q1", "A"): 0.2}


def label(session: LabelingSession, item_id: int, what) -> None:
    if isinstance(what, int):
        session.save(item_id, LabelDraft(outcome="prefer", preferred_position=session.order(item_id).index(what) + 1))
    else:
        session.save(item_id, LabelDraft(outcome=what))


def build(path):
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=ext,
                    prompt=f"Question {ext}",
                    responses=(Response(0, f"GOOD {ext}"), Response(1, f"BAD {ext}")),
                    reference=Reference(ranking=(0, 1)),
                    category="c",
                )
                for ext in TRIALS
            ]
        )
        runs = {name: fake_run(store, model_path=f"judge-{name}", k=3) for name in "ABC"}
        for name, run in runs.items():
            samples = []
            for ext, by_run in TRIALS.items():
                item_id = store.item_id(ext)
                for j, said in enumerate(by_run.get(name, [])):
                    samples.append(
                        VerdictRecord(
                            run.id,
                            item_id,
                            j,
                            (0, 1) if j % 2 else (1, 0),
                            f"sample {j}",
                            None if said == U else said,
                            None,
                            said != U,
                            None,
                            confidence=CONFIDENCE.get((ext, name)),
                        )
                    )
            record_verdicts(store, run, samples)
        for annotator, labels in LABELS.items():
            session = LabelingSession(store, annotator)
            for ext, what in labels.items():
                label(session, store.item_id(ext), what)
    return path


@pytest.fixture
def project(tmp_path):
    return build(tmp_path / "queue.pairscope")


def order_of(store, order, annotator="ann", runs=None):
    labeled = LabelingSession(store, annotator).labeled_ids()
    by_id = {store.item_id(ext): ext for ext in TRIALS}
    return [(by_id[e.item_id], e.reason) for e in ranked(store, order, annotator, labeled, runs)]


def test_judges_disagree_most_split_first_with_reasons(project):
    with Store.open(project, readonly=True) as store:
        assert order_of(store, "judges_disagree") == [
            ("q3", "judges split 1–1–1 (runs 1, 2, 3; 1 without a majority)"),
            ("q8", "judges split 1–1 (runs 1, 2)"),
            ("q2", "judges split 2–1 (runs 1, 2, 3)"),
            ("q5", "judges split 2–1 (runs 1, 2, 3)"),
        ]  # q7 is split too, but this annotator labeled it
        # An ensemble of two runs: only where those two differ.
        assert [e for e, _ in order_of(store, "judges_disagree", runs=[1, 3])] == ["q3", "q5"]


def test_least_confident_uses_stored_confidence_else_the_vote_share(project):
    with Store.open(project, readonly=True) as store:
        got = order_of(store, "least_confident")
        assert [e for e, _ in got] == ["q3", "q1", "q5", "q4", "q2", "q8"]
        reasons = dict(got)
        # q3: runs 1 and 2 unanimous (3 of 3), run 3 no majority (0 of 3) → 2/3.
        assert reasons["q3"] == "judge confidence 0.67 (vote share, no stored confidence; runs 1, 2, 3)"
        # q1: run 1's stored 0.2, runs 2 and 3 vote share 1 → 0.73.
        assert reasons["q1"] == "judge confidence 0.73 (item confidence and vote share; runs 1, 2, 3)"
        assert reasons["q4"] == "judge confidence 0.83 (vote share, no stored confidence; runs 1, 2)"
        one = dict(order_of(store, "least_confident", runs=[1]))
        assert one["q5"] == "judge confidence 0.67 (vote share 2 of 3 votes, no stored confidence; run 1)"
        assert one["q1"] == "judge confidence 0.20 (item confidence; run 1)"


def test_annotators_disagree_leaves_out_what_this_annotator_labeled(project):
    with Store.open(project, readonly=True) as store:
        assert order_of(store, "annotators_disagree") == [
            ("q6", "annotators split 1–1–1 (bob, cat, dan)"),
            ("q2", "annotators split 1–1 (bob, cat)"),
            ("q5", "annotators split 2–1 (bob, cat, dan)"),
        ]
        # bob's own queue: his labels are not "the others", and every item he labeled is out.
        assert order_of(store, "annotators_disagree", "bob") == []


def test_the_order_is_reproducible(project, tmp_path):
    with Store.open(project, readonly=True) as store:
        first = {o: order_of(store, o) for o in ("judges_disagree", "least_confident", "annotators_disagree")}
    again = build(tmp_path / "again.pairscope")  # the same project built again
    with Store.open(again, readonly=True) as store:
        assert {o: order_of(store, o) for o in first} == first
        assert {o: order_of(store, o) for o in first} == first


def test_the_queue_is_ranked_again_only_when_what_it_reads_changes(project, monkeypatch):
    calls = []
    real = queue_module.ranked
    monkeypatch.setattr(queue_module, "ranked", lambda *a: calls.append(a[1]) or real(*a))
    cache = QueueCache()

    def ext_ids(store, order, annotator="ann"):
        labeled = LabelingSession(store, annotator).labeled_ids()
        by_id = {store.item_id(ext): ext for ext in TRIALS}
        got = cache.ranked(store, order, annotator, labeled)
        assert got == real(store, order, annotator, labeled, queue_module.preference_runs(store))
        return [by_id[e.item_id] for e in got]

    with Store.open(project) as store:
        assert ext_ids(store, "least_confident") == ["q3", "q1", "q5", "q4", "q2", "q8"]
        label(LabelingSession(store, "ann"), store.item_id("q3"), 0)  # the annotator labels: no re-rank
        assert ext_ids(store, "least_confident") == ["q1", "q5", "q4", "q2", "q8"]
        assert calls == ["least_confident"]
        # a new sample of run A changes q5's vote share (2 of 3 → 2 of 4): ranked again
        run_a = store.run(1)
        record_verdicts(store, run_a, [VerdictRecord(1, store.item_id("q5"), 3, (0, 1), "s", 1, None, True, None)])
        ext_ids(store, "least_confident")
        assert calls == ["least_confident"] * 2
        assert ext_ids(store, "annotators_disagree") == ["q6", "q2", "q5"]
        label(LabelingSession(store, "eve"), store.item_id("q4"), 1)  # another annotator splits q4 2–1
        assert ext_ids(store, "annotators_disagree") == ["q6", "q2", "q4", "q5"]
        assert calls == ["least_confident"] * 2 + ["annotators_disagree"] * 2


def test_next_in_queue_moves_past_the_current_item():
    from pairscope.app.judge.queue import QueueEntry

    entries = [QueueEntry(i, "", (0, i)) for i in (5, 2, 9)]
    assert next_in_queue(entries, None).item_id == 5
    assert next_in_queue(entries, 2).item_id == 9
    assert next_in_queue(entries, 9).item_id == 5  # cyclic
    assert next_in_queue(entries, 7).item_id == 5
    assert next_in_queue(entries[:1], 5).item_id == 5
    assert next_in_queue([], 1) is None
    assert split_sizes([1, None, 1, 0]) == (2, 1, 1)


def press(qtbot, key):
    target = QApplication.focusWidget()
    assert target is not None, "nothing has the keyboard"
    qtbot.keyClick(target, key)


def open_window(qtbot, path, settings):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann"), settings))


def current_ext(window):
    return window.controller.current.item.ext_id


def test_u_in_the_window_follows_the_chosen_order(qtbot, project, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = open_window(qtbot, project, settings)
    assert window.shortcuts.queue_actions["id"].isChecked()
    assert current_ext(window) == "q1"  # the first item ann has not labeled
    press(qtbot, Qt.Key.Key_U)
    assert current_ext(window) == "q2"  # id order, as before
    window.shortcuts.queue_actions["judges_disagree"].trigger()
    # The queue is q3, q8, q2, q5; q2 (current, not labeled) is in it: U walks on from there.
    press(qtbot, Qt.Key.Key_U)
    assert current_ext(window) == "q5"
    assert window.statusBar().currentMessage() == "Next: judges split 2–1 (runs 1, 2, 3)"
    press(qtbot, Qt.Key.Key_U)  # cyclic: back to the top
    assert current_ext(window) == "q3"
    assert "judges split 1–1–1" in window.statusBar().currentMessage()
    press(qtbot, Qt.Key.Key_U)  # q3 not labeled: U moves on in the queue
    assert current_ext(window) == "q8"
    press(qtbot, Qt.Key.Key_1)  # label q8
    press(qtbot, Qt.Key.Key_U)
    assert current_ext(window) == "q3"
    window.close()

    again = open_window(qtbot, project, settings)  # remembered for this project
    assert again.shortcuts.queue_actions["judges_disagree"].isChecked()
    assert again.controller.queue_order == "judges_disagree"
    again.shortcuts.queue_actions["annotators_disagree"].trigger()
    press(qtbot, Qt.Key.Key_U)
    assert current_ext(again) == "q6"
    assert "annotators split 1–1–1 (bob, cat, dan)" in again.statusBar().currentMessage()
    again.close()


def test_u_falls_back_to_id_order_and_says_why(qtbot, tmp_path):
    path = tmp_path / "plain.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                Item(ext_id=f"p{i}", prompt="q", responses=(Response(0, "a"), Response(1, "b")), category="c")
                for i in range(3)
            ]
        )
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = open_window(qtbot, path, settings)
    window.shortcuts.queue_actions["judges_disagree"].trigger()
    press(qtbot, Qt.Key.Key_U)
    assert current_ext(window) == "p1"
    assert "needs two or more judge runs" in window.statusBar().currentMessage()
    window.close()
