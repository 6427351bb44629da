"""Step-wise (PRM) figures against hand-worked tables."""

from __future__ import annotations

import pytest

import fake_backend  # noqa: F401  (registers the "fake" backend)
from fake_backend import FakeBackend
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, Reference, Response, Step
from pairscope.app.stats.data import load_stats_data
from pairscope.app.stats.prm import aggregate, prm_report, step_run_metrics


def steps(*marks):
    return tuple(Step(f"step {i}", m) for i, m in enumerate(marks))


# Three responses of one item and one response of another. Reference marks (True = correct):
ITEMS = [
    Item(
        ext_id="s1",
        prompt="q1",
        responses=(
            Response(0, "A", steps=steps(True, True, True)),
            Response(1, "B", steps=steps(True, False, False)),
            Response(2, "C", steps=steps(False, None, True)),
        ),
        reference=Reference(ranking=(0, 1, 2)),
    ),
    Item(ext_id="s2", prompt="q2", responses=(Response(0, "D", steps=steps(True, False)),)),
]
# The judge's step scores (1–5), by response text; ≤ 2 means "erroneous"
SCORES = {"A": "5 4 2", "B": "5 1 1", "C": "4 3 5", "D": "2 1"}


@pytest.fixture
def project(store):
    store.add_items(ITEMS)
    return store


def test_step_metrics_hand_worked(project):
    def judge(request):
        # batch size 1: calls come in plan order (s1's responses 0, 1, 2, then s2's)
        key = "ABCD"[len(judge.calls)]
        judge.calls.append(key)
        return "\n".join(f"Step {k}: {s}" for k, s in enumerate(SCORES[key].split(), start=1))

    judge.calls = []
    session = JudgeSession(project, FakeBackend(script=judge), JudgeConfig(mode="step", batch_size=1))
    session.judge([project.item_id("s1"), project.item_id("s2")])
    data = load_stats_data(project)
    [run] = [r for r in data.runs if r.run.id == session.run.id]
    m = step_run_metrics(data, run, threshold=2)
    # marked steps (truth erroneous?, predicted erroneous?):
    # A: (F,F) (F,F) (F,T); B: (F,F) (T,T) (T,T); C: (T,F) (F,F) [neutral skipped]; D: (F,T) (T,T)
    # erroneous class: TP = 3 (B2, B3, D2), FP = 2 (A3, D1), FN = 1 (C1) → P 3/5, R 3/4, F1 2/3
    # correct class:   TP = 4 (A1, A2, B1, C3), FP = 1 (C1), FN = 2 (A3, D1) → P 4/5, R 4/6, F1 8/11
    assert m["steps"] == 10 and (m["support_erroneous"], m["support_correct"]) == (4, 6)
    assert m["f1_erroneous"] == pytest.approx(2 / 3) and m["f1_correct"] == pytest.approx(8 / 11)
    assert m["f1_weighted"] == pytest.approx((4 * 2 / 3 + 6 * 8 / 11) / 10)
    assert m["f1_macro"] == pytest.approx((2 / 3 + 8 / 11) / 2)
    # first error: A ref none / pred 2 ✗; B ref 1 / pred 1 ✓; C ref 0 / pred none ✗; D ref 1 / pred 0 ✗
    assert m["first_error_accuracy"] == 0.25 and m["first_error_accuracy_n"] == 4
    assert m["first_error_accuracy_with_error"] == pytest.approx(1 / 3)
    assert m["first_error_accuracy_without_error"] == 0.0
    # best of 3 on s1 (reference best A): min → A 2, B 1, C 3 → C (wrong); mean → A 11/3, B 7/3, C 4 → C;
    # last → A 2, B 1, C 5 → C; product → A .32, B .04, C .48 → C
    for how in ("min", "mean", "product", "last"):
        assert m["best_of_n"][how]["items"] == 1 and m["best_of_n"][how]["accuracy"] == 0.0
        assert m["best_of_n"][how]["random"] == pytest.approx(1 / 3)
    report = prm_report(data)
    assert [r["run_id"] for r in report["runs"]] == [session.run.id]


def test_aggregates():
    assert aggregate([5, 4, 2], "min") == 2 and aggregate([5, 4, 2], "last") == 2
    assert aggregate([5, 4, 3], "mean") == 4 and aggregate([5, 5], "product") == 1.0
    assert aggregate([5, None], "mean") is None


def test_annotators_step_marks_agreement(project):
    s1 = project.item_id("s1")
    for name, marks in (
        ("ann", ((1, 0, True), (1, 1, False), (1, 2, False))),
        ("ben", ((1, 0, True), (1, 1, True), (1, 2, False))),
    ):
        session = LabelingSession(project, name)
        order = session.order(s1)
        position = {idx: pos for pos, idx in enumerate(order, start=1)}
        draft = LabelDraft(outcome="unrated", step_marks=tuple((position[r], s, c) for r, s, c in marks))
        session.save(s1, draft)
    out = prm_report(load_stats_data(project))["annotators"]
    assert out["annotators"]["ann"]["vs_reference_accuracy"] == 1.0  # B is (True, False, False)
    assert out["annotators"]["ben"]["vs_reference_accuracy"] == pytest.approx(2 / 3)
    [pair] = out["pairs"]
    assert pair["steps"] == 3 and pair["agreement"] == pytest.approx(2 / 3)


def test_step_figures_come_from_the_one_statistics_snapshot(project):
    """The report's step section is computed from what load_stats_data read: with the
    project closed afterwards, the same figures come out (no second read, no item by item)."""
    from pairscope.app.stats.report import compute_stats

    session = JudgeSession(
        project, FakeBackend(script=lambda r: "Step 1: 5\nStep 2: 1\nStep 3: 2"), JudgeConfig(mode="step")
    )
    session.judge([project.item_id("s1")])
    LabelingSession(project, "ann").save(
        project.item_id("s1"), LabelDraft(outcome="unrated", step_marks=((1, 0, True),))
    )
    data = load_stats_data(project)
    expected = compute_stats(project, data=data, bootstrap=10)["steps"]
    project.close()
    assert compute_stats(project, data=data, bootstrap=10)["steps"] == expected
    assert expected["runs"][0]["responses"] == 3 and expected["annotators"]["annotators"]["ann"]["steps_marked"] == 1
