"""Dataset formats. Each module registers a parser under its name on import.

``get_format(name)`` and ``detect_format(path)`` are the only ways the rest of the app
picks a format: there is no if-chain over format names anywhere else.
"""

from __future__ import annotations

from pathlib import Path

# registration, in this (sorted) order, which detection tries: the release readers come
# before trl/videorewardbench, whose keys their rows also carry
from . import (  # noqa: F401
    generic,
    mm_rlhf,
    mr2bench,
    multimodal_rewardbench,
    rewardbench2,
    steps,
    trl,
    videorewardbench,
    vlrewardbench,
)
from .base import FORMATS, UTF8_BOM, DatasetFormat, FormatError, ImportContext, JSONProblem, ParsedRow, loads_json
from .messages import problem, shown
from .parquet import PARQUET, dataset_files, first_row, is_parquet


def get_format(name: str) -> DatasetFormat:
    """The registered format called ``name``; ``ValueError`` lists the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        known = ", ".join(sorted(FORMATS))
        raise ValueError(f"unknown format {shown(name, quote=True)}; known formats: {known}") from None


def detect_format(path: Path) -> DatasetFormat:
    """Guess a file's (or a folder of shards') format from its first row's keys.

    A first row that is not JSON PairScope reads is that line's problem (:func:`loads_json`)."""
    parquet = is_parquet(path)
    first = None
    if parquet:
        first = first_row(path)
    else:
        try:
            with open(path, "rb") as fh:
                for number, raw in enumerate(fh, start=1):
                    if number == 1 and raw.startswith(UTF8_BOM):
                        raw = raw[len(UTF8_BOM) :]
                    if raw.strip():
                        try:
                            first = loads_json(raw)
                        except JSONProblem:  # maybe the first line of a JSON array file
                            first = multimodal_rewardbench.first_array_row(path) if raw.lstrip()[:1] == b"[" else None
                            if first is None:
                                raise
                        if isinstance(first, list):  # a one-line JSON array file
                            first = multimodal_rewardbench.first_array_row(path)
                        break
        except OSError:
            first = None
        except JSONProblem as exc:
            raise FormatError([problem(path, number, f"{exc} (the format is told from the first row)")]) from None
    if isinstance(first, dict):
        for fmt in FORMATS.values():
            if parquet and PARQUET not in fmt.suffixes:
                continue
            if fmt.sniff is not None and fmt.sniff(first):
                return fmt
    raise FormatError(
        [problem(path, 1, f"cannot tell the format of this file; pass --format ({', '.join(sorted(FORMATS))})")]
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
