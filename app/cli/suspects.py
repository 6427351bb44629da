"""``pairscope suspects``: the items whose dataset reference the evidence says is probably
wrong, most suspect first, with the evidence, and each run's accuracy with and without them
(the model is :mod:`.stats.suspects`; the parser is added to :mod:`.cli`'s by :func:`add_parsers`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..project import open_project
from .argtypes import positive


def add_parsers(sub) -> None:
    """The ``suspects`` parser, on ``pairscope``'s subparsers."""
    p = sub.add_parser(
        "suspects",
        help="items whose dataset reference is probably wrong (judges, annotators, adjudications), with the evidence",
    )
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--top", type=positive, metavar="N", help="list only the N most suspect items (default: every one)")
    p.add_argument(
        "--runs",
        help="judge run ids separated by commas (default: every run that votes on preferences, reparses of a run once)",
    )
    p.add_argument("--open", action="store_true", help="leave out items a reviewer already decided")
    p.add_argument("--json", action="store_true", help="print the scores, the evidence and the accuracies as JSON")


def run_suspects(args: argparse.Namespace) -> int:
    """Fit the model on the project and print the queue (text or ``--json``)."""
    from ..judge.ensemble import parse_runs
    from ..stats.suspects import load_suspects
    from ..stats.suspects_report import summary_dict, summary_lines

    runs = None if args.runs is None else parse_runs(args.runs)
    with open_project(args.db, readonly=True) as store:
        report = load_suspects(store, runs)
    if args.json:
        print(json.dumps(summary_dict(report, args.top, reviewed=not args.open), indent=2, ensure_ascii=False))
    else:
        print("\n".join(summary_lines(report, args.top, reviewed=not args.open)))
    return 0
