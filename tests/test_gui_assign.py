"""File → Assign… and File → Team report… in the window (issue 28): the dialog runs the same
round as ``pairscope assign`` in a background op with its own connection and writes one pack
per annotator; the team report shows each annotator's figures with the flags' thresholds.
Real widgets, a real SQLite project, real packs."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from helpers import WAIT_MS, good_bad_items, show_active
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.records import Label
from pairscope.app.store import Store
from pairscope.app.store.assignments import GoldItem, assignments, set_gold_items


def project(tmp_path, n=12):
    path = tmp_path / "lead" / "lead.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(n))
        ids = sorted(store.item_ids())
        set_gold_items(store, [GoldItem(ids[0], "prefer", 0, "marked"), GoldItem(ids[1], "tie", None, "marked")])
    return path


def open_window(qtbot, path):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "lead")))


def test_assign_from_the_window_writes_a_pack_per_annotator(qtbot, tmp_path):
    path = project(tmp_path)
    window = open_window(qtbot, path)
    window.file_menu.actions["assign"].trigger()
    dialog = window.file_menu.team_dialogs["assign"]
    assert dialog.isVisible()
    dialog.annotators.setText("ana, ben, chen")
    dialog.overlap.setValue(2)
    dialog.gold_share.setValue(10)
    assert "to 2 of 3 annotators" in dialog.explain.text() and "10% of each" in dialog.explain.text()
    out = tmp_path / "packs"
    dialog.folder.setText(str(out))
    dialog.run()
    qtbot.waitUntil(lambda: dialog.assigned is not None, timeout=WAIT_MS)
    assert sorted(p.name for p in out.iterdir() if p.suffix == ".pairscope") == [
        "ana.pairscope",
        "ben.pairscope",
        "chen.pairscope",
    ]
    assert "Assigned" in dialog.status.text() and "3 packs written" in dialog.status.text()
    assert "ana:" in dialog.details.toPlainText()
    held = assignments(window.controller.store)
    regular = [a for a in held if not a.gold]
    assert len(regular) == 2 * 10  # every non-gold item to exactly K = 2 annotators
    for name in ("ana", "ben", "chen"):
        with Store.open(out / f"{name}.pairscope", readonly=True) as pack:
            assert pack.item_count() == sum(1 for a in held if a.annotator == name)
    dialog.close()
    window.close()


def test_assign_refuses_bad_names_and_writes_nothing(qtbot, tmp_path):
    path = project(tmp_path)
    window = open_window(qtbot, path)
    dialog = window.file_menu.show_team_dialog("assign")
    dialog.annotators.setText("ana, ana")
    dialog.folder.setText(str(tmp_path / "packs"))
    dialog.run()
    assert "given twice" in dialog.status.text() and not (tmp_path / "packs").exists()
    dialog.annotators.setText("ana, ben")
    dialog.overlap.setValue(5)  # more than the team: the round is refused, nothing written
    dialog.run()
    qtbot.waitUntil(lambda: "Nothing assigned" in dialog.status.text(), timeout=WAIT_MS)
    assert assignments(window.controller.store) == []
    dialog.close()
    window.close()


def test_the_team_report_shows_figures_and_flags(qtbot, tmp_path):
    path = project(tmp_path)
    with Store.open(path) as store:
        for item_id in sorted(store.item_ids()):
            store.add_label(Label(item_id, "ana", "tie", active_ms=1_000))
            store.add_label(Label(item_id, "ben", "both_bad", active_ms=25_000))
    window = open_window(qtbot, path)
    window.file_menu.actions["team_report"].trigger()
    dialog = window.file_menu.team_dialogs["team_report"]
    qtbot.waitUntil(lambda: dialog.section is not None, timeout=WAIT_MS)
    model = dialog.section.table.model()
    cells = {
        model.index(r, 0).data(): [model.index(r, c).data() for c in range(model.columnCount())]
        for r in range(model.rowCount())
    }
    assert set(cells) == {"ana", "ben"}
    assert cells["ana"][6] == "1.0" and "too fast" in cells["ana"][-1]
    assert cells["ben"][6] == "25.0" and "too fast" not in cells["ben"][-1]
    assert "median active time < 3 s" in dialog.section.note.text()
    QApplication.processEvents()
    dialog.close()
    window.close()


def test_the_statistics_view_has_a_team_tab_once_items_are_assigned(qtbot, tmp_path):
    """The lead's report beside the other statistics (issue 28): a Team tab with a row per
    annotator of the round; a project nobody assigned has no such tab."""
    from pairscope.app.curation.assign import assign_project
    from pairscope.app.gui.stats_view import StatsView

    path = project(tmp_path)
    with Store.open(path) as store:
        view = StatsView(store)
        qtbot.addWidget(view)
        qtbot.waitUntil(lambda: view.report is not None, timeout=WAIT_MS)
        tabs = [view.tabs.tabText(i) for i in range(view.tabs.count())]
        assert "Team" not in tabs
        view.close()
        assign_project(store, ["ana", "ben"], 1, tmp_path / "packs")
        view = StatsView(store)
        qtbot.addWidget(view)
        qtbot.waitUntil(lambda: view.report is not None, timeout=WAIT_MS)
        tabs = [view.tabs.tabText(i) for i in range(view.tabs.count())]
        assert tabs.index("Team") == tabs.index("Figures") - 1
        assert view.sections["team"].table.model().rowCount() == 2
