"""Argument types every command shares (argparse ``type=``): one definition each."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """An integer ≥ 1 (``--limit 0`` is a mistake, not "all")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value
