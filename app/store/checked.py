"""The open checks' memory: which project files passed ``PRAGMA quick_check`` and the check
for schema objects PairScope did not create, as they are.

The quick check reads the whole file (386 ms at 100,000 items) and the objects check builds a
reference schema in memory, so :mod:`.connection` runs both once per change of the file. A file
that passed both is remembered in a per-user cache file
(``$PAIRSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/pairscope`` or ``~/.cache/pairscope``) under
its real path with :func:`checked_key`: device, inode, size, modification and change times of
the file and of its ``-wal``. The change time cannot be set back by anyone but the clock, so
any write, a copy or a replaced file gives another key and the check runs again. A file
changed less than :data:`SETTLED_S` seconds before the check is not remembered: a change in
the same clock tick would keep its times.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import orjson

from ..durable import copy_file

#: A file changed less than this many seconds before its quick check passed is checked again
#: on its next opening (file times are coarse: a change in the same tick keeps them).
SETTLED_S = 2.0
#: How many files the cache remembers (the most recently checked).
CHECKED_MAX = 256
#: Where the cache lives (default: ``$XDG_CACHE_HOME/pairscope`` or ``~/.cache/pairscope``).
CACHE_DIR_ENV = "PAIRSCOPE_CACHE_DIR"
_WAL_HEADER_BYTES = 32


def _cache_file() -> Path:
    folder = os.environ.get(CACHE_DIR_ENV)
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "pairscope")
    return Path(folder) / "quick-checked.json"


def checked_key(path: Path, *, settled: bool = False) -> list[int] | None:
    """What identifies the file's bytes for the quick-check cache: device, inode, size and
    modification and change times (ns) of the file and of its ``-wal`` (zeros when absent or
    without frames: readers make and remove an empty one).
    Nothing outside SQLite's own writes can change the bytes without changing the change
    time. With ``settled``: ``None`` when either file changed in the last :data:`SETTLED_S`
    seconds (not to be remembered)."""
    key: list[int] = []
    newest = 0
    for target in (path, Path(f"{path}-wal")):
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is None or (target != path and st.st_size <= _WAL_HEADER_BYTES):
            key += [0, 0, 0, 0, 0]  # no -wal, or one without frames (a reader makes and removes it)
            continue
        key += [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    if settled and time.time_ns() - newest < SETTLED_S * 1e9:
        return None
    return key


def _load_checked() -> dict[str, list[int]]:
    try:
        data = orjson.loads(_cache_file().read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def was_checked(path: Path) -> bool:
    """Whether this file, exactly as it is now, passed the quick check before."""
    key = checked_key(path)
    return key is not None and _load_checked().get(os.path.realpath(path)) == key


def remember_checked(path: Path, key: list[int] | None) -> None:
    """Remember that the file passed the quick check (``key``: :func:`checked_key` taken before
    the check, ``settled``). A cache that cannot be written is no error: the check runs again."""
    if key is None or checked_key(path) != key:
        return
    cache = _cache_file()
    data = _load_checked()
    data.pop(os.path.realpath(path), None)
    data[os.path.realpath(path)] = key
    data = dict(list(data.items())[-CHECKED_MAX:])
    with contextlib.suppress(OSError):
        copy_file(orjson.dumps(data), cache)


def forget_checked(path: Path | None = None) -> None:
    """Forget one file's passed quick check (all of them without ``path``): it runs again."""
    data = {} if path is None else _load_checked()
    if path is not None and data.pop(os.path.realpath(path), None) is None:
        return
    with contextlib.suppress(OSError):
        copy_file(orjson.dumps(data), _cache_file())
