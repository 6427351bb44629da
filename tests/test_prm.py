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
    # VLRMBench's get_F1Score: F1(erroneous) × n_correct/n + F1(correct) × n_erroneous/n
    assert m["f1_weighted"] == pytest.approx((6 * 2 / 3 + 4 * 8 / 11) / 10)
    assert m["f1_weighted_support"] == pytest.approx((4 * 2 / 3 + 6 * 8 / 11) / 10)
    assert m["responses_unparsed"] == 0
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


# --- VLRMBench's step F1 (issue 23) ---------------------------------------------------------


def vlrmbench_f1(answers, gts):
    """VLRMBench's scoring written out independently (github.com/JCruan519/VLRMBench,
    model_eval/utils.py): each answer read as ``format_model_answer_tolist`` reads it (every
    digit run; not 0 → 1; cut or padded with 0 to the step count), all steps pooled, then
    ``get_F1Score``: F1 with 1 (error) positive weighted by the share of 0s, and the reverse."""
    import re

    pred, truth = [], []
    for answer, gt in zip(answers, gts):
        got = [0 if int(d) == 0 else 1 for d in re.findall(r"\d+", answer)][: len(gt)]
        pred += got + [0] * (len(gt) - len(got))
        truth += gt

    def f1(positive):
        tp = sum(p == positive and t == positive for p, t in zip(pred, truth))
        fp = sum(p == positive and t != positive for p, t in zip(pred, truth))
        fn = sum(p != positive and t == positive for p, t in zip(pred, truth))
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    n_err, n_ok = truth.count(1), truth.count(0)
    return f1(1), f1(0), (n_ok * f1(1) + n_err * f1(0)) / len(truth)


def write_rows(tmp_path, rows):
    import json

    path = tmp_path / "steps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_imported_step_judgements_score_as_vlrmbench_does(project, tmp_path):
    """Step rows through import-verdicts: VLRMBench's indicator lists, a text answer in its
    ``[0, 1, 0]`` format, an unparsable answer (VLRMBench: no error on any step) and 1–5 scores."""
    from pairscope.app.judge.derived import import_verdicts

    rows = [
        {"item": "s1", "response": 0, "step_errors": [0, 0, 1]},
        {"item": "s1", "response": 1, "step_output": "Steps 2 and 3 misread the image.\n[0, 1, 1]"},
        {"item": "s1", "response": 2, "step_output": "I cannot tell from the picture."},
        {"item": "s2", "step_scores": [2, 1]},
    ]
    run = import_verdicts(project, write_rows(tmp_path, rows), "api-prm")
    assert run.mode == "step" and run.k == 1
    data = load_stats_data(project)
    [rd] = [r for r in data.runs if r.run.id == run.id]
    m = step_run_metrics(data, rd, threshold=2)
    # VLRMBench's view of the same answers against the reference marks (C's neutral step 2 left
    # out, as PairScope leaves it out): A (T,T,T) B (T,F,F) C (F,-,T) D (T,F); 1 = error
    answers = ["[0, 0, 1]", "[0, 1, 1]", "I cannot tell from the picture.", "[1, 1]"]
    gts = [[0, 0, 0], [0, 1, 1], [1, 0], [0, 1]]
    f1_err, f1_ok, f1_w = vlrmbench_f1([answers[0], answers[1], "[0, 0]", answers[3]], gts)
    assert m["responses"] == 3 and m["responses_unparsed"] == 1 and m["steps"] == 10
    assert m["f1_erroneous"] == pytest.approx(f1_err) and m["f1_correct"] == pytest.approx(f1_ok)
    assert m["f1_weighted"] == pytest.approx(f1_w)
    # by hand: erroneous TP 3 (B2 B3 D2), FP 2 (A3 D1), FN 1 (C1) → 2/3; correct TP 4, FP 1, FN 2 → 8/11;
    # 4 erroneous and 6 correct steps → (6 · 2/3 + 4 · 8/11) / 10
    assert f1_w == pytest.approx((6 * 2 / 3 + 4 * 8 / 11) / 10) and f1_w != pytest.approx(m["f1_weighted_support"])
    assert vlrmbench_f1([answers[2]], [gts[2]])[2] == vlrmbench_f1(["[0, 0]"], [gts[2]])[2]  # unparsed = zeros


def test_step_rows_are_checked_and_nothing_is_written(project, tmp_path):
    from pairscope.app.judge.derived import VerdictFileError, import_verdicts

    rows = [
        {"item": "s1", "response": 0, "step_errors": [0, 2, 1]},
        {"item": "s1", "response": 1, "step_errors": [0, 1]},
        {"item": "s1", "response": 3, "step_errors": [0, 0, 0]},
        {"item": "s2", "step_scores": [0, 7]},
        {"item": "s2", "step_scores": [5, 5], "step_errors": [0, 0]},
        {"item": "s1", "response": 2, "step_errors": None},
        {"item": "s1", "response": 2, "step_errors": [0, 0, 0]},
        {"item": "s1", "choice": 0},
    ]
    path = write_rows(tmp_path, rows)
    with pytest.raises(VerdictFileError) as err:
        import_verdicts(project, path, "bad")
    text = str(err.value)
    for line, words in (
        (1, "'step_errors' must hold 3 indicators 0 or 1"),
        (2, "'step_errors' must hold 3 indicators"),
        (3, "'response' must be a response index 0–2, got 3"),
        (4, "'step_scores' must hold 2 numbers from 1 to 5"),
        (5, "give exactly one of"),
        (7, "sample 0 of this response already given on line 6"),
    ):
        assert f"{path}:{line} [" in text and words in text, (line, words, text)
    assert "mixes step rows" in text
    assert project.runs() == []


