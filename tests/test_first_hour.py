"""An annotator's and a researcher's first hour (issue 14): real keys sent where the keyboard
really is (the focus widget), the judge panel on the item shown, the run picker, "labeled"
meaning labeled, the File menu and the docks' layout."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from helpers import fake_run, show_active, write_jsonl
from pairscope.app.cli.main import main as cli_main
from pairscope.app.gui import file_menu
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.focus import is_text_entry
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.judge.results import record_verdicts
from pairscope.app.records import Item, Reference, Response
from pairscope.app.store import Store, VerdictRecord


def make_project(path, n=6):
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"it{i}",
                    prompt=f"Question {i}: which is right?",
                    responses=(Response(0, f"GOOD {i}"), Response(1, f"BAD {i}")),
                    reference=Reference(ranking=(0, 1)),
                    category="counting" if i % 2 else "colour",
                )
                for i in range(n)
            ]
        )
    return path


@pytest.fixture
def project_path(tmp_path):
    return make_project(tmp_path / "p.pairscope")


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def open_window(qtbot, path, settings=None, annotator="ann", size=(1400, 900)):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), annotator), settings), size)


def press(qtbot, key, modifier=Qt.KeyboardModifier.NoModifier):
    """Press a key where a real key press goes: the focus widget."""
    target = QApplication.focusWidget()
    assert target is not None, "nothing has the keyboard"
    qtbot.keyClick(target, key, modifier)


def type_text(qtbot, text):
    qtbot.keyClicks(QApplication.focusWidget(), text)


def current_label(window):
    return window.controller.store.current_label(window.controller.current.item_id, window.controller.annotator)


# -- 1. focus ------------------------------------------------------------------------------------


def test_the_first_key_labels_the_item_not_the_search_box(qtbot, project_path):
    window = open_window(qtbot, project_path)
    assert not is_text_entry(QApplication.focusWidget())
    row = window.table.current_row()
    press(qtbot, Qt.Key.Key_1)
    assert window.search.text() == ""
    assert window.table.current_row() == row  # still at the resume point
    assert current_label(window).outcome == "prefer"


def test_search_enter_and_esc_give_the_keyboard_back(qtbot, project_path):
    window = open_window(qtbot, project_path)
    press(qtbot, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is window.search
    type_text(qtbot, "Question 3")
    press(qtbot, Qt.Key.Key_Return)  # filters at once and leaves the box
    assert window.table.model().rowCount() == 1
    assert not is_text_entry(QApplication.focusWidget())
    press(qtbot, Qt.Key.Key_T)
    assert window.search.text() == "Question 3"  # the T labeled: it did not extend the search
    assert window.controller.current.item.ext_id == "it3" and current_label(window).outcome == "tie"

    press(qtbot, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    press(qtbot, Qt.Key.Key_Escape)
    assert not is_text_entry(QApplication.focusWidget())
    press(qtbot, Qt.Key.Key_B)
    assert current_label(window).outcome == "both_bad"


def test_esc_in_the_note_returns_to_labeling(qtbot, project_path):
    window = open_window(qtbot, project_path)
    press(qtbot, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert is_text_entry(QApplication.focusWidget())
    type_text(qtbot, "12")  # typed into the note, not labels
    assert current_label(window) is None or current_label(window).outcome != "prefer"
    press(qtbot, Qt.Key.Key_Escape)
    assert not is_text_entry(QApplication.focusWidget())
    press(qtbot, Qt.Key.Key_2)
    label = current_label(window)
    assert label.outcome == "prefer" and "12" in label.note


def test_after_tab_to_a_combo_box_keys_label_and_letters_do_not_search_it(qtbot, project_path):
    window = open_window(qtbot, project_path)
    window.category.setFocus()
    assert QApplication.focusWidget() is window.category
    press(qtbot, Qt.Key.Key_C)  # "colour"/"counting" by keyboard search if the combo took it
    assert window.category.currentIndex() == 0
    press(qtbot, Qt.Key.Key_1)
    assert current_label(window).outcome == "prefer"
    window.table.setFocus()
    press(qtbot, Qt.Key.Key_T)
    assert current_label(window).outcome == "tie"


# -- 5. labeled means labeled --------------------------------------------------------------------


def test_an_error_type_alone_does_not_make_the_item_labeled(qtbot, project_path):
    window = open_window(qtbot, project_path)
    item_id = window.controller.current.item_id
    press(qtbot, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)  # error: existence, no preference
    assert current_label(window).error_types
    assert window.progress.format() == "0 / 6 labeled"
    assert window.table.model().index(0, 3).data() == "unlabeled"
    assert window.controller.session.first_unlabeled() == item_id  # U comes back to it
    press(qtbot, Qt.Key.Key_2)
    assert window.progress.format() == "1 / 6 labeled"
    assert window.table.model().index(0, 3).data() == "labeled"


# -- 2 and 3. the judge panel follows the item; the run picker ------------------------------------


def store_run(store, item_ids, model, rationale="reasons"):
    """A run whose sample on each item prefers response 1 (index 0, the reference) and says why."""
    run = fake_run(store, model_path=model)
    record_verdicts(
        store,
        run,
        [
            VerdictRecord(run.id, i, 0, (0, 1), f"{rationale} for item {i}. Answer: 1", 0, None, True, "r")
            for i in item_ids
        ],
    )
    return run


def test_the_judge_panel_shows_the_item_it_is_on(qtbot, project_path):
    with Store.open(project_path) as store:
        ids = [s.id for s in store.item_summaries(0, 10)]
        store_run(store, ids[:1], "batch-model", "A's reasons")
    window = open_window(qtbot, project_path)
    window.toggle_judge()
    panel = window.judge.panel
    assert "A's reasons for item" in panel.stream.toPlainText()  # read back after the batch run
    assert "Judge: Response" in panel.result.text() and "You: —" in panel.result.text()
    press(qtbot, Qt.Key.Key_N)
    assert panel.stream.toPlainText() == ""  # the previous item's rationale is gone
    assert "Not judged in run" in panel.result.text()
    press(qtbot, Qt.Key.Key_T)
    assert "You: tie" in panel.result.text()  # follows the label just given


def test_a_one_item_run_does_not_hide_the_batch_run(qtbot, project_path, settings):
    with Store.open(project_path) as store:
        ids = [s.id for s in store.item_summaries(0, 10)]
        batch = store_run(store, ids, "batch-model")  # right on every item
        single = fake_run(store, model_path="try-model")
        record_verdicts(store, single, [VerdictRecord(single.id, ids[0], 0, (0, 1), "Answer: 2", 1, None, True, "")])
    window = open_window(qtbot, project_path, settings)
    assert window.controller.run_id == batch.id
    assert "batch-model" in window.run_picker.currentText() and "6 items" in window.run_picker.currentText()
    assert window.run_picker.count() == 2
    window.focus.setCurrentIndex(window.focus.findData("judge_wrong"))
    assert window.table.model().rowCount() == 0  # the batch judge got every item right
    window.run_picker.setCurrentIndex(window.run_picker.findData(single.id))
    window.run_picker.activated.emit(window.run_picker.currentIndex())
    assert window.controller.run_id == single.id
    assert window.table.model().rowCount() == 1  # the one-item run got its item wrong
    window.close()
    again = open_window(qtbot, project_path, settings)  # the choice is remembered per project
    assert again.controller.run_id == single.id


def test_info_lists_runs_with_model_mode_k_date_and_size(project_path, capsys):
    with Store.open(project_path) as store:
        ids = [s.id for s in store.item_summaries(0, 10)]
        store_run(store, ids[:4], "/models/qwen2-vl-2b")
    assert cli_main(["info", "--db", str(project_path)]) == 0
    out = capsys.readouterr().out
    assert "Run 1 · qwen2-vl-2b · pairwise · K=1" in out and "4 items" in out
    assert cli_main(["info", "--db", str(project_path), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs[0]["model"] == "qwen2-vl-2b" and runs[0]["items"] == 4 and runs[0]["k"] == 1


# -- 6. the File menu ----------------------------------------------------------------------------


def test_file_menu_comes_first_with_mnemonics_and_quit(qtbot, project_path):
    window = open_window(qtbot, project_path)
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles[0] == "&File" and all("&" in t for t in titles)
    letters = [t[t.index("&") + 1].lower() for t in titles]
    assert len(set(letters)) == len(letters)  # every Alt+letter opens one menu
    assert window.file_menu.actions["quit"].shortcut().toString() == "Ctrl+Q"
    window.file_menu.actions["quit"].trigger()
    assert not window.isVisible()


@pytest.mark.parametrize("what", ["folder", "text file", "missing"])
def test_opening_a_non_project_says_so_in_a_dialog(qtbot, project_path, tmp_path, monkeypatch, what):
    shown = []
    monkeypatch.setattr(file_menu.QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    window = open_window(qtbot, project_path)
    target = {"folder": tmp_path, "text file": tmp_path / "notes.txt", "missing": tmp_path / "gone.pairscope"}[what]
    if what == "text file":
        target.write_text("not a database\n" * 100)
    assert window.file_menu.open_project(target, "ann") is None
    assert shown and str(target.name) in shown[0]
    assert window.isVisible()  # this project stays open
    press(qtbot, Qt.Key.Key_1)
    assert current_label(window).outcome == "prefer"


def test_opening_another_project_and_switching_annotator(qtbot, project_path, tmp_path, settings):
    other = make_project(tmp_path / "other.pairscope", n=3)
    window = open_window(qtbot, project_path, settings)
    successor = window.file_menu.open_project(other, "bob")
    qtbot.addWidget(successor)
    assert not window.isVisible() and successor.controller.path == other
    assert successor.controller.annotator == "bob" and successor.table.model().rowCount() == 3
    assert str(other.resolve()) == file_menu.recent_projects(settings)[0]
    assert str(project_path.resolve()) in file_menu.recent_projects(settings)


def test_import_a_dataset_from_the_file_menu(qtbot, project_path, tmp_path):
    rows = [{"id": f"new_{i}", "query": f"Q{i}", "response": ["a", "b"], "human_ranking": [0, 1]} for i in range(3)]
    rows.append({"id": "broken"})  # a problem the dialog must list with file:line
    data = write_jsonl(tmp_path / "more.jsonl", rows)
    window = open_window(qtbot, project_path)
    window.file_menu.import_dataset(data)
    qtbot.waitUntil(lambda: window.file_menu.import_result is not None, timeout=10000)
    box = window.file_menu.import_result
    text = box.text() + box.detailedText()
    if "added" in box.text():
        assert "3 added" in box.text() and window.table.model().rowCount() == 9
        assert "more.jsonl" in text
    else:  # a fatal problem: nothing imported, and the dialog says where
        assert "Nothing was imported" in box.text() and "more.jsonl:4" in text
        assert window.table.model().rowCount() == 6
    box.close()


# -- 7. layout -----------------------------------------------------------------------------------


def test_judge_and_review_docks_share_one_column_and_responses_stay_readable(qtbot, project_path):
    window = open_window(qtbot, project_path, size=(1400, 900))
    window.toggle_review()
    window.toggle_judge()
    assert window.judge in window.tabifiedDockWidgets(window.review_dock)
    qtbot.wait(50)
    widths = [card.width() for card in window.responses.cards()]
    assert min(widths) >= 250, widths


def test_no_traceback_for_a_folder_given_on_the_command_line(tmp_path, monkeypatch, capsys):
    from pairscope.app.gui import launch

    shown = []
    monkeypatch.setattr(launch.QMessageBox, "critical", lambda parent, title, text: shown.append(text))
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "config"))
    assert launch.run(tmp_path, "ann") == 1
    assert "is a folder" in capsys.readouterr().err and shown


def test_import_dialog_text_is_inert(qtbot, project_path, tmp_path):
    data = write_jsonl(
        tmp_path / "<b>bold<b>.jsonl", [{"id": "x", "query": "Q", "response": ["a", "b"], "human_ranking": [0, 1]}]
    )
    window = open_window(qtbot, project_path)
    window.file_menu.import_dataset(data)
    qtbot.waitUntil(lambda: window.file_menu.import_result is not None, timeout=10000)
    assert "&lt;b&gt;bold&lt;b&gt;" in window.file_menu.import_result.text()
    window.file_menu.import_result.close()


def test_the_judge_panel_names_the_items_confidence(tmp_path):
    from pairscope.app.judge.review import judge_item_view

    path = make_project(tmp_path / "c.pairscope", n=1)
    with Store.open(path) as store:
        item = store.get_item(store.item_id("it0"))
        run = fake_run(store, k=2)
        record_verdicts(
            store,
            run,
            [
                VerdictRecord(run.id, item.stored_id, s, (0, 1), "Answer: 1", 0, None, True, "", confidence=c)
                for s, c in ((0, 0.9), (1, 0.7))
            ],
        )
        view = judge_item_view(store, item, (0, 1), "ann", run.id)
    assert view.summary.startswith("Judge: Response 1 (2 of 2 samples)  ·  confidence 0.80  ·  You: —")
