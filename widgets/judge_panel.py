"""The judge panel: pick a model and protocol, judge one item live or a whole set, and
see the verdict beside the human label and the dataset's reference.

Plain data in, signals out: the window runs the judge on a worker and calls the
``show_*``/``append_stream`` methods with what comes back.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .plain_text import TEXT_LIMIT, bounded, plain_label
from .render_budget import StreamBudget, plan_plain

#: How often streamed text is put in the view (once per frame at most: ~60 per second).
FLUSH_MS = 16


def _plain(text: str = "") -> QLabel:
    return plain_label(text, word_wrap=True)  # statuses and verdicts quote model output and paths


def _tool_button(text: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setToolTip(tip)
    return button


class JudgePanel(QWidget):
    """Settings, live rationale, verdicts and progress of the local judge."""

    judge_item_requested = Signal(dict)
    judge_all_requested = Signal(dict)
    cancel_requested = Signal()

    def __init__(self, templates: Sequence[str] = ("pairwise", "pointwise"), parent=None):
        super().__init__(parent)
        self.backend = QComboBox()
        self.backend.addItem("Local model (transformers)", "transformers")
        self.backend.addItem("Endpoint (OpenAI-compatible)", "openai")
        self.backend.setToolTip("A model folder run here, or a served judge: vLLM, SGLang, a hosted API")
        self.model = QLineEdit(placeholderText="model folder (Qwen2-VL, LLaVA, SmolVLM …)")
        self.browse = browse = _tool_button("…", "Choose a model folder")
        browse.clicked.connect(self._browse)
        self.endpoint = QLineEdit(placeholderText="http://localhost:8000/v1")
        self.api_key_env = QLineEdit(placeholderText="e.g. OPENAI_API_KEY (empty: no key)")
        self.api_key_env.setToolTip(
            "The NAME of an environment variable holding the API key. The key itself is never stored."
        )
        self.concurrency = QSpinBox(minimum=1, maximum=256)  # its default comes with set_settings
        self.concurrency.setToolTip("requests in flight (the default suits a local server; see docs/JUDGE.md)")
        self.mode = QComboBox()
        self.mode.addItems(["pairwise", "pointwise"])
        self.k = QSpinBox(minimum=1, maximum=9, value=1)
        self.k.setToolTip("samples per item, majority-voted")
        self.frames = QSpinBox(minimum=1, maximum=64, value=8)
        self.frames.setToolTip("video frames sampled uniformly")
        self.both_orders = QCheckBox("both orders")
        self.template = QComboBox(editable=False)
        self.template.addItems(list(templates))
        load = _tool_button("…", "Load a template file")
        load.clicked.connect(self._load_template)
        self.judge_item = QPushButton("Judge this item")
        self.judge_all = QPushButton("Judge all shown")
        self.cancel = QPushButton("Cancel")
        self.cancel.setEnabled(False)
        self.judge_item.clicked.connect(lambda: self.judge_item_requested.emit(self.settings()))
        self.judge_all.clicked.connect(lambda: self.judge_all_requested.emit(self.settings()))
        self.cancel.clicked.connect(self.cancel_requested.emit)
        self.progress = QProgressBar(textVisible=True)
        self.progress.setVisible(False)
        self.status = _plain()
        self.status.setStyleSheet("color: #555;")
        self.stream = QPlainTextEdit(
            readOnly=True, placeholderText="The judge's rationale appears here as it is written."
        )
        self.result = _plain()
        self.result.setStyleSheet("font-weight: bold;")
        self.seen = _plain()
        self.seen.setStyleSheet("color: #555; font-size: 9pt;")
        #: Says what of the rationale the view leaves out (it is bounded: widgets/render_budget.py).
        self.stream_note = _plain()
        self.stream_note.setStyleSheet("color: #8a6d00; font-size: 9pt;")
        self.stream_note.hide()
        self._budget = StreamBudget()
        self._pending: list[str] = []
        self._pending_chars = 0
        self.flushes = 0  # how many times streamed text was put in the view
        self._flush_timer = QTimer(self, singleShot=True, interval=FLUSH_MS)
        self._flush_timer.timeout.connect(self.flush_stream)

        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(browse)
        template_row = QHBoxLayout()
        template_row.addWidget(self.template, 1)
        template_row.addWidget(load)
        protocol = QHBoxLayout()
        protocol.addWidget(self.k)
        protocol.addWidget(self.both_orders)
        self.form = form = QFormLayout()
        form.addRow("Judge", self.backend)
        form.addRow("Model", model_row)
        form.addRow("Endpoint", self.endpoint)
        form.addRow("API key variable", self.api_key_env)
        form.addRow("In flight", self.concurrency)
        form.addRow("Mode", self.mode)
        form.addRow("Samples (K)", protocol)
        form.addRow("Frames", self.frames)
        form.addRow("Template", template_row)
        buttons = QHBoxLayout()
        for button in (self.judge_item, self.judge_all, self.cancel):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        notice = _plain("Shows the dataset's reference: open it after labeling, not before.")
        notice.setStyleSheet("color: #8a6d00; font-size: 9pt;")
        layout.addWidget(notice)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.result)
        layout.addWidget(self.stream, 1)
        layout.addWidget(self.stream_note)
        layout.addWidget(self.seen)
        self.backend.currentIndexChanged.connect(lambda _i: self._show_backend_fields())
        self._show_backend_fields()

    def _show_backend_fields(self) -> None:
        endpoint = self.backend.currentData() == "openai"
        for field in (self.endpoint, self.api_key_env, self.concurrency):
            self.form.setRowVisible(field, endpoint)
        self.browse.setVisible(not endpoint)
        self.model.setPlaceholderText(
            "served model name (as the server lists it)" if endpoint else "model folder (Qwen2-VL, LLaVA, SmolVLM …)"
        )

    def settings(self) -> dict:
        """What the user chose, as plain data (an endpoint's key is named, never held)."""
        return {
            "backend": self.backend.currentData(),
            "endpoint": self.endpoint.text().strip(),
            "api_key_env": self.api_key_env.text().strip(),
            "concurrency": self.concurrency.value(),
            "model": self.model.text().strip(),
            "mode": self.mode.currentText(),
            "k": self.k.value(),
            "both_orders": self.both_orders.isChecked(),
            "frames": self.frames.value(),
            "template": self.template.currentText(),
        }

    def set_settings(self, values: dict) -> None:
        self.backend.setCurrentIndex(max(self.backend.findData(values.get("backend", "transformers")), 0))
        self.endpoint.setText(values.get("endpoint", ""))
        self.api_key_env.setText(values.get("api_key_env", ""))
        self.concurrency.setValue(int(values.get("concurrency", self.concurrency.value())))
        self.model.setText(values.get("model", ""))
        self.mode.setCurrentText(values.get("mode", "pairwise"))
        self.k.setValue(int(values.get("k", 1)))
        self.both_orders.setChecked(bool(values.get("both_orders", False)))
        self.frames.setValue(int(values.get("frames", 8)))

    def set_running(self, running: bool, batch: bool = False) -> None:
        self.judge_item.setEnabled(not running)
        self.judge_all.setEnabled(not running)
        self.cancel.setEnabled(running)
        self.progress.setVisible(running and batch)

    def clear_stream(self) -> None:
        self._flush_timer.stop()
        self._pending, self._pending_chars = [], 0
        self._budget = StreamBudget()
        self.stream.clear()
        self.stream_note.clear()
        self.stream_note.hide()
        self.result.clear()
        self.seen.clear()

    def append_stream(self, text: str) -> None:
        """Append generated text as it arrives (plain text: model output is untrusted), put in
        the view once per frame and bounded like a response (runs cut, at most ~100,000
        characters; the note below says how much more there is)."""
        if self._budget.full:
            self._budget.dropped += len(text)
        else:
            self._pending.append(text)
            self._pending_chars += len(text)
            if self._pending_chars > self._budget.limit - self._budget.shown:
                self.flush_stream()  # more than the view can take waits: cut it down now
                return
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def flush_stream(self) -> None:
        """Put the text that arrived since the last frame in the view (one insertion)."""
        self._flush_timer.stop()
        text, self._pending, self._pending_chars = "".join(self._pending), [], 0
        added = self._budget.take(text)
        if added:
            self.flushes += 1
            cursor = self.stream.textCursor()
            cursor.movePosition(cursor.MoveOperation.End)
            cursor.insertText(added)
            self.stream.setTextCursor(cursor)
            self.stream.ensureCursorVisible()
        if self._budget.dropped:
            self._show_note(
                f"{self._budget.dropped:,} more characters not shown (runs cut, at most"
                f" {self._budget.limit:,} shown); the stored output keeps them all."
            )

    def show_text(self, text: str) -> None:
        """Show a stored rationale from its start, bounded as the stream is."""
        self.clear_stream()
        plan = plan_plain(text)
        self.stream.setPlainText(plan.text)
        if plan.cut:
            self._show_note(f"{plan.note} The stored output keeps it all.")

    def _show_note(self, text: str) -> None:
        self.stream_note.setText(text)
        self.stream_note.show()

    def set_progress(self, done: int, total: int, eta_s: float | None) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        eta = "" if eta_s is None else f" · ETA {int(eta_s // 60):02d}:{int(eta_s % 60):02d}"
        self.progress.setFormat(f"{done} / {total} samples{eta}")

    def show_status(self, text: str) -> None:
        self.status.setText(bounded(text, TEXT_LIMIT))

    def show_result(self, text: str, seen: str = "") -> None:
        self.result.setText(bounded(text, TEXT_LIMIT))
        self.seen.setText(bounded(seen, TEXT_LIMIT))

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a model folder", self.model.text())
        if folder:
            self.model.setText(folder)

    def _load_template(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load a prompt template", "", "Templates (*.txt);;All files (*)")
        if path:
            self.template.addItem(path)
            self.template.setCurrentText(path)
