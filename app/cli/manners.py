"""What ``pairscope WORD`` does when WORD is neither a command nor a project: a word close to
a command is a usage error with a suggestion ("did you mean stats?", difflib), a path that does
not exist is said so — neither opens the window. ``--help`` starts with the window's usage."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

#: The first lines of ``pairscope --help``: the window's usage, then the commands'.
USAGE = (
    "\n  pairscope [DB] [--annotator NAME] [--item ID]   open the window on the project DB"
    " (default: the last one, else the demo)\n  pairscope COMMAND ...   (pairscope COMMAND -h)"
)


def not_a_command(word: str, commands: Sequence[str]) -> tuple[int, str] | None:
    """Why ``pairscope WORD`` must not open the window, as (exit status, message): 2 for a
    word close to one of ``commands`` (with the suggestion), 1 for a path that does not exist.
    ``None`` when WORD may be a project to open."""
    if Path(word).exists():
        return None
    close = difflib.get_close_matches(word.lower(), commands, n=1, cutoff=0.6)
    if close and "/" not in word and "." not in word:
        return 2, f"pairscope: error: unknown command {word!r} (did you mean {close[0]}?); pairscope -h lists them"
    return 1, f"error: {word} does not exist (neither a project file nor a command; commands: {', '.join(commands)})"


def refuse_window(argv: Sequence[str], commands: Sequence[str]) -> int | None:
    """When ``pairscope ARGV`` must not open the window (:func:`not_a_command`), say why on
    stderr and return the exit status; ``None`` to open it. Without any screen a missing path
    is left to the window's own message (it says how to get one first)."""
    import importlib
    import sys

    refused = not_a_command(argv[0], commands) if argv and not argv[0].startswith("-") else None
    if refused is not None and refused[0] == 1:
        if not importlib.import_module("pairscope.app.gui.launch").has_display():
            return None
    if refused is None:
        return None
    status, message = refused
    if status == 2:
        print("usage: pairscope [DB] [--annotator NAME] [--item ID] | pairscope COMMAND ...", file=sys.stderr)
    print(message, file=sys.stderr)
    return status


__all__ = ["USAGE", "not_a_command", "refuse_window"]
