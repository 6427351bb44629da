"""What the store raises when a project cannot be opened, read or written: its own
exceptions, never sqlite3's, so that nothing outside ``app/store`` imports sqlite3.

Every sqlite3 error leaving the store is translated here (:func:`store_error`): by
:meth:`StoreBase.transaction` for the writes and on the way out of every public
:class:`~pairscope.app.store.Store` method (:func:`translating`). What callers tell apart:

=====================  =================================================================
``ReadOnlyError``      the project, its folder or its disk cannot be written
``DiskFullError``      the disk is full (an ``OSError`` with ``ENOSPC``)
``StoreBusy``          another process held the write lock past the busy timeout
``StoreIOError``       the disk reported an I/O error (an ``OSError``)
``StoreCorrupt``       the file is damaged
``StoreConflict``      a constraint refused the change (e.g. a label uuid stored already)
``StoreError``         the root of them all (``SchemaError``): any other failure of SQLite
=====================  =================================================================

An error sqlite3 raises for a misuse of its API (``ProgrammingError``, ``InterfaceError``)
is a bug and is left as it is.
"""

from __future__ import annotations

import errno
import functools
import inspect
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..durable import is_disk_full
from .schema import SchemaError

#: The root of every error the store raises about a project (the same class as ``SchemaError``).
StoreError = SchemaError


class ReadOnlyError(SchemaError, PermissionError):
    """A write was attempted on a project that is open read-only (or cannot be written)."""


class DiskFullError(SchemaError, OSError):
    """A write failed because the disk is full; the transaction was rolled back (nothing of it
    was kept). ``errno`` is ``ENOSPC``; the SQLite or OS error is the ``__cause__``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.ENOSPC


class StoreBusy(SchemaError):
    """Another connection held the project's lock past the busy timeout; nothing was written."""


class StoreIOError(SchemaError, OSError):
    """The disk reported an I/O error, or SQLite could not open a file it needs."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.EIO


class StoreCorrupt(SchemaError):
    """The project file is damaged."""


class StoreConflict(SchemaError):
    """A constraint of the project refused the change (nothing of it was written)."""


def errorname(exc: BaseException) -> str:
    """SQLite's name for the error (``SQLITE_BUSY``, ``SQLITE_FULL`` ...); ``""`` for none."""
    return getattr(exc, "sqlite_errorname", "") or ""


def is_damage(exc: BaseException) -> bool:
    return errorname(exc).startswith("SQLITE_CORRUPT")


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk is full: SQLite's ``SQLITE_FULL``, or an ``OSError``'s errno."""
    return errorname(exc) == "SQLITE_FULL" or is_disk_full(exc)


def is_readonly(exc: BaseException) -> bool:
    """Whether SQLite refused to write (``SQLITE_READONLY`` and its extended codes)."""
    return errorname(exc).startswith("SQLITE_READONLY")


def damaged(path: Path, why: str) -> str:
    """What the store says of a damaged project file."""
    return (
        f"{path} is damaged ({why}); refusing to open it. Restore it from a backup, or rescue"
        f" what can be read with: sqlite3 {path.name} .recover"
    )


def store_error(exc: BaseException, path: Path, *, readonly: bool = False) -> SchemaError | None:
    """The store's exception for ``exc``, a sqlite3 error (or an ``OSError`` of a full disk)
    raised while using the project at ``path``; ``None`` for anything else (re-raise it)."""
    if isinstance(exc, SchemaError):
        return None
    if is_full(exc):
        return DiskFullError(
            f"the disk is full ({exc}): the change to {path} was rolled back and nothing of it"
            " was written; free some space and try again"
        )
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.ProgrammingError):
        return None
    name = errorname(exc)
    if is_readonly(exc):
        how = "open read-only" if readonly else "read-only"
        return ReadOnlyError(f"project {path} is {how}; nothing was written ({exc})")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_PROTOCOL")):
        return StoreBusy(f"project {path} is busy: another process is writing to it ({exc}); nothing was written")
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
        return StoreIOError(f"the disk reported an error using {path} ({exc})")
    if is_damage(exc):
        return StoreCorrupt(damaged(path, str(exc)))
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreConflict(f"project {path} refused the change ({exc}); nothing of it was written")
    return StoreError(f"the project file {path} is not usable: {exc}")


_F = TypeVar("_F", bound=Callable[..., Any])


def _translated(method: _F) -> _F:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            failure = store_error(exc, self.path, readonly=self.readonly)
            if failure is None:
                raise
            raise failure from exc

    return call  # type: ignore[return-value]


def translating(cls: type) -> type:
    """Translate the sqlite3 errors leaving any public method of ``cls`` (a class decorator).
    Context managers (``transaction``, ``read_snapshot``) translate for themselves."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        if inspect.isfunction(attr) and not inspect.isgeneratorfunction(inspect.unwrap(attr)):
            if getattr(attr, "__wrapped__", None) is None:  # a @contextmanager is wrapped already
                setattr(cls, name, _translated(attr))
        elif isinstance(attr, property) and attr.fget is not None:
            setattr(cls, name, property(_translated(attr.fget), attr.fset, attr.fdel, attr.__doc__))
    return cls


__all__ = [
    "DiskFullError",
    "ReadOnlyError",
    "StoreBusy",
    "StoreConflict",
    "StoreCorrupt",
    "StoreError",
    "StoreIOError",
    "store_error",
    "translating",
]
