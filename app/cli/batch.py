"""``pairscope judge --export-requests DIR`` and ``pairscope import-verdicts --openai-batch``:
a run handed to an executor PairScope does not run, and its answers back
(``app/judge/batch_requests.py``, ``app/judge/batch_results.py``; docs/JUDGE.md). Their flags
are added here; the judge modules load only when a command runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..judge.session import JudgeConfig
    from ..store import Store


def export_flags(p: argparse.ArgumentParser) -> None:
    """``pairscope judge``'s ``--export-requests DIR`` and ``--media-as``."""
    p.add_argument(
        "--export-requests",
        type=Path,
        metavar="DIR",
        help="judge elsewhere: write the run's requests as OpenAI Batch JSONL into DIR (vllm run-batch,"
        " a Batch API, Ray Data; docs/JUDGE.md) instead of running a backend; --model is the served name",
    )
    p.add_argument(
        "--media-as",
        choices=("url", "file"),
        default="url",
        help="with --export-requests: images as data: URLs in each line, or as file:// references to PNGs"
        " under DIR/media (vLLM: --allowed-local-media-path) (default: url)",
    )


def import_flags(p: argparse.ArgumentParser) -> None:
    """``pairscope import-verdicts``'s ``--openai-batch OUT.jsonl`` and ``--requests DIR``."""
    p.add_argument(
        "--openai-batch",
        type=Path,
        action="append",
        metavar="OUT.jsonl",
        help="an executor's Batch output for requests of --export-requests (repeat for several files)",
    )
    p.add_argument("--requests", type=Path, metavar="DIR", help="with --openai-batch: the folder the requests are in")


def export_run(args: Any, config: JudgeConfig, open_project: Callable[..., Store]) -> int:
    """Plan the run ``pairscope judge`` would make and write its requests (no backend is opened)."""
    from pairscope.models.base import JudgeError

    from ..judge.batch_requests import ExportError, export_requests
    from ..judge.results import summarize

    folder = Path(args.export_requests)
    media_as = getattr(args, "media_as", "url") or "url"
    with open_project(args.db) as store:
        ids = [s.id for s in store.item_summaries(0, args.limit or store.item_count())]
        try:
            report = export_requests(
                store, config, args.model, ids, folder, media_as=media_as, new_run=getattr(args, "new_run", False)
            )
        except (ExportError, JudgeError, OSError, ValueError) as exc:  # ValueError: a template
            print(f"error: nothing exported: {exc}", file=sys.stderr)
            return 1
        print(report.line(), file=sys.stderr)
        if report.requests and media_as == "file":
            print(
                f"vLLM reads the images only with --allowed-local-media-path {folder.resolve() / 'media'}",
                file=sys.stderr,
            )
        if not report.requests:
            print(summarize(store, report.run).line())
    return 0


def import_run(args: Any, open_project: Callable[..., Store]) -> int:
    """Join an executor's output files with the export folder and store the answers."""
    from ..judge.batch_results import BatchResultsError, import_batch_results
    from ..judge.results import summarize

    if not getattr(args, "openai_batch", None):
        print(
            "error: import-verdicts needs PATH and --name (or --openai-batch OUT.jsonl --requests DIR)", file=sys.stderr
        )
        return 2
    if not args.requests:
        print("error: --openai-batch needs --requests DIR (the folder --export-requests wrote)", file=sys.stderr)
        return 2
    with open_project(args.db) as store:
        try:
            report = import_batch_results(store, [Path(p) for p in args.openai_batch], Path(args.requests))
        except BatchResultsError as exc:
            print(f"error: nothing imported.\n{exc}", file=sys.stderr)
            return 1
        for line in report.lines():
            print(line, file=sys.stderr)
        print(summarize(store, report.run).line())
    return 0
