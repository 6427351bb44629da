"""``pairscope judge``: a progress bar over :class:`JudgeSession` and a summary line."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pairscope.models.base import JudgeError, OptionError, backend_options, open_backend, option_names, options_type

from ..judge.results import summarize
from ..judge.session import JudgeConfig, JudgeSession, RunProgress

if TYPE_CHECKING:
    from ..store import Store


def progress_line(state: RunProgress, width: int = 30) -> str:
    """``[#####.....]  120/1250 samples  3.2/s  ETA 05:12  3 failed``"""
    filled = int(width * state.done / state.total) if state.total else width
    eta = state.eta_s
    eta_text = "--:--" if eta is None else f"{int(eta // 60):02d}:{int(eta % 60):02d}"
    failed = getattr(state, "failed", 0)
    return (
        f"[{'#' * filled}{'.' * (width - filled)}] {state.done}/{state.total} samples"
        f"  {state.rate:.2f}/s  ETA {eta_text}" + (f"  {failed} failed" if failed else "")
    )


#: The flags of ``pairscope judge`` that are backend options, by option name (``--api-key-env``
#: is ``api_key_env``); ``--model`` and ``--batch-size`` are too, and are always given.
BACKEND_FLAGS = ("endpoint", "api_key_env", "concurrency", "timeout", "retries", "device")
FLAGS = {name: "--" + name.replace("_", "-") for name in ("model", "batch_size", *BACKEND_FLAGS)}


def options_from_args(args: argparse.Namespace) -> Any:
    """The chosen backend's options record from the flags given; :class:`OptionError` for a
    flag that backend does not take, or one it needs that is missing."""
    given = {name: getattr(args, name) for name in BACKEND_FLAGS if getattr(args, name, None) is not None}
    # --batch-size is the session's, and the backend's too where it batches prompts itself.
    if "batch_size" in option_names(options_type(args.backend)):
        given["batch_size"] = args.batch_size
    return backend_options(args.backend, model=args.model, **given)


def flag_message(exc: OptionError) -> str:
    """An :class:`OptionError` in the command line's words (flags, not option names)."""
    flag = FLAGS.get(exc.option, exc.option)
    if exc.missing:
        return f"--backend {exc.backend} needs {flag} (pairscope judge --help lists the flags)"
    takes = ", ".join(FLAGS[o] for o in exc.known if o in FLAGS)
    return f"{flag} does not apply to --backend {exc.backend} (it takes {takes})"


def run_judge(args: Any, open_project: Callable[..., Store]) -> int:
    """``pairscope judge``; ``open_project`` is the command line's (``app.project``, a layer above)."""
    config = JudgeConfig(
        mode=args.mode,
        k=args.k,
        both_orders=args.both_orders,
        frames=args.frames,
        seed=args.seed,
        template=args.template,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        batch_size=args.batch_size,
        parser=getattr(args, "parser", "lenient"),
    )
    if getattr(args, "export_requests", None) is not None:
        from .batch import export_run  # the run's requests for another executor: no backend opened

        return export_run(args, config, open_project)
    with open_project(args.db) as store:
        try:
            backend = open_backend(options_from_args(args))
        except OptionError as exc:
            print(f"error: {flag_message(exc)}", file=sys.stderr)
            return 1
        except JudgeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        try:
            session = JudgeSession(store, backend, config)
            run = session.start(resume=not getattr(args, "new_run", False))
            ids = [s.id for s in store.item_summaries(0, args.limit or store.item_count())]
            if session.remaining(ids) == 0:
                store.set_run_status(run.id, "done")
                print(
                    f"run {run.id} is complete: every sample of these {len(ids)} items is stored, nothing to do"
                    " (--new-run judges them again in a new run)",
                    file=sys.stderr,
                )
                print(summarize(store, store.run(run.id)).line())
                return 0
            print(
                f"run {run.id} ({run.mode}, k={run.k}{', both orders' if run.both_orders else ''}) on {len(ids)} items",
                file=sys.stderr,
            )
            cancel = threading.Event()
            tty = sys.stderr.isatty()

            def show(state: RunProgress) -> None:
                end = "\r" if tty else "\n"
                every = max(1, session.batch_size() * 10)
                if tty or state.done == state.total or state.done % every == 0:
                    print(progress_line(state), end=end, file=sys.stderr, flush=True)

            try:
                session.judge(ids, progress=show, cancel=cancel)
            except KeyboardInterrupt:
                cancel.set()
                store.set_run_status(run.id, "cancelled")
                print(
                    f"\ninterrupted: finished verdicts are kept; run the same command to resume run {run.id}",
                    file=sys.stderr,
                )
                print(summarize(store, store.run(run.id)).line())
                return 130
            if tty:
                print(file=sys.stderr)
            summary = summarize(store, store.run(run.id))
            print(summary.line())
            # Every sample failed (a model that cannot load, an endpoint that refuses): no result.
            return 1 if summary.samples and summary.failed == summary.samples else 0
        finally:
            backend.close()
