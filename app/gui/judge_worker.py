"""The judge worker: judge jobs run as background ops on the window's "judge" lane, one
thread that loads the model and keeps it loaded between jobs, so the GUI thread never
waits for it. Results reach the GUI thread through this object's signals."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

from pairscope.models.base import (
    BackendFactory,
    JudgeBackend,
    JudgeError,
    backend_options,
    open_backend,
    option_names,
    options_type,
)

from ..judge.results import summarize
from ..judge.session import JudgeConfig, JudgeSession, RunProgress
from ..records import ItemFilter
from ..store import Store
from .controller import filtered_item_ids
from .tasks import BackgroundOp, Task, TaskManager, error_message, own_store

LANE = "judge"
#: The judge panel's fields that are backend options: each goes to the chosen backend when its
#: record has it (the panel shows the field only then); ``model`` is in every record.
PANEL_OPTIONS = ("endpoint", "api_key_env", "concurrency")


def options_from_panel(settings: dict) -> Any:
    """The judge panel's choices (``JudgePanel.settings()``) as the chosen backend's options
    record. An endpoint's key stays in the environment: only its variable's name travels."""
    name = settings.get("backend", "transformers")
    takes = option_names(options_type(name))
    choices = {key: settings[key] for key in PANEL_OPTIONS if key in takes and key in settings}
    if "api_key_env" in choices:
        choices["api_key_env"] = choices["api_key_env"] or None  # an empty field: no key
    return backend_options(name, model=settings["model"], **choices)


class JudgeWorker(QObject):
    """Runs one judge job at a time; ``cancel()`` stops it between tokens."""

    status = Signal(str)
    chunk = Signal(int, str)  # sample index, text
    sample_done = Signal(object)  # VerdictRecord
    progress = Signal(int, int, object)  # done, total, eta seconds
    finished = Signal(int, str)  # run id, summary line
    failed = Signal(str)
    cancelled = Signal()  # a job cancelled before it started

    def __init__(
        self,
        store: Store,
        backend_factory: BackendFactory = open_backend,
        parent=None,
        tasks: TaskManager | None = None,
    ):
        super().__init__(parent)
        # Plain values only: each job opens the project through its own connection on the lane.
        self.project, self.readonly = store.path, store.readonly
        self._factory = backend_factory
        self.tasks = tasks or TaskManager.of(parent)
        # Only touched on the lane's thread: the backend may need to stay on the thread that loaded it.
        self._backend: JudgeBackend | None = None
        self._backend_key: object = None  # the options record the backend was made from
        self.lane = self.tasks.lane(LANE, at_close=self._free)
        self._op: BackgroundOp | None = None

    @property
    def busy(self) -> bool:
        return self._op is not None and self._op.running

    def judge_item(self, item_id: int, settings: dict) -> None:
        """Judge one item, streaming its rationale."""
        self._submit("item", [item_id], settings)

    def judge_items(self, item_ids: list[int] | ItemFilter, settings: dict) -> None:
        """Judge many items in batches, with progress; ``item_ids`` may be a table filter
        whose items are listed off the GUI thread, through the job's own connection."""
        self._submit("batch", item_ids if isinstance(item_ids, ItemFilter) else list(item_ids), settings)

    def cancel(self) -> None:
        if self._op is not None:
            self._op.cancel()

    def stop(self) -> None:
        """Cancel any job, free the model and end the lane's thread (the window is closing)."""
        self.cancel()
        self.lane.close()

    def _submit(self, kind: str, item_ids, settings: dict) -> None:
        self._op = (
            BackgroundOp(
                self,
                lambda task: self._do(task, kind, item_ids, settings),
                title="Judge",
                lane=self.lane,
                manager=self.tasks,
            )
            .on_update(self._relay)
            .success(self._done)
            .failure(self._failed)
            .cancelled(self.cancelled.emit)
            .run()
        )

    # -- on the GUI thread -----------------------------------------------------------------

    def _relay(self, message: tuple) -> None:
        kind, *args = message
        getattr(self, kind).emit(*args)

    def _done(self, outcome: tuple[int, str, bool]) -> None:
        run_id, summary, was_cancelled = outcome
        if was_cancelled:
            self.status.emit("Cancelled: finished verdicts are kept.")
        self.finished.emit(run_id, summary)

    def _failed(self, exc: BaseException) -> None:
        self.failed.emit(str(exc) if isinstance(exc, JudgeError) else error_message(exc))

    # -- on the lane's thread --------------------------------------------------------------

    def _free(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def _load(self, task: Task, settings: dict) -> JudgeBackend:
        backend = settings.get("backend", "transformers")
        if not settings["model"]:
            raise JudgeError("choose a model folder first" if backend != "openai" else "name the served model first")
        options = options_from_panel(settings)
        if self._backend is None or self._backend_key != options:
            self._free()
            where = f" at {options.endpoint}" if getattr(options, "endpoint", "") else ""
            task.update(("status", f"Loading {settings['model']}{where} …"))
            self._backend = self._factory(options)
            self._backend_key = options
        return self._backend

    def _do(self, task: Task, kind: str, item_ids, settings: dict) -> tuple[int, str, bool]:
        backend = self._load(task, settings)
        with own_store(self.project, self.readonly) as store:
            return self._judge(task, store, backend, kind, item_ids, settings)

    def _judge(
        self, task: Task, store: Store, backend: JudgeBackend, kind: str, item_ids, settings: dict
    ) -> tuple[int, str, bool]:
        if isinstance(item_ids, ItemFilter):
            item_ids = filtered_item_ids(store, item_ids)
        template = settings.get("template") or None
        config = JudgeConfig(
            mode=settings.get("mode", "pairwise"),
            k=int(settings.get("k", 1)),
            both_orders=bool(settings.get("both_orders")),
            frames=int(settings.get("frames", 8)),
            template=template if template != settings.get("mode") else None,
            max_new_tokens=int(settings.get("max_new_tokens", 512)),
        )
        session = JudgeSession(store, backend, config)
        run = session.start()
        task.update(("status", f"Judging with run {run.id} …"))
        if kind == "item":
            verdicts = session.judge_stream(item_ids[0], lambda i, text: task.update(("chunk", i, text)), task.cancel)
            for verdict in verdicts:
                task.update(("sample_done", verdict))
        else:

            def report(state: RunProgress) -> None:
                task.update(("progress", state.done, state.total, state.eta_s))

            session.judge(item_ids, progress=report, cancel=task.cancel)
        return run.id, summarize(store, store.run(run.id)).line(), task.cancelled
