"""A closed standard output ends a command quietly (``pairscope info | head -1``).

The reader of a pipe may stop early: that is its choice, not a failure of the command. As
the Python documentation's recipe (signal — "Note on SIGPIPE") says, the write fails with
``BrokenPipeError``; the command line then points its output at ``os.devnull`` (so the
interpreter's last flush cannot fail) and exits with status 0, quietly, so that ``set -o
pipefail`` pipelines through ``head`` succeed. A ``BrokenPipeError`` from anything else (a
socket, a child process) is an ordinary error: :func:`output_closed` tells them apart.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from typing import TextIO


def _closed(stream: TextIO) -> bool:
    """Whether ``stream`` is a pipe (or socket) whose reader has gone."""
    if not hasattr(select, "poll"):  # no poll (Windows): a broken pipe is taken to be ours
        return True
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # closed, detached or not a real file
        return False


def output_closed() -> bool:
    """Whether standard output or standard error has lost its reader."""
    return _closed(sys.stdout) or _closed(sys.stderr)


def silence_closed_output() -> None:
    """Point each stream whose reader has gone at ``os.devnull`` (nothing more is written)."""
    with open(os.devnull, "wb") as devnull:
        for stream in (sys.stdout, sys.stderr):
            if _closed(stream):
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    os.dup2(devnull.fileno(), stream.fileno())
