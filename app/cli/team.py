"""The command line of team work and copies: ``pack`` (one file for one annotator), ``merge``
(with ``--trust`` and ``--allow-outside-media``) and ``copy`` (a safe copy of a project)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..project import open_project
from .output import say_notes


def add_team_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``pack``, ``merge`` and ``copy`` subcommands."""
    p = sub.add_parser("pack", help="one file for one annotator: the items, their media inside it, their labels")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--out", type=Path, required=True, help="the pack: one file to send")
    p.add_argument("--annotator", required=True, help="whose pack it is (their labels go with it)")
    p.add_argument("--collection", help="only this collection")
    p.add_argument("--force", action="store_true", help="replace an existing file")

    p = sub.add_parser("merge", help="union the label histories of several projects into OUT")
    p.add_argument("out", type=Path, help="the project to merge into (created if missing)")
    p.add_argument("inputs", type=Path, nargs="+", help="annotators' projects")
    p.add_argument("--allow-unrelated", action="store_true", help="merge projects that share no items")
    p.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="NAME",
        help="take NAME's labels from any input (by default an annotator's labels come only from their own pack)",
    )
    p.add_argument(
        "--allow-outside-media",
        action="store_true",
        help="also copy media an input names by absolute path (an import's files); never a path that climbs out",
    )

    p = sub.add_parser("copy", help="a safe copy of a project, every committed label in it, even while it is open")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--out", type=Path, required=True, help="the copy's file")
    p.add_argument("--force", action="store_true", help="replace an existing file")


def run_pack(args: argparse.Namespace) -> int:
    from ..curation.teamwork import pack_project
    from ..labeling.pending import journal_path, replay_pending

    with open_project(args.db) as store:
        if stored := replay_pending(store):  # labels a failed save left in the journal go with the pack
            print(f"saved {stored} label{'s' if stored != 1 else ''} kept in {journal_path(args.db)}", file=sys.stderr)
        say_notes(store)
        result = pack_project(store, args.out, args.annotator, collection=args.collection, force=args.force)
    for why in result.media_refused[:20]:
        print(f"warning: {why}", file=sys.stderr)
    print(result.message())
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from ..curation.teamwork import merge_projects

    report = merge_projects(
        args.out,
        args.inputs,
        allow_unrelated=args.allow_unrelated,
        trust=args.trust,
        allow_outside_media=args.allow_outside_media,
    )
    for line in report.inputs:
        print(
            f"{line.path}: {line.items_added} items added, {line.labels_added} labels added"
            f" ({line.labels_present} already there), {line.conflicts} conflicts"
        )
        for why in line.media_refused[:5]:
            print(f"warning: {why}", file=sys.stderr)
        if len(line.media_refused) > 5:
            print(f"warning: … and {len(line.media_refused) - 5} more media not copied", file=sys.stderr)
    for conflict in report.conflicts:
        print(f"conflict: {conflict}", file=sys.stderr)
    for skipped in report.skipped:
        print(f"skipped: {skipped}", file=sys.stderr)
    print(f"merged into {report.out}: {report.labels_added} labels added")
    return 0


def run_copy(args: argparse.Namespace) -> int:
    from ..curation.project_copy import copy_project

    with open_project(args.db, readonly=True) as store:
        say_notes(store)  # labels still in the journal are not in the project, nor in the copy
        result = copy_project(store, args.out, force=args.force)
    print(result.message())
    return 0


__all__ = ["add_team_parsers", "run_copy", "run_merge", "run_pack"]
