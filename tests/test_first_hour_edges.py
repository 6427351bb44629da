"""The rough edges of the first hour (issue 24, builds 2, 5 and 6), offscreen: an empty result
takes the item away and says so, an import that fails shows its first problems in the dialog,
a dataset file opened as a project is offered for import, file dialogs start in the project's
folder, the window names the annotator and keeps its place across Switch annotator (per
project), ids are cut at their end with the whole id on hover, the demo has guidelines."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from helpers import WAIT_MS, good_bad_items, show_active, write_jsonl
from pairscope.app.gui import file_menu
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import EMPTY_RESULT, MainWindow
from pairscope.app.store import Store


@pytest.fixture
def project_path(tmp_path):
    path = tmp_path / "proj" / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(4))
    return path


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def open_window(qtbot, path, settings=None, annotator="ann"):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), annotator), settings))


def placeholder(window) -> str:
    return window.media.findChild(type(window.item_title), "media-placeholder").text()


def test_an_empty_result_takes_the_item_away_says_so_and_labels_nothing(qtbot, project_path):
    window = open_window(qtbot, project_path)
    assert window.controller.current is not None
    window.search.setText("no item says this")
    window.apply_filter()
    assert window.table.model().rowCount() == 0 and window.controller.current is None
    assert EMPTY_RESULT in placeholder(window) and window.prompt.text() == ""
    assert not window.panel.isEnabled() and window.responses.layout_mode() == "empty"
    qtbot.keyClick(window, Qt.Key_1)  # the key of a label: nothing to label
    assert window.controller.store.query("SELECT count(*) FROM labels")[0][0] == 0
    window.search.setText("")
    window.apply_filter()
    assert window.controller.current is not None and window.panel.isEnabled()
    qtbot.keyClick(window, Qt.Key_1)
    assert window.controller.store.query("SELECT count(*) FROM labels")[0][0] == 1


def test_a_failed_import_shows_its_first_problems_in_the_dialog_itself(qtbot, project_path, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not JSON\n", encoding="utf-8")
    window = open_window(qtbot, project_path)
    window.file_menu.import_dataset(bad)
    qtbot.waitUntil(lambda: window.file_menu.import_result is not None, timeout=WAIT_MS)
    box = window.file_menu.import_result
    assert "Nothing was imported" in box.text() and "bad.jsonl:1" in box.text()  # not only behind Show Details
    box.close()


def test_a_dataset_opened_as_a_project_is_offered_for_import_said_once(qtbot, project_path, tmp_path):
    data = write_jsonl(
        tmp_path / "more.jsonl", [{"id": "new", "query": "Q", "response": ["a", "b"], "human_ranking": [0, 1]}]
    )
    window = open_window(qtbot, project_path)
    assert window.file_menu.open_project(data, "ann") is None
    offer = window.file_menu.offer
    assert offer is not None and offer.text().count("not a PairScope project") == 1
    importing = next(b for b in offer.buttons() if b.text() == "Import it")
    importing.click()
    qtbot.waitUntil(lambda: window.file_menu.import_result is not None, timeout=WAIT_MS)
    assert "1 added" in window.file_menu.import_result.text()
    window.file_menu.import_result.close()
    qtbot.waitUntil(lambda: window.table.model().rowCount() == 5, timeout=WAIT_MS)
    with pytest.raises(file_menu.NotAProject):
        file_menu.open_store(data)


def test_the_import_dialog_starts_in_the_projects_folder(qtbot, project_path, monkeypatch):
    asked = []

    def fake_dialog(parent, caption, folder, filters):
        asked.append(folder)
        return "", ""

    monkeypatch.setattr(file_menu.QFileDialog, "getOpenFileName", staticmethod(fake_dialog))
    window = open_window(qtbot, project_path)
    window.file_menu.import_dataset()
    assert asked == [str(project_path.parent)]


def test_the_annotator_is_named_in_the_title_and_the_status_bar(qtbot, project_path):
    window = open_window(qtbot, project_path, annotator="Ada")
    assert "Ada" in window.windowTitle() and "p.pairscope" in window.windowTitle()
    assert "Ada" in window.saved_label.text() and window.saved_label.isVisible()
    window.toggle_adjudicate()
    assert "Ada (adjudicating)" in window.windowTitle()


def test_switch_annotator_keeps_the_maximised_window_and_geometry_is_kept_per_project(
    qtbot, project_path, tmp_path, settings
):
    window = open_window(qtbot, project_path, settings)
    window.showMaximized()
    qtbot.waitUntil(window.isMaximized, timeout=WAIT_MS)
    successor = window.file_menu.open_project(project_path, "bob")
    qtbot.addWidget(successor)
    assert successor.isMaximized() and "bob" in successor.windowTitle()
    successor.close()
    key = successor.project_key("window") + "/geometry"
    assert settings.value(key) is not None  # this project's own geometry
    other = tmp_path / "other.pairscope"
    with Store.create(other) as store:
        store.add_items(good_bad_items(2))
    third = open_window(qtbot, other, settings)
    assert third.project_key("window") != successor.project_key("window")


def test_ids_are_cut_at_their_end_and_shown_whole_on_hover(qtbot, tmp_path):
    path = tmp_path / "long.pairscope"
    long_id = "wildvision_battle_arena_demo_item_0001"
    with Store.create(path) as store:
        items = good_bad_items(1)
        store.add_items([items[0].__class__(**{**items[0].__dict__, "ext_id": long_id})])
    window = open_window(qtbot, path)
    assert window.table.textElideMode() == Qt.TextElideMode.ElideRight
    model = window.table.model()
    tip = model.data(model.index(0, 0), Qt.ItemDataRole.ToolTipRole)
    assert long_id in tip


def test_the_demo_has_guidelines_that_explain_tie_both_bad_and_discard(tmp_path):
    from pairscope.app.demo import add_demo_guidelines, create_demo_project
    from pairscope.app.labeling.session import project_label_schema

    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    with Store.open(path) as store:
        guidelines = project_label_schema(store).guidelines
        for words in ("**T — tie**", "**B — both bad**", "**X — discard**"):
            assert words in guidelines
        assert not add_demo_guidelines(store)  # once: an unchanged demo adds nothing


def test_no_dialog_is_left_open_by_these_tests():
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
