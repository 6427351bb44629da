"""The "Compare two judges…" dialog (issue 25, build 2): opened from the window's menu, it lists
the flips in order (A right B wrong, B right A wrong, other disagreements), `N` steps through
them, both rationales stand side by side with the deciding sentence highlighted and the human
labels, and the dashboard tab holds the 2×2 table, the per-slice table and an exportable
forest plot."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from helpers import WAIT_MS, show_active
from pairscope.app.records import Label
from pairscope.app.store import Store
from test_compare import hand_rows, import_project

FLIPS = [
    "A ✓ B ✗  RLAIF-V-5",
    "B ✓ A ✗  RLAIF-V-6",
    "B ✓ A ✗  mathverse_7",
    "B ✓ A ✗  wildvision-battle-8",
    "differ  wildvision-battle-10",
    "differ  vlfeedback_11",
]


@pytest.fixture
def window(qtbot, tmp_path):
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    rows, runs = hand_rows()
    db, ids = import_project(tmp_path, rows, runs)
    with Store.open(db) as store:  # a human label on the first flip (response 0 preferred)
        store.add_label(Label(store.item_id("RLAIF-V-5"), "alice", "prefer", ranking=(0, 1), display_order=(1, 0)))
    win = show_active(qtbot, MainWindow(AnnotationController(Store.open(db), "ann")))
    return win, ids


def open_dialog(qtbot, window):
    menu = next(
        a.menu()
        for a in window.menuBar().actions()
        if a.menu() and window.shortcuts.compare_action in a.menu().actions()
    )
    assert "Compare two judges…" in [a.text() for a in menu.actions()]
    assert window.shortcuts.actions["ensemble"] in menu.actions()  # the same menu as the Ensemble dialog
    window.shortcuts.compare_action.trigger()
    dialog = window.shortcuts.compare_dialog
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: not dialog.reading and dialog.comparison is not None, timeout=WAIT_MS)
    return dialog


def test_flips_in_order_and_n_steps_through_them(qtbot, window):
    win, ids = window
    dialog = open_dialog(qtbot, win)
    assert dialog.chosen() == (ids["judge-a"], ids["judge-b"])
    assert [dialog.flips.item(i).text() for i in range(dialog.flips.count())] == FLIPS
    assert dialog.flips.currentRow() == 0
    panes = dialog.panes
    assert panes.header.text() == "A right, B wrong · item RLAIF-V-5 · dataset reference: R1"
    assert panes.labels.text() == "Human labels: alice: R1"
    assert (
        panes.titles["a"].text().startswith(f"A: run {ids['judge-a']} · judge-a")
        and "R1 (right)" in panes.titles["a"].text()
    )
    assert "R2 (wrong)" in panes.titles["b"].text()
    assert "judge-a checked the image" in panes.text("a") and "judge-b checked the image" in panes.text("b")
    assert panes.highlighted == {
        "a": ["Overall Judgment: Answer 1 is better."],
        "b": ["Overall Judgment: Answer 2 is better."],
    }
    dialog.activateWindow()
    qtbot.waitUntil(lambda: dialog.isActiveWindow(), timeout=WAIT_MS)
    seen = []
    for _ in range(len(FLIPS) + 1):  # one N past the end stays on the last flip
        seen.append(panes.header.text().split(" · ")[1])
        qtbot.keyClick(dialog, Qt.Key.Key_N)
    assert seen == [f"item {f.split()[-1]}" for f in FLIPS] + [f"item {FLIPS[-1].split()[-1]}"]
    assert dialog.flips.currentRow() == len(FLIPS) - 1
    assert panes.header.text() == "disagree · item vlfeedback_11 · the dataset prefers neither"
    assert panes.titles["b"].text().endswith("— R2 (unscored)")
    qtbot.keyClick(dialog, Qt.Key.Key_N, Qt.KeyboardModifier.ShiftModifier)
    assert dialog.flips.currentRow() == len(FLIPS) - 2
    assert "could not make up its mind" in panes.text("b")  # wildvision-battle-10: B had no majority
    assert panes.titles["b"].text().endswith("— no majority (undecided)") and panes.highlighted["b"] == []
    dialog.close()


def test_dashboard_has_the_table_the_slices_and_an_exportable_forest_plot(qtbot, window, tmp_path):
    win, ids = window
    dialog = open_dialog(qtbot, win)
    table = dialog.table.table.model()
    cells = [[table.index(r, c).data() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert cells == [["A right", "4", "1", "5"], ["A wrong", "3", "1", "4"], ["total", "7", "2", "9"]]
    summary = dialog.summary.table.model()
    values = {summary.index(r, 0).data(): summary.index(r, 1).data() for r in range(summary.rowCount())}
    assert values["B − A"] == "+22.2 pp" and values["McNemar exact p"] == "0.6250"
    slices = dialog.slices.table.model()
    kinds = {slices.index(r, 0).data() for r in range(slices.rowCount())}
    assert kinds == {"category", "source", "error type", "dataset"}
    assert dialog.chart is not None
    dialog.chart.save(str(tmp_path / "forest.png"))
    assert (tmp_path / "forest.png").stat().st_size > 10_000
    dialog.close()


def test_swapping_the_runs_swaps_the_flips(qtbot, window):
    win, ids = window
    dialog = open_dialog(qtbot, win)
    dialog.run_a.setCurrentIndex(1)
    dialog.run_b.setCurrentIndex(0)
    qtbot.waitUntil(lambda: not dialog.reading and dialog.comparison is not None, timeout=WAIT_MS)
    assert dialog.comparison.a.id == ids["judge-b"]
    texts = [dialog.flips.item(i).text() for i in range(dialog.flips.count())]
    assert texts[:4] == [
        "A ✓ B ✗  RLAIF-V-6",
        "A ✓ B ✗  mathverse_7",
        "A ✓ B ✗  wildvision-battle-8",
        "B ✓ A ✗  RLAIF-V-5",
    ]
    dialog.run_b.setCurrentIndex(1)  # the same run twice: nothing to compare
    assert dialog.comparison is None and dialog.flips.count() == 0
    assert dialog.status.text() == "Pick two different runs."
    dialog.close()
