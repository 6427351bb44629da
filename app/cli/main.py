"""The ``pairscope`` command line: a thin layer over the store and the importer.

``pairscope [DB] [--annotator NAME]`` opens the window; ``import``, ``info`` and ``demo``
work without Qt. Exit codes: 0 success, 1 bad input (nothing written), 2 usage error,
70 an internal error (a bug: one line asks for a report; ``PAIRSCOPE_DEBUG=1`` prints the
traceback). A reader that closes the output early (``| head -1``) ends the command quietly,
status 0 (:mod:`.pipes`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..project import NewProject, open_project
from ..store import SchemaError
from . import team
from .argtypes import positive as _positive
from .manners import USAGE, refuse_window
from .output import print_import_report as _print_report
from .output import say_notes as _say_notes

# ``pairscope PROJECT`` (the window) imports none of the formats, the importer, the demo, the
# judge's modes (numpy) or the models package: each command, and build_parser, imports what
# it needs (start-up time is measured in bench/annotation_bench.py).

#: The exit code of an internal error (sysexits.h EX_SOFTWARE), never of bad input (1).
EXIT_INTERNAL = 70

SUBCOMMANDS = (
    "import",
    "info",
    "demo",
    "judge",
    "import-verdicts",
    "reparse",
    "stats",
    "export",
    "pack",
    "merge",
    "copy",
    "schema",
    "ensemble",
    "hard-set",
    "suspects",
    "compare",
    "assign",
    "gold",
    "import-labels",
    "team-report",
)


def _parse_map(pairs: Sequence[str] | None) -> dict[str, str]:
    mapping = {}
    for pair in pairs or ():
        field, sep, key = pair.partition("=")
        if not sep or not field.strip() or not key.strip():
            raise argparse.ArgumentTypeError(f"--map expects FIELD=KEY, got {pair!r}")
        mapping[field.strip()] = key.strip()
    return mapping


def _k_value(text: str) -> int:
    """A run's K: a whole number from 1 to ``MAX_K`` (the vote tables are K wide)."""
    from ..judge.modes import k_problem

    try:
        value: object = int(text)
    except ValueError:
        value = text
    if why := k_problem(value):
        raise argparse.ArgumentTypeError(why)
    return int(text)


