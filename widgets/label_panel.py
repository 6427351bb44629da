"""The label panel: preference, strength, error types, discard reasons, note and step marks.

It edits a :class:`LabelDraft` (screen positions, never response indices) and emits
``changed(draft)`` once per change. Decisions the window and annotators rely on:

- Response k / Tie / Both bad / Discard are one exclusive set; pressing the selected one again
  deselects it (outcome ``None``), so a mistaken key is undone by pressing it again. Strength
  buttons behave the same way.
- Discard is an explicit button, and ticking a discard reason also selects it (reasons only
  mean something for a discarded pair), clearing preference and strength. Unticking the last
  reason undoes such an implicit discard; an explicit Discard stays. Any other outcome, or
  deselecting Discard, clears the reasons.
- Tie / Both bad / Discard clear preference and strength; switching the preferred response
  keeps strength; error types survive outcome changes. Strength needs a preferred response.
- Text (note, "other" error note) is committed after a pause in typing (``text_debounce_ms``),
  on Return or focus-out, on ``flush()``, or with the next click; ``draft()`` always includes
  it as typed. Call ``flush()`` before ``set_draft`` to keep text still being typed.
- An action emits ``changed`` once if it changes the draft, never if it is a no-op (a position
  without a response, strength without a preference, ``clear()`` when empty). Configuration
  (``set_response_count``, ``set_steps``) and ``set_draft`` never emit it.
- Step indices are 0-based (into ``Response.steps``), shown 1-based. With one response (a
  step-wise item) only Discard is offered.
- Strengths, error types (each maybe with a sub-kind menu or a text field) and discard
  reasons are the label schema's (``set_schema``; else the built-in one); kinds a label has
  that the schema lacks are kept and listed ("Also: …"). ``toggle_error(kind, focus=True)``
  focuses the kind's text field; Esc or Enter there or in the note (Shift+Enter: new line)
  emits ``typing_done``. Key hints follow the item's response count and steps.
- With more than two responses the response keys build a ranking with ties (``ranking``, ranking_list.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Literal

from PySide6.QtCore import QEvent, QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from pairscope.app.records import DEFAULT_CHOICES, Choice, ErrorTag, LabelDraft

from . import label_choices as parts
from .label_choices import hint_texts, read_choices
from .plain_text import TEXT_LIMIT, bounded, plain_label, tooltip
from .ranking_list import RankingList, best_positions

OutcomeChoice = Literal["tie", "both_bad", "discard"]
OUTCOMES: tuple[OutcomeChoice, ...] = ("tie", "both_bad", "discard")
OUTCOME_LABELS = {"tie": "Tie", "both_bad": "Both bad", "discard": "Discard"}


def _check(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; expected one of {allowed}")


def _ordered(items, order: Sequence[str], key=lambda x: x) -> tuple:
    """``items`` in ``order``'s order; unknown ones (kept from a dataset) last, as they came."""
    return tuple(sorted(items, key=lambda x: order.index(key(x)) if key(x) in order else len(order)))


def _label(text: str, role: str) -> QLabel:
    label = plain_label(text, word_wrap=True)
    label.setProperty("role", role)
    return label


