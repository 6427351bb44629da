"""``pairscope ensemble`` and ``pairscope hard-set``: several judge runs read together, and the
hard set they mine saved as a collection (the core is :mod:`.judge.ensemble`; the commands'
parsers are added to :mod:`.cli`'s by :func:`add_parsers`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..project import open_project
from ..records import CONVENTIONS as VOTES


def add_parsers(sub) -> None:
    """The two subcommands' parsers, on ``pairscope``'s subparsers."""
    # The judge modules (numpy) load only when one of these commands runs.
    vote_help = "the vote convention of each run's item verdict (docs/STATISTICS.md)"
    p = sub.add_parser("ensemble", help="several judge runs together: accuracy, kappa between judges, wrong counts")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--runs", required=True, help="run ids separated by commas, e.g. 1,2,3")
    p.add_argument("--vote", choices=VOTES, default=VOTES[0], help=vote_help)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p = sub.add_parser("hard-set", help="save the items at least M of the runs fail as a collection (VL-RewardBench)")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--runs", required=True, help="run ids separated by commas, e.g. 1,2,3")
    p.add_argument("--min-fail", type=int, metavar="M", help="judges that must fail an item (default: a majority)")
    p.add_argument("--name", required=True, help="the new collection's name")
    p.add_argument("--vote", choices=VOTES, default=VOTES[0], help=vote_help)
    p.add_argument(
        "--undecided-fails",
        action="store_true",
        help="count a judge without a majority on an item as failing it (default: only wrong verdicts fail)",
    )


def run_ensemble(args: argparse.Namespace) -> int:
    from ..judge.ensemble import load_ensemble, parse_runs, summary_dict, summary_lines

    with open_project(args.db, readonly=True) as store:
        ensemble = load_ensemble(store, parse_runs(args.runs), args.vote)
    if args.json:
        print(json.dumps(summary_dict(ensemble), indent=2))
    else:
        print("\n".join(summary_lines(ensemble)))
    return 0


def run_hard_set(args: argparse.Namespace) -> int:
    from ..judge.ensemble import build_hard_set, default_min_fail, load_ensemble, parse_runs, save_hard_set

    with open_project(args.db) as store:
        ensemble = load_ensemble(store, parse_runs(args.runs), args.vote)
        n = len(ensemble.runs)
        min_fail = default_min_fail(n) if args.min_fail is None else args.min_fail
        hard = build_hard_set(ensemble, args.name, min_fail, args.undecided_fails)
        size = save_hard_set(store, hard)
    print(f"collection {hard.name!r}: {size} items ({hard.description()})")
    print(
        f"export it with: pairscope export --db {args.db} --format vlrewardbench"
        f" --collection {json.dumps(hard.name)} --out DIR"
    )
    return 0
