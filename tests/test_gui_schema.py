"""The window under a project's own label schema: panel, keys, cheat sheet, guidelines."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from helpers import WAIT_MS, show_active
from pairscope.app.gui.actions import guidelines_dock
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.labeling.schema import DEFAULT_SCHEMA, parse_schema
from pairscope.app.records import ErrorTag, Item, Reference, Response, Step
from pairscope.app.store import Store
from pairscope.app.store.label_schemas import add_label_schema, label_schema_version

SCHEMA = """\
title = "Chart QA"
guidelines = '''
# Reading charts

Read the **axis** first.

<img src=x onerror=alert(1)>

![a chart](file:///etc/passwd)
'''

[[error_types]]
name = "wrong_value"
label = "Wrong value"
key = "Ctrl+1"
description = "a value read off the chart is wrong"

[[error_types]]
name = "legend"
label = "Legend misread"
key = "Ctrl+7"

[[error_types]]
name = "other"
label = "Something else"
key = "Ctrl+6"
free_text = true

[[discard_reasons]]
name = "unreadable"
label = "Chart unreadable"
key = "Alt+1"

[[strengths]]
name = "weak"
label = "Weakly"
key = "Q"

[[strengths]]
name = "strong"
label = "Strongly"
key = "W"
"""


def items() -> list[Item]:
    pairs = [
        Item(
            ext_id=f"chart_{i}",
            prompt=f"What does chart {i} show?",
            responses=(Response(0, f"first {i}"), Response(1, f"second {i}")),
            reference=Reference(ranking=(0, 1)),
        )
        for i in range(2)
    ]
    four = Item(
        ext_id="best_of_4",
        prompt="Which is best?",
        responses=tuple(Response(i, f"candidate {i}") for i in range(4)),
        reference=Reference(ranking=(0,)),
    )
    steps = Item(
        ext_id="steps",
        prompt="Solve it",
        responses=(Response(0, "a\nb", steps=(Step("a"), Step("b"))),),
    )
    return [*pairs, four, steps]


@pytest.fixture
def project_path(tmp_path):
    path = tmp_path / "charts.pairscope"
    schema = parse_schema(SCHEMA, "charts.toml")
    with Store.create(path) as store:
        store.add_items(items())
        builtin = (DEFAULT_SCHEMA.to_json(), DEFAULT_SCHEMA.guidelines)
        add_label_schema(store, schema.to_json(), schema.guidelines, "charts", builtin=builtin)
    return path


@pytest.fixture
def window(qtbot, project_path):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(project_path), "ann")))


def select(window, ext_id):
    model = window.table.model()
    row = next(r for r in range(model.rowCount()) if model.index(r, 0).data() == ext_id)
    window.table.select_row(row)
    assert window.controller.current.item.ext_id == ext_id


def test_the_panel_and_cheat_sheet_offer_the_projects_schema(window):
    panel = window.panel
    assert list(panel.error_boxes) == ["wrong_value", "legend", "other"]
    assert [b.text() for b in panel.error_boxes.values()] == ["Wrong value", "Legend misread", "Something else"]
    assert list(panel.discard_boxes) == ["unreadable"]
    assert [b.text() for b in panel.strength_buttons.values()] == ["Weakly", "Strongly"]
    assert "existence" not in panel.error_boxes
    hints = [label.text() for label in panel.findChildren(type(panel._footer)) if label.property("role") == "hint"]
    assert "Q / W" in hints and "Ctrl+1 / Ctrl+7 / Ctrl+6" in hints and "Alt+1" in hints
    window.shortcuts.actions["cheat_sheet"].trigger()
    rows = window.shortcuts.cheat_sheet.rows()
    assert ("Error type", "Ctrl+1", "Error: a value read off the chart is wrong") in rows
    assert any(keys == "Q" and text == "Weakly" for _, keys, text in rows)
    assert not any("existence" in text or keys == "Ctrl+2" for _, keys, text in rows)
    assert "Chart QA (version 2)" in window.shortcuts.cheat_sheet.note.text()
    window.shortcuts.cheat_sheet.close()


def test_schema_keys_label_an_item_under_the_schema_version(window, qtbot):
    store = window.controller.store
    select(window, "chart_0")
    item_id = window.controller.current.item.id
    qtbot.keyClick(window, Qt.Key_1)
    qtbot.keyClick(window, Qt.Key_W)  # strongly
    qtbot.keyClick(window, Qt.Key_7, Qt.ControlModifier)  # legend misread
    label = store.current_label(item_id, "ann")
    assert label.strength == "strong" and label.error_types == (ErrorTag("legend"),)
    assert label_schema_version(store, label.uuid) == 2
    qtbot.keyClick(window, Qt.Key_1, Qt.AltModifier)  # discard: chart unreadable
    label = store.current_label(item_id, "ann")
    assert label.outcome == "discard" and label.discard_reasons == ("unreadable",)
    assert window.table.model().index(window.table.current_row(), 4).data() == "discard · legend"


def test_ctrl_6_ticks_other_and_types_there_until_enter_or_esc(window, qtbot):
    store = window.controller.store
    select(window, "chart_1")
    item_id = window.controller.current.item.id
    panel = window.panel
    field = panel.text_fields["other"]
    qtbot.keyClick(window, Qt.Key_6, Qt.ControlModifier)
    assert panel.error_boxes["other"].isChecked()
    qtbot.waitUntil(field.hasFocus, timeout=WAIT_MS)
    qtbot.keyClicks(field, "tiny font")  # letters type text, they are not label keys here
    assert panel.draft().outcome is None
    qtbot.keyClick(field, Qt.Key_Return)
    assert not field.hasFocus()
    assert store.current_label(item_id, "ann").error_types == (ErrorTag("other", note="tiny font"),)
    qtbot.keyClick(window, Qt.Key_T)  # keys label again
    assert store.current_label(item_id, "ann").outcome == "tie"
    # Ctrl+6 twice unticks; again ticks and focuses; Esc gives the keyboard back, text kept
    qtbot.keyClick(window, Qt.Key_6, Qt.ControlModifier)
    assert not panel.error_boxes["other"].isChecked()
    qtbot.keyClick(window, Qt.Key_6, Qt.ControlModifier)
    qtbot.waitUntil(field.hasFocus, timeout=WAIT_MS)
    qtbot.keyClicks(field, "blurry")
    qtbot.keyClick(field, Qt.Key_Escape)
    assert not field.hasFocus()
    assert QApplication.focusWidget() is not panel.note_edit
    assert store.current_label(item_id, "ann").error_types == (ErrorTag("other", note="blurry"),)
    # the note field too: Ctrl+E, type, Enter
    qtbot.keyClick(window, Qt.Key_E, Qt.ControlModifier)
    qtbot.waitUntil(panel.note_edit.hasFocus, timeout=WAIT_MS)
    qtbot.keyClicks(panel.note_edit, "check")
    qtbot.keyClick(panel.note_edit, Qt.Key_Return)
    assert not panel.note_edit.hasFocus()
    assert store.current_label(item_id, "ann").note == "check"


def test_hints_follow_the_item(window):
    panel = window.panel

    def preference_hint():
        return panel._hints["preference"].text()

    select(window, "chart_0")
    assert preference_hint().startswith("1 / 2 response")
    select(window, "best_of_4")
    assert preference_hint().startswith("1 / 2 / 3 / 4 response")
    select(window, "steps")
    assert preference_hint() == "F / G steps · X discard"
    assert "1 / 2" not in preference_hint()


def test_guidelines_show_markdown_safely(window, qtbot):
    assert guidelines_dock(window) is None
    window.shortcuts.actions["guidelines"].trigger()
    dock = guidelines_dock(window)
    assert dock is not None and dock.isVisible()
    panel = dock.widget()
    text = panel.text()
    assert "Reading charts" in text and "Read the axis first." in text  # Markdown rendered
    assert "<img src=x onerror=alert(1)>" in text  # raw HTML shown as text, never rendered
    assert "[image: a chart]" in text
    assert all(not url.isLocalFile() for url in panel.body.resource_requests)
    assert "Chart QA" in panel.title.text() and "version 2" in panel.title.text()
    html = panel.body.document().toHtml()
    assert "<img" not in html.replace("&lt;img", "")
    window.shortcuts.actions["guidelines"].trigger()
    assert not dock.isVisible()


def test_every_key_the_window_binds_comes_from_the_table_a_schemas_check_reads(window):
    """One table (``app/labeling/keymap.py``) of the window's keys: its shortcuts, the File
    menu's, the menus' mnemonics and Qt's editing keys; ``schema set`` refuses every one."""
    from PySide6.QtGui import QAction, QKeySequence

    from pairscope.app.labeling.keymap import FILE_KEYS, menu_mnemonics, reserved_shortcuts
    from pairscope.app.labeling.schema import normalize_key

    keymap = window.shortcuts.schema.keymap()
    table = {normalize_key(k) for s in (*keymap, *FILE_KEYS) for k in s.keys}
    portable = QKeySequence.SequenceFormat.PortableText
    bound = {
        seq.toString(portable)
        for action in window.findChildren(QAction)
        for seq in action.shortcuts()
        if not seq.isEmpty()
    }
    assert bound and {normalize_key(k) for k in bound} - table == set(), bound
    bar = {a.text().replace("&", ""): a.text()[a.text().index("&") + 1].upper() for a in window.menuBar().actions()}
    assert bar == {title.replace("&", ""): letter for title, letter in menu_mnemonics(keymap).items()}
    reserved = {normalize_key(k) for s in reserved_shortcuts(keymap) for k in s.keys}
    assert {f"Alt+{letter}" for letter in bar.values()} <= reserved
    key = QKeySequence.StandardKey
    editing = [
        key.Copy, key.Cut, key.Paste, key.SelectAll, key.Undo, key.Redo, key.Delete, key.Backspace,
        key.DeleteStartOfWord, key.DeleteEndOfWord, key.DeleteEndOfLine, key.DeleteCompleteLine,
        key.MoveToNextChar, key.MoveToPreviousChar, key.MoveToNextWord, key.MoveToPreviousWord,
        key.MoveToNextLine, key.MoveToPreviousLine, key.MoveToNextPage, key.MoveToPreviousPage,
        key.MoveToStartOfLine, key.MoveToEndOfLine, key.MoveToStartOfDocument, key.MoveToEndOfDocument,
        key.SelectNextChar, key.SelectPreviousChar, key.SelectNextWord, key.SelectPreviousWord,
        key.SelectNextLine, key.SelectPreviousLine, key.SelectNextPage, key.SelectPreviousPage,
        key.SelectStartOfLine, key.SelectEndOfLine, key.SelectStartOfDocument, key.SelectEndOfDocument,
        key.InsertParagraphSeparator, key.InsertLineSeparator, key.Cancel,
    ]  # fmt: skip
    missing = {
        seq.toString(portable)
        for std in editing
        for seq in QKeySequence.keyBindings(std)
        if normalize_key(seq.toString(portable)) not in reserved
        and normalize_key(seq.toString(portable)) is not None  # keys such as "Copy" a schema cannot name
    }
    assert missing == set()
