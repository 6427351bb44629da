"""Versioned schema migrations for a PairScope project file: running them, and the schema
each version has.

The schema version lives in ``PRAGMA user_version``; every applied migration is also
recorded in ``schema_migrations`` with its name and time. Migrations only ever move
forward and each runs in its own transaction. The migrations themselves are
``app/store/migrations/`` (one module per version).
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Mapping
from types import MappingProxyType

from .clock import utc_now
from .migrations import LATEST_VERSION, MIGRATIONS, SHIPPED_EARLIER
from .schema_base import Migration, SchemaError, normalize_sql, run_script

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "SchemaError",
    "Shape",
    "current_version",
    "expected_objects",
    "expected_shapes",
    "migrate",
    "normalize_sql",
    "run_script",
]

#: name → (type, SQL with whitespace collapsed), as ``sqlite_master`` lists a file's objects.
Shape = Mapping[str, tuple[str, str | None]]


def current_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the file (0: none yet)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[str]:
    """Bring the schema up to the newest version; return the names applied.

    Raises :class:`SchemaError` when the file was written by a newer PairScope.
    """
    version = current_version(conn)
    latest = migrations[-1].version
    if version > latest:
        raise SchemaError(
            f"this project uses schema version {version}, but this PairScope only knows "
            f"up to {latest}; upgrade PairScope to open it"
        )
    applied = []
    for migration in migrations:
        if migration.version <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if migration.version == 1:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
            migration.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, utc_now()),
            )
            conn.execute(f"PRAGMA user_version = {int(migration.version)}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite rolls back by itself after e.g. SQLITE_FULL
                conn.execute("ROLLBACK")
            raise
        applied.append(migration.name)
    return applied


def _shape_of(migrations: tuple[Migration, ...]) -> Shape:
    with contextlib.closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        migrate(conn, migrations)
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return MappingProxyType({name: (kind, normalize_sql(sql)) for kind, name, sql in rows})


@functools.cache
def expected_objects(version: int) -> Shape:
    """Every schema object the migrations up to ``version`` create (made once, in memory)."""
    return _shape_of(tuple(m for m in MIGRATIONS if m.version <= version))


@functools.cache
def expected_shapes(version: int) -> tuple[Shape, ...]:
    """The shapes a PairScope file of ``version`` may have: the migrations' own first, then
    those of builds that shipped an earlier form of that version's migration."""
    earlier = tuple(m for m in MIGRATIONS if m.version < version)
    variants = tuple(
        _shape_of((*earlier, Migration(version, f"as shipped earlier ({i + 1})", apply)))
        for i, apply in enumerate(SHIPPED_EARLIER.get(version, ()))
    )
    return (expected_objects(version), *variants)
