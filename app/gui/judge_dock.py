"""The judge dock: wires the judge panel to the judge worker (which runs on the window's
background executor) and the current item.

Hidden until asked for (it shows the dataset's reference, which annotators label blind to).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QDockWidget, QWidget

from pairscope.models.options import OpenAIOptions
from pairscope.models.prompts import bundled_templates
from pairscope.widgets.judge_panel import JudgePanel

from ..judge.review import judge_item_view
from ..store import VerdictRecord
from .judge_worker import JudgeWorker

if TYPE_CHECKING:
    from pairscope.widgets.media_view import MediaView

    from .controller import AnnotationController


class JudgeDock(QDockWidget):
    """The judge panel on the controller's current item; the frames the judge saw are marked
    in ``media``. ``run_chosen`` asks the window to show a run (the one being made)."""

    run_chosen = Signal(int)

    def __init__(
        self,
        parent: QWidget,
        controller: AnnotationController,
        media: MediaView,
        settings: QSettings | None = None,
        worker: JudgeWorker | None = None,
    ):
        super().__init__("Judge", parent)
        self.setObjectName("judge-dock")
        self.controller = controller
        self.media = media
        self.settings = settings
        self.panel = JudgePanel(bundled_templates())
        self.setWidget(self.panel)
        self.worker = worker or JudgeWorker(controller.store, parent=self)
        saved = settings.value("judge/settings") if settings is not None else None
        self.panel.set_settings({"concurrency": OpenAIOptions.concurrency, **(json.loads(str(saved)) if saved else {})})
        self.panel.judge_item_requested.connect(self.judge_current)
        self.panel.judge_all_requested.connect(self.judge_all)
        self.panel.cancel_requested.connect(self.worker.cancel)
        self.worker.status.connect(self.panel.show_status)
        self.worker.chunk.connect(self._on_chunk)
        self.worker.sample_done.connect(self._on_sample)
        self.worker.progress.connect(self.panel.set_progress)
        self.worker.finished.connect(self._on_finished)
        self.worker.failed.connect(self._on_failed)
        self.worker.cancelled.connect(self._on_cancelled)
        self._stream_sample: int | None = None
        self._live_item: int | None = None  # the item judged live (its stream is shown as it comes)

    # -- actions -----------------------------------------------------------------------------

    def judge_current(self, settings: dict | None = None) -> None:
        current = self.controller.current
        if current is None or self.worker.busy:
            return
        settings = settings or self.panel.settings()
        self._remember(settings)
        self.panel.clear_stream()
        self.panel.set_running(True)
        self._stream_sample = None
        self._live_item = current.item_id
        self.worker.judge_item(current.item_id, settings)

    def judge_all(self, settings: dict | None = None) -> None:
        if self.worker.busy:
            return
        settings = settings or self.panel.settings()
        self._remember(settings)
        self.panel.clear_stream()
        self._live_item = None
        self.panel.set_running(True, batch=True)
        # Listing the table's items is store work: the worker does it off the GUI thread, from
        # the filter (a frozen value), through its own connection — never the labeling session.
        self.worker.judge_items(self.controller.filter, settings)

    def _remember(self, settings: dict) -> None:
        if self.settings is not None:
            self.settings.setValue("judge/settings", json.dumps(settings))

    # -- results -----------------------------------------------------------------------------

    def _on_chunk(self, sample: int, text: str) -> None:
        if sample != self._stream_sample:
            self._stream_sample = sample
            self.panel.append_stream(f"{'' if sample == 0 else chr(10) * 2}— sample {sample + 1} —\n")
        self.panel.append_stream(text)

    def _on_sample(self, verdict: VerdictRecord) -> None:
        if verdict.run_id != self.controller.run_id:
            self.run_chosen.emit(verdict.run_id)  # the run being made is the one to watch
        else:
            self.show_item_verdicts()

    def _on_finished(self, run_id: int, summary: str) -> None:
        self.panel.set_running(False)
        self.panel.show_status(summary)
        self.run_chosen.emit(run_id)  # its size and status changed: the picker says so

    def _on_failed(self, message: str) -> None:
        self.panel.set_running(False)
        self.panel.show_status(f"Judge failed: {message}")

    def _on_cancelled(self) -> None:
        self.panel.set_running(False)
        self.panel.show_status("Cancelled.")

    def show_item_verdicts(self) -> None:
        """Show the chosen run's verdict on the current item — and only on it: its stored
        rationale, this annotator's label and the dataset's reference. While this item is being
        judged live, the stream stays as it arrives."""
        controller = self.controller
        current = controller.current
        if current is None:
            return
        view = judge_item_view(controller.store, current.item, current.order, controller.annotator, controller.run_id)
        live = self.worker.busy and self._live_item == current.item_id
        if not live:
            self.panel.show_text(view.rationale)  # bounded (widgets/render_budget.py), from its start
        self.panel.show_result(view.summary, view.seen)
        if view.frames:
            self.media.set_highlighted_frames(list(view.frames), "seen by the judge")

    def shutdown(self) -> None:
        self.worker.stop()


__all__ = ["JudgeDock"]
