"""Ranking an item of four responses with keys through the real window (issue 29): the ranked
list, the stored ranks in response indices through the blind order, undo/redo one press at a
time, a second annotator's ranking merged in; and the reference's rationale in review."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from helpers import show_active
from pairscope.app.cli.main import main
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.importer import import_file
from pairscope.app.records import Item, Reference, Response
from pairscope.app.store import Store

RELEASES = Path(__file__).parent / "fixtures" / "releases"
#: The item table's summary of the ranking 3, 1, =, 4, 2 (``labeling.session.describe``).
TABLE_TEXT = "R3 > R1 = R4 > R2"
DIGITS = {"1": Qt.Key_1, "2": Qt.Key_2, "3": Qt.Key_3, "4": Qt.Key_4, "=": Qt.Key_Equal}


def four_response_items(n: int = 2) -> list[Item]:
    return [
        Item(
            ext_id=f"bo4_{i}",
            prompt=f"Which caption fits image {i}?",
            responses=tuple(Response(k, f"caption {'ABCD'[k]} of {i}") for k in range(4)),
            reference=Reference(ranking=(0, 1, 2, 3)),
        )
        for i in range(n)
    ]


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "lead.pairscope"
    with Store.create(path) as store:
        store.add_items(four_response_items())
    return path


def open_window(qtbot, path, annotator="ana"):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), annotator)))


def press(qtbot, window, keys: str) -> None:
    for key in keys.split():
        qtbot.keyClick(window, DIGITS[key])


def ranks_of(groups_by_position, order) -> tuple[int, ...]:
    """Ranks by response index for tied groups of screen positions (worked out here, not with
    app.rankings): each position's response gets its group's place, dense."""
    ranks = [0] * len(order)
    for rank, group in enumerate(groups_by_position, start=1):
        for position in group:
            ranks[order[position - 1]] = rank
    left = len(groups_by_position) + 1
    return tuple(r or left for r in ranks)


def stored_ranks(window, item_id, annotator="ana"):
    label = window.controller.store.current_label(item_id, annotator)
    return None if label is None else label.ranks


def label_cell(window) -> str:
    return window.table.model().index(window.table.current_row(), 4).data()


def test_ranking_four_responses_with_keys_is_stored_by_index_through_the_blind_order(qtbot, project):
    window = open_window(qtbot, project)
    item_id = window.controller.current.item.id
    order = window.controller.store.display_order(item_id, "ana")
    assert window.panel.ranking.isVisible() and window.panel.ranking.text() == ""
    press(qtbot, window, "3 1 = 4 2")
    assert window.panel.ranking.text() == "1. R3  2. R1 = R4  4. R2"
    assert window.panel.ranking.list.text() == "1.  R3\n2.  R1 = R4\n4.  R2"
    label = window.controller.store.current_label(item_id, "ana")
    assert label.ranks == ranks_of([(3,), (1, 4), (2,)], order)
    assert label.ranks[order[2]] == 1 and label.ranks[order[0]] == label.ranks[order[3]] == 2
    assert label.preferred == order[2] and label.display_order == order
    assert label_cell(window) == TABLE_TEXT
    # each press was one write; "=" alone stores nothing
    assert len(window.controller.store.label_history(item_id, "ana")) == 4


def test_a_ranking_being_built_lists_the_unranked_as_sharing_the_last_place(qtbot, project):
    window = open_window(qtbot, project)
    item_id = window.controller.current.item.id
    order = window.controller.store.display_order(item_id, "ana")
    press(qtbot, window, "2")
    assert window.panel.ranking.text() == "1. R2  2. R1 = R3 = R4"
    assert window.panel.ranking.rest.text() == "2.  R1 = R3 = R4  (not ranked yet, tied last)"
    assert window.panel.ranking.rest.isVisible()
    assert stored_ranks(window, item_id) == ranks_of([(2,)], order)  # the best of four, the rest tied
    press(qtbot, window, "4 =")
    assert window.panel.ranking.list.text() == "1.  R2\n2.  R4 = …"  # the tie waits for the next key
    press(qtbot, window, "1")
    assert window.panel.ranking.text() == "1. R2  2. R1 = R4  4. R3"
    qtbot.keyClick(window, Qt.Key_Backspace)  # takes back R1, the last ranked
    assert window.panel.ranking.text() == "1. R2  2. R4  3. R1 = R3"
    assert stored_ranks(window, item_id) == ranks_of([(2,), (4,)], order)
    press(qtbot, window, "4")  # a response already ranked starts a new ranking from it
    assert window.panel.ranking.text() == "1. R4  2. R1 = R2 = R3"
    assert stored_ranks(window, item_id) == ranks_of([(4,)], order)
    qtbot.keyClick(window, Qt.Key_Backspace)
    assert window.controller.store.current_label(item_id, "ana") is None  # nothing ranked: cleared
    assert window.panel.ranking.text() == "" and label_cell(window) == ""


def test_backspace_after_tying_every_response_left_takes_back_only_the_last_press(qtbot, project):
    window = open_window(qtbot, project)
    item_id = window.controller.current.item.id
    order = window.controller.store.display_order(item_id, "ana")
    press(qtbot, window, "2 4 = 1 = 3")  # R4, R1 and R3 tied by hand: what was left anyway
    assert window.panel.ranking.text() == "1. R2  2. R1 = R3 = R4"
    qtbot.keyClick(window, Qt.Key_Backspace)  # takes back R3, the last pressed, not the whole ranking
    assert window.panel.ranking.text() == "1. R2  2. R1 = R4  4. R3"
    assert stored_ranks(window, item_id) == ranks_of([(2,), (1, 4)], order)


def test_undo_goes_back_one_press_at_a_time_and_redo_restores(qtbot, project):
    window = open_window(qtbot, project)
    item_id = window.controller.current.item.id
    order = window.controller.store.display_order(item_id, "ana")
    press(qtbot, window, "3 1 = 4 2")
    steps = [
        ([(3,), (1, 4)], "1. R3  2. R1 = R4  4. R2"),  # R2 left: last anyway
        ([(3,), (1,)], "1. R3  2. R1  3. R2 = R4"),
        ([(3,)], "1. R3  2. R1 = R2 = R4"),
    ]
    for groups, text in steps:
        qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
        assert stored_ranks(window, item_id) == ranks_of(groups, order)
        assert window.panel.ranking.text() == text
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
    assert stored_ranks(window, item_id) is None and window.panel.ranking.text() == ""
    forward = [[(3,)], [(3,), (1,)], [(3,), (1, 4)], [(3,), (1, 4), (2,)]]
    for groups in forward:
        qtbot.keyClick(window, Qt.Key_Y, Qt.ControlModifier)
        assert stored_ranks(window, item_id) == ranks_of(groups, order)
    assert window.panel.ranking.text() == "1. R3  2. R1 = R4  4. R2"
    assert label_cell(window) == TABLE_TEXT
    # after an undo the keys carry on from the ranking shown
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)  # back to R3 > R1
    press(qtbot, window, "2")
    assert stored_ranks(window, item_id) == ranks_of([(3,), (1,), (2,)], order)


def test_two_responses_keep_their_keys_and_equals_no_longer_zooms(qtbot, tmp_path):
    path = tmp_path / "pairs.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id="pair",
                    prompt="Which?",
                    responses=(Response(0, "a"), Response(1, "b")),
                    reference=Reference(),
                )
            ]
        )
    window = open_window(qtbot, path)
    item_id = window.controller.current.item.id
    assert not window.panel.ranking.isVisible()
    press(qtbot, window, "2 =")
    label = window.controller.store.current_label(item_id, "ana")
    assert label.preferred == window.controller.store.display_order(item_id, "ana")[1] and label.ranks == ()
    qtbot.keyClick(window, Qt.Key_Backspace)  # no ranking here: nothing to take back
    press(qtbot, window, "2")  # pressed again: deselected, as before
    assert window.controller.store.current_label(item_id, "ana") is None
    zoom = window.shortcuts.actions["zoom_in"].shortcuts()
    assert [k.toString() for k in zoom] == ["+"]


def test_a_second_annotators_ranking_merged_in_shows_beside_the_first(qtbot, project, tmp_path, capsys):
    packs = tmp_path / "ben.pairscope"
    assert main(["pack", "--db", str(project), "--out", str(packs), "--annotator", "ben"]) == 0
    ben = open_window(qtbot, packs, "ben")
    item_id = ben.controller.current.item.id
    ext_id = ben.controller.current.item.ext_id
    ben_order = ben.controller.store.display_order(item_id, "ben")
    press(qtbot, ben, "2 1 4 3")
    assert ben.panel.ranking.text() == "1. R2  2. R1  3. R4  4. R3"
    ben.close()

    ana = open_window(qtbot, project, "ana")
    assert ana.controller.current.item.ext_id == ext_id
    lead_id = ana.controller.current.item.id
    ana_order = ana.controller.store.display_order(lead_id, "ana")
    press(qtbot, ana, "3 1 = 4 2")
    ana.close()
    assert main(["merge", str(project), str(packs)]) == 0
    assert "4 labels added" in capsys.readouterr().out  # each press of ben's, his history

    window = open_window(qtbot, project, "ana")
    store = window.controller.store
    window.table.select_row(window.controller.row_of(lead_id))
    assert store.current_label(lead_id, "ana").ranks == ranks_of([(3,), (1, 4), (2,)], ana_order)
    ben_ranks = ranks_of([(2,), (1,), (4,), (3,)], ben_order)
    assert store.current_label(lead_id, "ben").ranks == ben_ranks
    assert label_cell(window) == TABLE_TEXT  # the table: ana's own ranking
    qtbot.keyClick(window, Qt.Key_R, Qt.ControlModifier)
    text = window.review.text.toPlainText()
    best_first = sorted(range(4), key=lambda i: ben_ranks[i])
    in_anas_terms = " > ".join(f"R{ana_order.index(i) + 1}" for i in best_first)
    assert f"ana: {TABLE_TEXT}" in text and f"ben: {in_anas_terms}" in text


def test_review_shows_the_references_rationale_in_screen_terms(qtbot, tmp_path):
    data = Path(shutil.copy(RELEASES / "mm_rlhf.jsonl", tmp_path / "mm_rlhf.jsonl"))
    path = tmp_path / "mm.pairscope"
    with Store.create(path) as store:
        assert import_file(store, data, "mm_rlhf", tmp_path).added == 5
        store.add_items(four_response_items(1))  # no rationale
    window = open_window(qtbot, path, "carol")
    store = window.controller.store
    window.table.select_row(window.controller.row_of(store.item_id("mcq_1")))
    order = store.display_order(store.item_id("mcq_1"), "carol")
    qtbot.keyClick(window, Qt.Key_R, Qt.ControlModifier)
    text = window.review.text.toPlainText()
    chosen, rejected = order.index(0) + 1, order.index(1) + 1
    assert f"Dataset reference: R{chosen}" in text
    assert "Reference's rationale" in text
    assert f"R{chosen} (chosen): The square covers more area." in text
    assert f"R{rejected} (rejected): The circle is smaller." in text
    window.table.select_row(window.controller.row_of(store.item_id("bo4_0")))
    assert "Reference's rationale" not in window.review.text.toPlainText()


def test_a_tied_best_shows_on_the_response_buttons_and_t_replaces_the_ranking_with_a_tie(qtbot, project):
    window = open_window(qtbot, project)
    item_id = window.controller.current.item.id
    press(qtbot, window, "3 = 4")
    assert [b.isChecked() for b in window.panel.response_buttons] == [False, False, True, True]
    assert not window.panel.outcome_buttons["tie"].isChecked()  # the ranking's tie is in its list
    label = window.controller.store.current_label(item_id, "ana")
    assert label.outcome == "tie" and sorted(label.ranks) == [1, 1, 2, 2]
    qtbot.keyClick(window, Qt.Key_T)
    label = window.controller.store.current_label(item_id, "ana")
    assert label.outcome == "tie" and label.ranks == () and window.panel.outcome_buttons["tie"].isChecked()
    assert window.panel.ranking.text() == ""


def test_the_rules_of_the_keys_on_groups_of_screen_positions():
    from pairscope.widgets.ranking_list import places, pressed, settled, taken_back

    groups: tuple = ()
    tie = False
    for key in "3 1 = 4 2".split():
        if key == "=":
            tie = True
        else:
            groups, tie = pressed(groups, int(key), 4, tie), False
    assert groups == ((3,), (1, 4), (2,))
    assert settled(((3,), (1, 2, 4)), 4) == ((3,),)  # a stored "not ranked yet" group
    assert settled(((1, 2, 3, 4),), 4) == ((1, 2, 3, 4),)  # all tied is a ranking
    assert taken_back(((3,), (1, 4), (2,))) == ((3,), (1, 4))
    # a tie pressed last that happens to name every response left is still the last press
    assert taken_back(((1,), (2, 3))) == ((1,), (2,))
    assert pressed(((3,), (1,)), 3, 4) == ((3,),)
    assert places(((3,), (1, 4)), 4) == [(1, "R3", False), (2, "R1 = R4", False), (4, "R2", False)]
    assert places(((2,),), 4) == [(1, "R2", False), (2, "R1 = R3 = R4", True)]


def test_backspace_and_equals_in_a_text_field_edit_the_text_not_the_ranking(qtbot, project):
    window = open_window(qtbot, project)
    item_id = window.controller.current.item.id
    press(qtbot, window, "3 1")
    window.panel.note_edit.setFocus()
    qtbot.keyClicks(window.panel.note_edit, "a=b")
    qtbot.keyClick(window.panel.note_edit, Qt.Key_Backspace)
    assert window.panel.note_edit.toPlainText() == "a="
    assert window.panel.ranking.text() == "1. R3  2. R1  3. R2 = R4" and not window.panel.ranking.tie_pending
    window.panel.flush()
    assert window.controller.store.current_label(item_id, "ana").note == "a="
