"""The judge worker: one thread that loads the model and runs judge jobs, so the GUI
thread never waits for it. Results reach the GUI thread through signals."""

from __future__ import annotations

import queue
import threading
import traceback
from typing import Callable

from pairscope.models.base import JudgeBackend, JudgeError, create_backend
from PySide6.QtCore import QObject, Signal

from ..judge.results import summarize
from ..judge.session import JudgeConfig, JudgeSession, RunProgress
from ..store import Store

BackendFactory = Callable[..., JudgeBackend]


class JudgeWorker(QObject):
    """Runs one judge job at a time; ``cancel()`` stops it between tokens."""

    status = Signal(str)
    chunk = Signal(int, str)  # sample index, text
    sample_done = Signal(object)  # VerdictRecord
    progress = Signal(int, int, object)  # done, total, eta seconds
    finished = Signal(int, str)  # run id, summary line
    failed = Signal(str)

    def __init__(self, store: Store, backend_factory: BackendFactory = create_backend, parent=None):
        super().__init__(parent)
        self.store = store
        self._factory = backend_factory
        self._jobs: queue.Queue = queue.Queue()
        self._cancel = threading.Event()
        self._backend: JudgeBackend | None = None
        self._backend_key: tuple | None = None
        self._thread: threading.Thread | None = None
        self.busy = False

    def judge_item(self, item_id: int, settings: dict) -> None:
        """Judge one item, streaming its rationale."""
        self._submit(("item", [item_id], settings))

    def judge_items(self, item_ids: list[int], settings: dict) -> None:
        """Judge many items in batches, with progress."""
        self._submit(("batch", list(item_ids), settings))

    def cancel(self) -> None:
        self._cancel.set()

    def stop(self) -> None:
        """Cancel any job, free the model and end the thread (before the window closes)."""
        self._cancel.set()
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(timeout=30)
            self._thread = None

    def _submit(self, job) -> None:
        self.busy = True
        self._cancel.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pairscope-judge", daemon=True)
            self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                break
            try:
                self._do(*job)
            except JudgeError as exc:
                self.failed.emit(str(exc))
            except Exception as exc:  # a judge bug must not take the window down
                self.failed.emit(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
            finally:
                self.busy = False
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def _load(self, settings: dict) -> JudgeBackend:
        key = (settings.get("backend", "transformers"), settings["model"])
        if self._backend is None or self._backend_key != key:
            if self._backend is not None:
                self._backend.close()
                self._backend = None
            if not settings["model"]:
                raise JudgeError("choose a model folder first")
            self.status.emit(f"Loading {settings['model']} …")
            self._backend = self._factory(key[0], model_path=settings["model"])
            self._backend_key = key
        return self._backend

    def _do(self, kind: str, item_ids: list[int], settings: dict) -> None:
        backend = self._load(settings)
        template = settings.get("template") or None
        config = JudgeConfig(mode=settings.get("mode", "pairwise"), k=int(settings.get("k", 1)),
                             both_orders=bool(settings.get("both_orders")), frames=int(settings.get("frames", 8)),
                             template=template if template != settings.get("mode") else None,
                             max_new_tokens=int(settings.get("max_new_tokens", 512)))
        session = JudgeSession(self.store, backend, config)
        run = session.start()
        self.status.emit(f"Judging with run {run.id} …")
        if kind == "item":
            for verdict in session.judge_stream(item_ids[0], self.chunk.emit, self._cancel):
                self.sample_done.emit(verdict)
        else:
            def report(state: RunProgress) -> None:
                self.progress.emit(state.done, state.total, state.eta_s)

            session.judge(item_ids, progress=report, cancel=self._cancel)
        if self._cancel.is_set():
            self.status.emit("Cancelled: finished verdicts are kept.")
        self.finished.emit(run.id, summarize(self.store, self.store.run(run.id)).line())
