"""Calibration (issue 13, point 2): reliability bins and ECE against a hand-worked example, the
coverage–accuracy curve on a constructed run, the "confident and wrong" filter's order, the
figures in ``stats --json`` / ``--report``, and the calibration section of the Statistics view."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from PySide6.QtCore import Qt

import fake_backend  # noqa: F401  (registers "fake")
from fake_backend import FakeBackend
from pairscope.app.cli.main import main
from pairscope.app.judge.confidence import item_confidence
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.records import Item, ItemFilter, Label, Reference, Response
from pairscope.app.stats import dashboard as dash
from pairscope.app.stats.calibration import (
    NO_CONFIDENCES,
    coverage_curve,
    expected_calibration_error,
    reliability_bins,
)
from pairscope.app.stats.data import load_stats_data
from pairscope.app.stats.judge_metrics import item_verdicts
from pairscope.app.stats.plots import FIGURES
from pairscope.app.stats.report import compute_stats, summary_text
from pairscope.app.store import Store
from test_confidence import LogprobBackend

# Item k: the judge's confidence in the answer it names, and whether that answer is right.
CONF = [0.95, 0.92, 0.85, 0.83, 0.75, 0.72, 0.65, 0.62, 0.55, 0.91]
WRONG = {1, 4, 7}
NO_REFERENCE = 9  # scored against its adjudication instead


def test_reliability_bins_and_ece_by_hand():
    confidence = np.array(CONF)
    correct = np.array([k not in WRONG for k in range(10)])
    bins = reliability_bins(confidence, correct)
    filled = {round(b["low"], 1): b for b in bins if b["n"]}
    assert [b["n"] for b in bins] == [0, 0, 0, 0, 0, 1, 2, 2, 2, 3]
    # (0.9, 1]: 0.95 right, 0.92 wrong, 0.91 right → accuracy 2/3 at mean confidence 0.9267
    assert filled[0.9]["accuracy"] == pytest.approx(2 / 3)
    assert filled[0.9]["confidence"] == pytest.approx((0.95 + 0.92 + 0.91) / 3)
    assert filled[0.8]["accuracy"] == 1.0 and filled[0.8]["confidence"] == pytest.approx(0.84)
    assert filled[0.7]["accuracy"] == 0.5 and filled[0.6]["accuracy"] == 0.5
    assert filled[0.5]["n"] == 1 and filled[0.5]["accuracy"] == 1.0
    assert bins[0]["accuracy"] is None and bins[0]["confidence"] is None
    # ECE = (3·0.26 + 2·0.16 + 2·0.235 + 2·0.135 + 1·0.45) / 10
    assert expected_calibration_error(bins) == pytest.approx(0.229)
    assert expected_calibration_error(reliability_bins(np.zeros(0), np.zeros(0))) is None
    # the bin edges are scikit-learn's: 0.1 itself falls in the first bin, 0.10001 in the second
    assert [b["n"] for b in reliability_bins(np.array([0.1, 0.10001]), np.array([1, 0]))][:2] == [1, 1]


def test_coverage_curve_keeps_the_most_confident_first():
    confidence = np.array(CONF)
    correct = np.array([k not in WRONG for k in range(10)])
    curve = {round(p["coverage"], 2): p for p in coverage_curve(confidence, correct)}
    # most confident first: .95 ✓ .92 ✗ .91 ✓ .85 ✓ .83 ✓ .75 ✗ .72 ✓ .65 ✓ .62 ✗ .55 ✓
    assert curve[0.05]["n"] == curve[0.1]["n"] == 1 and curve[0.1]["accuracy"] == 1.0
    assert curve[0.2]["accuracy"] == 0.5 and curve[0.2]["min_confidence"] == pytest.approx(0.92)
    assert curve[0.5]["n"] == 5 and curve[0.5]["accuracy"] == pytest.approx(0.8)
    assert curve[1.0]["n"] == 10 and curve[1.0]["accuracy"] == pytest.approx(0.7)
    assert coverage_curve(np.zeros(0), np.zeros(0)) == []


def _items(n: int = 10) -> list[Item]:
    return [
        Item(
            ext_id=f"i{k}",
            prompt=f"Question {k}: which is right?",
            responses=(Response(0, f"GOOD answer {k}"), Response(1, f"BAD answer {k}")),
            reference=Reference() if k == NO_REFERENCE else Reference(ranking=(0, 1)),
        )
        for k in range(n)
    ]


def _k(request) -> int:
    return int(re.search(r"Question (\d+)", request.prompt)[1])


def _judge(request) -> str:
    position = 1 if request.prompt.find("GOOD") < request.prompt.find("BAD") else 2
    if _k(request) in WRONG:
        position = 3 - position
    return f"Overall Judgment: Answer {position} is better"


@pytest.fixture
def calibrated(tmp_path):
    """10 two-response items; a K = 1 run whose confidence on item k is CONF[k], wrong on WRONG;
    item 9 has no reference but an adjudication (the good response)."""
    path = tmp_path / "calibrated.pairscope"
    with Store.create(path) as store:
        store.add_items(_items())
        ids = [s.id for s in store.item_summaries(0, 100)]
        store.add_label(
            Label(ids[NO_REFERENCE], "adjudicator", "prefer", ranking=(0, 1), display_order=(0, 1), kind="adjudication")
        )
        backend = LogprobBackend(script=_judge, confidence=lambda r: CONF[_k(r)])
        JudgeSession(store, backend, JudgeConfig(k=1)).judge(ids)
    return path


def test_a_runs_calibration_in_the_report(calibrated):
    with Store.open(calibrated) as store:
        report = compute_stats(store, bootstrap=0)
    [(run_id, c)] = report["calibration"].items()
    assert c["n"] == 10 and c["target_counts"] == {"reference": 9, "adjudication": 1}
    assert c["ece"] == pytest.approx(0.229)
    assert c["accuracy"] == pytest.approx(0.7) and c["mean_confidence"] == pytest.approx(np.mean(CONF))
    assert {round(p["coverage"], 2): p["accuracy"] for p in c["coverage"]}[0.5] == pytest.approx(0.8)
    assert c["decided_without_confidence"] == 0 and c["note"] is None
    text = summary_text(report)
    assert f"calibration run {run_id}" in text and "ECE 0.229" in text
    assert "top 20% most confident: 50.0% of 2" in text


def test_stats_json_and_report_folder_carry_the_calibration(calibrated, tmp_path, capsys):
    assert main(["stats", "--db", str(calibrated), "--json", "--bootstrap", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    [c] = report["calibration"].values()
    assert c["ece"] == pytest.approx(0.229) and len(c["bins"]) == 10 and len(c["coverage"]) == 20
    folder = tmp_path / "report"
    assert main(["stats", "--db", str(calibrated), "--report", str(folder), "--bootstrap", "0"]) == 0
    assert (folder / "calibration.png").read_bytes()[:4] == b"\x89PNG"
    assert "calibration.png" in (folder / "report.md").read_text()
    assert json.loads((folder / "stats.json").read_text())["calibration"] == report["calibration"]
    figure = FIGURES["calibration"](report)
    reliability, coverage = figure.axes
    [points] = reliability.collections  # one marker per filled bin, at (mean confidence, accuracy)
    assert len(points.get_offsets()) == 5
    assert [t.get_text() for t in reliability.texts] == ["1", "2", "2", "2", "3"]  # items per bin
    assert len(coverage.lines) == 1


def test_a_run_without_log_probabilities_says_so(tmp_path):
    path = tmp_path / "plain.pairscope"
    with Store.create(path) as store:
        store.add_items(_items(4))
        JudgeSession(store, FakeBackend(script=_judge), JudgeConfig(k=1)).judge(
            [s.id for s in store.item_summaries(0, 10)]
        )
        report = compute_stats(store, bootstrap=0)
    [c] = report["calibration"].values()
    assert c["n"] == 0 and c["note"] == NO_CONFIDENCES == dash.NO_CONFIDENCES
    d = dash.build_dashboard(report)
    assert d.calibration.empty == NO_CONFIDENCES and {e.name: e.empty for e in d.figures}["calibration"]
    assert NO_CONFIDENCES in summary_text(report)
    figure = FIGURES["calibration"](report)  # a note, not empty axes
    assert "No confidences" in " ".join(t.get_text() for ax in figure.axes for t in ax.texts)


def test_confident_and_wrong_lists_the_worst_failures_first(calibrated):
    with Store.open(calibrated) as store:
        [run] = store.runs()
        f = ItemFilter(judge_run=run.id, judge="confident_wrong")
        rows = store.item_summaries(0, 100, filter=f)
        assert [r.ext_id for r in rows] == ["i1", "i4", "i7"]  # 0.92, 0.75, 0.62; i9 has no reference
        assert store.count_items(f) == 3
        assert [store.count_items(f, before_id=r.id) for r in rows] == [0, 1, 2]
        assert [r.ext_id for r in store.item_summaries(1, 1, filter=f)] == ["i4"]  # paging keeps the order
        assert store.item_summaries(0, 100, filter=ItemFilter(judge_run=run.id, judge="wrong"))[0].ext_id == "i1"
    from pairscope.app.gui.controller import FOCUS
    from pairscope.app.gui.main_window import FOCUS_FILTERS

    assert FOCUS[FOCUS_FILTERS["Confident and wrong (chosen run)"]] == {"judge": "confident_wrong"}


def test_the_filters_sql_confidence_equals_the_python_one(tmp_path):
    """K = 3 with dissent: the SQL ordering key and ``item_confidence`` agree item by item."""

    def judge(request) -> str:
        good_first = request.prompt.find("GOOD") < request.prompt.find("BAD")
        position = 1 if good_first else 2
        if _k(request) % 3 == 0 or (_k(request) % 3 == 1 and good_first):
            position = 3 - position
        return f"Overall Judgment: Answer {position} is better"

    def confidence(request) -> float:
        good_first = request.prompt.find("GOOD") < request.prompt.find("BAD")
        return 0.55 + 0.04 * _k(request) + (0.03 if good_first else 0.0)

    with Store.create(tmp_path / "k3.pairscope") as store:
        store.add_items(_items(10))
        ids = [s.id for s in store.item_summaries(0, 100)]
        JudgeSession(store, LogprobBackend(script=judge, confidence=confidence), JudgeConfig(k=3)).judge(ids)
        [run] = store.runs()
        data = load_stats_data(store)
        sql = store.item_confidences(run.id, ids)
        wrong = [
            r.id for r in store.item_summaries(0, 100, filter=ItemFilter(judge_run=run.id, judge="confident_wrong"))
        ]
    [run_data] = data.runs
    python = item_confidence(item_verdicts(data, run_data), run_data.choices, run_data.confidence, data.n_responses)
    assert any(0 < v < 1 and v not in (0.55 + 0.04 * k for k in range(10)) for v in python)  # dissent averaged
    for i, item_id in enumerate(data.item_ids):
        expected = None if np.isnan(python[i]) else python[i]
        assert sql[int(item_id)] == pytest.approx(expected), item_id
    assert wrong and [sql[i] for i in wrong] == sorted((sql[i] for i in wrong), reverse=True)


# -- the Statistics view ------------------------------------------------------------------------


def _view(qtbot, store):
    from pairscope.app.gui.stats_view import StatsView

    view = StatsView(store)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(lambda: view.report is not None, timeout=30000)
    return view


def test_the_statistics_view_shows_the_calibration(qtbot, calibrated):
    with Store.open(calibrated) as store:
        view = _view(qtbot, store)
        section = view.sections["calibration"]
        model = section.table.model()
        columns = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
        assert model.text(0, columns.index("ECE")) == "0.229"
        assert model.text(0, columns.index("items")) == "10"
        assert view.sections["reliability"].table.model().rowCount() == 5
        assert "calibration" in view.charts and "Judge runs" in view.inline_charts
        assert view.inline_charts["Judge runs"].name == "calibration"
        assert "ECE 0.229" in view.summary.toPlainText()
        view.close()


def test_the_statistics_view_without_confidences_says_why(qtbot, tmp_path):
    path = tmp_path / "plain.pairscope"
    with Store.create(path) as store:
        store.add_items(_items(4))
        JudgeSession(store, FakeBackend(script=_judge), JudgeConfig(k=1)).judge(
            [s.id for s in store.item_summaries(0, 10)]
        )
    with Store.open(path) as store:
        view = _view(qtbot, store)
        assert view.sections["calibration"].empty_text() == NO_CONFIDENCES
        assert "calibration" not in view.charts and view.figure_empty["calibration"] == NO_CONFIDENCES
        assert "Judge runs" not in view.inline_charts
        view.close()
