"""Bind every shortcut of the window's keymap (:data:`pairscope.app.keymap.KEYMAP` for the
built-in label schema, ``LabelSchema.keymap()`` for the project's) to the window's handlers.

The project's label schema drives the label panel, the strength / error / discard keys and
the cheat sheet; its guidelines open in a dock (F2)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenu

from pairscope.widgets.cheat_sheet import CheatSheet
from pairscope.widgets.guidelines_panel import GuidelinesPanel

from ..label_schema import DEFAULT_SCHEMA, LabelSchema
from ..queue import DEFAULT_ORDER, ORDERS

if TYPE_CHECKING:
    from .ensemble_dialog import EnsembleDialog
    from .export_dialog import ExportDialog
    from .main_window import MainWindow
    from .stats_view import StatsView


GUIDELINES_DOCK = "guidelines-dock"


def window_schema(w: MainWindow) -> LabelSchema:
    """The project's label schema, as the window's controller has it (the built-in one for
    a controller that has none)."""
    controller = w.controller
    getter = getattr(controller, "label_schema", None)
    if callable(getter):
        return getter()
    session = getattr(controller, "session", None)
    return getattr(session, "schema", None) or DEFAULT_SCHEMA


def handlers(w: MainWindow, schema: LabelSchema | None = None) -> dict[str, Callable[[], object]]:
    """Action name → what it does in this window (under ``schema``, default: the window's)."""
    panel, media, responses = w.panel, w.media, w.responses
    schema = schema or window_schema(w)

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
        "guidelines": lambda: toggle_guidelines(w),
        "judge_panel": w.toggle_judge,
        "statistics": lambda: show_statistics(w),
        "review_panel": w.toggle_review,
        "adjudicate": w.toggle_adjudicate,
        "add_to_collection": lambda: w.collect(False),
        "collect_filtered": lambda: w.collect(True),
        "export": lambda: show_export(w),
        "ensemble": lambda: show_ensemble(w),
        "save_filter": w.save_filter,
        "open_filter": w.open_filter,
        "judge_item": judge_item,
    }
    for position in range(1, 5):
        table[f"prefer_{position}"] = partial(panel.prefer, position)
    for c in schema.strengths:
        table[f"strength_{c.name}"] = partial(panel.set_strength, c.name)
    for c in schema.error_types:  # a kind with a text field: its key also focuses the field
        table[f"error_{c.name}"] = partial(panel.toggle_error, c.name, focus=True)
    for c in schema.discard_reasons:
        table[f"discard_{c.name}"] = partial(panel.toggle_discard, c.name)
    return table


def _keyboard_home(w: MainWindow) -> None:
    """Give the keyboard back to labeling (after Enter or Esc in a panel text field)."""
    home = getattr(w, "keyboard", None)
    if home is not None:
        home.go_home()
    else:
        w.center.setFocus(Qt.FocusReason.ShortcutFocusReason)


def install_actions(w: MainWindow) -> dict[str, QAction]:
    """Show the project's label schema in the panel, create one QAction per shortcut of its
    keymap on the window, and the menus that list them."""
    schema = window_schema(w)
    w.panel.set_schema(schema)
    w.panel.typing_done.connect(lambda: _keyboard_home(w))
    keymap = schema.keymap()
    todo = handlers(w, schema)
    missing = {s.action for s in keymap} - set(todo)
    if missing:
        raise RuntimeError(f"keymap actions without a handler: {sorted(missing)}")
    actions: dict[str, QAction] = {}
    menus: dict[str, QMenu] = {}
    for shortcut in keymap:
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
    if "Navigate" in menus:
        install_queue_menu(w, menus["Navigate"])
    return actions


def queue_key(w: MainWindow) -> str:
    """The QSettings key of the project's queue order (one per project file)."""
    return w.project_key("queue")


def install_queue_menu(w: MainWindow, menu: QMenu) -> dict[str, QAction]:
    """ "Next item by: id order / judges disagree / …" (what U takes next, app/queue.py), the
    choice remembered per project."""
    sub = menu.addMenu("Next item by (U)")
    group = QActionGroup(w)
    group.setExclusive(True)
    remembered = w.settings.value(queue_key(w)) if w.settings is not None else None
    start = remembered if remembered in ORDERS else DEFAULT_ORDER
    found: dict[str, QAction] = {}
    for order, text in ORDERS.items():
        action = QAction(text, w, checkable=True)
        action.setChecked(order == start)
        action.triggered.connect(lambda _checked=False, o=order: set_queue_order(w, o))
        group.addAction(action)
        sub.addAction(action)
        found[order] = action
    w.queue_actions = found
    w.controller.queue_order = start
    return found


def set_queue_order(w: MainWindow, order: str) -> None:
    """What U takes next, remembered for this project."""
    w.controller.queue_order = order
    actions = getattr(w, "queue_actions", {})
    if order in actions:
        actions[order].setChecked(True)
    if w.settings is not None:
        w.settings.setValue(queue_key(w), order)
    w.statusBar().showMessage(f"U takes the next item by {ORDERS[order]}.", 4000)


def show_cheat_sheet(w: MainWindow) -> CheatSheet:
    schema = window_schema(w)
    note = f"Label schema: {schema.title or 'unnamed'} (version {schema.version}) · F2: the guidelines"
    sheet = CheatSheet([(s.section, s.keys, s.description) for s in schema.keymap()], w, note=note)
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


def show_ensemble(w: MainWindow) -> EnsembleDialog:
    from .ensemble_dialog import EnsembleDialog  # the judging modules load when asked for

    dialog = EnsembleDialog(w)
    dialog.setModal(False)
    dialog.resize(760, 640)
    dialog.show()
    w.ensemble_dialog = dialog
    return dialog


def show_export(w: MainWindow) -> ExportDialog:
    from .export_dialog import ExportDialog

    dialog = ExportDialog(w.controller, w)
    w.export_dialog = dialog
    dialog.open()
    return dialog


def guidelines_dock(w: MainWindow) -> QDockWidget | None:
    """The guidelines dock, once :func:`show_guidelines` made it."""
    return w.findChild(QDockWidget, GUIDELINES_DOCK)


def show_guidelines(w: MainWindow) -> QDockWidget:
    """Show the project's Markdown guidelines (of its label schema) in a dock on the right."""
    dock = guidelines_dock(w)
    if dock is None:
        dock = QDockWidget("Guidelines", w)
        dock.setObjectName(GUIDELINES_DOCK)
        dock.setWidget(GuidelinesPanel())
        w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    schema = window_schema(w)
    panel = dock.widget()
    assert isinstance(panel, GuidelinesPanel)
    panel.set_guidelines(schema.guidelines, schema.title, schema.version)
    dock.show()
    dock.raise_()
    return dock


def toggle_guidelines(w: MainWindow) -> None:
    dock = guidelines_dock(w)
    if dock is not None and dock.isVisible():
        dock.hide()
    else:
        show_guidelines(w)
