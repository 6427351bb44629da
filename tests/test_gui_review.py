"""Review, adjudication and collections in the window."""

from __future__ import annotations

from PySide6.QtCore import Qt

import fake_backend  # noqa: F401
from fake_backend import FakeBackend
from helpers import show_active
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, Reference, Response
from pairscope.app.store import Store


def build(path):
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"it{i}",
                    prompt="Which?",
                    responses=(Response(0, "GOOD a"), Response(1, "BAD b")),
                    reference=Reference(ranking=(0, 1)),
                )
                for i in range(3)
            ]
        )
        ids = [s.id for s in store.item_summaries(0, 10)]
        for name, outcome in (("alice", "tie"), ("bob", "both_bad")):
            LabelingSession(store, name).save(ids[0], LabelDraft(outcome=outcome, note=f"{name} note"))
        script = lambda r: "Both look fine.\nOverall Judgment: Answer 2 is better\nThanks."  # noqa: E731
        JudgeSession(store, FakeBackend(script=script), JudgeConfig(k=2)).judge(ids[:1])
    return ids


def test_review_shows_labels_and_verdicts_with_deciding_sentence(qtbot, tmp_path):
    path = tmp_path / "p.pairscope"
    build(path)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "carol")))
    qtbot.keyClick(window, Qt.Key_R, Qt.ControlModifier)
    text = window.review.text.toPlainText()
    assert "alice: tie — alice note" in text and "bob: both bad — bob note" in text
    assert "run 1, sample 1" in text and "run 1, sample 2" in text
    assert window.review.highlighted == ["Overall Judgment: Answer 2 is better"] * 2
    assert "Dataset reference: R" in text


def test_adjudication_is_stored_apart_and_audited(qtbot, tmp_path):
    path = tmp_path / "p.pairscope"
    ids = build(path)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "carol")))
    store = window.controller.store
    qtbot.keyClick(window, Qt.Key_D, Qt.ControlModifier)
    assert window.review_dock.isVisible() and "Adjudicating as carol" in window.review.mode.text()
    qtbot.keyClick(window, Qt.Key_1)
    qtbot.keyClick(window, Qt.Key_D)  # much better
    adjudication = store.current_label(ids[0], "carol", kind="adjudication")
    assert adjudication is not None and adjudication.strength == "much"
    assert store.current_label(ids[0], "carol") is None  # not a regular label
    qtbot.keyClick(window, Qt.Key_T)
    history = [lab for lab in store.label_history(ids[0], "carol") if lab.kind == "adjudication"]
    assert [(lab.outcome, lab.strength) for lab in history] == [("prefer", None), ("prefer", "much"), ("tie", None)]
    assert "carol (adjudication): tie" in window.review.text.toPlainText()
    qtbot.keyClick(window, Qt.Key_D, Qt.ControlModifier)
    qtbot.keyClick(window, Qt.Key_B)
    assert store.current_label(ids[0], "carol").outcome == "both_bad"


def test_collections_from_the_window(qtbot, tmp_path, monkeypatch):
    path = tmp_path / "p.pairscope"
    build(path)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "carol")))
    from pairscope.app.gui import main_window

    monkeypatch.setattr(main_window.QInputDialog, "getText", staticmethod(lambda *a, **k: ("hard-v1", True)))
    qtbot.keyClick(window, Qt.Key_C, Qt.ControlModifier | Qt.ShiftModifier)
    assert window.controller.store.collections() == {"hard-v1": 1}
    qtbot.keyClick(window, Qt.Key_A, Qt.ControlModifier | Qt.ShiftModifier)  # runs in the background
    qtbot.waitUntil(lambda: window.controller.store.collections() == {"hard-v1": 3}, timeout=10000)


def test_export_from_the_window_asks_before_writing_into_a_full_folder(qtbot, tmp_path, monkeypatch):
    import json

    from pairscope.app.gui import export_dialog

    path = tmp_path / "p.pairscope"
    build(path)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "carol")))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    asked = []
    monkeypatch.setattr(
        export_dialog.QMessageBox,
        "question",
        staticmethod(lambda *a, **k: asked.append(1) or export_dialog.QMessageBox.No),
    )
    qtbot.keyClick(window, Qt.Key_E, Qt.ControlModifier | Qt.ShiftModifier)
    dialog = window.shortcuts.export_dialog
    dialog.folder.setText(str(out))
    dialog.source.setCurrentIndex(dialog.source.findData("reference"))  # nobody labeled: the dataset's
    dialog.run()
    assert asked and not (out / "manifest.json").exists()  # refused: nothing written
    yes = export_dialog.QMessageBox.Yes
    monkeypatch.setattr(export_dialog.QMessageBox, "question", staticmethod(lambda *a, **k: yes))
    monkeypatch.setattr(export_dialog.QMessageBox, "information", staticmethod(lambda *a, **k: None))
    dialog.run()  # the export runs in the background
    qtbot.waitUntil(lambda: (out / "manifest.json").exists(), timeout=10000)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["items"] == 3 and (out / "keep.txt").exists()


def test_failure_stepping_walks_the_items_the_judge_got_wrong(qtbot, tmp_path):
    from fake_backend import prefer_marker

    path = tmp_path / "p.pairscope"
    ids = build(path)
    with Store.open(path) as store:  # a newer run that always prefers the BAD answer
        backend = FakeBackend(script=prefer_marker(good="BAD", bad="GOOD"))
        JudgeSession(store, backend, JudgeConfig(seed=5)).judge(ids[:2])
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "carol")))
    window.focus.setCurrentIndex(window.focus.findData("judge_wrong"))
    assert window.table.model().rowCount() == 2 and window.review_dock.isVisible()
    assert window.controller.current.item.id == ids[0]
    qtbot.keyClick(window, Qt.Key_N)
    assert window.controller.current.item.id == ids[1]
    assert "run 2, sample 1" in window.review.text.toPlainText()
    window.focus.setCurrentIndex(window.focus.findData("judge_unparsed"))
    assert window.table.model().rowCount() == 0
    window.focus.setCurrentIndex(window.focus.findData("annotators_disagree"))
    assert window.table.model().rowCount() == 1  # alice said tie, bob both bad
    assert "alice: tie" in window.review.text.toPlainText()
    window.focus.setCurrentIndex(0)
    assert window.table.model().rowCount() == 3


def test_saved_filters_from_the_window(qtbot, tmp_path, monkeypatch):
    from pairscope.app.gui import main_window

    path = tmp_path / "p.pairscope"
    build(path)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "carol")))
    window.focus.setCurrentIndex(window.focus.findData("annotators_disagree"))
    monkeypatch.setattr(main_window.QInputDialog, "getText", staticmethod(lambda *a, **k: ("disputes", True)))
    qtbot.keyClick(window, Qt.Key_S, Qt.ControlModifier | Qt.ShiftModifier)
    window.focus.setCurrentIndex(0)
    assert window.table.model().rowCount() == 3
    monkeypatch.setattr(main_window.QInputDialog, "getItem", staticmethod(lambda *a, **k: ("disputes", True)))
    qtbot.keyClick(window, Qt.Key_O, Qt.ControlModifier | Qt.ShiftModifier)
    assert window.table.model().rowCount() == 1
