"""Every keyboard shortcut of the annotation window, in one table.

The window binds these to actions and the ``?`` cheat sheet lists them, so the two can
never disagree. Keys use Qt's portable key-sequence text.

Strength levels, error types and discard reasons come from the project's label schema
(``app/labeling/schema.py``): :func:`keymap_for` puts a schema's entries between the fixed
ones; :data:`KEYMAP` is the table of the built-in schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ..records import DEFAULT_DISCARD_CHOICES, DEFAULT_ERROR_CHOICES, DEFAULT_STRENGTH_CHOICES


@dataclass(frozen=True)
class Shortcut:
    action: str
    keys: tuple[str, ...]
    description: str
    section: str


class Choice(Protocol):
    """A label-schema entry as the keymap reads it (``app.labeling.schema.Choice``)."""

    @property
    def name(self) -> str: ...
    @property
    def key(self) -> str | None: ...
    @property
    def description(self) -> str: ...


@dataclass(frozen=True)
class _Seed:
    name: str
    label: str
    key: str | None
    description: str


_S = Shortcut
#: Before the schema's entries: the preference keys.
_HEAD: tuple[Shortcut, ...] = (
    _S("prefer_1", ("1",), "Response 1 is better", "Label"),
    _S("prefer_2", ("2",), "Response 2 is better", "Label"),
    _S("prefer_3", ("3",), "Rank response 3 next (N > 2)", "Label"),
    _S("prefer_4", ("4",), "Rank response 4 next (N > 2)", "Label"),
    _S("rank_tie", ("=",), "Tie the next ranked response with the previous one (N > 2)", "Label"),
    _S("rank_back", ("Backspace",), "Take back the last ranked response (N > 2)", "Label"),
    _S("tie", ("T",), "Tie", "Label"),
    _S("both_bad", ("B",), "Both bad", "Label"),
    _S("discard", ("X",), "Discard the pair", "Label"),
)
#: After the schema's entries: steps, notes, navigation, view, media, judge, review, help.
FIXED_TAIL: tuple[Shortcut, ...] = (
    _S("step_correct", ("F",), "Mark the current step correct, go to the next", "Steps"),
    _S("step_incorrect", ("G",), "Mark the current step incorrect, go to the next", "Steps"),
    _S("note", ("Ctrl+E",), "Write a note", "Label"),
    _S("clear_label", ("Ctrl+Backspace",), "Clear my label for this item", "Label"),
    _S("next_item", ("N", "J", "Down"), "Next item", "Navigate"),
    _S("previous_item", ("P", "K", "Up"), "Previous item", "Navigate"),
    _S("next_unlabeled", ("U",), "Next unlabeled item", "Navigate"),
    _S("search", ("Ctrl+F",), "Search items", "Navigate"),
    _S("save_filter", ("Ctrl+Shift+S",), "Save the table's filter under a name", "Navigate"),
    _S("open_filter", ("Ctrl+Shift+O",), "Show the items of a saved filter", "Navigate"),
    _S("undo", ("Ctrl+Z",), "Undo the last label change", "Edit"),
    _S("redo", ("Ctrl+Shift+Z", "Ctrl+Y"), "Redo", "Edit"),
    _S("toggle_markdown", ("M",), "Markdown / plain text", "View"),
    _S("toggle_diff", ("H",), "Highlight differences", "View"),
    _S("zoom_in", ("+",), "Zoom in", "Media"),
    _S("zoom_out", ("-",), "Zoom out", "Media"),
    _S("zoom_fit", ("0",), "Fit to view", "Media"),
    _S("zoom_actual", ("Ctrl+0",), "Actual size (1:1)", "Media"),
    _S("next_image", ("]",), "Next image of the item", "Media"),
    _S("previous_image", ("[",), "Previous image of the item", "Media"),
    _S("play_pause", ("Space",), "Play / pause video", "Media"),
    _S("frame_forward", (".",), "Next video frame", "Media"),
    _S("frame_back", (",",), "Previous video frame", "Media"),
    _S("judge_panel", ("Ctrl+J",), "Show or hide the judge panel (reveals the dataset's reference)", "Judge"),
    _S("judge_item", ("Ctrl+Shift+J",), "Judge this item with the local model", "Judge"),
    _S("review_panel", ("Ctrl+R",), "Show or hide every label and verdict of the item (review)", "Review"),
    _S("adjudicate", ("Ctrl+D",), "Adjudicate: label keys set the final decision", "Review"),
    _S("add_to_collection", ("Ctrl+Shift+C",), "Add this item to a collection", "Review"),
    _S("collect_filtered", ("Ctrl+Shift+A",), "Add every item shown in the table to a collection", "Review"),
    _S("ensemble", ("Ctrl+Shift+M",), "Ensemble: several judge runs side by side, hard-set mining", "Review"),
    _S("export", ("Ctrl+Shift+E",), "Export a curated set (VL-RewardBench, TRL or JSONL)", "Review"),
    _S("statistics", ("Ctrl+I",), "Statistics: agreement, judge accuracy, length bias", "View"),
    _S("cheat_sheet", ("?", "F1"), "Show this list", "Help"),
    _S("guidelines", ("F2",), "Show or hide the project's labeling guidelines", "Help"),
)
#: Every shortcut that no label schema can change (a schema's keys must not clash with these).
FIXED: tuple[Shortcut, ...] = _HEAD + FIXED_TAIL
#: The File menu (``app/gui/file_menu.py`` binds these): first in the menu bar, ``&F`` its mnemonic.
FILE_MENU = "&File"
FILE_KEYS: tuple[Shortcut, ...] = (
    _S("open_project", ("Ctrl+O",), "Open a project", "File"),
    _S("import_dataset", ("Ctrl+Shift+I",), "Import a dataset", "File"),
    _S("quit", ("Ctrl+Q",), "Quit", "File"),
)
_MOVES = ("Left", "Right", "Up", "Down", "Home", "End", "PgUp", "PgDown")
#: What the window's text fields, lists and tables do with keys (Qt's standard bindings for
#: copying, deleting, moving and selecting): never a schema's, or typing a note breaks.
EDITING_KEYS: tuple[Shortcut, ...] = (
    _S("copy", ("Ctrl+C", "Ctrl+Ins"), "Copy", "Editing text"),
    _S("cut", ("Ctrl+X", "Shift+Del"), "Cut", "Editing text"),
    _S("paste", ("Ctrl+V", "Shift+Ins"), "Paste", "Editing text"),
    _S("select_all", ("Ctrl+A",), "Select all", "Editing text"),
    _S("undo_typing", ("Alt+Backspace", "Alt+Shift+Backspace"), "Undo or redo typing", "Editing text"),
    _S("delete", ("Backspace", "Del", "Shift+Backspace", "Ctrl+Del", "Ctrl+K", "Ctrl+U"), "Delete", "Editing text"),
    _S("move", (*_MOVES, *(f"Ctrl+{k}" for k in _MOVES), *(f"Meta+{k}" for k in _MOVES)), "Move", "Editing text"),
    _S("select", (*(f"Shift+{k}" for k in _MOVES), *(f"Ctrl+Shift+{k}" for k in _MOVES)), "Select", "Editing text"),
    _S(
        "edit",
        ("Esc", "Return", "Enter", "Tab", "Shift+Tab", "Shift+Return", "Shift+Enter"),
        "editing text",
        "Editing text",
    ),
)


def menu_mnemonics(keymap: Iterable[Shortcut]) -> dict[str, str]:
    """Menu title → its Alt+letter mnemonic, for the menus the window builds from ``keymap``:
    the File menu, then one per section in order, each taking its first free letter."""
    titles = (FILE_MENU, *dict.fromkeys(s.section for s in keymap))
    return mnemonics(titles)


def mnemonics(titles: Iterable[str]) -> dict[str, str]:
    """Title → mnemonic letter (upper case): a title's own ``&x``, else its first letter no
    earlier title has. A title without a free letter gets none."""
    titles = list(titles)
    used = {t[t.index("&") + 1].upper() for t in titles if "&" in t[:-1]}
    out: dict[str, str] = {}
    for title in titles:
        if "&" in title[:-1]:
            out[title] = title[title.index("&") + 1].upper()
            continue
        letter = next((c.upper() for c in title if c.isalpha() and c.upper() not in used), None)
        if letter is not None:
            used.add(letter)
            out[title] = letter
    return out


def reserved_shortcuts(keymap: Iterable[Shortcut]) -> tuple[Shortcut, ...]:
    """Every key the window takes under ``keymap`` besides a schema's own: the fixed keys, the
    File menu, text editing and the menus' mnemonics (a schema's check refuses them all)."""
    keymap = tuple(keymap)
    menus = tuple(
        _S(f"menu_{title}", (f"Alt+{letter}",), f"the {title.replace('&', '')} menu", "Menus")
        for title, letter in menu_mnemonics(keymap).items()
    )
    return FIXED + FILE_KEYS + EDITING_KEYS + menus


#: The sections a label schema fills: (cheat-sheet section, action-name prefix of its entries).
SCHEMA_SECTIONS = {
    "strengths": ("Strength", "strength_"),
    "error_types": ("Error type", "error_"),
    "discard_reasons": ("Discard reason", "discard_"),
}


def _text(section: str, choice: Choice) -> str:
    if section == "error_types":
        return f"Error: {choice.description}"
    if section == "discard_reasons":
        return f"Discard reason: {choice.description}"
    return choice.description


def schema_shortcuts(section: str, choices: Iterable[Choice]) -> tuple[Shortcut, ...]:
    """The shortcuts of one schema section's entries (those with a key), e.g.
    ``error_existence`` on ``Ctrl+1``."""
    title, prefix = SCHEMA_SECTIONS[section]
    return tuple(_S(prefix + c.name, (c.key,), _text(section, c), title) for c in choices if c.key)


def keymap_for(
    strengths: Iterable[Choice], error_types: Iterable[Choice], discard_reasons: Iterable[Choice]
) -> tuple[Shortcut, ...]:
    """The window's whole table for a label schema's entries."""
    return (
        _HEAD
        + schema_shortcuts("strengths", strengths)
        + schema_shortcuts("error_types", error_types)
        + schema_shortcuts("discard_reasons", discard_reasons)
        + FIXED_TAIL
    )


def _seeds(rows) -> tuple[_Seed, ...]:
    return tuple(_Seed(*row) for row in rows)


#: The table of the built-in label schema.
KEYMAP: tuple[Shortcut, ...] = keymap_for(
    _seeds(DEFAULT_STRENGTH_CHOICES), _seeds(DEFAULT_ERROR_CHOICES), _seeds(DEFAULT_DISCARD_CHOICES)
)

BY_ACTION = {s.action: s for s in KEYMAP}


def hint(action: str) -> str:
    """The first key of an action, as shown next to a control (e.g. ``T``)."""
    return BY_ACTION[action].keys[0]
