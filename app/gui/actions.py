"""Bind every shortcut of :data:`pairscope.app.keymap.KEYMAP` to the window's handlers."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from pairscope.widgets.cheat_sheet import CheatSheet

from ..keymap import KEYMAP
from ..records import DISCARD_REASONS, ERROR_KINDS, STRENGTHS

if TYPE_CHECKING:
    from .export_dialog import ExportDialog
    from .main_window import MainWindow
    from .stats_view import StatsView


def handlers(w: MainWindow) -> dict[str, Callable[[], object]]:
    """Action name → what it does in this window."""
    panel, media, responses = w.panel, w.media, w.responses

    def focus_search() -> None:
        w.search.setFocus()
        w.search.selectAll()

    def judge_item() -> None:
        w.judge.show()
        w.judge.judge_current()

    table: dict[str, Callable[[], object]] = {
        "tie": lambda: panel.set_outcome("tie"),
        "both_bad": lambda: panel.set_outcome("both_bad"),
        "discard": lambda: panel.set_outcome("discard"),
        "step_correct": lambda: panel.mark_current_step(True),
        "step_incorrect": lambda: panel.mark_current_step(False),
        "note": lambda: panel.note_edit.setFocus(),
        "clear_label": panel.clear,
        "next_item": lambda: w.move(1),
        "previous_item": lambda: w.move(-1),
        "next_unlabeled": w.next_unlabeled,
        "search": focus_search,
        "undo": w.undo,
        "redo": w.redo,
        "toggle_markdown": lambda: responses.set_markdown(not responses.markdown_enabled()),
        "toggle_diff": lambda: responses.set_diff_highlight(not responses.diff_highlight_enabled()),
        "zoom_in": media.zoom_in,
        "zoom_out": media.zoom_out,
        "zoom_fit": media.zoom_fit,
        "zoom_actual": media.zoom_actual,
        "next_image": media.next_image,
        "previous_image": media.previous_image,
        "play_pause": media.toggle_play,
        "frame_forward": lambda: media.step(1),
        "frame_back": lambda: media.step(-1),
        "cheat_sheet": lambda: show_cheat_sheet(w),
        "judge_panel": w.toggle_judge,
        "statistics": lambda: show_statistics(w),
        "review_panel": w.toggle_review,
        "adjudicate": w.toggle_adjudicate,
        "add_to_collection": lambda: w.collect(False),
        "collect_filtered": lambda: w.collect(True),
        "export": lambda: show_export(w),
        "save_filter": w.save_filter,
        "open_filter": w.open_filter,
        "judge_item": judge_item,
    }
    for position in range(1, 5):
        table[f"prefer_{position}"] = partial(panel.prefer, position)
    for name in STRENGTHS:
        table[f"strength_{name}"] = partial(panel.set_strength, name)
    for kind in ERROR_KINDS:
        table[f"error_{kind}"] = partial(panel.toggle_error, kind)
    for reason in DISCARD_REASONS:
        table[f"discard_{reason}"] = partial(panel.toggle_discard, reason)
    return table


def install_actions(w: MainWindow) -> dict[str, QAction]:
    """Create one QAction per shortcut on the window, and the menus that list them."""
    todo = handlers(w)
    missing = {s.action for s in KEYMAP} - set(todo)
    if missing:
        raise RuntimeError(f"keymap actions without a handler: {sorted(missing)}")
    actions: dict[str, QAction] = {}
    menus: dict[str, QMenu] = {}
    for shortcut in KEYMAP:
        action = QAction(shortcut.description, w)
        action.setShortcuts([QKeySequence(k) for k in shortcut.keys])
        action.triggered.connect(lambda _checked=False, f=todo[shortcut.action]: f())
        w.addAction(action)
        menu = menus.get(shortcut.section)
        if menu is None:
            menu = menus[shortcut.section] = w.menuBar().addMenu(shortcut.section)
        menu.addAction(action)
        actions[shortcut.action] = action
    w.actions_by_name = actions
    return actions


def show_cheat_sheet(w: MainWindow) -> CheatSheet:
    sheet = CheatSheet([(s.section, s.keys, s.description) for s in KEYMAP], w)
    sheet.setModal(False)
    sheet.show()
    w.cheat_sheet = sheet
    return sheet


def show_statistics(w: MainWindow) -> StatsView:
    from .stats_view import StatsView  # matplotlib loads only when asked for

    view = StatsView(w.controller.store, w)
    view.setModal(False)
    view.show()
    w.stats_view = view
    return view


def show_export(w: MainWindow) -> ExportDialog:
    from .export_dialog import ExportDialog

    dialog = ExportDialog(w.controller, w)
    w.export_dialog = dialog
    dialog.open()
    return dialog
