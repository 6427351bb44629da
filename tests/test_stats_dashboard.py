"""The Statistics dashboard (issue 14, point 8): tables per judge run, category and annotator
that show the numbers the core computed, empty states that say what is missing, figures with
error bars that export, on real SQLite projects."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

import fake_backend  # noqa: F401  (registers "fake")
from fake_backend import FakeBackend
from helpers import WAIT_MS
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, Reference, Response
from pairscope.app.stats import dashboard as dash
from pairscope.app.stats.judge_metrics import wilson_ci
from pairscope.app.stats.plots import FIGURES, kappa_matrix
from pairscope.app.store import Store

WRONG = {0, 1, 6}  # the judge picks the bad response on these items: 7 of 10 right
TIED = 2  # alice labels this item a tie
FLIPPED = 3  # and prefers the bad response here


def _items(n: int = 10) -> list[Item]:
    return [
        Item(
            ext_id=f"i{k}",
            prompt=f"Question {k}: which answer is right?",
            category="general" if k < 6 else "reasoning",
            responses=(Response(0, f"GOOD answer {k}"), Response(1, f"BAD answer {k}")),
            reference=Reference(ranking=(0, 1)),
        )
        for k in range(n)
    ]


def _judge(request) -> str:
    k = int(re.search(r"Question (\d+)", request.prompt)[1])
    good_first = request.prompt.find("GOOD") < request.prompt.find("BAD")
    position = 1 if good_first else 2
    if k in WRONG:
        position = 3 - position
    return f"Overall Judgment: Answer {position} is better"


def _label(store: Store, name: str, rule) -> None:
    session = LabelingSession(store, name)
    for k, item_id in enumerate(s.id for s in store.item_summaries(0, 100)):
        good = session.order(item_id).index(0) + 1
        session.save(item_id, rule(k, good))


def _alice(k: int, good: int) -> LabelDraft:
    if k == TIED:
        return LabelDraft(outcome="tie")
    return LabelDraft(preferred_position=3 - good if k == FLIPPED else good)


@pytest.fixture
def judged(tmp_path):
    """10 items (6 general, 4 reasoning), one annotator, one K = 1 run right on 7."""
    path = tmp_path / "judged.pairscope"
    with Store.create(path) as store:
        store.add_items(_items())
        _label(store, "alice", _alice)
        ids = [s.id for s in store.item_summaries(0, 100)]
        JudgeSession(store, FakeBackend(script=_judge), JudgeConfig(k=1)).judge(ids)
    return path


@pytest.fixture
def bare(tmp_path):
    """Items only: no label, no judge run."""
    path = tmp_path / "bare.pairscope"
    with Store.create(path) as store:
        store.add_items(_items(4))
    return path


def _ci_text(successes: int, n: int) -> str:
    low, high = wilson_ci(successes, n)
    return f"{100 * low:.1f}–{100 * high:.1f}"


def _view(qtbot, store):
    from pairscope.app.gui.stats_view import StatsView

    view = StatsView(store)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(lambda: view.report is not None, timeout=30000)
    return view


def _close(qtbot, view) -> None:
    view.close()
    qtbot.waitUntil(lambda: not view._op.running, timeout=WAIT_MS)


def _column(section, name: str) -> int:
    model = section.table.model()
    names = [model.headerData(c, Qt.Orientation.Horizontal).replace("\n", " ") for c in range(model.columnCount())]
    return names.index(name)


# -- the core: plain rows, no Qt ----------------------------------------------------------------


def test_core_tables_lay_out_the_computed_report(judged):
    with Store.open(judged) as store:
        report, d = dash.compute_dashboard(store, bootstrap=20)
    official = report["judges"]["1"].official.overall  # typed RunScores (app.stats.scores)
    assert (official.decided, official.correct) == (10, 7)  # what the project was built to give
    runs = d.judge_runs
    assert [r[3].text for r in runs.rows] == ["official", "plurality"]  # K = 1: both conventions, same numbers
    for row in range(2):
        assert runs.value(row, "decided") == "10" and runs.value(row, "correct") == "7"
        assert runs.value(row, "accuracy %") == "70.0"
        assert runs.value(row, "95 % CI") == _ci_text(7, 10)
    categories = {r[0].text: r for r in d.categories.rows}
    assert set(categories) == {"general", "reasoning"}
    general = d.categories.rows.index(categories["general"])
    assert d.categories.value(general, "official %") == "66.7"  # 4 of 6 (items 0 and 1 wrong)
    assert d.categories.value(general, "official 95 % CI") == _ci_text(4, 6)
    reasoning = d.categories.rows.index(categories["reasoning"])
    assert d.categories.value(reasoning, "plurality %") == "75.0"  # 3 of 4 (item 6 wrong)
    [alice] = d.annotators.rows
    assert [alice[i].text for i in range(5)] == ["alice", "10", "1", "10.0", "0"]
    assert d.annotators.value(0, "vs reference") == "9"  # strict preferences on referenced items
    assert d.annotators.value(0, "≠ reference %") == "11.1"  # the one flipped item
    assert d.annotators.value(0, "accuracy % (ties wrong)") == "80.0"  # 8 of 10
    assert d.annotators.value(0, "95 % CI") == _ci_text(8, 10)
    assert d.annotator_pairs.rows == () and d.annotator_pairs.empty == dash.NO_SHARED
    assert {e.name: e.empty for e in d.figures}["annotator_kappa"] == dash.NO_SHARED
    assert dash.NO_SHARED in d.missing and dash.NO_RUNS not in d.missing
    assert "accuracy % (undecided wrong)" in d.judge_runs.as_tsv().splitlines()[0]


def test_core_empty_states_name_what_is_missing(bare):
    with Store.open(bare) as store:
        report, d = dash.compute_dashboard(store, bootstrap=0)
    assert d.judge_runs.rows == () and d.judge_runs.empty == dash.NO_RUNS
    assert d.annotators.rows == () and d.annotators.empty == dash.NO_LABELS
    assert d.annotator_pairs.empty == dash.NO_LABELS
    assert d.judge_vs_annotators.empty == dash.NO_RUNS
    assert d.categories.rows and d.categories.note == dash.NO_RUNS  # item counts, no accuracy columns
    empty = {e.name: e.empty for e in d.figures}
    assert empty["judge_accuracy"] == empty["k_curve"] == empty["judge_per_category"] == dash.NO_RUNS
    assert empty["annotator_accuracy"] == dash.NO_LABELS and empty["annotator_kappa"] == dash.NO_SHARED
    assert set(d.missing) >= {dash.NO_RUNS, dash.NO_LABELS, dash.NO_SHARED}


def test_no_one_by_one_heat_map_even_in_the_report_folder(judged):
    with Store.open(judged) as store:
        report, _ = dash.compute_dashboard(store, bootstrap=0)
    assert report["agreement"]["annotators"] == ["alice"]
    figure = kappa_matrix(report)
    assert not figure.axes[0].images  # a note, not a 1×1 matrix
    assert "two annotators" in " ".join(t.get_text() for t in figure.axes[0].texts)


def test_accuracy_figures_have_wilson_error_bars(judged):
    with Store.open(judged) as store:
        report, _ = dash.compute_dashboard(store, bootstrap=0)
    figure = FIGURES["judge_accuracy"](report)
    [ax] = figure.axes
    bars = [c for c in ax.containers if hasattr(c, "errorbar") and c.errorbar is not None]
    assert len(bars) == 2  # official and plurality
    segments = bars[0].errorbar.lines[2][0].get_segments()
    low, high = wilson_ci(7, 10)
    assert segments[0][:, 1] == pytest.approx([low, high])


# -- the window ---------------------------------------------------------------------------------


def test_tables_show_the_numbers_the_core_computed(qtbot, judged):
    with Store.open(judged) as store:
        view = _view(qtbot, store)
        assert [view.tabs.tabText(i) for i in range(view.tabs.count())] == list(
            ("Overview", "Judge runs", "Categories", "Annotators", "Figures", "Report text")
        )
        runs = view.sections["judge_runs"]
        model = runs.table.model()
        accuracy, interval = _column(runs, "accuracy %"), _column(runs, "95 % CI")
        assert model.text(0, accuracy) == "70.0" and model.text(0, interval) == _ci_text(7, 10)
        assert model.index(0, accuracy).data(Qt.ItemDataRole.TextAlignmentRole) & Qt.AlignmentFlag.AlignRight
        assert not model.index(0, 0).data(Qt.ItemDataRole.TextAlignmentRole) & Qt.AlignmentFlag.AlignRight
        # the tables equal the core's, cell for cell
        for key, section in view.sections.items():
            table = getattr(view.dashboard, key)
            assert (section.as_tsv() or None) == (table.as_tsv() if table.rows else None), key
        # sortable: by the category's accuracy, descending (reasoning 75 % above general 66.7 %)
        categories = view.sections["categories"]
        column = _column(categories, "official %")
        categories.table.sortByColumn(column, Qt.SortOrder.DescendingOrder)
        assert [categories.table.model().text(r, 0) for r in range(2)] == ["reasoning", "general"]
        # copy: the whole table, and Ctrl+C on a selection
        runs.copy.click()
        assert "70.0" in QApplication.clipboard().text()
        runs.table.selectRow(0)
        qtbot.keyClick(runs.table, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
        copied = QApplication.clipboard().text().splitlines()
        assert copied[0].startswith("run\tmode") and "70.0" in copied[1].split("\t")
        annotators = view.sections["annotators"].table.model()
        assert [annotators.text(0, c) for c in range(3)] == ["alice", "10", "1"]
        assert view.sections["annotator_pairs"].empty_text() == dash.NO_SHARED
        assert "annotator_kappa" not in view.charts  # no 1×1 heat map
        assert view.figure_empty["annotator_kappa"] == dash.NO_SHARED
        assert "Cohen's kappa judge" in view.summary.toPlainText()
        _close(qtbot, view)


def test_empty_project_shows_what_is_missing(qtbot, bare):
    with Store.open(bare) as store:
        view = _view(qtbot, store)
        assert view.sections["judge_runs"].empty_text() == dash.NO_RUNS
        assert view.sections["judge_runs"].table is None
        assert view.sections["annotators"].empty_text() == dash.NO_LABELS
        assert view.sections["annotator_pairs"].empty_text() == dash.NO_LABELS
        assert view.sections["categories"].table is not None  # items per category, still
        for name in ("judge_accuracy", "judge_per_category", "k_curve", "annotator_kappa"):
            assert name not in view.charts and view.figure_empty[name]
        assert not view.inline_charts  # no empty plot under the tables either
        shown = [w.text() for w in view.findChildren(type(view.status)) if w.objectName() == "empty-state-text"]
        assert any(dash.NO_RUNS in t for t in shown) and any(dash.NO_SHARED in t for t in shown)
        assert "ctrl+shift+j" in dash.NO_RUNS.lower() and "pairscope judge" in dash.NO_RUNS
        _close(qtbot, view)


def test_figures_export_from_the_view(qtbot, judged, tmp_path, monkeypatch):
    from pairscope.widgets import charts

    with Store.open(judged) as store:
        view = _view(qtbot, store)
        chart = view.charts["judge_accuracy"]
        for fmt in ("png", "svg"):
            target = tmp_path / f"accuracy.{fmt}"
            monkeypatch.setattr(
                charts.QFileDialog, "getSaveFileName", staticmethod(lambda *a, t=target, **k: (str(t), ""))
            )
            [button] = [b for b in chart.findChildren(charts.QPushButton) if b.text() == f"Save {fmt.upper()}…"]
            button.click()
            assert target.stat().st_size > 500
        assert (tmp_path / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
        assert b"<svg" in (tmp_path / "accuracy.svg").read_bytes()[:400]
        _close(qtbot, view)


def test_a_label_saved_while_the_dashboard_reads_is_in_none_or_all_of_it(judged, monkeypatch):
    """The report and the per-annotator label counts come from one read of the project: bob's
    label, saved right after that read, is in neither (it was in the counts only)."""
    real = Store.stats_rows

    def read_then_bob_labels(self):
        rows = real(self)
        with Store.open(judged) as other:
            _label(other, "bob", lambda k, good: LabelDraft(preferred_position=good))
        return rows

    monkeypatch.setattr(Store, "stats_rows", read_then_bob_labels)
    with Store.open(judged) as store:
        report, d = dash.compute_dashboard(store, bootstrap=0)
    assert report["agreement"]["annotators"] == ["alice"]
    assert [row[0].text for row in d.annotators.rows] == ["alice"]
    assert d.annotators.value(0, "labels") == "10"
