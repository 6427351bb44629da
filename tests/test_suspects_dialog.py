"""The "Suspect references…" dialog (issue 26): opened from the Ensemble dialog's menu, it
lists the suspect queue of the synthetic project (tests/test_suspects.py) with the evidence,
and "Reference is wrong" stores an audited review under the window's annotator."""

from __future__ import annotations

import pytest

from helpers import WAIT_MS, show_active
from pairscope.app.store import Store
from pairscope.app.store.references import current_reference_reviews, reference_review_history
from test_suspects import PLANTED, build_project


@pytest.fixture
def project(tmp_path):
    return build_project(tmp_path)


def test_the_dialog_lists_the_queue_and_stores_reference_is_wrong(qtbot, project):
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(project.path), "dana")))
    menu_of_ensemble = window.shortcuts.actions["ensemble"].associatedObjects()
    assert any(window.shortcuts.suspects_action in getattr(m, "actions", list)() for m in menu_of_ensemble)
    window.shortcuts.suspects_action.trigger()
    dialog = window.shortcuts.suspects_dialog
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: not dialog.reading and dialog.report is not None, timeout=WAIT_MS)
    top = [dialog.table.item(r, 1).text() for r in range(PLANTED)]
    assert sum(ext in project.planted for ext in top) >= 5
    assert float(dialog.table.item(0, 2).text()) >= 0.5
    assert "estimated reference accuracy" in dialog.summary.text()
    # the evidence of the selected (first) item: runs and annotators, with marks
    lines = [dialog.evidence.item(i).text() for i in range(dialog.evidence.count())]
    assert any(line.startswith("✗ run ") and "disagrees" in line for line in lines)
    # pick a planted item and mark its reference wrong, naming the better response
    ext = next(e for e in top if e in project.planted)
    row = top.index(ext)
    dialog.table.selectRow(row)
    suspect = dialog.current()
    assert suspect.ext_id == ext and dialog.wrong.isEnabled()
    assert dialog.corrected.currentData() == project.truth[ext]  # the likely response is offered first
    dialog.reason.setText("the picture shows two circles")
    dialog.wrong.click()
    assert "Stored: the reference of " + ext + " is wrong" in dialog.message.text()
    with Store.open(project.path, readonly=True) as store:
        item_id = store.item_id(ext)
        [review] = reference_review_history(store, item_id)
        assert (review.reviewer, review.verdict, review.corrected) == ("dana", "wrong", project.truth[ext])
        assert review.reason == "the picture shows two circles" and review.created_at
        assert review.original == project.reference[ext]
        assert current_reference_reviews(store)[item_id].verdict == "wrong"
    qtbot.waitUntil(lambda: not dialog.reading, timeout=WAIT_MS)
    assert dialog.current().item_id == item_id and dialog.current().status == "wrong"
    assert dialog.table.item(dialog.table.currentRow(), 6).text() == "reference wrong"
    # hiding reviewed items drops it from the queue
    dialog.hide_reviewed.setChecked(True)
    assert item_id not in [s.item_id for s in dialog.shown]
    # the accuracy table shows every run
    assert dialog.accuracy.count() == 1
    dialog.close()


def test_a_read_only_project_says_the_review_was_not_stored(qtbot, project):
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.suspects_dialog import SuspectsDialog

    controller = AnnotationController(Store.open(project.path, readonly=True), "dana")
    try:
        dialog = SuspectsDialog(controller)
        qtbot.addWidget(dialog)
        qtbot.waitUntil(lambda: not dialog.reading and dialog.report is not None, timeout=WAIT_MS)
        assert dialog.current() is not None
        assert dialog.mark("wrong") is None
        assert dialog.message.text().startswith("Not stored:") and "read-only" in dialog.message.text()
        with Store.open(project.path, readonly=True) as store:
            assert current_reference_reviews(store) == {}
        dialog.close()
    finally:
        controller.close()
