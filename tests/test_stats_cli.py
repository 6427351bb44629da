"""``pairscope stats`` and the Statistics view on a labelled, judged project."""

from __future__ import annotations

import json
import random

import fake_backend  # noqa: F401
import pytest
from fake_backend import FakeBackend

from pairscope.app.cli import main
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.labeling import LabelingSession
from pairscope.app.records import Item, LabelDraft, Reference, Response
from pairscope.app.store import Store


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "p.pairscope"
    rng = random.Random(3)
    with Store.create(path) as store:
        store.add_items([
            Item(ext_id=f"i{n}", prompt="How many?", category=("general", "hallucination", "reasoning")[n % 3],
                 responses=(Response(0, "GOOD " + "word " * rng.randint(1, 30)), Response(1, "BAD " + "w " * rng.randint(1, 30))),
                 reference=Reference(ranking=(0, 1)))
            for n in range(30)
        ])
        ids = [s.id for s in store.item_summaries(0, 100)]
        for name in ("alice", "bob"):
            session = LabelingSession(store, name)
            for item_id in ids:
                order = session.order(item_id)
                good = order.index(0) + 1
                session.save(item_id, LabelDraft(preferred_position=good if rng.random() < 0.8 else 3 - good))
        JudgeSession(store, FakeBackend(), JudgeConfig(k=3, both_orders=True)).judge(ids)
    return path


def test_stats_json_has_every_documented_key(project, capsys):
    assert main(["stats", "--db", str(project), "--json", "--bootstrap", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["items"] == 30 and report["categories"] == {"general": 10, "hallucination": 10, "reasoning": 10}
    assert set(report["length"]) >= {"query_words", "response_words", "diff_hist"}
    assert len(report["length"]["query_words"]) == 3
    assert set(report["agreement"]) >= {"cohen_pairs", "cohen_mean", "fleiss", "krippendorff_alpha", "percent"}
    assert set(report["agreement"]["cohen_pairs"]) == {"alice|bob"}
    [run] = report["judges"].values()
    assert set(run) >= {"overall", "macro", "per_category", "overall_unparsed_wrong", "macro_unparsed_wrong",
                        "unparsed", "per_error_type", "position_consistency", "k_curve"}
    assert run["overall"] == 1.0 and run["position_consistency"] == 1.0
    assert set(run["human_kappa"]) == {"alice", "bob"}


def test_stats_text_and_report_folder(project, tmp_path, capsys):
    folder = tmp_path / "report"
    assert main(["stats", "--db", str(project), "--report", str(folder), "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "Cohen's kappa mean" in out and "unparsed counted wrong" in out
    assert (folder / "report.md").exists() and json.loads((folder / "stats.json").read_text())["items"] == 30
    for name in ("length_bias", "judge_per_category", "k_curve", "annotator_kappa"):
        png = folder / f"{name}.png"
        assert png.read_bytes()[:4] == b"\x89PNG"


def test_stats_unknown_run_is_an_error(project, capsys):
    assert main(["stats", "--db", str(project), "--run", "99"]) == 1
    assert "no judge run 99" in capsys.readouterr().err


def test_statistics_view_shows_figures_and_exports(qtbot, project, tmp_path):
    from pairscope.app.gui.stats_view import StatsView

    with Store.open(project) as store:
        view = StatsView(store)
        qtbot.addWidget(view)
        view.show()
        qtbot.waitUntil(lambda: view.report is not None, timeout=20000)
        assert view.tabs.count() == 5
        assert "Cohen's kappa" in view.summary.toPlainText()
        chart = view.tabs.widget(1)
        for fmt in ("png", "svg", "pdf"):
            chart.save(str(tmp_path / f"chart.{fmt}"))
            assert (tmp_path / f"chart.{fmt}").stat().st_size > 500
        view.close()


def test_pointwise_run_is_scored_from_stored_scores(project, capsys):
    with Store.open(project) as store:
        backend = FakeBackend(script=lambda r: "Score: 9/10" if "GOOD" in r.prompt else "Score: 2/10")
        session = JudgeSession(store, backend, JudgeConfig(mode="pointwise"))
        session.judge([s.id for s in store.item_summaries(0, 100)])
        run_id = session.run.id
    assert main(["stats", "--db", str(project), "--json", "--run", str(run_id), "--bootstrap", "10"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judges"][str(run_id)]["overall"] == 1.0
    assert report["pointwise_vs_pairwise"]
