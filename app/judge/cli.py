"""``pairscope judge``: a progress bar over :class:`JudgeSession` and a summary line."""

from __future__ import annotations

import sys
import threading

from pairscope.models.base import JudgeError, create_backend

from ..store import Store
from .results import ensure_item_verdicts, summarize
from .session import JudgeConfig, JudgeSession, RunProgress


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


def backend_options(args) -> dict:
    """The options ``create_backend`` gets from the command line, per backend."""
    if args.backend == "openai":
        if not getattr(args, "endpoint", None):
            raise JudgeError("--backend openai needs --endpoint URL (e.g. http://localhost:8000/v1)")
        return dict(
            endpoint=args.endpoint,
            model=args.model,
            api_key_env=getattr(args, "api_key_env", None),
            concurrency=getattr(args, "concurrency", 8),
            timeout=getattr(args, "timeout", 120.0),
            retries=getattr(args, "retries", 4),
        )
    return dict(model_path=args.model, device=args.device, batch_size=args.batch_size)


def run_judge(args) -> int:
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
    with Store.open(args.db) as store:
        try:
            backend = create_backend(args.backend, **backend_options(args))
        except JudgeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        try:
            ensure_item_verdicts(store)
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
            print(summarize(store, store.run(run.id)).line())
            return 0
        finally:
            backend.close()
