"""Suspect references in ``pairscope stats`` (issue 26): each run's accuracy on all items, on
confirmed-reference items and with the corrected references, in the text and in ``--json``,
the same figures ``pairscope suspects`` computes; a project without judge runs or reference
reviews fits no model and has no such section."""

from __future__ import annotations

import json

import pytest

from pairscope.app.cli.main import main as cli_main
from pairscope.app.demo import create_demo_project
from pairscope.app.stats import suspects
from pairscope.app.store import Store
from pairscope.app.store.references import ReferenceReview, add_reference_review
from test_suspects import build_project, truth_accuracy


@pytest.fixture(scope="module")
def corrected(tmp_path_factory):
    """The synthetic project, every planted flip marked wrong with the true response."""
    syn = build_project(tmp_path_factory.mktemp("stats-suspects"))
    with Store.open(syn.path) as store:
        for ext in syn.planted:
            add_reference_review(store, ReferenceReview(store.item_id(ext), "dana", "wrong", syn.truth[ext], "planted"))
    return syn


def _stats_json(path, capsys, *extra):
    assert cli_main(["stats", "--db", str(path), "--json", "--bootstrap", "0", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_stats_json_reports_accuracy_on_confirmed_and_corrected_references(corrected, capsys):
    doc = _stats_json(corrected.path, capsys)
    noise = doc["reference_noise"]
    assert noise["reviewed"] == len(corrected.planted) and noise["suspects"] >= len(corrected.planted)
    by_run = {a["run"]: a for a in noise["runs"]}
    assert set(by_run) == set(corrected.runs.values())
    everything = list(corrected.truth)
    for name, run_id in corrected.runs.items():
        a = by_run[run_id]
        right, decided = truth_accuracy(corrected, name, everything, corrected.reference)
        assert (a["all"]["correct"], a["all"]["decided"]) == (right, decided)
        right, decided = truth_accuracy(corrected, name, everything, corrected.truth)
        assert (a["corrected_reference"]["correct"], a["corrected_reference"]["decided"]) == (right, decided)
        assert a["corrected_reference"]["accuracy"] == pytest.approx(right / decided, abs=1e-6)
        assert 0 < a["confirmed_reference"]["decided"] < a["all"]["decided"]
    # the same figures as `pairscope suspects` (one implementation)
    assert cli_main(["suspects", "--db", str(corrected.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == noise["runs"]
    # --run: only that run's figures
    one = corrected.runs["judge-strong"]
    assert [a["run"] for a in _stats_json(corrected.path, capsys, "--run", str(one))["reference_noise"]["runs"]] == [
        one
    ]


def test_stats_text_shows_the_three_accuracies(corrected, capsys):
    assert cli_main(["stats", "--db", str(corrected.path), "--bootstrap", "0"]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("reference noise:"))
    assert f"{len(corrected.planted)} reviewed" in line
    strong = next(x for x in text.splitlines() if "judge-strong" in x and "corrected references" in x)
    right, decided = truth_accuracy(corrected, "judge-strong", list(corrected.truth), corrected.truth)
    assert "all items" in strong and "confirmed reference" in strong and f"({right}/{decided})" in strong


def test_no_judge_runs_no_model_and_no_section(tmp_path, capsys, monkeypatch):
    fits = []
    real = suspects.fit_dawid_skene
    monkeypatch.setattr(suspects, "fit_dawid_skene", lambda *a, **k: fits.append(1) or real(*a, **k))
    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    capsys.readouterr()
    assert "reference_noise" not in _stats_json(path, capsys)
    assert cli_main(["stats", "--db", str(path), "--bootstrap", "0"]) == 0
    assert "reference noise" not in capsys.readouterr().out
    assert fits == []  # the Dawid-Skene fit never ran
    # a reference review without a judge run: nothing to score, still no fit
    with Store.open(path) as store:
        item_id, ref = next((i, r) for i, r in store.ref_chosen().items() if r in (0, 1))
        add_reference_review(store, ReferenceReview(item_id, "dana", "wrong", 1 - ref, "the other one"))
    assert "reference_noise" not in _stats_json(path, capsys)
    assert fits == []


def test_judge_runs_without_a_review_fit_no_model_in_stats(corrected, tmp_path, capsys, monkeypatch):
    """The fit costs seconds per 10,000 items: stats of a project nobody reviewed skip it."""
    path = tmp_path / "unreviewed.pairscope"
    with Store.open(corrected.path, readonly=True) as src:
        src.conn.execute("VACUUM INTO ?", (str(path),))
    with Store.open(path) as store:
        for ext in corrected.planted:
            add_reference_review(store, ReferenceReview(store.item_id(ext), "dana", "withdrawn", reason="not sure"))
    fits = []
    real = suspects.fit_dawid_skene
    monkeypatch.setattr(suspects, "fit_dawid_skene", lambda *a, **k: fits.append(1) or real(*a, **k))
    doc = _stats_json(path, capsys)
    assert len(doc["judges"]) == len(corrected.runs) and "reference_noise" not in doc
    assert fits == []
    # one review brings the section, and the fit, in
    with Store.open(path) as store:
        ext = corrected.planted[0]
        add_reference_review(store, ReferenceReview(store.item_id(ext), "dana", "wrong", corrected.truth[ext], "B"))
    assert _stats_json(path, capsys)["reference_noise"]["reviewed"] == 1 and fits == [1]


def test_u_takes_the_most_suspect_reference_first_in_the_window(qtbot, corrected, tmp_path):
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtWidgets import QApplication

    from helpers import WAIT_MS, show_active
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    with Store.open(corrected.path, readonly=True) as store:
        queue = suspects.load_suspects(store).queue()
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(corrected.path), "erin"), settings))
    assert window.shortcuts.queue_actions["suspect_reference"].text() == "suspect reference first"
    window.shortcuts.queue_actions["suspect_reference"].trigger()
    qtbot.waitUntil(lambda: window.controller.suspects is not None, timeout=WAIT_MS)
    assert [i for i, _ in window.controller.suspects] == [s.item_id for s in queue]
    seen = []
    for _ in range(3):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_U)
        seen.append(window.controller.current.item_id)
        assert "suspect reference: probably wrong" in window.statusBar().currentMessage()
    assert seen == [s.item_id for s in queue[:3]]  # most suspect first, in the queue's order
    assert queue[0].ext_id in corrected.planted
    window.close()
    again = show_active(qtbot, MainWindow(AnnotationController(Store.open(corrected.path), "erin"), settings))
    assert again.controller.queue_order == "suspect_reference"  # remembered, scored again at once
    qtbot.waitUntil(lambda: again.controller.suspects is not None, timeout=WAIT_MS)
    again.close()


def test_the_suspect_reference_filter_lists_the_suspect_queue(qtbot, corrected, tmp_path):
    from PySide6.QtCore import QSettings

    from helpers import WAIT_MS, show_active
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    with Store.open(corrected.path, readonly=True) as store:
        queue = suspects.load_suspects(store).queue()
    assert 0 < len(queue) < len(corrected.truth)
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(corrected.path), "erin"), settings))
    assert window.table.model().rowCount() == len(corrected.truth)
    window.focus.setCurrentIndex(window.focus.findData("suspect_reference"))
    qtbot.waitUntil(lambda: window.table.model().rowCount() == len(queue), timeout=WAIT_MS)
    shown = {window.table.model().row(r).summary.ext_id for r in range(len(queue))}
    assert shown == {s.ext_id for s in queue} and set(corrected.planted) <= shown
    window.focus.setCurrentIndex(window.focus.findData(None))
    assert window.table.model().rowCount() == len(corrected.truth)
    window.close()