class LabelPanel(QWidget):
    """Edits one item's label draft. Child widgets are public for the window and tests."""

    changed = Signal(object)  # LabelDraft
    current_step_changed = Signal(int, int)  # (screen position, step index)
    typing_done = Signal()  # Esc or Enter in a text field: the window takes the focus back

    def __init__(self, shortcut_hints: Mapping[str, str] | None = None, parent=None, *, text_debounce_ms: int = 700):
        super().__init__(parent)
        self._state = LabelDraft()
        self._implicit_discard = False
        self._n = 0
        self._step_counts: tuple[int, ...] = ()
        self._cursor: tuple[int, int] | None = None
        self.response_buttons: list[QPushButton] = []
        self.step_buttons: dict[tuple[int, int], QToolButton] = {}
        self._hints: dict[str, QLabel] = {}
        self._given_hints: dict[str, Any] = {}
        self._schema: dict[str, tuple[Choice, ...]] = dict(DEFAULT_CHOICES)
        self._schema_set = False
        self.subkind_combos: dict[str, QComboBox] = {}
        self.text_fields: dict[str, QLineEdit] = {}
        self._timer = QTimer(self, singleShot=True, interval=text_debounce_ms)
        self._timer.timeout.connect(self.flush)
        self.setStyleSheet(parts.STYLE)
        self.setMinimumWidth(260)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(8, 4, 8, 8)
        self._layout.setSpacing(4)
        self._build()
        self.set_shortcut_hints(shortcut_hints or {})
        self.set_response_count(2)

    def _add(self, widget):
        self._layout.addWidget(widget)
        return widget

    def _section(self, title: str, key: str) -> QLabel:
        heading = self._add(_label(title, "heading"))
        self._hints[key] = self._add(_label("", "hint"))
        return heading

    @staticmethod
    def _button(text: str, slot, layout=None, *, object_name: str | None = None) -> QPushButton:
        button = QPushButton(text)
        button.setCheckable(True)
        if object_name is not None:
            button.setObjectName(object_name)
        button.clicked.connect(lambda _=False: slot())
        if layout is not None:
            layout.addWidget(button)
        return button

    @staticmethod
    def _box(text: str, slot) -> QCheckBox:
        box = QCheckBox(text)
        box.clicked.connect(lambda _=False: slot())
        return box

    def _build(self) -> None:
        self._pref_heading = self._section("Preference", "preference")
        self._pref_grid = QGridLayout()
        self._pref_grid.setSpacing(4)
        self._layout.addLayout(self._pref_grid)
        row = QHBoxLayout()
        self._layout.addLayout(row)
        self.outcome_buttons = {
            o: self._button(OUTCOME_LABELS[o], partial(self.set_outcome, o), row, object_name=o) for o in OUTCOMES
        }
        self.ranking = self._add(RankingList(self.draft, self._commit))

        self._strength_heading = self._section("Strength", "strength")
        self._strength_row = self._add(QWidget())
        self._errors_heading = self._section("Errors in the worse response", "errors")
        self._errors_box = self._add(QWidget())
        self._extra_errors = self._add(_label("", "hint"))
        self._discard_heading = self._section("Discard reasons", "discard")
        self._discards_box = self._add(QWidget())
        self._extra_reasons = self._add(_label("", "hint"))
        # Stand-ins while the schema has no kind with a sub-kind menu or a text field.
        self._spare_combo, self._spare_field = QComboBox(self), QLineEdit(self)
        for spare in (self._spare_combo, self._spare_field):
            spare.hide()
        self._fill_schema()

        self._section("Note", "note")
        self.note_edit = self._add(QPlainTextEdit(placeholderText="Optional note", tabChangesFocus=True))
        self.note_edit.setMaximumHeight(56)
        self.note_edit.textChanged.connect(lambda: self._timer.start())
        self.note_edit.installEventFilter(self)
        self.note_edit.setToolTip("Enter: done (back to the keys) · Shift+Enter: new line")

        self._steps_heading = self._section("Steps", "steps")
        self._steps_box = self._add(QWidget())
        self._footer = self._add(_label("", "hint"))
        self._layout.addStretch(1)
        self.set_steps(())

    # -- the label schema ------------------------------------------------------------------

    def set_schema(self, schema) -> None:
        """Offer a label schema's entries (``app.labeling.schema.LabelSchema``, or any object with
        its sections, see ``label_choices.read_choices``; ``None``: the built-in one). Keeps
        the draft, emits nothing; its keys replace the window's hints for those sections."""
        self._schema = {s: read_choices(getattr(schema, s)) for s in DEFAULT_CHOICES} if schema else DEFAULT_CHOICES
        self._schema_set = True
        self._fill_schema()
        self._reset_editors(self._state)
        self._render()
        self._apply_hints()

    def schema_names(self, section: str) -> tuple[str, ...]:
        """The names offered in ``strengths``, ``error_types`` or ``discard_reasons``."""
        return tuple(c.name for c in self._schema[section])

    def _fresh(self, old: QWidget, layout_type) -> tuple[QWidget, Any]:
        """A new empty container (with a layout of ``layout_type``) in ``old``'s place."""
        new = QWidget()
        self._layout.replaceWidget(old, new)
        old.hide()
        old.deleteLater()
        layout = layout_type(new)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        return new, layout

    def _fill_schema(self) -> None:
        """(Re)build the strength buttons, error boxes (with their editors) and discard boxes."""
        self._strength_row, row = self._fresh(self._strength_row, QHBoxLayout)
        strengths = self._schema["strengths"]
        self.strength_buttons = {
            c.name: self._button(c.label, partial(self.set_strength, c.name), row) for c in strengths
        }
        self._errors_box, grid = self._fresh(self._errors_box, QGridLayout)
        kinds = self._schema["error_types"]
        self.error_boxes = {c.name: self._box(c.label, partial(self.toggle_error, c.name)) for c in kinds}
        self.subkind_combos, self.text_fields = {}, {}
        simple = [c for c in kinds if not (c.subkinds or c.free_text)]
        for i, c in enumerate(simple):
            grid.addWidget(self.error_boxes[c.name], i // 2, i % 2)
        for i, c in enumerate((c for c in kinds if c not in simple), start=(len(simple) + 1) // 2):
            grid.addWidget(self.error_boxes[c.name], i, 0)
            grid.addWidget(self._editor(c), i, 1)
        self._discards_box, column = self._fresh(self._discards_box, QVBoxLayout)
        reasons = self._schema["discard_reasons"]
        self.discard_boxes = {c.name: self._box(c.label, partial(self.toggle_discard, c.name)) for c in reasons}
        for c in reasons:
            column.addWidget(self.discard_boxes[c.name])
        for controls, choices in (
            (self.strength_buttons, strengths),
            (self.error_boxes, kinds),
            (self.discard_boxes, reasons),
        ):
            for c in choices:
                controls[c.name].setToolTip(tooltip(f"{c.description}  ({c.key})" if c.key else c.description))
        self._discard_heading.setVisible(bool(reasons))
        self._errors_heading.setVisible(bool(kinds))

    def _editor(self, choice: Choice) -> QWidget:
        kind = choice.name
        if choice.subkinds:
            combo = self.subkind_combos[kind] = QComboBox()
            for sub in (None, *choice.subkinds):
                combo.addItem(sub or "any kind", sub)
            combo.activated.connect(lambda i, k=kind, c=combo: self.set_subkind(k, c.itemData(i)))
            return combo
        field = self.text_fields[kind] = QLineEdit(placeholderText="what kind of error?  (Enter: done)")
        field.textEdited.connect(lambda _text: self._timer.start())
        field.editingFinished.connect(self.flush)
        field.installEventFilter(self)
        return field

    @property
    def recognition_combo(self) -> QComboBox:
        """The sub-kind menu of "recognition" (else of the first kind with one)."""
        return self.subkind_combos.get("recognition") or next(iter(self.subkind_combos.values()), self._spare_combo)

    @property
    def other_note(self) -> QLineEdit:
        """The text field of "other" (else of the first kind with one)."""
        return self.text_fields.get("other") or next(iter(self.text_fields.values()), self._spare_field)

    # -- key hints ----------------------------------------------------------------------------

    def set_shortcut_hints(self, hints: Mapping[str, Any]) -> None:
        """Show key hints (purely visual), e.g. ``{"prefer": "1–9", "tie": "T"}``. ``prefer``
        may list one key per response (``("1", "2", "3", "4")``, or ``"1 / 2"``, continued
        with 3, 4 for more responses)."""
        self._given_hints = dict(hints)
        self._apply_hints()

    def _apply_hints(self) -> None:
        keys = {s: [c.key for c in self._schema[s] if c.key] for s in self._schema} if self._schema_set else None
        texts, footer = hint_texts(self._given_hints, self._n, bool(self.step_buttons), keys)
        for section, text in texts.items():
            self._hints[section].setText(text)
        self._footer.setText(footer)
        self._footer.setVisible(bool(footer))
        self._sync_sections()

    def _sync_sections(self) -> None:
        shown = {"strength": self._n > 1, "steps": bool(self.step_buttons)}
        for widget in (self._strength_heading, self._strength_row):
            widget.setVisible(shown["strength"])
        for widget in (self._steps_heading, self._steps_box):
            widget.setVisible(shown["steps"])
        for section, hint in self._hints.items():
            hint.setVisible(bool(hint.text()) and shown.get(section, True))

    def set_response_count(self, n: int) -> None:
        """Offer ``n`` responses (a best-of-N choice when ``n > 2``); keeps the draft."""
        self._n = n = max(1, int(n))
        for button in self.response_buttons:
            self._pref_grid.removeWidget(button)
            button.hide()
            button.deleteLater()
        self.response_buttons = []
        columns = 2 if n <= 4 else 3
        for i in range(1, n + 1 if n > 1 else 1):
            self.response_buttons.append(self._button(f"Response {i}", partial(self.prefer, i)))
            self._pref_grid.addWidget(self.response_buttons[-1], (i - 1) // columns, (i - 1) % columns)
        for outcome, button in self.outcome_buttons.items():
            button.setVisible(n > 1 or outcome == "discard")
        self._pref_heading.setText({1: "Outcome", 2: "Preference"}.get(n, "Best response"))
        which = {1: "the response", 2: "the worse response"}.get(n, "the rejected responses")
        self._errors_heading.setText(f"Errors in {which}")
        self._apply_hints()
        self._render()

    def draft(self) -> LabelDraft:
        """The current draft, including text typed but not yet committed."""
        s = self._state
        tags, folded = [], set()
        for tag in s.error_types:  # each text field's text is the note of its kind's first tag
            field = self.text_fields.get(tag.kind)
            if field is not None and tag.kind not in folded:
                folded.add(tag.kind)
                typed = field.text() or None
                tag = tag if tag.note == typed else replace(tag, note=typed)
            tags.append(tag)
        note = self.note_edit.toPlainText()
        if note == s.note and tuple(tags) == s.error_types:
            return s
        return replace(s, note=note, error_types=tuple(tags))

    def set_draft(self, draft: LabelDraft) -> None:
        """Show a stored draft as is; emits nothing. Pending text is dropped (see ``flush``)."""
        self._timer.stop()
        self._state = draft
        self._implicit_discard = False
        self._reset_editors(draft)
        self._render()
        self._move_cursor(self._first_step(skip={(p, i) for p, i, _ in draft.step_marks}))

    def _reset_editors(self, draft: LabelDraft) -> None:
        for kind, field in self.text_fields.items():
            tag = next((t for t in draft.error_types if t.kind == kind), None)
            with QSignalBlocker(field):
                field.setText((tag.note or "") if tag else "")
        for combo in self.subkind_combos.values():
            with QSignalBlocker(combo):
                combo.setCurrentIndex(0)

    def flush(self) -> None:
        """Commit typed text now (emits ``changed`` if it differs from the last draft)."""
        self._commit(self.draft())

    def _commit(self, new: LabelDraft) -> bool:
        self._timer.stop()
        changed = new != self._state
        self._state = new
        self._render()
        if changed:
            self.changed.emit(new)
        return changed

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.FocusOut and self._timer.isActive():
            self.flush()
        elif event.type() == QEvent.Type.KeyPress and self._done_typing(watched, event):
            self.flush()
            self.typing_done.emit()
            return True
        return super().eventFilter(watched, event)

    def _done_typing(self, watched, event) -> bool:
        """Esc, or Enter (in the note: without Shift), in a text field of the panel."""
        if watched is not self.note_edit and watched not in self.text_fields.values():
            return False
        if event.key() == Qt.Key.Key_Escape:
            return True
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        return enter and not (watched is self.note_edit and event.modifiers() & Qt.KeyboardModifier.ShiftModifier)

    def prefer(self, position: int) -> bool:
        """Prefer the response at screen ``position`` (1-based); again to deselect."""
        if self._n < 2 or not 1 <= position <= self._n:
            return False
        if self._n > 2:
            return self.ranking.press(position)
        base = self.draft()
        if base.outcome == "prefer" and base.preferred_position == position:
            new = replace(base, outcome=None, preferred_position=None, strength=None)
        else:
            strength = base.strength if base.outcome == "prefer" else None
            new = replace(base, outcome="prefer", preferred_position=position, strength=strength, discard_reasons=())
        self._implicit_discard = False
        return self._commit(new)

    def set_outcome(self, outcome: OutcomeChoice) -> bool:
        """Choose ``"tie"``, ``"both_bad"`` or ``"discard"``; again to deselect."""
        _check(outcome, OUTCOMES, "outcome")
        if self._n < 2 and outcome != "discard":
            return False
        base = self.draft()
        self._implicit_discard = False
        if base.outcome == outcome and not base.rank_groups:
            return self._commit(replace(base, outcome=None, discard_reasons=()))
        reasons = base.discard_reasons if outcome == "discard" else ()
        new = replace(base, outcome=outcome, preferred_position=None, strength=None, discard_reasons=reasons)
        return self._commit(replace(new, rank_groups=()))

    def set_strength(self, name: str) -> bool:
        """Set how much better the preferred response is; again to deselect."""
        _check(name, self.schema_names("strengths"), "strength")
        base = self.draft()
        if base.outcome != "prefer":
            return False
        return self._commit(replace(base, strength=None if base.strength == name else name))

    def toggle_error(self, kind: str, *, focus: bool = False) -> bool:
        """Tick or untick an error type of the worse response; with ``focus`` a kind with a
        text field that is now ticked takes the keyboard focus into it."""
        order = self.schema_names("error_types")
        _check(kind, order, "error kind")
        base = self.draft()
        tags = [t for t in base.error_types if t.kind != kind]
        if len(tags) == len(base.error_types):
            combo, field = self.subkind_combos.get(kind), self.text_fields.get(kind)
            subkind = combo.currentData() if combo is not None else None
            note = (field.text() or None) if field is not None else None
            tags.append(ErrorTag(kind=kind, subkind=subkind, note=note))
        changed = self._commit(replace(base, error_types=_ordered(tags, order, key=lambda t: t.kind)))
        field = self.text_fields.get(kind)
        if focus and field is not None and field.isEnabled():
            field.setFocus(Qt.FocusReason.ShortcutFocusReason)
            field.selectAll()
        return changed

    def set_subkind(self, kind: str, subkind: str | None) -> bool:
        """Set the sub-kind of a ticked error type (``None``: unspecified)."""
        base = self.draft()
        tags = tuple(replace(t, subkind=subkind) if t.kind == kind else t for t in base.error_types)
        if tags == base.error_types:
            return False
        return self._commit(replace(base, error_types=tags))

    def set_recognition_subkind(self, subkind: str | None) -> bool:
        """Set the sub-kind of a ticked recognition error (``None``: unspecified)."""
        return self.set_subkind("recognition", subkind)

    def toggle_discard(self, reason: str) -> bool:
        """Tick or untick a discard reason; ticking one selects Discard (see module doc)."""
        reasons = self.schema_names("discard_reasons")
        _check(reason, reasons, "discard reason")
        base = self.draft()
        if reason in base.discard_reasons:
            new = replace(base, discard_reasons=tuple(r for r in base.discard_reasons if r != reason))
            if not new.discard_reasons and base.outcome == "discard" and self._implicit_discard:
                new = replace(new, outcome=None)
                self._implicit_discard = False
        else:
            new = replace(base, discard_reasons=_ordered(base.discard_reasons + (reason,), reasons))
            if base.outcome != "discard":
                new = replace(new, outcome="discard", preferred_position=None, strength=None, rank_groups=())
                self._implicit_discard = True
        return self._commit(new)

    def clear(self) -> bool:
        """Back to an empty draft (emits ``changed(LabelDraft())`` unless already empty)."""
        self._implicit_discard = False
        self._reset_editors(LabelDraft())
        changed = self._commit(LabelDraft())
        self._move_cursor(self._first_step())
        return changed

    def set_steps(self, counts: Sequence[int]) -> None:
        """Show step controls: ``counts[p - 1]`` steps for screen position p (empty: none)."""
        self._step_counts = tuple(max(0, int(c)) for c in counts)
        box = QWidget()
        grid = QGridLayout(box)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(3)
        self.step_buttons = {}
        row = 0
        for position, count in enumerate(self._step_counts, 1):
            if count:
                grid.addWidget(_label(f"R{position}", "hint"), row, 0)
            for index in range(count):
                button = QToolButton()
                button.setText(str(index + 1))
                button.clicked.connect(lambda _=False, p=position, i=index: self._on_step_clicked(p, i))
                grid.addWidget(button, row + index // parts.STEPS_PER_ROW, 1 + index % parts.STEPS_PER_ROW)
                self.step_buttons[(position, index)] = button
            row += (count + parts.STEPS_PER_ROW - 1) // parts.STEPS_PER_ROW
        grid.setColumnStretch(parts.STEPS_PER_ROW + 1, 1)
        self._layout.replaceWidget(self._steps_box, box)
        self._steps_box.hide()
        self._steps_box.deleteLater()
        self._steps_box = box
        self._apply_hints()
        self._cursor = None
        self._move_cursor(self._first_step())

    def current_step(self) -> tuple[int, int] | None:
        """The step cursor as ``(screen position, step index)``, or ``None``."""
        return self._cursor

    def set_current_step(self, position: int, index: int) -> None:
        if (position, index) in self.step_buttons:
            self._move_cursor((position, index))

    def move_step(self, delta: int) -> None:
        """Move the step cursor by ``delta`` steps, across positions, clamped at the ends."""
        steps = self._all_steps()
        if steps and self._cursor in steps:
            self._move_cursor(steps[max(0, min(len(steps) - 1, steps.index(self._cursor) + delta))])

    def mark_current_step(self, correct: bool | None) -> bool:
        """Mark the current step correct/incorrect (``None`` unmarks), then move to the next."""
        if self._cursor is None:
            return False
        changed = self._set_mark(*self._cursor, correct)
        self.move_step(1)
        return changed

    def _all_steps(self) -> list[tuple[int, int]]:
        return [(p, i) for p, c in enumerate(self._step_counts, 1) for i in range(c)]

    def _first_step(self, skip=()) -> tuple[int, int] | None:
        steps = self._all_steps()
        return next((s for s in steps if s not in skip), steps[0] if steps else None)

    def _mark(self, position: int, index: int) -> bool | None:
        return next((c for p, i, c in self._state.step_marks if (p, i) == (position, index)), None)

    def _set_mark(self, position: int, index: int, correct: bool | None) -> bool:
        base = self.draft()
        marks = {(p, i): c for p, i, c in base.step_marks if (p, i) != (position, index)}
        if correct is not None:
            marks[(position, index)] = bool(correct)
        new = tuple((p, i, c) for (p, i), c in sorted(marks.items()))
        if set(new) == set(base.step_marks):
            return False
        return self._commit(replace(base, step_marks=new))

    def _on_step_clicked(self, position: int, index: int) -> None:
        self._move_cursor((position, index))
        self._set_mark(position, index, parts.NEXT_MARK[self._mark(position, index)])

    def _move_cursor(self, step: tuple[int, int] | None) -> None:
        if step != self._cursor:
            self._cursor = step
            self._render_steps()
            if step is not None:
                self.current_step_changed.emit(*step)

    def _render(self) -> None:
        s = self._state
        self.ranking.show_draft(s, self._n)
        for position, button in enumerate(self.response_buttons, 1):
            button.setChecked(position in best_positions(s))
        for outcome, button in self.outcome_buttons.items():
            button.setChecked(s.outcome == outcome and not s.rank_groups)  # a ranking's tie is its list's
        for name, button in self.strength_buttons.items():
            button.setChecked(s.strength == name)
            button.setEnabled(s.outcome == "prefer")
        kinds = {t.kind: t for t in reversed(s.error_types)}
        for kind, box in self.error_boxes.items():
            box.setChecked(kind in kinds)
        for kind, combo in self.subkind_combos.items():
            tag = kinds.get(kind)
            combo.setEnabled(tag is not None)
            if tag is not None:
                with QSignalBlocker(combo):
                    index = combo.findData(tag.subkind)
                    if index < 0:
                        combo.addItem(tag.subkind or "", tag.subkind)
                        index = combo.count() - 1
                    combo.setCurrentIndex(index)
        for kind, field in self.text_fields.items():
            field.setEnabled(kind in kinds)
            if kind in kinds and field.text() != (kinds[kind].note or ""):
                with QSignalBlocker(field):
                    field.setText(kinds[kind].note or "")
        for reason, box in self.discard_boxes.items():
            box.setChecked(reason in s.discard_reasons)
        for label, extra in (  # a dataset's tags, or an older schema's: kept, listed
            (self._extra_errors, [t.label() for t in s.error_types if t.kind not in self.error_boxes]),
            (self._extra_reasons, [r for r in s.discard_reasons if r not in self.discard_boxes]),
        ):
            label.setText(bounded("Also: " + ", ".join(extra), TEXT_LIMIT) if extra else "")
            label.setVisible(bool(extra))
        if self.note_edit.toPlainText() != s.note:
            with QSignalBlocker(self.note_edit):
                self.note_edit.setPlainText(s.note)
        self._render_steps()

    def _render_steps(self) -> None:
        marks = {(p, i): c for p, i, c in self._state.step_marks}
        for (position, index), button in self.step_buttons.items():
            mark = marks.get((position, index))
            border = f"2px solid {parts.ACCENT}" if (position, index) == self._cursor else "1px solid #9ca3af"
            look = f"min-width: 22px; padding: 2px; border: {border}; border-radius: 3px; {parts.STEP_STYLE[mark]}"
            style = f"QToolButton {{ {look} }}"
            if button.styleSheet() != style:
                button.setStyleSheet(style)
            button.setText(f"{index + 1}{parts.STEP_GLYPH[mark]}")
            button.setToolTip(f"Response {position}, step {index + 1}: {parts.STEP_STATE[mark]}")
