"""The store's clock: the one timestamp format every row is written with, and which times it accepts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

#: How far past this machine's clock a stored time may be (another machine's clock may run ahead).
MAX_SKEW = timedelta(days=1)


def utc_now() -> str:
    """ISO-8601 UTC timestamp with microseconds (sortable as text)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def time_problem(value: object, now: datetime | None = None) -> str | None:
    """Why ``value`` is not a time a row may carry (completing "created_at …"), or ``None``.

    A time is ISO-8601 text (no zone: UTC) and not after now + :data:`MAX_SKEW`: the newest
    label is the current one, so a label dated 9999 would stay current for ever."""
    if not isinstance(value, str):
        return "is not an ISO-8601 time"
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return "is not an ISO-8601 time"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when > (now or datetime.now(UTC)) + MAX_SKEW:
        return f"is in the future (after this machine's time + {MAX_SKEW.days} day)"
    return None
