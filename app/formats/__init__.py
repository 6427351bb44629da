"""Dataset formats. Each module registers a parser under its name on import.

``get_format(name)`` and ``detect_format(path)`` are the only ways the rest of the app
picks a format: there is no if-chain over format names anywhere else.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..records import ImportProblem
from . import generic, steps, trl, videorewardbench, vlrewardbench  # noqa: F401  (registration)
from .base import FORMATS, DatasetFormat, FormatError, ImportContext, ParsedRow
from .parquet import PARQUET, dataset_files, first_row, is_parquet


def get_format(name: str) -> DatasetFormat:
    """The registered format called ``name``; ``ValueError`` lists the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; known formats: {', '.join(sorted(FORMATS))}") from None


def detect_format(path: Path) -> DatasetFormat:
    """Guess a file's (or a folder of shards') format from its first row's keys."""
    parquet = is_parquet(path)
    first = None
    if parquet:
        first = first_row(path)
    else:
        try:
            with open(path, "rb") as fh:
                for raw in fh:
                    if raw.strip():
                        first = json.loads(raw)
                        break
        except (OSError, ValueError, RecursionError):
            first = None
    if isinstance(first, dict):
        for fmt in FORMATS.values():
            if parquet and PARQUET not in fmt.suffixes:
                continue
            if fmt.sniff is not None and fmt.sniff(first):
                return fmt
    raise FormatError(
        [
            ImportProblem(
                str(path), 1, f"cannot tell the format of this file; pass --format ({', '.join(sorted(FORMATS))})"
            )
        ]
    )


__all__ = [
    "FORMATS",
    "DatasetFormat",
    "FormatError",
    "ImportContext",
    "ParsedRow",
    "get_format",
    "detect_format",
    "dataset_files",
]
