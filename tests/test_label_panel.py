"""The label panel, driven through real clicks and the window's action methods."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QFocusEvent
from PySide6.QtWidgets import QApplication

from helpers import WAIT_MS
from pairscope.app.records import DISCARD_REASONS, ERROR_KINDS, ErrorTag, LabelDraft
from pairscope.widgets.label_panel import LabelPanel


def make_panel(qtbot, debounce_ms=30):
    widget = LabelPanel(
        {"prefer": "1–9", "tie": "T", "strength": "Q W E", "clear": "Esc"}, text_debounce_ms=debounce_ms
    )
    qtbot.addWidget(widget)
    widget.resize(300, 700)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


@pytest.fixture
def panel(qtbot):
    return make_panel(qtbot)


@pytest.fixture
def emitted(panel):
    drafts: list[LabelDraft] = []
    panel.changed.connect(drafts.append)
    return drafts


def click(qtbot, widget):
    if widget.metaObject().className() == "QCheckBox":  # hit the indicator, not empty space
        qtbot.mouseClick(widget, Qt.LeftButton, pos=QPoint(8, widget.height() // 2))
    else:
        qtbot.mouseClick(widget, Qt.LeftButton)


def test_prefer_and_strength_by_click(qtbot, panel, emitted):
    assert not panel.strength_buttons["clearly"].isEnabled()
    click(qtbot, panel.response_buttons[1])
    assert panel.strength_buttons["clearly"].isEnabled()
    click(qtbot, panel.strength_buttons["clearly"])
    expected = LabelDraft(outcome="prefer", preferred_position=2, strength="clearly")
    assert panel.draft() == expected
    assert emitted == [LabelDraft(outcome="prefer", preferred_position=2), expected]
    assert panel.response_buttons[1].isChecked() and not panel.response_buttons[0].isChecked()


def test_switching_response_keeps_strength_and_errors(panel, emitted):
    panel.prefer(1)
    panel.set_strength("much")
    panel.toggle_error("counting")
    panel.prefer(2)
    assert panel.draft() == LabelDraft("prefer", 2, "much", (ErrorTag("counting"),))
    assert len(emitted) == 4


def test_pressing_selected_preference_again_deselects(qtbot, panel, emitted):
    panel.prefer(1)
    panel.set_strength("slightly")
    click(qtbot, panel.response_buttons[0])
    assert panel.draft() == LabelDraft()
    assert not panel.response_buttons[0].isChecked()
    assert not panel.strength_buttons["slightly"].isEnabled()
    panel.set_outcome("tie")
    panel.set_outcome("tie")
    assert panel.draft().outcome is None
    assert len(emitted) == 5


def test_pressing_selected_strength_again_deselects(panel):
    panel.prefer(1)
    panel.set_strength("clearly")
    panel.set_strength("clearly")
    assert panel.draft() == LabelDraft(outcome="prefer", preferred_position=1)


@pytest.mark.parametrize("outcome", ["tie", "both_bad", "discard"])
def test_other_outcomes_clear_preference_and_strength_but_keep_errors(qtbot, panel, emitted, outcome):
    panel.prefer(2)
    panel.set_strength("clearly")
    panel.toggle_error("attribute")
    click(qtbot, panel.outcome_buttons[outcome])
    assert panel.draft() == LabelDraft(outcome=outcome, error_types=(ErrorTag("attribute"),))
    assert panel.outcome_buttons[outcome].isChecked()
    assert not any(b.isChecked() for b in panel.response_buttons)
    assert not any(b.isEnabled() or b.isChecked() for b in panel.strength_buttons.values())
    assert len(emitted) == 4


def test_strength_without_preference_is_a_no_op(panel, emitted):
    assert panel.set_strength("much") is False
    panel.set_outcome("both_bad")
    assert panel.set_strength("much") is False
    assert panel.draft() == LabelDraft(outcome="both_bad")
    assert len(emitted) == 1


def test_out_of_range_preference_is_a_no_op(panel, emitted):
    assert panel.prefer(3) is False and panel.prefer(0) is False
    assert emitted == [] and panel.draft() == LabelDraft()


def test_unknown_names_raise(panel):
    for call in (
        lambda: panel.set_outcome("prefer"),
        lambda: panel.set_strength("huge"),
        lambda: panel.toggle_error("colour"),
        lambda: panel.toggle_discard("boring"),
    ):
        with pytest.raises(ValueError):
            call()


def test_error_types_with_recognition_subkind_and_other_note(qtbot, panel, emitted):
    assert not panel.recognition_combo.isEnabled() and not panel.other_note.isEnabled()
    click(qtbot, panel.error_boxes["existence"])
    click(qtbot, panel.error_boxes["recognition"])
    assert panel.recognition_combo.isEnabled()
    panel.recognition_combo.setFocus()
    qtbot.keyClick(panel.recognition_combo, Qt.Key_Down)  # "any kind" → "object"
    qtbot.keyClick(panel.recognition_combo, Qt.Key_Down)  # → "text"
    click(qtbot, panel.error_boxes["other"])
    assert panel.other_note.isEnabled()
    before = len(emitted)
    panel.other_note.setFocus()
    qtbot.keyClicks(panel.other_note, "wrong colour")
    qtbot.keyClick(panel.other_note, Qt.Key_Return)
    expected = (ErrorTag("existence"), ErrorTag("recognition", subkind="text"), ErrorTag("other", note="wrong colour"))
    assert panel.draft().error_types == expected
    assert len(emitted) == before + 1 and emitted[-1].error_types == expected
    assert emitted[:5] == [
        LabelDraft(error_types=(ErrorTag("existence"),)),
        LabelDraft(error_types=(ErrorTag("existence"), ErrorTag("recognition"))),
        LabelDraft(error_types=(ErrorTag("existence"), ErrorTag("recognition", "object"))),
        LabelDraft(error_types=(ErrorTag("existence"), ErrorTag("recognition", "text"))),
        LabelDraft(error_types=expected[:2] + (ErrorTag("other"),)),
    ]


def test_error_order_follows_the_taxonomy_and_untick_removes(panel):
    for kind in reversed(ERROR_KINDS):
        panel.toggle_error(kind)
    assert [t.kind for t in panel.draft().error_types] == list(ERROR_KINDS)
    panel.toggle_error("counting")
    assert "counting" not in [t.kind for t in panel.draft().error_types]
    assert not panel.error_boxes["counting"].isChecked()


def test_set_recognition_subkind_action(panel, emitted):
    assert panel.set_recognition_subkind("scene") is False  # recognition not ticked
    panel.toggle_error("recognition")
    panel.set_recognition_subkind("scene")
    assert panel.draft().error_types == (ErrorTag("recognition", subkind="scene"),)
    assert panel.recognition_combo.currentData() == "scene"
    assert len(emitted) == 2


def test_discard_reasons_imply_discard(qtbot, panel, emitted):
    panel.prefer(1)
    panel.set_strength("clearly")
    click(qtbot, panel.discard_boxes["style_or_length_only"])
    assert panel.draft() == LabelDraft(outcome="discard", discard_reasons=("style_or_length_only",))
    assert panel.outcome_buttons["discard"].isChecked()
    click(qtbot, panel.discard_boxes["both_wrong"])
    assert panel.draft().discard_reasons == ("both_wrong", "style_or_length_only")
    assert len(emitted) == 4
    # unticking every reason undoes the implicit discard
    panel.toggle_discard("both_wrong")
    panel.toggle_discard("style_or_length_only")
    assert panel.draft() == LabelDraft()


def test_explicit_discard_survives_unticking_reasons(panel):
    panel.set_outcome("discard")
    panel.toggle_discard("media_unusable")
    panel.toggle_discard("media_unusable")
    assert panel.draft() == LabelDraft(outcome="discard")


def test_choosing_another_outcome_clears_reasons(panel):
    panel.toggle_discard("needs_expert")
    panel.set_outcome("tie")
    assert panel.draft() == LabelDraft(outcome="tie")
    assert not panel.discard_boxes["needs_expert"].isChecked()
    panel.toggle_discard("other")
    panel.set_outcome("discard")  # pressing the selected Discard deselects it and its reasons
    assert panel.draft() == LabelDraft()


def test_note_commits_after_a_pause_not_per_keystroke(qtbot):
    panel = make_panel(qtbot, debounce_ms=400)
    emitted = []
    panel.changed.connect(emitted.append)
    qtbot.keyClicks(panel.note_edit, "blurry frame")
    assert panel.draft().note == "blurry frame"  # visible at once through draft()
    assert emitted == []
    qtbot.waitUntil(lambda: len(emitted) == 1, timeout=WAIT_MS)
    qtbot.wait(50)
    assert emitted == [LabelDraft(note="blurry frame")]


def test_typed_text_travels_with_the_next_click_or_focus_out(qtbot):
    panel = make_panel(qtbot, debounce_ms=60_000)
    emitted = []
    panel.changed.connect(emitted.append)
    qtbot.keyClicks(panel.note_edit, "hm")
    click(qtbot, panel.outcome_buttons["tie"])
    assert emitted == [LabelDraft(outcome="tie", note="hm")]
    panel.flush()
    assert len(emitted) == 1
    qtbot.keyClicks(panel.note_edit, "!")
    QApplication.sendEvent(panel.note_edit, QFocusEvent(QEvent.FocusOut))
    assert emitted[1:] == [LabelDraft(outcome="tie", note="hm!")]


def test_set_draft_round_trips_every_field_and_emits_nothing(qtbot, panel, emitted):
    panel.set_response_count(3)
    panel.set_steps([2, 0, 3])
    draft = LabelDraft(
        outcome="prefer",
        preferred_position=3,
        strength="much",
        error_types=(
            ErrorTag("recognition", subkind="person"),
            ErrorTag("other", note="odd crop"),
            ErrorTag("hallucination", raw="HALLU"),
        ),
        discard_reasons=(),
        note="line one\nline two",
        step_marks=((1, 0, True), (1, 1, False), (3, 2, True)),
    )
    with qtbot.assertNotEmitted(panel.changed, wait=100):
        panel.set_draft(draft)
    assert panel.draft() == draft
    assert panel.response_buttons[2].isChecked() and panel.strength_buttons["much"].isChecked()
    assert panel.recognition_combo.currentData() == "person"
    assert panel.other_note.text() == "odd crop" and panel.note_edit.toPlainText() == "line one\nline two"
    assert panel.step_buttons[(1, 1)].text().endswith("✗")
    assert panel.current_step() == (3, 0)  # the first unmarked step

    discarded = LabelDraft(outcome="discard", discard_reasons=tuple(DISCARD_REASONS), note="")
    panel.set_draft(discarded)
    assert panel.draft() == discarded
    assert all(box.isChecked() for box in panel.discard_boxes.values())
    assert panel.other_note.text() == "" and panel.recognition_combo.currentData() is None
    assert emitted == []


def test_four_responses_are_ranked_best_first(qtbot, panel, emitted):
    panel.set_response_count(4)
    assert [b.text() for b in panel.response_buttons] == [f"Response {i}" for i in range(1, 5)]
    click(qtbot, panel.response_buttons[3])
    assert panel.draft() == LabelDraft(outcome="prefer", preferred_position=4, rank_groups=((4,),))
    panel.prefer(3)  # ranked next: 4 stays the best (widgets/ranking_list.py)
    assert panel.draft().preferred_position == 4 and panel.draft().rank_groups == ((4,), (3,))
    assert [b.isChecked() for b in panel.response_buttons] == [False, False, False, True]
    panel.set_response_count(2)
    assert len(panel.response_buttons) == 2
    assert len(emitted) == 2


def test_single_response_offers_only_discard(panel):
    panel.set_response_count(1)
    assert panel.response_buttons == []
    assert panel.prefer(1) is False and panel.set_outcome("tie") is False
    assert panel.set_outcome("discard") is True
    assert not panel.strength_buttons["clearly"].isVisible()


def test_step_marks_advance_the_cursor_across_positions(qtbot, panel, emitted):
    cursor = []
    panel.current_step_changed.connect(lambda p, i: cursor.append((p, i)))
    panel.set_steps([2, 2])
    assert panel.current_step() == (1, 0) and cursor == [(1, 0)]
    panel.mark_current_step(True)
    panel.mark_current_step(False)
    assert panel.current_step() == (2, 0)
    panel.mark_current_step(True)
    panel.mark_current_step(True)
    assert panel.current_step() == (2, 1)  # stays on the last step
    panel.mark_current_step(False)  # re-mark the last step
    assert panel.draft().step_marks == ((1, 0, True), (1, 1, False), (2, 0, True), (2, 1, False))
    assert len(emitted) == 5
    assert cursor == [(1, 0), (1, 1), (2, 0), (2, 1)]
    panel.move_step(-2)
    panel.mark_current_step(None)
    assert panel.draft().step_marks == ((1, 0, True), (2, 0, True), (2, 1, False))


def test_step_button_click_cycles_and_moves_cursor(qtbot, panel, emitted):
    panel.set_steps([1, 3])
    button = panel.step_buttons[(2, 1)]
    click(qtbot, button)
    assert panel.current_step() == (2, 1)
    assert panel.draft().step_marks == ((2, 1, True),)
    click(qtbot, button)
    assert panel.draft().step_marks == ((2, 1, False),)
    click(qtbot, button)
    assert panel.draft().step_marks == ()
    assert len(emitted) == 3


def test_no_steps_means_no_cursor(panel):
    panel.set_steps([])
    assert panel.current_step() is None and panel.step_buttons == {}
    assert panel.mark_current_step(True) is False


def test_clear(qtbot, panel, emitted):
    panel.set_steps([2])
    panel.prefer(1)
    panel.set_strength("clearly")
    panel.toggle_error("recognition")
    panel.set_recognition_subkind("text")
    panel.toggle_error("other")
    panel.other_note.setText("x")
    panel.note_edit.setPlainText("note")
    panel.mark_current_step(True)
    emitted.clear()
    with qtbot.waitSignal(panel.changed) as blocker:
        assert panel.clear() is True
    assert blocker.args == [LabelDraft()]
    assert panel.draft() == LabelDraft() and emitted == [LabelDraft()]
    assert panel.note_edit.toPlainText() == "" and panel.other_note.text() == ""
    assert panel.current_step() == (1, 0)
    assert panel.clear() is False and len(emitted) == 1


def test_exactly_one_changed_per_action(qtbot, panel):
    panel.set_steps([3])
    actions = [
        lambda: panel.prefer(2),
        lambda: panel.set_strength("slightly"),
        lambda: panel.toggle_error("existence"),
        lambda: panel.set_outcome("both_bad"),
        lambda: panel.toggle_discard("both_wrong"),
        lambda: panel.mark_current_step(False),
        lambda: panel.set_outcome("discard"),
        lambda: panel.prefer(1),
        lambda: panel.clear(),
    ]
    for action in actions:
        seen = []
        panel.changed.connect(seen.append)
        action()
        panel.changed.disconnect(seen.append)
        assert len(seen) == 1 and seen[0] == panel.draft()


def test_shortcut_hints_are_shown(panel):
    texts = [label.text() for label in panel.findChildren(type(panel._footer)) if label.property("role") == "hint"]
    assert "1–9 response · T tie" in texts
    assert "Q W E" in texts
    assert "Keys: Esc clear" in texts


def test_renders_at_300_by_700(qtbot, panel, tmp_path):
    panel.set_steps([4, 4])
    panel.prefer(1)
    assert panel.sizeHint().width() <= 320
    assert not panel.grab().isNull()


def custom_schema():
    from types import SimpleNamespace as Entry

    return Entry(
        strengths=(),
        error_types=(
            Entry(name="blur", label="Blurry", key="Ctrl+1", description="blurry", subkinds=(), free_text=False),
            Entry(name="why", label="Why", key=None, description="why", subkinds=(), free_text=True),
            Entry(name="part", label="Part", key=None, description="part", subkinds=("top", "bottom"), free_text=False),
        ),
        discard_reasons=(Entry(name="dupe", label="Duplicate", key="Alt+9", description="duplicate"),),
    )


def test_a_schema_replaces_the_choices_and_keeps_old_kinds_as_extras(qtbot, panel, emitted):
    old = LabelDraft(outcome="discard", error_types=(ErrorTag("counting"),), discard_reasons=("both_wrong",))
    panel.set_draft(old)
    panel.set_schema(custom_schema())
    assert list(panel.error_boxes) == ["blur", "why", "part"] and list(panel.discard_boxes) == ["dupe"]
    assert panel.strength_buttons == {} and emitted == []
    assert panel.draft() == old  # a label of an older schema keeps its kinds
    extras = [label.text() for label in panel.findChildren(type(panel._footer)) if label.text().startswith("Also")]
    assert extras == ["Also: counting", "Also: both_wrong"]
    with pytest.raises(ValueError):
        panel.toggle_error("counting")
    panel.toggle_error("part")
    panel.set_subkind("part", "top")
    panel.toggle_error("why")
    panel.other_note.setText("odd")
    panel.toggle_discard("dupe")
    # the schema's order, then kinds it lacks, as they came
    assert panel.draft().error_types == (ErrorTag("why", note="odd"), ErrorTag("part", "top"), ErrorTag("counting"))
    assert panel.draft().discard_reasons == ("dupe", "both_wrong")
    assert panel.recognition_combo is panel.subkind_combos["part"]
    hints = [label.text() for label in panel.findChildren(type(panel._footer)) if label.property("role") == "hint"]
    assert "Ctrl+1" in hints and "Alt+9" in hints and "Q W E" not in hints
    panel.set_schema(None)
    assert "existence" in panel.error_boxes and "clearly" in panel.strength_buttons


def test_focus_goes_into_the_text_field_and_enter_or_esc_hand_it_back(qtbot, panel, emitted):
    done = []
    panel.typing_done.connect(lambda: done.append(True))
    panel.window().activateWindow()
    panel.toggle_error("other", focus=True)
    qtbot.waitUntil(panel.other_note.hasFocus, timeout=WAIT_MS)
    qtbot.keyClicks(panel.other_note, "glare")
    qtbot.keyClick(panel.other_note, Qt.Key_Escape)
    assert done == [True] and emitted[-1].error_types == (ErrorTag("other", note="glare"),)
    panel.note_edit.setFocus()
    panel.toggle_error("existence", focus=True)  # no text field: the focus stays
    assert panel.note_edit.hasFocus()
    qtbot.keyClicks(panel.note_edit, "a")
    qtbot.keyClick(panel.note_edit, Qt.Key_Return, Qt.ShiftModifier)  # a new line
    qtbot.keyClicks(panel.note_edit, "b")
    assert len(done) == 1
    qtbot.keyClick(panel.note_edit, Qt.Key_Enter)
    assert len(done) == 2 and emitted[-1].note == "a\nb"


@pytest.mark.parametrize(
    ("hints", "n", "steps", "expected"),
    [
        ({"prefer": "1 / 2", "tie": "T"}, 2, [], "1 / 2 response · T tie"),
        ({"prefer": "1 / 2", "tie": "T"}, 3, [], "1 / 2 / 3 response · T tie"),
        ({"prefer": "1 / 2", "tie": "T"}, 4, [], "1 / 2 / 3 / 4 response · T tie"),
        ({"prefer": "1 / 2", "tie": "T"}, 6, [], "1 / 2 / 3 / 4 response · T tie"),
        ({"prefer": ("A", "B", "C"), "tie": "T"}, 3, [], "A / B / C response · T tie"),
        (
            {"prefer": "1 / 2", "tie": "T", "discard": "X", "step_correct": "F", "step_incorrect": "G"},
            1,
            [3],
            "F / G steps · X discard",
        ),
        ({"prefer": "1 / 2", "tie": "T", "discard": "X"}, 1, [], "X discard"),
    ],
)
def test_preference_hint_follows_the_item(qtbot, hints, n, steps, expected):
    panel = LabelPanel(hints)
    qtbot.addWidget(panel)
    panel.set_response_count(n)
    panel.set_steps(steps)
    assert panel._hints["preference"].text() == expected