def _device(text: str) -> str:
    """``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""
    name, _, index = text.partition(":")
    if text in ("auto", "cpu", "cuda", "mps") or (name == "cuda" and index.isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"choose from auto, cpu, cuda, cuda:N, mps (got {text!r})")


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` names every option's default (where it has one the help does not already say)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" not in text
            and "default" not in text
            and default not in (None, False, argparse.SUPPRESS)
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


def build_parser() -> argparse.ArgumentParser:
    from pairscope.models.options import OpenAIOptions, TransformersOptions
    from pairscope.models.parsing import PARSERS

    from ..curation.export import EXPORT_FORMATS, MANIFEST_PATHS, MEDIA_CHOICES, default_media
    from ..formats import FORMATS
    from ..judge.modes import MODES
    from ..records import CONVENTION_ALIASES, SCORING_CONVENTIONS
    from . import batch as batch_flags
    from .team import add_team_parsers

    parser = argparse.ArgumentParser(
        prog="pairscope", usage=USAGE, description="Verify and curate multimodal preference data."
    )
    parser.add_argument("--version", action="version", version=f"pairscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog="pairscope")

    p = sub.add_parser("import", help="import a dataset file into a project (one transaction)")
    p.add_argument("path", type=Path, help="JSONL or Parquet file")
    p.add_argument("--db", type=Path, required=True, help="project file (created if missing)")
    p.add_argument("--format", choices=sorted(FORMATS), help="dataset format (default: detect)")
    p.add_argument("--media-root", type=Path, help="folder that relative media paths are under")
    p.add_argument("--map", action="append", metavar="FIELD=KEY", help="read FIELD from KEY (repeatable)")
    p.add_argument(
        "--allow-outside-media",
        action="store_true",
        help="accept media paths that are absolute or leave the media root (refused by default)",
    )

    p = sub.add_parser("info", help="counts of items, labels, judge runs and missing media")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--missing", action="store_true", help="list every item whose media are missing or refused")

    p = sub.add_parser("demo", help="create a project from the bundled demo dataset")
    p.add_argument("path", type=Path, help="project file to create")

    p = sub.add_parser("judge", help="run a judge model (local, or behind an endpoint) over a project (resumable)")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--model", required=True, help="model folder (transformers) or served model name (openai)")
    p.add_argument(
        "--backend",
        default="transformers",
        help="transformers: a local model folder; openai: any OpenAI-compatible endpoint (default: transformers)",
    )
    p.add_argument("--endpoint", help="openai backend: the server's URL, e.g. http://localhost:8000/v1")
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="openai backend: the NAME of the environment variable holding the API key (the key is never stored)",
    )
    # No defaults for backend flags: the backend's options record holds them (models/options.py).
    openai = OpenAIOptions
    p.add_argument("--concurrency", type=int, help=f"openai backend: requests in flight (default {openai.concurrency})")
    p.add_argument("--timeout", type=float, help=f"openai backend: seconds per request (default {openai.timeout:g})")
    p.add_argument(
        "--retries",
        type=int,
        help=f"openai backend: retries on 429/5xx/timeouts/dropped connections (default {openai.retries})",
    )
    p.add_argument("--mode", choices=tuple(MODES), default="pairwise", help="what the judge is asked")
    p.add_argument("--k", type=_k_value, default=1, help="samples per item, majority-voted (see docs/STATISTICS.md)")
    p.add_argument(
        "--parser",
        choices=PARSERS,
        default="lenient",
        help="verdict parser: lenient (every common verdict form) or strict (only the template's"
        " exact verdict line, as the official scripts)",
    )
    p.add_argument(
        "--new-run",
        action="store_true",
        help="start a new run even if one with the same model and protocol exists (default: resume it)",
    )
    p.add_argument("--both-orders", action="store_true", help="judge every sample in both answer orders")
    p.add_argument("--frames", type=int, default=8, help="video frames sampled uniformly")
    batch = TransformersOptions.batch_size
    p.add_argument("--batch-size", type=_positive, default=batch, help="prompts generated together (transformers)")
    p.add_argument("--seed", type=int, default=0, help="answer orders and sampling are drawn from it")
    p.add_argument("--limit", type=_positive, help="judge at most this many items (default: all)")
    p.add_argument("--template", help="bundled template name or a template file")
    p.add_argument("--max-new-tokens", type=_positive, default=512, help="longest rationale generated")
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (each distinct prompt judged once)")
    batch_flags.export_flags(p)  # --export-requests DIR, --media-as
    p.add_argument(
        "--device",
        type=_device,
        metavar="{auto,cpu,cuda,cuda:N,mps}",
        help="transformers backend: where the model runs; auto: the GPU when there is one"
        f" (default: {TransformersOptions.device})",
    )

    p = sub.add_parser("import-verdicts", help="make a judge run from verdicts or scores produced elsewhere (JSONL)")
    p.add_argument(
        "path", type=Path, nargs="?", help="JSONL: item, sample, order, and output | choice | scores, or step_* rows"
    )
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--name", help="the judge's name (shown as the run's model); needed with PATH")
    batch_flags.import_flags(p)  # --openai-batch OUT.jsonl, --requests DIR
    p.add_argument(
        "--k", type=_k_value, help="samples per item the official majority is taken of (default: the most given)"
    )
    p.add_argument("--parser", choices=PARSERS, default="lenient", help="parser for 'output' rows")

    p = sub.add_parser("reparse", help="read a run's stored raw outputs with another parser, as a new run")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument(
        "--run", type=int, required=True, help="the run whose raw outputs to read again (pairscope info lists runs)"
    )
    p.add_argument("--parser", choices=PARSERS, required=True, help="the verdict parser to read them with")

    p = sub.add_parser("stats", help="agreement, judge accuracy and length bias")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument("--run", type=int, help="only this judge run")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--report", type=Path, metavar="DIR", help="also write report.md, stats.json and figures")
    p.add_argument("--csv", type=Path, metavar="DIR", help="also write the tables as CSV (docs/RESEARCH_API.md)")
    p.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples for the 95%% CIs")
    conventions = (*SCORING_CONVENTIONS, *CONVENTION_ALIASES)  # the 'score as' table lists them all
    p.add_argument("--convention", choices=conventions, default="vlrewardbench", help="score as this toolkit does")

    p = sub.add_parser("export", help="export a curated set (JSONL or Parquet + media + manifest.json)")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    p.add_argument(
        "--format",
        required=True,
        choices=tuple(EXPORT_FORMATS),
        help="vlrewardbench: the benchmark's rows; trl: TRL's conversational chosen/rejected rows (trl-plain:"
        " plain strings; an item ranked in full gives a row per ordered pair); hf: a Hugging Face dataset (Parquet,"
        " images embedded, dataset card); jsonl: every field, label and ranking; mr2bench, rewardbench2: those"
        " releases' ranking rows",
    )
    p.add_argument("--out", type=Path, required=True, help="output folder (must be empty unless --force)")
    p.add_argument(
        "--source",
        default="human",
        metavar="SOURCE",
        help="where each preference comes from: human (default: the adjudication, else the preference all"
        " annotators' labels share), adjudicated, consensus, annotator:NAME, reference (the dataset's)",
    )
    p.add_argument(
        "--fallback-reference",
        action="store_true",
        help="where the source gives no preference, export the dataset's reference (never over a disagreement)",
    )
    p.add_argument("--include-discarded", action="store_true", help="export items a human discarded too")
    p.add_argument("--collection", help="only this collection")
    p.add_argument("--only", choices=("adjudicated", "agreed"), help="only adjudicated / agreed (2+ annotators) items")
    p.add_argument("--force", action="store_true", help="write into a non-empty folder")
    p.add_argument(
        "--media",
        choices=MEDIA_CHOICES,
        help="copy: the media files into the export folder; reference: copy nothing, rows name the dataset's own"
        " paths. A missing file keeps its path either way and is counted once"
        f" (default: the format's own: {', '.join(f'{n} {default_media(n)}' for n in EXPORT_FORMATS)})",
    )
    p.add_argument(
        "--manifest-paths",
        choices=MANIFEST_PATHS,
        default="name",
        help="name: the manifest names the project by its file name; absolute: by its absolute path",
    )
    p.add_argument(
        "--reference-corrections",
        choices=("apply", "leave-out"),
        help="items whose reference a reviewer marked wrong (pairscope suspects; the window's Suspect"
        " references): apply writes the corrected reference with who/when/why (reference_corrected),"
        " leave-out skips them (default: the dataset's reference as imported)",
    )

    add_team_parsers(sub)  # pack, merge, copy

    p = sub.add_parser("schema", help="the project's label schema (error types, discard reasons, strengths, keys)")
    p.add_argument("--db", type=Path, required=True, help="the project file (.pairscope)")
    actions = p.add_subparsers(dest="schema_action", metavar="ACTION", required=True)
    a = actions.add_parser("show", help="the schema labels are given under now, and every stored version")
    a.add_argument("--version", type=int, dest="schema_version", help="a stored version instead of the newest")
    a.add_argument("--json", action="store_true", help="print JSON")
    a = actions.add_parser("set", help="store a schema file (TOML) as the project's new version")
    a.add_argument("file", type=Path, help="schema file (TOML; see docs/ANNOTATION.md)")
    a.add_argument("--guidelines", type=Path, metavar="MD", help="Markdown guidelines (default: the file's own)")
    a.add_argument("--note", default="", help="why this version (kept with it)")
    a = actions.add_parser("export", help="write the schema and its guidelines as a TOML file")
    a.add_argument("--version", type=int, dest="schema_version", help="a stored version instead of the newest")
    a.add_argument("--out", type=Path, help="file to write (default: standard output)")
    from .ensemble import add_parsers as add_ensemble_parsers

    add_ensemble_parsers(sub)
    from .suspects import add_parsers as add_suspects_parsers

    add_suspects_parsers(sub)
    from .compare import add_parsers as add_compare_parsers

    add_compare_parsers(sub)
    from .assign import add_parsers as add_assign_parsers

    add_assign_parsers(sub)
    for command in sub.choices.values():
        command.formatter_class = HelpFormatter
    return parser


def build_gui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pairscope",
        formatter_class=HelpFormatter,
        usage=USAGE,
        description="Open the PairScope window. Commands: " + ", ".join(SUBCOMMANDS) + " (pairscope COMMAND -h).",
    )
    parser.add_argument("db", nargs="?", type=Path, help="project file (default: the last one, else the demo)")
    parser.add_argument("--annotator", help="your annotator name (remembered)")
    parser.add_argument("--item", metavar="ID", help="open at this item (its dataset id)")
    parser.add_argument("--version", action="version", version=f"pairscope {__version__}")
    return parser


def cmd_import(args) -> int:
    from ..importer import import_file

    mapping = _parse_map(args.map)
    # A failed import into a new project leaves nothing behind: no file, no side files, no media folder.
    with NewProject(args.db), open_project(args.db, create=True) as store:
        report = import_file(
            store, args.path, args.format, args.media_root, mapping, allow_outside_media=args.allow_outside_media
        )
    _print_report(report, args.db)
    return 0


def cmd_info(args) -> int:
    from .output import run_info

    return run_info(args)


def cmd_demo(args) -> int:
    from ..demo import create_demo_project

    reports = create_demo_project(args.path)
    for report in reports:
        _print_report(report, Path(args.path))
    print(f"demo project ready: {args.path}")
    return 0


def cmd_judge(args) -> int:
    from .judge import (
        run_judge,  # the judge pulls in the models package only when asked
    )

    return run_judge(args, open_project)


def cmd_import_verdicts(args) -> int:
    from ..judge.derived import VerdictFileError, import_verdicts
    from ..judge.results import summarize

    if getattr(args, "openai_batch", None) or args.path is None or not args.name:
        from .batch import import_run  # --openai-batch OUT.jsonl --requests DIR (or what is missing)

        return import_run(args, open_project)
    with open_project(args.db) as store:
        try:
            run = import_verdicts(store, args.path, args.name, k=args.k, parser=args.parser)
        except VerdictFileError as exc:
            print(f"error: nothing imported.\n{exc}", file=sys.stderr)
            return 1
        print(f"imported run {run.id} ({run.mode}, k={run.k}, parser {run.parser}) from {args.path}", file=sys.stderr)
        print(summarize(store, run).line())
    return 0


def cmd_reparse(args) -> int:
    from ..judge.derived import reparse
    from ..judge.results import summarize

    with open_project(args.db) as store:
        run = reparse(store, args.run, args.parser)
        print(f"run {run.id}: run {args.run} reparsed with the {run.parser} parser", file=sys.stderr)
        print(summarize(store, run).line())
    return 0


def cmd_stats(args) -> int:
    from ..stats.report import compute_stats, report_json, summary_text, write_report

    with open_project(args.db, readonly=True) as store:
        _say_notes(store)
        report = compute_stats(store, args.run, bootstrap=args.bootstrap)
        if args.csv:  # pandas loads only here
            from ..research import write_stats_csv

            print(f"csv: {len(write_stats_csv(store, report, args.csv))} tables in {args.csv}", file=sys.stderr)
    c = args.convention
    print(json.dumps(report_json(report, c), indent=2, ensure_ascii=False) if args.json else summary_text(report, c))
    if args.report:
        print(f"report: {write_report(report, args.report)}", file=sys.stderr)
    return 0


def cmd_export(args) -> int:
    from ..curation.export import export_project

    with open_project(args.db, readonly=True) as store:
        _say_notes(store)
        try:
            result = export_project(
                store,
                args.out,
                args.format,
                source=args.source,
                fallback_reference=args.fallback_reference,
                include_discarded=args.include_discarded,
                collection=args.collection,
                only=args.only,
                force=args.force,
                media=args.media,
                manifest_paths=args.manifest_paths,
                reference_corrections=args.reference_corrections,
            )
        except FileExistsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    items = "item" if result.n_items == 1 else "items"
    print(f"preference: {result.source_description}")
    print(f"exported {result.n_items} {items} to {result.out_dir} ({result.format}); manifest: {result.manifest_path}")
    print(f"  per preference source: {result.sources_text()}")
    print(f"  {result.media_summary}")  # missing media counted once, never one line per item
    if result.skipped:
        print(f"skipped {len(result.skipped)}:")
    for line in result.skip_lines():  # every reason with its items (all of them in the manifest)
        print(f"  {line}")
    if any(reason.startswith("no human preference") for _item, reason in result.skipped):
        print("  (--fallback-reference or --source reference exports the dataset's reference for those)")
    for item, warning in result.warnings:
        print(f"warning: item {item}: {warning}", file=sys.stderr)
    return 0


def cmd_pack(args) -> int:
    return team.run_pack(args)


def cmd_merge(args) -> int:
    return team.run_merge(args)


def cmd_copy(args) -> int:
    return team.run_copy(args)


def cmd_schema(args) -> int:
    from .schema import run_schema_command

    return run_schema_command(args)


def cmd_ensemble(args) -> int:
    from .ensemble import run_ensemble

    return run_ensemble(args)


def cmd_hard_set(args) -> int:
    from .ensemble import run_hard_set

    return run_hard_set(args)


def cmd_suspects(args) -> int:
    from .suspects import run_suspects

    return run_suspects(args)


def cmd_compare(args) -> int:
    from .compare import run_compare

    return run_compare(args)


def cmd_team(name: str):
    """The ``assign``/``gold``/``import-labels``/``team-report`` command (app/cli/assign.py)."""
    return lambda args: getattr(importlib.import_module(".assign", __package__), "run_" + name.replace("-", "_"))(args)


COMMANDS = {
    "import": cmd_import,
    "info": cmd_info,
    "demo": cmd_demo,
    "judge": cmd_judge,
    "import-verdicts": cmd_import_verdicts,
    "reparse": cmd_reparse,
    "stats": cmd_stats,
    "export": cmd_export,
    "pack": cmd_pack,
    "merge": cmd_merge,
    "copy": cmd_copy,
    "schema": cmd_schema,
    "ensemble": cmd_ensemble,
    "hard-set": cmd_hard_set,
    "suspects": cmd_suspects,
    "compare": cmd_compare,
    **{name: cmd_team(name) for name in ("assign", "gold", "import-labels", "team-report")},
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a closed standard output (``| head -1``) ends it quietly, status 0."""
    from .pipes import output_closed, silence_closed_output

    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not as "Exception ignored" at exit
    except BrokenPipeError:
        if not output_closed():
            raise
        silence_closed_output()
        return 0


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
        if (refused := refuse_window(argv, SUBCOMMANDS)) is not None:  # a typo or a missing file
            return refused
        gui_args = build_gui_parser().parse_args(argv)
        # Qt lives in app.gui; the core only reaches it when the user asks for a window.
        launch = importlib.import_module("pairscope.app.gui.launch")
        return launch.run(gui_args.db, gui_args.annotator, gui_args.item)
    from ..formats import FormatError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        return COMMANDS[args.command](args)
    except argparse.ArgumentTypeError as exc:
        parser.error(_bounded(exc))
    except BrokenPipeError as exc:
        from .pipes import output_closed

        if output_closed():  # the reader went away (main ends quietly)
            raise
        print(f"error: {_bounded(exc)}", file=sys.stderr)
        return 1
    except FormatError as exc:  # its message is bounded: file:line problems, summarised
        print(f"error: nothing imported. {exc}", file=sys.stderr)
        return 1
    except (OSError, SchemaError, ValueError) as exc:  # a missing file, a folder, read-only media, a busy project ...
        print(f"error: {_bounded(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug, not bad input: its own exit code, so scripts can tell them apart
        if os.environ.get("PAIRSCOPE_DEBUG", "") not in ("", "0"):
            traceback.print_exc()
        print(
            f"error: internal error ({_bounded(exc, lines=1, named=True)}); please report it"
            " (with the command you ran). PAIRSCOPE_DEBUG=1 prints the traceback.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return 0


def _bounded(exc: BaseException, lines: int = 30, named: bool = False) -> str:
    """An exception's message as the command line prints it: at most ``lines`` lines of at
    most 500 characters, control characters escaped; ``named``: after the exception's type."""
    from ..formats.messages import shown

    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None and text.startswith("[Errno"):
        text = f"{exc.filename}: {exc.strerror[0].lower()}{exc.strerror[1:]}"  # not Python's "[Errno 2] …"
    if named:
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    parts = text.splitlines() or [""]
    kept = [shown(part, 500) for part in parts[:lines]]
    if len(parts) > lines:
        kept[-1] += f" … ({len(parts) - lines:,} more lines)"
    return "\n".join(kept)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
