"""The window's shortcuts: one QAction per entry of the project's keymap
(:data:`pairscope.app.labeling.keymap.KEYMAP` for the built-in label schema, ``LabelSchema.keymap()``
for the project's), the menus that list them, "Next item by", and the windows they open.

The project's label schema drives the label panel, the strength / error / discard keys and
the cheat sheet; its guidelines open in a dock (F2). The window composes :class:`Shortcuts`,
handing it the parts the keys act on and itself for the commands (:class:`Commands`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Protocol, cast

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QDialog, QDockWidget, QLineEdit, QMainWindow, QMenu

from pairscope.widgets.cheat_sheet import CheatSheet
from pairscope.widgets.guidelines_panel import GuidelinesPanel

from ..judge.queue import DEFAULT_ORDER, ORDERS
from ..labeling.schema import DEFAULT_SCHEMA, LabelSchema
from .activity import ActivityWatch

if TYPE_CHECKING:
    from PySide6.QtWidgets import QComboBox

    from pairscope.widgets.label_panel import LabelPanel
    from pairscope.widgets.media_view import MediaView
    from pairscope.widgets.response_view import ResponsePane

    from .controller import AnnotationController
    from .ensemble_dialog import EnsembleDialog
    from .export_dialog import ExportDialog
    from .judge_dock import JudgeDock
    from .stats_view import StatsView


GUIDELINES_DOCK = "guidelines-dock"
#: The statistics view's module: it imports scipy, statsmodels and matplotlib.
STATS_MODULE = "pairscope.app.gui.stats_view"


class FilterWindow(Protocol):
    """What the suspect-reference filter asks of the window (the main window provides each)."""

    focus: QComboBox

    def apply_filter(self) -> None: ...


class Commands(Protocol):
    """What the shortcuts ask of the window (the main window provides each)."""

    @property
    def judge(self) -> JudgeDock: ...
    def move(self, step: int) -> None: ...
    def next_unlabeled(self) -> None: ...
    def undo(self) -> None: ...
    def redo(self) -> None: ...
    def toggle_judge(self) -> None: ...
    def toggle_review(self) -> None: ...
    def show_review(self, visible: bool = True) -> None: ...
    def toggle_adjudicate(self) -> None: ...
    def collect(self, whole_filter: bool) -> None: ...
    def save_filter(self) -> None: ...
    def open_filter(self) -> None: ...


@dataclass(frozen=True)
class WindowParts:
    """The widgets the label, view and media keys act on."""

    panel: LabelPanel
    media: MediaView
    responses: ResponsePane
    search: QLineEdit


def window_schema(controller: object) -> LabelSchema:
    """The project's label schema, as the controller has it (the built-in one for a
    controller that has none)."""
    getter = getattr(controller, "label_schema", None)
    if callable(getter):
        return getter()
    session = getattr(controller, "session", None)
    return getattr(session, "schema", None) or DEFAULT_SCHEMA


def guidelines_dock(window: QMainWindow) -> QDockWidget | None:
    """The guidelines dock, once :meth:`Shortcuts.show_guidelines` made it."""
    return window.findChild(QDockWidget, GUIDELINES_DOCK)


class Shortcuts:
    """The keymap's actions on ``window`` (``actions``: name → QAction), their menus, the "Next
    item by" choice (``queue_actions``, remembered under ``queue_key``) and the newest window
    each opens (``cheat_sheet``, ``stats_view``, ``export_dialog``, ``ensemble_dialog``)."""

    def __init__(
        self,
        window: QMainWindow,
        commands: Commands,
        parts: WindowParts,
        controller: AnnotationController,
        settings: QSettings | None,
        queue_key: str,
    ):
        self.window, self.commands, self.parts = window, commands, parts
        self.controller, self.settings, self.queue_key = controller, settings, queue_key
        self.schema = window_schema(controller)
        self.actions: dict[str, QAction] = {}
        self.queue_actions: dict[str, QAction] = {}
        self.cheat_sheet: CheatSheet | None = None
        self.stats_view: StatsView | None = None
        self.export_dialog: ExportDialog | None = None
        self.ensemble_dialog: EnsembleDialog | None = None
        self.compare_dialog: QDialog | None = None  # Compare two judges… (compare_dialog.py)
        self.activity = ActivityWatch(window, controller.active_time)  # focus and input: a label's active time
        parts.panel.set_schema(self.schema)
        keys = {s.action: s.keys[0] for s in self.schema.keymap()}
        parts.panel.ranking.set_keys(keys["rank_tie"], keys["rank_back"])
        self._install()
        self._install_suspect_filter()

    def handlers(self) -> dict[str, Callable[[], object]]:
        """Action name → what it does in this window."""
        panel, media, responses, search = self.parts.panel, self.parts.media, self.parts.responses, self.parts.search
        w = self.commands

        def focus_search() -> None:
            search.setFocus()
            search.selectAll()

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
            "cheat_sheet": self.show_cheat_sheet,
            "guidelines": self.toggle_guidelines,
            "judge_panel": w.toggle_judge,
            "statistics": self.open_statistics,
            "review_panel": w.toggle_review,
            "adjudicate": w.toggle_adjudicate,
            "add_to_collection": lambda: w.collect(False),
            "collect_filtered": lambda: w.collect(True),
            "export": self.show_export,
            "ensemble": self.show_ensemble,
            "save_filter": w.save_filter,
            "open_filter": w.open_filter,
            "judge_item": judge_item,
        }
        for position in range(1, 5):  # with more than two responses: rank it next (widgets/ranking_list.py)
            table[f"prefer_{position}"] = partial(panel.prefer, position)
        table["rank_tie"], table["rank_back"] = panel.ranking.tie_next, panel.ranking.take_back
        for c in self.schema.strengths:
            table[f"strength_{c.name}"] = partial(panel.set_strength, c.name)
        for c in self.schema.error_types:  # a kind with a text field: its key also focuses the field
            table[f"error_{c.name}"] = partial(panel.toggle_error, c.name, focus=True)
        for c in self.schema.discard_reasons:
            table[f"discard_{c.name}"] = partial(panel.toggle_discard, c.name)
        return table

    def _install(self) -> None:
        """One QAction per shortcut of the keymap on the window, and the menus that list them."""
        keymap = self.schema.keymap()
        todo = self.handlers()
        missing = {s.action for s in keymap} - set(todo)
        if missing:
            raise RuntimeError(f"keymap actions without a handler: {sorted(missing)}")
        menus: dict[str, QMenu] = {}
        for shortcut in keymap:
            action = QAction(shortcut.description, self.window)
            action.setShortcuts([QKeySequence(k) for k in shortcut.keys])
            action.triggered.connect(lambda _checked=False, f=todo[shortcut.action]: f())
            self.window.addAction(action)
            menu = menus.get(shortcut.section)
            if menu is None:
                menu = menus[shortcut.section] = self.window.menuBar().addMenu(shortcut.section)
            menu.addAction(action)
            self.actions[shortcut.action] = action
        if "Navigate" in menus:
            self._install_queue_menu(menus["Navigate"])
        # "Suspect references…" in the Ensemble dialog's menu (no key of its own; suspects_dialog.py)
        review = menus.get(next((s.section for s in keymap if s.action == "ensemble"), ""))
        if review is not None:
            self.suspects_action = QAction("Suspect references…", self.window)
            self.suspects_action.triggered.connect(lambda _checked=False: self.show_suspects())
            review.addAction(self.suspects_action)
        # "Compare two judges…" beside the Ensemble dialog (no key of its own)
        ensemble = next((s.section for s in keymap if s.action == "ensemble"), None)
        if ensemble is not None and ensemble in menus:
            self.compare_action = QAction("Compare two judges…", self.window)
            self.compare_action.triggered.connect(lambda _checked=False: self.show_compare())
            menus[ensemble].addAction(self.compare_action)

    def _install_queue_menu(self, menu: QMenu) -> None:
        """ "Next item by: id order / judges disagree / …" (what U takes next, app/judge/queue.py), the
        choice remembered per project."""
        sub = menu.addMenu("Next item by (U)")
        group = QActionGroup(self.window)
        group.setExclusive(True)
        remembered = self.settings.value(self.queue_key) if self.settings is not None else None
        start = remembered if remembered in ORDERS else DEFAULT_ORDER
        for order, text in ORDERS.items():
            action = QAction(text, self.window, checkable=True)
            action.setChecked(order == start)
            action.triggered.connect(lambda _checked=False, o=order: self.set_queue_order(o))
            group.addAction(action)
            sub.addAction(action)
            self.queue_actions[order] = action
        self.controller.queue_order = start
        if start == "suspect_reference":
            self.score_suspects()

    def set_queue_order(self, order: str) -> None:
        """What U takes next, remembered for this project."""
        self.controller.queue_order = order
        if order in self.queue_actions:
            self.queue_actions[order].setChecked(True)
        if self.settings is not None:
            self.settings.setValue(self.queue_key, order)
        self.window.statusBar().showMessage(f"U takes the next item by {ORDERS[order]}.", 4000)
        if order == "suspect_reference":
            self.score_suspects()

    def _install_suspect_filter(self) -> None:
        """The review filter "Suspect reference" (controller.FOCUS): the suspect queue's items;
        choosing it scores the references (the table fills when the scores are there)."""
        window = cast("FilterWindow", self.window)
        window.focus.addItem("Suspect reference", "suspect_reference")
        window.focus.currentIndexChanged.connect(self._suspect_filter_chosen)

    def _suspect_filter_chosen(self, _index: int) -> None:
        window = cast("FilterWindow", self.window)
        if window.focus.currentData() == "suspect_reference" and self.controller.suspects is None:
            self.score_suspects()

    def score_suspects(self) -> None:
        """The suspect queue of "suspect reference first" (app/stats/suspects.py), fitted off the
        GUI thread through the op's own connection; U goes by id order until it is there."""
        from .controller import suspect_queue
        from .tasks import BackgroundOp

        path = self.controller.path

        def done(queue: list[tuple[int, float]]) -> None:
            self.controller.suspects = queue
            window = cast("FilterWindow", self.window)
            if window.focus.currentData() == "suspect_reference":
                window.apply_filter()
            self.window.statusBar().showMessage(f"{len(queue)} suspect references: U takes the most suspect.", 4000)

        op = BackgroundOp(self.window, lambda _task: suspect_queue(path), title="Suspect references")
        op = op.with_progress("Scoring the references…").success(done)
        op.failure(lambda exc: self.window.statusBar().showMessage(f"Suspect references: {exc}", 8000)).run()

    # -- the windows the keys open -------------------------------------------------------------

    def show_cheat_sheet(self) -> CheatSheet:
        schema = self.schema
        note = f"Label schema: {schema.title or 'unnamed'} (version {schema.version}) · F2: the guidelines"
        sheet = CheatSheet([(s.section, s.keys, s.description) for s in schema.keymap()], self.window, note=note)
        sheet.setModal(False)
        sheet.show()
        self.cheat_sheet = sheet
        return sheet

    def open_statistics(self) -> None:
        """The statistics key: the first time, scipy, statsmodels and matplotlib (seconds of
        imports) load off the GUI thread, then the view opens; afterwards it opens at once."""
        import sys

        if STATS_MODULE in sys.modules:
            self.show_statistics()
            return
        from .tasks import BackgroundOp

        def load(_task) -> None:
            import importlib

            importlib.import_module(STATS_MODULE)

        op = BackgroundOp(self.window, load, title="Statistics").with_progress("Loading the statistics…")
        op.success(lambda _none: self.show_statistics()).run()

    def show_statistics(self) -> StatsView:
        from .stats_view import StatsView  # matplotlib loads only when asked for

        view = StatsView(self.controller.store, self.window)
        view.setModal(False)
        view.show()
        self.stats_view = view
        return view

    def show_ensemble(self) -> EnsembleDialog:
        from .ensemble_dialog import EnsembleDialog  # the judging modules load when asked for

        dialog = EnsembleDialog(self.controller, self.window)
        dialog.applied.connect(self._ensemble_applied)
        dialog.setModal(False)
        dialog.resize(760, 640)
        dialog.show()
        self.ensemble_dialog = dialog
        return dialog

    def show_compare(self) -> QDialog:
        from .compare_dialog import CompareDialog  # the statistics load when asked for

        dialog = CompareDialog(self.controller, self.window)
        dialog.setModal(False)
        dialog.resize(1150, 760)
        dialog.show()
        self.compare_dialog = dialog
        return dialog

    def show_suspects(self) -> QDialog:
        from .suspects_dialog import SuspectsDialog  # the statistics load when asked for

        dialog = SuspectsDialog(self.controller, self.window)
        dialog.setModal(False)
        dialog.resize(1100, 760)
        dialog.show()
        self.suspects_dialog = dialog
        return dialog

    def _ensemble_applied(self, run_ids: list[int]) -> None:
        self.commands.show_review()
        self.window.statusBar().showMessage(f"Ensemble: runs {', '.join(map(str, run_ids))} in the review panel.", 5000)

    def show_export(self) -> ExportDialog:
        from .export_dialog import ExportDialog

        dialog = ExportDialog(self.controller, self.window)
        self.export_dialog = dialog
        dialog.open()
        return dialog

    def show_guidelines(self) -> QDockWidget:
        """Show the project's Markdown guidelines (of its label schema) in a dock on the right."""
        dock = guidelines_dock(self.window)
        if dock is None:
            dock = QDockWidget("Guidelines", self.window)
            dock.setObjectName(GUIDELINES_DOCK)
            dock.setWidget(GuidelinesPanel())
            self.window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        panel = dock.widget()
        assert isinstance(panel, GuidelinesPanel)
        panel.set_guidelines(self.schema.guidelines, self.schema.title, self.schema.version)
        dock.show()
        dock.raise_()
        return dock

    def toggle_guidelines(self) -> None:
        dock = guidelines_dock(self.window)
        if dock is not None and dock.isVisible():
            dock.hide()
        else:
            self.show_guidelines()
