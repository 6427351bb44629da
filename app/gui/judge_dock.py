"""The judge dock: wires the judge panel to the judge worker (which runs on the window's
background executor) and the current item.

Hidden until asked for (it shows the dataset's reference, which annotators label blind to).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QDockWidget

from pairscope.models.prompts import bundled_templates
from pairscope.widgets.judge_panel import JudgePanel

from ..judge.results import judge_item, verdict_phrases
from ..store import VerdictRecord
from .judge_worker import JudgeWorker

if TYPE_CHECKING:
    from .main_window import MainWindow


class JudgeDock(QDockWidget):
    def __init__(self, window: MainWindow, settings: QSettings | None = None, worker: JudgeWorker | None = None):
        super().__init__("Judge", window)
        self.setObjectName("judge-dock")
        self.window_ = window
        self.settings = settings
        self.panel = JudgePanel(bundled_templates())
        self.setWidget(self.panel)
        self.worker = worker or JudgeWorker(window.controller.store, parent=self)
        if settings is not None and settings.value("judge/settings"):
            self.panel.set_settings(json.loads(str(settings.value("judge/settings"))))
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

    # -- actions -----------------------------------------------------------------------------

    def judge_current(self, settings: dict | None = None) -> None:
        current = self.window_.controller.current
        if current is None or self.worker.busy:
            return
        settings = settings or self.panel.settings()
        self._remember(settings)
        self.panel.clear_stream()
        self.panel.set_running(True)
        self._stream_sample = None
        self.worker.judge_item(current.item_id, settings)

    def judge_all(self, settings: dict | None = None) -> None:
        if self.worker.busy:
            return
        settings = settings or self.panel.settings()
        self._remember(settings)
        controller = self.window_.controller
        self.panel.clear_stream()
        self.panel.set_running(True, batch=True)
        # Listing the table's items is store work: the worker does it off the GUI thread.
        self.worker.judge_items(
            lambda: [row.summary.id for row in controller.page(0, controller.row_count())], settings
        )

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
        self.show_item_verdicts()

    def _on_finished(self, run_id: int, summary: str) -> None:
        self.panel.set_running(False)
        self.panel.show_status(summary)
        self.show_item_verdicts()

    def _on_failed(self, message: str) -> None:
        self.panel.set_running(False)
        self.panel.show_status(f"Judge failed: {message}")

    def _on_cancelled(self) -> None:
        self.panel.set_running(False)
        self.panel.show_status("Cancelled.")

    def show_item_verdicts(self) -> None:
        """Show the newest run's verdict on the current item beside the labels and reference."""
        controller = self.window_.controller
        current = controller.current
        if current is None:
            return
        store = controller.store
        position = {idx: pos for pos, idx in enumerate(current.order, start=1)}

        def name(index: int | None) -> str:
            return "undecided" if index is None else f"Response {position[index]}"

        verdicts = store.verdicts(item_id=current.item.id)
        if not verdicts:
            self.panel.show_result("Not judged yet.")
            return
        run = store.run(verdicts[-1].run_id)
        run_verdicts = [v for v in verdicts if v.run_id == run.id]
        # Only this item's samples: re-voting the whole run on every item shown was O(run).
        judgement = judge_item(run, run_verdicts, len(current.item.responses))
        reference = current.item.reference.chosen
        mine = store.current_label(current.item_id, controller.annotator)
        parts = verdict_phrases(judgement, name, reference)
        parts.insert(
            1,
            f"You: {name(mine.preferred) if mine and mine.preferred is not None else (mine.outcome if mine else '—')}",
        )
        parts.insert(2, f"Dataset: {name(reference) if reference is not None else '—'}")
        seen = _what_the_judge_saw(run_verdicts)
        self.panel.show_result("  ·  ".join(parts), seen)
        frames = next((v.media_sent.get("frame_indices") for v in run_verdicts if v.media_sent), None)
        if frames:
            self.window_.media.set_highlighted_frames(frames, "seen by the judge")

    def shutdown(self) -> None:
        self.worker.stop()


def _what_the_judge_saw(verdicts: list[VerdictRecord]) -> str:
    media = next((v.media_sent for v in verdicts if v.media_sent), None) or {}
    parts = []
    if media.get("images"):
        parts.append("images sent: " + ", ".join(f"{w}×{h}" for w, h in media["images"]))
    frames = media.get("video_frames") or media.get("frames")
    if frames:
        w, h = frames[0]
        fed = " as fed to the model" if media.get("video_frames") else ""
        indices = media.get("frame_indices")
        listed = f" (video frames {', '.join(str(i + 1) for i in indices)})" if indices else ""
        parts.append(f"{len(frames)} frames at {w}×{h}{fed}{listed}")
    if media.get("processor"):
        parts.append(f"processor input: {media['processor']}")
    errors = [v.error for v in verdicts if v.error]
    if errors:
        parts.append(f"errors: {errors[0]}")
    return "   ".join(parts)


__all__ = ["JudgeDock"]
