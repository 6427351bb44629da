"""``pairscope assign``, ``gold``, ``import-labels`` and ``team-report``: team work with overlap
and gold items, labels made elsewhere, the lead's report (the cores are
:mod:`..curation.assign`, :mod:`..curation.label_import` and :mod:`..stats.team_report`;
the parsers are added to :mod:`.main`'s by :func:`add_parsers`). docs/TEAMWORK.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..project import open_project
from .argtypes import positive


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a fraction from 0 to below 1, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"a fraction from 0 to below 1, got {text}")
    return value


def add_parsers(sub) -> None:
    """The four subcommands' parsers, on ``pairscope``'s subparsers."""
    from ..curation.assign import STRATEGIES
    from ..curation.label_readers import FORMATS

    p = sub.add_parser("assign", help="give items to annotators with overlap (and gold items): one pack each")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--annotators", required=True, help="names separated by commas, e.g. ana,ben,chen")
    p.add_argument("--overlap", type=positive, required=True, metavar="K", help="annotators per item")
    p.add_argument("--strategy", choices=STRATEGIES, default=STRATEGIES[0], help="the order items are handed out")
    p.add_argument("--collection", help="only this collection's items (default: every item)")
    p.add_argument("--gold-share", type=_share, default=0.0, help="share of each pack that is gold items")
    p.add_argument("--per-annotator", type=positive, metavar="N", help="at most N new items each (default: no cap)")
    p.add_argument("--seed", type=int, default=0, help="the seed of every random choice")
    p.add_argument("--out", type=Path, help="folder for the packs, OUT/<name>.pairscope (default: store only)")
    p.add_argument("--force", action="store_true", help="replace existing packs")

    p = sub.add_parser("gold", help="mark gold items (with the expected label), or take a collection's reference")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--items", help="item ids separated by commas")
    p.add_argument("--expect", help="the expected label of --items: a response index (0, 1, …), tie or both_bad")
    p.add_argument("--reference-of", metavar="COLLECTION", help="take the dataset reference of its items as gold")
    p.add_argument("--unset", action="store_true", help="take --items off the gold list")
    p.add_argument("--list", action="store_true", help="print the gold items")

    p = sub.add_parser("import-labels", help="human labels made elsewhere (JSONL, Label Studio, Argilla, Potato)")
    p.add_argument("path", type=Path, metavar="FILE", help="the exported labels")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--format", choices=("auto", *FORMATS), default="auto", help="the file's format")
    p.add_argument("--annotator", help="whose labels they all are (default: as the file names them)")
    p.add_argument("--question", help="Argilla question / Potato scheme to read (default: the only one)")
    p.add_argument("--item-key", help="key holding the item id (Label Studio data: item; Argilla: id)")

    p = sub.add_parser("team-report", help="per annotator: done of assigned, gold accuracy, kappa, flags")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--annotators", help="only these, separated by commas (default: everyone assigned)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument(
        "--too-fast",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="flag 'too fast' below this median active time per item (default 3)",
    )
    p.add_argument(
        "--min-timed", type=int, default=10, help="timed labels an annotator needs for 'too fast' (default 10)"
    )


def run_assign(args: argparse.Namespace) -> int:
    from ..curation.assign import assign_project, parse_annotators

    names = parse_annotators(args.annotators)
    with open_project(args.db) as store:
        result = assign_project(
            store,
            names,
            args.overlap,
            args.out,
            strategy=args.strategy,
            seed=args.seed,
            collection=args.collection,
            gold_share=args.gold_share,
            per_annotator=args.per_annotator,
            force=args.force,
        )
    print("\n".join(result.lines()))
    return 0


def run_gold(args: argparse.Namespace) -> int:
    from ..curation.assign import gold_from_reference, parse_gold
    from ..store.assignments import gold_items, set_gold_items, unset_gold_items

    with open_project(args.db) as store:
        if args.reference_of:
            gold, skipped = gold_from_reference(store, args.reference_of)
            set_gold_items(store, gold)
            print(f"{len(gold)} gold items from {args.reference_of!r}'s reference ({skipped} without one skipped)")
        elif args.items:
            ids = [store.item_id(x.strip()) for x in args.items.split(",")]
            if None in ids:
                missing = [x for x, i in zip(args.items.split(","), ids) if i is None]
                raise ValueError(f"no items {missing[:10]} in {args.db}")
            if args.unset:
                print(f"{unset_gold_items(store, [i for i in ids if i is not None])} items taken off the gold list")
            else:
                if not args.expect:
                    raise ValueError("--items needs --expect (a response index, tie or both_bad)")
                gold = [parse_gold(i, args.expect) for i in ids if i is not None]
                print(f"{set_gold_items(store, gold)} gold items marked")
        elif not args.list:
            raise ValueError("gold needs --items with --expect, --reference-of COLLECTION or --list")
        if args.list:
            for g in gold_items(store).values():
                expected = g.preferred if g.outcome == "prefer" else g.outcome
                print(f"{store.get_item(g.item_id).ext_id}\t{expected}\t{g.source}")
    return 0


def run_import_labels(args: argparse.Namespace) -> int:
    from ..curation.label_import import import_labels

    with open_project(args.db) as store:
        result = import_labels(
            store, args.path, args.format, annotator=args.annotator, question=args.question, item_key=args.item_key
        )
    print(result.message())
    return 0


def run_team_report(args: argparse.Namespace) -> int:
    from ..curation.assign import parse_annotators
    from ..stats.team_report import report_dict, report_lines, team_report

    names = parse_annotators(args.annotators) if args.annotators else None
    with open_project(args.db, readonly=True) as store:
        rows = team_report(store, names, too_fast_s=args.too_fast, min_timed=args.min_timed)
    if args.json:
        print(json.dumps(report_dict(rows, args.too_fast, args.min_timed), indent=2))
    else:
        print("\n".join(report_lines(rows, args.too_fast, args.min_timed)))
    sys.stdout.flush()
    return 0
