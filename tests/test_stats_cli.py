"""``pairscope stats`` and the Statistics view on a labelled, judged project."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import fake_backend  # noqa: F401
from fake_backend import FakeBackend
from pairscope.app.cli.main import main
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, Label, LabelDraft, Reference, Response
from pairscope.app.stats.data import BOTH_BAD, TIE, load_stats_data
from pairscope.app.stats.plots import FIGURES
from pairscope.app.store import Store


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "p.pairscope"
    rng = random.Random(3)
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"i{n}",
                    prompt="How many?",
                    category=("general", "hallucination", "reasoning")[n % 3],
                    responses=(
                        Response(0, "GOOD " + "word " * rng.randint(1, 30)),
                        Response(1, "BAD " + "w " * rng.randint(1, 30)),
                    ),
                    reference=Reference(ranking=(0, 1)),
                )
                for n in range(30)
            ]
        )
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
    assert set(run) >= {
        "overall",
        "macro",
        "per_category",
        "overall_unparsed_wrong",
        "macro_unparsed_wrong",
        "unparsed",
        "per_error_type",
        "position_consistency",
        "k_curve",
    }
    assert run["overall"] == 1.0 and run["position_consistency"] == 1.0
    assert set(run["human_kappa"]) == {"alice", "bob"}
    # every figure under the convention that made it, with its interval and n
    assert run["vote"] == "official"
    for convention in ("official", "plurality"):
        figures = run[convention]
        assert set(figures) >= {
            "overall",
            "overall_ci",
            "overall_unparsed_wrong_ci",
            "per_category",
            "per_source",
            "ties",
            "best_of_n",
            "k_curve",
            "decided",
            "correct",
        }
        low, high = figures["overall_ci"]
        assert low <= figures["overall"] <= high and figures["decided"] > 0
    assert set(report["dataset"]) == {"error_types", "words"}
    assert set(report["dataset"]["words"]) == {"query_without_image_token", "query_with_image_token", "responses"}
    assert report["steps"]["runs"] == []


def test_stats_text_and_report_folder(project, tmp_path, capsys):
    folder = tmp_path / "report"
    assert main(["stats", "--db", str(project), "--report", str(folder), "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "Cohen's kappa mean" in out and "undecided counted wrong" in out
    assert "official vote" in out and "plurality vote" in out and "95% CI" in out
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
        assert view.tabs.count() == 6  # Overview, Judge runs, Categories, Annotators, Figures, Report text
        assert "Cohen's kappa" in view.summary.toPlainText()
        chart = view.charts["judge_per_category"]
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


def test_stats_read_one_snapshot_while_another_user_writes(project):
    """Labels and items committed by someone else between the statistics' reads must not
    mix into them: every figure comes from the project as it was when reading began."""
    errors, reads = [], []
    with Store.open(project) as store, Store.open(project) as writer:
        before = load_stats_data(store)
        first, second = (int(i) for i in before.item_ids[:2])

        def someone_writes_between_reads(sql: str) -> None:
            if not sql.lstrip().upper().startswith("SELECT"):
                return
            reads.append(sql)
            if len(reads) != 2:  # after the first read, before the second
                return
            try:
                writer.add_items(
                    [
                        Item(
                            ext_id="late",
                            prompt="Late?",
                            category="general",
                            responses=(Response(0, "x"), Response(1, "y")),
                            reference=Reference((0, 1)),
                        )
                    ]
                )
                carol = LabelingSession(writer, "carol")
                carol.save(writer.item_id("late"), LabelDraft(outcome="tie"))
                carol.save(first, LabelDraft(outcome="both_bad"))
                LabelingSession(writer, "alice").save(second, LabelDraft(outcome="tie"))
            except Exception as exc:  # sqlite3 swallows a trace callback's exceptions
                errors.append(exc)

        store.conn.set_trace_callback(someone_writes_between_reads)
        try:
            during = load_stats_data(store)
        finally:
            store.conn.set_trace_callback(None)
        after = load_stats_data(store)
    assert not errors and len(reads) > 2  # the write happened between the reads
    assert during.item_ids.tolist() == before.item_ids.tolist() and len(during.categories) == 30
    assert during.annotators == before.annotators == ["alice", "bob"]
    for name in before.annotators:
        np.testing.assert_array_equal(during.labels[name], before.labels[name])
    assert len(after.item_ids) == 31 and after.annotators == ["alice", "bob", "carol"]  # seen once committed
    assert after.labels["alice"][1] == TIE and after.labels["carol"][0] == BOTH_BAD


def test_stats_take_the_current_label_as_the_store_defines_it(store):
    """Two labels at the same time: the later insert is current (``label_current``), for the
    statistics exactly as for the label panel."""
    store.add_items(
        [Item(ext_id="a", prompt="Which?", responses=(Response(0, "x"), Response(1, "y")), reference=Reference((0, 1)))]
    )
    item_id = store.item_id("a")
    at = "2024-05-01T12:00:00.000000+00:00"
    for ranking in ((0, 1), (1, 0)):
        store.add_label(Label(item_id, "dora", "prefer", ranking=ranking, display_order=(0, 1), created_at=at))
    store.add_label(Label(item_id, "eve", "prefer", ranking=(1, 0), display_order=(0, 1), created_at=at))
    store.add_label(Label(item_id, "eve", "cleared", display_order=(0, 1), created_at=at))
    data = load_stats_data(store)
    assert data.labels["dora"].tolist() == [1.0] == [store.current_labels("dora")[item_id].preferred]
    assert "eve" not in data.labels  # cleared: no current label


def test_report_text_is_literal_whatever_the_dataset_names(tmp_path, capsys):
    """``$\\undefinedmacro$`` in a category or an annotator's name was parsed as mathtext:
    ``stats --report`` exit 1 and a half-written report folder."""
    path = tmp_path / "tex.pairscope"
    hostile = ["$\\undefinedmacro$", "$x^$", "cost $5 and $6", "a\\$b", "```"]
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"t{n}",
                    prompt="Which?",
                    category=hostile[n % len(hostile)],
                    responses=(Response(0, "GOOD"), Response(1, "BAD")),
                    reference=Reference(ranking=(0, 1)),
                )
                for n in range(10)
            ]
        )
        ids = [s.id for s in store.item_summaries(0, 100)]
        for name in ("$\\frac$", "$bob$"):
            session = LabelingSession(store, name)
            for item_id in ids:
                session.save(item_id, LabelDraft(preferred_position=session.order(item_id).index(0) + 1))
        JudgeSession(store, FakeBackend(), JudgeConfig(k=1)).judge(ids)
    folder = tmp_path / "report"
    assert main(["stats", "--db", str(path), "--report", str(folder), "--bootstrap", "10"]) == 0, capsys.readouterr()
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["report.md", "stats.json", *(f"{name}.png" for name in FIGURES)]
    )
    from matplotlib.text import Text

    for draw in FIGURES.values():
        figure = draw(json.loads((folder / "stats.json").read_text()))
        figure.canvas.draw()  # ticks are made while drawing
        for text in figure.findobj(Text):
            shown = text.get_text()
            assert not text._preprocess_math(shown)[1], shown  # never mathtext
    markdown = (folder / "report.md").read_text()
    fences = [line for line in markdown.splitlines() if line.startswith("```")]
    assert len(set(fences)) == 1 and fences[0] != "```", fences  # a fence the data cannot close


def test_a_figure_that_cannot_be_drawn_leaves_no_half_written_report(project, tmp_path, monkeypatch):
    from pairscope.app.stats import plots

    def broken(report):
        raise RuntimeError("cannot draw")

    monkeypatch.setitem(plots.FIGURES, "k_curve", broken)
    folder = tmp_path / "report"
    with pytest.raises(RuntimeError):
        from pairscope.app.stats.report import compute_stats, write_report

        with Store.open(project, readonly=True) as store:
            write_report(compute_stats(store, None, bootstrap=5), folder)
    assert not folder.exists() or list(folder.iterdir()) == []
