"""The store's clock: the one timestamp format every row is written with."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """ISO-8601 UTC timestamp with microseconds (sortable as text)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")
