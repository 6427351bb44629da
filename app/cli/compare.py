"""``pairscope compare``: two judge runs side by side — the paired 2×2 table, McNemar's exact
test, the paired bootstrap CI of the accuracy difference, per slice with Holm and Šidák
adjusted p-values — or, with three or more runs, the matrix of pairwise differences (the
statistics are :mod:`.stats.compare`'s; the parser is added to :mod:`.cli`'s by
:func:`add_parsers`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..project import open_project
from ..records import CONVENTIONS


def _resamples(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 100000, got {value}")
    return value


def add_parsers(sub) -> None:
    """The ``compare`` parser, on ``pairscope``'s subparsers."""
    p = sub.add_parser(
        "compare", help="two judge runs side by side: paired 2×2 table, McNemar, bootstrap CI, per slice"
    )
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument(
        "--run",
        type=int,
        action="append",
        required=True,
        metavar="RUN",
        help="a run id, given twice (A, then B) or more: three or more runs print the pairwise matrix",
    )
    p.add_argument(
        "--convention",
        choices=CONVENTIONS,
        default=CONVENTIONS[0],
        help="the vote convention of each run's item verdict (docs/STATISTICS.md)",
    )
    p.add_argument(
        "--undecided-wrong",
        action="store_true",
        help="count an item without a majority as wrong (default: only items both runs decided are compared)",
    )
    p.add_argument("--resamples", type=_resamples, default=2000, help="paired bootstrap resamples for the CIs")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's random seed")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


def run_compare(args: argparse.Namespace) -> int:
    from ..stats.compare import compare_many, compare_runs
    from ..stats.compare_report import comparison_dict, comparison_lines, matrix_dict, matrix_lines

    runs = list(dict.fromkeys(args.run))
    if len(runs) < 2:
        raise ValueError("compare needs at least two different runs (--run A --run B)")
    options = dict(undecided_wrong=args.undecided_wrong, resamples=args.resamples, seed=args.seed)
    with open_project(args.db, readonly=True) as store:
        if len(runs) == 2:
            comparison = compare_runs(store, runs[0], runs[1], args.convention, **options)
            doc, lines = comparison_dict(comparison), comparison_lines(comparison)
        else:
            matrix = compare_many(store, runs, args.convention, **options)
            doc, lines = matrix_dict(matrix), matrix_lines(matrix)
    print(json.dumps(doc, indent=2, ensure_ascii=False) if args.json else "\n".join(lines))
    return 0