@pytest.mark.parametrize("mode", ["apply", "leave-out"])
def test_the_export_dialog_offers_the_reference_corrections(qtbot, corrected, tmp_path, mode):
    from test_gui_export import choose, export_and_wait, open_export, show_dialog

    window = open_export(qtbot, corrected.path)
    dialog = show_dialog(qtbot, window)
    assert dialog.corrections.currentData() is None  # by default the dataset's references, as imported
    choose(dialog.scope, "Every item")
    choose(dialog.format, "jsonl")
    choose(dialog.source, "Dataset reference")
    dialog.corrections.setCurrentIndex(dialog.corrections.findData(mode))
    assert ("exported corrected" if mode == "apply" else "marked wrong are left out") in dialog.explain.text()
    out = tmp_path / mode
    manifest = export_and_wait(qtbot, dialog, out)
    assert manifest["reference_corrections"]["mode"] == mode
    assert {c["id"] for c in manifest["reference_corrections"]["items"]} == set(corrected.planted)
    rows = {r["id"]: r for r in map(json.loads, (out / "items.jsonl").read_text().splitlines())}
    if mode == "apply":
        assert len(rows) == len(corrected.truth)
        for ext in corrected.planted:
            assert rows[ext]["reference"]["ranking"][0] == corrected.truth[ext]
            assert rows[ext]["reference_corrected"]["by"] == "dana"
    else:
        assert set(rows) == set(corrected.truth) - set(corrected.planted)
        assert "reference marked wrong by dana" in dialog.result_text
    window.close()


def test_a_saved_suspect_filter_reads_back_with_its_items(corrected, tmp_path):
    from pairscope.app.records import ItemFilter
    from pairscope.app.store.search import filter_from_dict, filter_to_dict

    with Store.open(corrected.path, readonly=True) as store:
        ids = tuple(sorted(store.item_id(ext) for ext in corrected.planted))
        chosen = ItemFilter(item_ids=ids)
        assert store.count_items(chosen) == len(ids)
        assert store.count_items(ItemFilter(item_ids=())) == 0  # scores not there yet: no item
    again = filter_from_dict(json.loads(json.dumps(filter_to_dict(chosen))))
    assert again == chosen and again.item_ids == ids
