"""The annotation window: composes the item table, media view, responses and label panel.

It wires widgets to the :class:`AnnotationController` and keeps no labeling logic of its
own. It composes its parts: the shortcuts (:class:`.actions.Shortcuts`, from
:mod:`pairscope.app.labeling.keymap`), the File menu (:class:`.file_menu.FileMenu`) and, when first
asked for, the judge dock; each gets what it needs passed in and sets nothing on the window.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QProgressBar,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from pairscope.widgets.banner import Banner
from pairscope.widgets.item_table import ItemTable
from pairscope.widgets.label_panel import LabelPanel
from pairscope.widgets.media_view import MediaView
from pairscope.widgets.plain_text import plain_label, tooltip
from pairscope.widgets.response_view import ResponsePane, ResponseText
from pairscope.widgets.review_panel import ReviewPanel

from ..labeling.keymap import hint
from ..records import LabelDraft
from .actions import Shortcuts, WindowParts
from .controller import AnnotationController, collect_filtered
from .file_menu import FileMenu
from .focus import KeyboardHome
from .media_loader import LoadedMedia
from .placement import fit_to_screen, saved_value, window_title
from .quit_guard import QuitGuard
from .tasks import BackgroundOp, TaskManager
from .watchdog import watchdog_from_env

if TYPE_CHECKING:
    from .judge_dock import JudgeDock

STATUS_FILTERS = {"All items": None, "Unlabeled": "unlabeled", "Labeled": "labeled"}
FOCUS_FILTERS = {
    "No review filter": None,
    "Judge wrong (chosen run)": "judge_wrong",
    "Judge unparsed (chosen run)": "judge_unparsed",
    "Judge inconsistent across orders": "judge_inconsistent",
    "Confident and wrong (chosen run)": "judge_confident_wrong",
    "Annotators disagree": "annotators_disagree",
    "I disagree with the dataset": "disagree_with_reference",
    "Adjudicated": "adjudicated",
    "Not adjudicated": "not_adjudicated",
}
#: What the window shows where the item was when the filters select none.
EMPTY_RESULT = "No items match these filters. Change the search, a filter or the judge run to see items again."
#: The narrowest the media and responses column gets (two readable responses side by side).
RESPONSES_MIN_WIDTH = 560

PANEL_HINTS = {
    "prefer": "1 / 2",
    "tie": hint("tie"),
    "both_bad": hint("both_bad"),
    "discard": hint("discard"),
    "strength": "A / S / D",
    "errors": "Ctrl+1…6",
    "discard_reasons": "Alt+1…5",
    "note": hint("note"),
    "step_correct": hint("step_correct"),
    "step_incorrect": hint("step_incorrect"),
}


class MainWindow(QMainWindow):
    def __init__(
        self, controller: AnnotationController, settings: QSettings | None = None, start_item: int | None = None
    ):
        super().__init__()
        self.controller = controller
        self.settings = settings
        self.tasks = TaskManager(self)  # every background op of this window runs through it
        self.setWindowTitle(window_title(controller))  # names the annotator: always visible
        self.watchdog = watchdog_from_env(self)  # PAIRSCOPE_WATCHDOG=1: GUI-thread blocks logged

        self.table = ItemTable()
        self.search = QLineEdit(placeholderText="Search id or prompt  (Ctrl+F)", clearButtonEnabled=True)
        self.category = QComboBox()
        self.category.addItem("All categories", None)
        for name in controller.categories():
            self.category.addItem(name, name)
        self.status = QComboBox()
        for text, value in STATUS_FILTERS.items():
            self.status.addItem(text, value)
        self.focus = QComboBox()
        self.focus.setToolTip("Step through failures and disagreements (N/P walk the list)")
        for text, value in FOCUS_FILTERS.items():
            self.focus.addItem(text, value)
        self.run_picker = QComboBox()
        self.run_picker.setToolTip("The judge run the review filters, the review panel and the judge panel show")
        self.run_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.run_picker.setMinimumContentsLength(12)
        self.progress = QProgressBar(textVisible=True)
        # Dark text on a light chunk: "20 / 47 labeled" stays readable wherever the bar ends.
        self.progress.setStyleSheet(
            "QProgressBar { text-align: center; color: #1a1a1a; border: 1px solid #aaa; border-radius: 3px;"
            " background: #f4f4f4; } QProgressBar::chunk { background: #a8d5a2; }"
        )
        self.media = MediaView()
        self.prompt = plain_label(word_wrap=True, any_width=True)  # dataset text: never rich text
        self.prompt.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.prompt.setStyleSheet("font-size: 12pt; padding: 6px 4px;")
        self.item_title = plain_label(word_wrap=True, any_width=True)
        self.item_title.setStyleSheet("font-weight: bold; color: #555;")
        self.responses = ResponsePane()
        self.panel = LabelPanel(PANEL_HINTS)
        self.saved_label = plain_label()  # names the annotator
        self.saved_label.setText(f"Annotator: {controller.annotator}")
        self.banner = Banner()  # labels not yet saved: how many and why
        self._layout()
        self.keyboard = KeyboardHome(self, self.center)  # Esc in a text field comes back here
        self._judge: JudgeDock | None = None  # built on first use: it pulls in the judging modules
        self.review = ReviewPanel()
        self.review_dock = QDockWidget("Review", self)
        self.review_dock.setObjectName("review-dock")
        self.review_dock.setWidget(self.review)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.review_dock)
        self.review_dock.hide()
        self._collection = ""

        self._filter_timer = QTimer(self, singleShot=True, interval=150)
        self._filter_timer.timeout.connect(self.apply_filter)
        self.search.textChanged.connect(lambda _text: self._filter_timer.start())
        self.search.returnPressed.connect(self._search_entered)
        for combo in (self.category, self.status, self.focus, self.run_picker):
            combo.activated.connect(lambda _i: self.keyboard.go_home())
        self.run_picker.activated.connect(lambda _i: self.choose_run(self.run_picker.currentData()))
        self.category.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.status.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.focus.currentIndexChanged.connect(self._on_focus)
        self.table.item_selected.connect(self.show_item)
        self.panel.changed.connect(self.save_draft)
        self.panel.current_step_changed.connect(self._show_step_cursor)
        controller.media_ready.connect(self.show_media)
        controller.saved.connect(self._on_saved)
        controller.pending_changed.connect(self.banner.show_message)
        self.banner.retry_requested.connect(controller.retry_pending)
        # Labels kept pending while a background op wrote land as soon as it ends.
        self.tasks.op_ended.connect(lambda: controller.retry_pending() if controller.pending_count else None)
        self.banner.show_message(controller.pending_message())
        self.panel.typing_done.connect(self.keyboard.go_home)  # Enter or Esc in a panel text field
        parts = WindowParts(self.panel, self.media, self.responses, self.search)
        self.shortcuts = Shortcuts(self, self, parts, controller, settings, self.project_key("queue"))
        self.file_menu = FileMenu(
            self,
            controller,
            settings,
            flush=self.panel.flush,
            refresh_items=self.refresh_items,
            make_window=lambda store, annotator: MainWindow(AnnotationController(store, annotator), settings),
        )
        self.quit_guard = QuitGuard(self, controller)  # asks before labels only in memory are lost

        self._built = False
        self.choose_run(self._remembered_run(), remember=False)
        self._restore_state()
        start = controller.row_of(start_item) if start_item is not None else controller.resume_row()
        self.apply_filter(select_row=start)
        self._update_progress()
        self._built = True

    # -- layout ------------------------------------------------------------------------------

    def _layout(self) -> None:
        filters = QHBoxLayout()
        filters.addWidget(self.category)
        filters.addWidget(self.status)
        runs = QHBoxLayout()
        runs.addWidget(QLabel("Judge run"))
        runs.addWidget(self.run_picker, 1)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(4, 4, 4, 4)
        left_layout.addWidget(self.search)
        left_layout.addLayout(filters)
        left_layout.addLayout(runs)
        left_layout.addWidget(self.focus)
        left_layout.addWidget(self.table, 1)
        left_layout.addWidget(self.progress)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.item_title)
        top_layout.addWidget(self.media, 1)
        top_layout.addWidget(self.prompt)
        self.center = QSplitter(Qt.Orientation.Vertical)
        self.center.setObjectName("center-splitter")
        self.center.addWidget(top)
        self.center.addWidget(self.responses)
        self.center.setSizes([460, 380])

        self.main = QSplitter(Qt.Orientation.Horizontal)
        self.main.setObjectName("main-splitter")
        self.main.addWidget(left)
        self.main.addWidget(self.center)
        self.main.addWidget(self.panel)
        self.main.setStretchFactor(1, 1)
        self.main.setSizes([420, 870, 310])
        # The responses take priority: a dock opening shrinks the item list first, never
        # the two responses below a readable width (about 40 characters each).
        self.center.setMinimumWidth(RESPONSES_MIN_WIDTH)
        self.main.setCollapsible(1, False)
        central = QWidget()
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(0, 0, 0, 0)
        central_layout.setSpacing(0)
        central_layout.addWidget(self.banner)
        central_layout.addWidget(self.main, 1)
        self.setCentralWidget(central)
        self.statusBar().addPermanentWidget(self.tasks.progress_indicator())
        self.statusBar().addPermanentWidget(self.saved_label)

    # -- the table ---------------------------------------------------------------------------

    def apply_filter(self, select_row: int | None = None, saved=None) -> None:
        """Rebuild the table for the current search/category/status filter (or a saved one)."""
        current = self.controller.current.item.id if self.controller.current else None
        if saved is not None:
            self.controller.filter = saved
        else:
            self.controller.set_filter(
                self.search.text(), self.category.currentData(), self.status.currentData(), self.focus.currentData()
            )
        rows = self.controller.row_count()
        self.table.set_items(rows, self.controller.page)
        if not rows:  # nothing to show: no item stays on screen to be labeled by mistake
            self.show_empty()
            return
        if select_row is None and current is not None:
            row = self.controller.row_of(current)
            rows = self.table.model().rowCount()
            found = self.table.model().row(row) if row < rows else None
            select_row = row if found is not None and found.summary.id == current else 0
        self.table.select_row(select_row or 0)

    def refresh_items(self) -> None:
        """Items were added (an import): categories, table and progress read them again."""
        chosen = self.category.currentData()
        self.category.blockSignals(True)
        self.category.clear()
        self.category.addItem("All categories", None)
        for name in self.controller.categories():
            self.category.addItem(name, name)
        self.category.setCurrentIndex(max(self.category.findData(chosen), 0))
        self.category.blockSignals(False)
        self.apply_filter()
        self._update_progress()

    def save_filter(self) -> None:
        from ..store.search import save_filter

        name, ok = QInputDialog.getText(self, "Save filter", "Name for the table's current filter:")
        if ok and name.strip():
            save_filter(self.controller.store, name.strip(), self.controller.filter)
            self.statusBar().showMessage(f"Saved filter {name.strip()!r}.", 4000)

    def open_filter(self) -> None:
        from ..store.search import saved_filters

        filters = saved_filters(self.controller.store)
        if not filters:
            self.statusBar().showMessage("No saved filters yet (Ctrl+Shift+S saves one).", 4000)
            return
        name, ok = QInputDialog.getItem(self, "Saved filters", "Show the items of:", sorted(filters), 0, False)
        if ok and name:
            self.apply_filter(saved=filters[name])
            self.statusBar().showMessage(
                f"{self.table.model().rowCount()} items: saved filter {name!r} (change any filter control to leave it)",
                6000,
            )

    def _on_focus(self, _index: int) -> None:
        """A review filter turns on failure stepping: the review panel shows each item's labels
        and verdicts while N/P walk the filtered list."""
        if self.focus.currentData() is not None:
            self.review_dock.show()
        self.apply_filter()
        self.statusBar().showMessage(f"{self.table.model().rowCount()} items: {self.focus.currentText()}", 4000)

    def _search_entered(self) -> None:
        """Enter in the search box: filter now and give the keyboard back to labeling."""
        self._filter_timer.stop()
        self.apply_filter()
        self.keyboard.go_home()

    # -- the judge run -------------------------------------------------------------------------

    def project_key(self, what: str) -> str:
        """A QSettings key for something remembered per project file (``what``: e.g. ``runs``)."""
        return f"{what}/" + hashlib.sha1(str(self.controller.path.resolve()).encode()).hexdigest()[:16]

    def _run_key(self) -> str:
        return self.project_key("runs")

    def _remembered_run(self) -> int | None:
        value = self.settings.value(self._run_key()) if self.settings is not None else None
        return int(value) if value not in (None, "") else None

    def choose_run(self, run_id: int | None, remember: bool = True) -> None:
        """Show ``run_id`` (None: the default run) in the filters, the review and judge panels."""
        chosen = self.controller.choose_run(run_id)
        self.run_picker.clear()
        choices = list(reversed(self.controller.runs()))  # newest first
        for choice in choices:
            self.run_picker.addItem(choice.label(), choice.id)
        if not choices:
            self.run_picker.addItem("No judge run yet (Ctrl+J)", None)
        self.run_picker.setEnabled(bool(choices))
        if chosen is not None:
            self.run_picker.setCurrentIndex(self.run_picker.findData(chosen.id))
            tip = f"{chosen.label()}\n(backend {chosen.backend}, parser {chosen.parser})"
            self.run_picker.setToolTip(tooltip(tip))  # a model name is text, never markup
            if remember and self.settings is not None:
                self.settings.setValue(self._run_key(), chosen.id)
        if self._built:  # not while the window is built (an empty result has no current item)
            if self.focus.currentData() is not None:
                self.apply_filter()
            self.refresh_review()
            if self._judge is not None and self._judge.isVisible():
                self._judge.show_item_verdicts()

    def move(self, step: int) -> None:  # type: ignore[override]  # tests and the keymap call move(±1)
        """Select the next (``step=1``) or previous (``-1``) row."""
        self.panel.flush()
        self.table.select_row(self.table.current_row() + step)

    def next_unlabeled(self) -> None:
        self.panel.flush()
        row = self.controller.next_unlabeled_row()
        if row is None:
            self.statusBar().showMessage(
                f"Every item is {'adjudicated' if self.controller.adjudicating else 'labeled'}.", 4000
            )
        else:
            self.table.select_row(row)
            if self.controller.next_reason:  # the queue order says why this item is next
                self.statusBar().showMessage(f"Next: {self.controller.next_reason}", 8000)

    # -- the current item --------------------------------------------------------------------

    def show_empty(self) -> None:
        """The filter selects no item: say so where the item was, and take the item away
        (label keys then do nothing)."""
        self.panel.flush()
        self.controller.clear_current()
        self.item_title.setText("")
        self.prompt.setText("")
        self.responses.show_responses([])
        self.media.show_placeholder(EMPTY_RESULT)
        self.panel.set_draft(LabelDraft())
        self.panel.setEnabled(False)
        self.statusBar().showMessage(EMPTY_RESULT, 8000)

    def show_item(self, item_id: int) -> None:
        self.panel.setEnabled(True)
        self.panel.flush()
        model, row = self.table.model(), self.table.current_row()
        neighbours = tuple(
            r.summary.id for r in (model.row(row + 1), model.row(row - 1), model.row(row + 2)) if r is not None
        )
        self.controller.close_frames()
        if self.controller.loader.cached(item_id) is None:
            self.media.show_placeholder("Loading…")
        view = self.controller.open(item_id, neighbours)
        item = view.item
        self.item_title.setText(f"{item.ext_id}  ·  {item.category}" + (f" / {item.subset}" if item.subset else ""))
        self.prompt.setText(item.prompt)
        texts = [
            ResponseText(f"Response {pos}", item.responses[idx].text, tuple(s.text for s in item.responses[idx].steps))
            for pos, idx in enumerate(view.order, start=1)
        ]
        self.responses.show_responses(texts)
        self.panel.set_response_count(len(view.order))
        self.panel.set_steps([len(item.responses[idx].steps) for idx in view.order] if item.is_stepwise else [])
        self.panel.set_draft(view.draft)
        self._show_step_marks(view.draft)
        if self._judge is not None and self._judge.isVisible():
            self._judge.show_item_verdicts()
        self.refresh_review()

    def refresh_review(self) -> None:
        if not self.review_dock.isVisible():
            return
        data = self.controller.review()
        if data is not None:
            self.review.show_review(data.reference, data.labels, data.verdicts, data.runs, data.rationale)

    def toggle_review(self) -> None:
        self.show_review(not self.review_dock.isVisible())

    def show_review(self, visible: bool = True) -> None:
        self.review_dock.setVisible(visible)
        if visible:
            self.review_dock.raise_()  # the front tab when it shares the column with the judge
        self.refresh_review()

    def toggle_adjudicate(self) -> None:
        """Label keys write final (adjudication) decisions while this is on."""
        self.panel.flush()
        on = not self.controller.adjudicating
        self.controller.set_adjudicating(on)
        self.apply_filter(saved=self.controller.filter)  # statuses and progress of this mode
        self._update_progress()
        self.review.set_mode(f"Adjudicating as {self.controller.annotator}" if on else "")
        self.setWindowTitle(window_title(self.controller))
        if on:
            self.review_dock.show()
        current = self.controller.current
        if current is not None:
            self.panel.set_draft(current.draft)
        self.refresh_review()
        self.statusBar().showMessage(
            "Adjudicating: your decisions are final and audited." if on else "Back to labeling.", 4000
        )

    def collect(self, whole_filter: bool) -> None:
        what = "every item shown" if whole_filter else "this item"
        name, ok = QInputDialog.getText(self, "Collection", f"Add {what} to the collection:", text=self._collection)
        if not (ok and name.strip()):
            return
        name = self._collection = name.strip()

        def added(count: int) -> None:
            self.statusBar().showMessage(f"{count} item(s) added to {name!r}.", 4000)

        if not whole_filter:  # one row: at once
            added(self.controller.add_to_collection(name))
            return
        project, item_filter = self.controller.path, self.controller.filter
        (
            BackgroundOp(self, lambda task: collect_filtered(project, name, item_filter), title="Collection")
            .with_progress(f"Adding to {name!r}…")
            .success(added)
            .run()
        )

    @property
    def judge(self) -> JudgeDock:
        """The judge dock (hidden until asked for: it reveals the dataset's reference)."""
        if self._judge is None:
            from .judge_dock import JudgeDock

            self._judge = JudgeDock(self, self.controller, self.media, self.settings)
            self._judge.run_chosen.connect(self.choose_run)
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self._judge)
            # One dock column beside the responses, not two: they keep a readable width.
            self.tabifyDockWidget(self.review_dock, self._judge)
            self._judge.hide()
        return self._judge

    def toggle_judge(self) -> None:
        self.judge.setVisible(not self.judge.isVisible())
        if self.judge.isVisible():
            self.judge.raise_()
            self.judge.show_item_verdicts()

    def show_media(self, media: LoadedMedia) -> None:
        if media.video is not None:
            video = media.video
            self.media.show_video(
                video.caption, video.frame_count, video.fps, video.strip, self.controller.frame_source(video.path)
            )
        elif media.images:
            self.media.show_images(media.images)
        else:
            self.media.show_placeholder(media.placeholder or "")

    # -- labels ------------------------------------------------------------------------------

    def save_draft(self, draft) -> None:
        if self.controller.save(draft):
            self._show_step_marks(draft)
            self.refresh_review()

    def undo(self) -> None:
        self._history(self.controller.undo(), "Undone")

    def redo(self) -> None:
        self._history(self.controller.redo(), "Redone")

    def _history(self, item_id: int | None, verb: str) -> None:
        if item_id is None:
            self.statusBar().showMessage(f"Nothing to {verb.lower()[:-1]}.", 3000)
            return
        current = self.controller.current
        if current is not None and current.item.id == item_id:
            self.panel.set_draft(current.draft)
            self._show_step_marks(current.draft)
        else:
            self.table.select_row(self.controller.row_of(item_id))
        self.statusBar().showMessage(f"{verb}.", 3000)

    def _on_saved(self, row) -> None:
        self.table.replace_row(row)
        self._update_progress()
        current = self.controller.current
        if self._judge is not None and self._judge.isVisible() and current and current.item.id == row.summary.id:
            self._judge.show_item_verdicts()  # "You: …" follows the label just given
        saved = "Not yet saved (see above)" if self.controller.pending_count else "Saved"
        self.saved_label.setText(f"{saved} {datetime.now():%H:%M:%S}  ·  {self.controller.annotator}")

    def _update_progress(self) -> None:
        done, total = self.controller.progress()
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done} / {total} {'adjudicated' if self.controller.adjudicating else 'labeled'}")

    def _show_step_marks(self, draft) -> None:
        marks: dict[int, dict[int, bool | None]] = {}
        for position, step, correct in draft.step_marks:
            marks.setdefault(position, {})[step] = correct
        current = self.controller.current
        if current is None or not current.item.is_stepwise:
            return
        for position in range(1, len(current.order) + 1):
            self.responses.set_step_marks(position - 1, marks.get(position, {}))

    def _show_step_cursor(self, position: int, index: int) -> None:
        self.responses.set_current_step(position - 1, index)

    # -- settings ----------------------------------------------------------------------------

    def _window_key(self, what: str) -> str:
        """The QSettings key of this project's window ``what`` (geometry, state, splitters)."""
        return self.project_key("window") + f"/{what}"

    def _saved(self, what: str):
        """This project's saved window ``what`` (:func:`.placement.saved_value`)."""
        return saved_value(self.settings, self._window_key(what), what)

    @property
    def has_saved_geometry(self) -> bool:
        """Whether a geometry was saved for this project (or any, by an older version)."""
        return self._saved("geometry") is not None

    def _restore_state(self) -> None:
        geometry = self._saved("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        self._splitters_restored = False

    def fit_to_screen(self) -> None:
        """Keep the whole window, frame included, on its screen (:func:`.placement.fit_to_screen`)."""
        fit_to_screen(self)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        # Splitter sizes only mean something once the window has its final size.
        if not self._splitters_restored:
            self.keyboard.go_home()  # the first key is a label, never a search
        if not self._splitters_restored and self.settings is not None:
            # Splitters only: the docks stay hidden at start (review and judge show the reference).
            for what, part in (("main", self.main), ("center", self.center)):
                value = self._saved(what)
                if value is not None:
                    part.restoreState(value)
        if not self._splitters_restored:
            for delay in (0, 300, 1000):  # the window manager frames the window a little later
                QTimer.singleShot(delay, self, self.fit_to_screen)
        self._splitters_restored = True

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self.panel.flush()
        if not self.quit_guard.may_close():
            event.ignore()
            return
        self.media.clear()
        self._filter_timer.stop()  # a search typed just before closing must not read the closed store
        if self._judge is not None:
            self._judge.shutdown()
        self.tasks.shutdown()  # cancels and joins every background op before the store closes
        if self.settings is not None:
            for what, value in (
                ("geometry", self.saveGeometry()),
                ("main", self.main.saveState()),
                ("center", self.center.saveState()),
            ):
                self.settings.setValue(self._window_key(what), value)
        self.controller.close()
        super().closeEvent(event)
