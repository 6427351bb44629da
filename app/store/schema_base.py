"""What migrations are written with: the schema error, a migration record, DDL run inside
the caller's transaction, and SQL compared between files."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass


class SchemaError(RuntimeError):
    """The file is not a PairScope project this version can open."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Execute DDL statement by statement inside the caller's transaction.

    ``executescript`` would COMMIT first, breaking the one-transaction-per-migration rule.
    """
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        raise SchemaError(f"incomplete SQL statement in migration: {buffer.strip()[:80]}")


def normalize_sql(sql: str | None) -> str | None:
    """Schema SQL as compared between files: whitespace runs collapsed to one space."""
    return None if sql is None else " ".join(sql.split())