def test_cli_import_verdicts_takes_step_rows(project, tmp_path, capsys):
    from pairscope.app.cli.main import main

    path = write_rows(tmp_path, [{"item": "s2", "step_output": "[0, 1]"}])
    project.close()
    assert main(["import-verdicts", str(path), "--db", str(project.path), "--name", "api"]) == 0
    from pairscope.app.store import Store

    with Store.open(project.path) as store:
        [run] = store.runs()
        [v] = store.verdicts(run.id)
        assert (run.mode, v.scores, v.parsed, v.raw_output) == ("step", (5, 1), True, "[0, 1]")


# --- step agreement reads only step items (issue 30) ------------------------------------------


def _vm_steps(store, read):
    """SQLite virtual-machine instructions ``read()`` runs: the work a query does, counted."""
    count = [0]

    def tick():
        count[0] += 1
        return 0

    store.conn.set_progress_handler(tick, 1)
    try:
        rows = read()
    finally:
        store.conn.set_progress_handler(None, 1)
    return count[0], rows


def test_step_marks_read_no_label_of_a_project_without_step_items(tmp_path):
    """Before, the step-mark query visited every current label (270k on 100k items × 3
    annotators: 238–664 ms to find none); now it visits only labels of items that have steps."""
    from pairscope.app.records import Label
    from pairscope.app.store import Store

    pairs = [Item(ext_id=f"p{i}", prompt="q", responses=(Response(0, "a"), Response(1, "b"))) for i in range(60)]
    counts = {}
    for labelled in (0, 60):
        with Store.create(tmp_path / f"p{labelled}.pairscope") as store:
            store.add_items(pairs)
            with store.transaction():
                for name in ("ann", "ben", "cat"):
                    for item_id in [store.item_id(f"p{i}") for i in range(labelled)]:
                        store.add_label(Label(item_id, name, "prefer", ranking=(0, 1), display_order=(0, 1)))
            counts[labelled], rows = _vm_steps(store, store.current_step_marks)
            assert rows == []
            data = load_stats_data(store)
            assert data.step_marks == {} and prm_report(data)["annotators"] == {"annotators": {}, "pairs": []}
    assert counts[60] == counts[0]  # 180 labels cost the step-mark read nothing


def test_step_marks_read_only_the_labels_of_step_items(store):
    """With step items, the step-mark read grows with the labels on them, not with the rest."""
    from pairscope.app.records import Label

    pairs = [Item(ext_id=f"p{i}", prompt="q", responses=(Response(0, "a"), Response(1, "b"))) for i in range(40)]
    store.add_items(ITEMS + pairs)
    s1 = store.item_id("s1")
    LabelingSession(store, "ann").save(s1, LabelDraft(outcome="unrated", step_marks=((1, 0, True),)))
    counts = []
    for name in ("ann", "ben", "cat"):  # 40, then 80, then 120 labels on items without steps
        with store.transaction():
            for i in range(40):
                store.add_label(Label(store.item_id(f"p{i}"), name, "prefer", ranking=(0, 1), display_order=(0, 1)))
        steps, rows = _vm_steps(store, store.current_step_marks)
        assert len(rows) == 1 and rows[0][1] == s1
        counts.append(steps)
    assert counts[0] == counts[1] == counts[2]
    order = LabelingSession(store, "ann").order(s1)  # position 1 as ann saw them
    assert load_stats_data(store).step_marks == {"ann": {(s1, order[0], 0): True}}


def test_vlrmbench_answer_texts_are_read_by_its_own_rule(project, tmp_path):
    """``step_errors`` given as VLRMBench's ``model_answer`` text: too many indicators are cut,
    too few padded with 0, any number but 0 is an error, no number at all is no error."""
    from pairscope.app.judge.derived import import_verdicts

    answers = {
        ("s1", 0): "[0, 1, 0, 0]",  # one too many: cut
        ("s1", 1): "Step 3 has the error: 1",  # "3" and "1": both errors, step 3 padded
        ("s1", 2): "I am not sure.",  # no number: no error on any step
        ("s2", 0): "[0, 2]",  # 2 is read as an error
    }
    rows = [{"item": i, "response": r, "step_errors": text} for (i, r), text in answers.items()]
    run = import_verdicts(project, write_rows(tmp_path, rows), "vlrmbench-answers")
    data = load_stats_data(project)
    [rd] = [r for r in data.runs if r.run.id == run.id]
    m = step_run_metrics(data, rd)
    # the reference marks without C's neutral step 2; C's answer read for its steps 1 and 3 only
    gts = [[0, 0, 0], [0, 1, 1], [1, 0], [0, 1]]
    texts = [answers["s1", 0], answers["s1", 1], "[0, 0]", answers["s2", 0]]
    f1_err, f1_ok, f1_w = vlrmbench_f1(texts, gts)
    assert m["responses_unparsed"] == 1 and m["steps"] == 10
    assert (m["f1_erroneous"], m["f1_correct"], m["f1_weighted"]) == pytest.approx((f1_err, f1_ok, f1_w))
    # by hand: predictions A 0 1 0 · B 1 1 0 · C 0 0 · D 0 1 → erroneous TP 2 FP 2 FN 2: 1/2;
    # correct TP 4 FP 2 FN 2: 2/3; F1_weighted = (6 · 1/2 + 4 · 2/3) / 10
    assert f1_w == pytest.approx((6 / 2 + 4 * 2 / 3) / 10)
    stored = {v.order_shown[0]: v for v in project.verdicts(run.id) if v.item_id == project.item_id("s1")}
    assert stored[0].scores == (5, 1, 5) and stored[1].scores == (1, 1, 5) and not stored[2].parsed
