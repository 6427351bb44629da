"""Every keyboard shortcut of the annotation window, in one table.

The window binds these to actions and the ``?`` cheat sheet lists them, so the two can
never disagree. Keys use Qt's portable key-sequence text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shortcut:
    action: str
    keys: tuple[str, ...]
    description: str
    section: str


_S = Shortcut
KEYMAP: tuple[Shortcut, ...] = (
    _S("prefer_1", ("1",), "Response 1 is better", "Label"),
    _S("prefer_2", ("2",), "Response 2 is better", "Label"),
    _S("prefer_3", ("3",), "Response 3 is best (N > 2)", "Label"),
    _S("prefer_4", ("4",), "Response 4 is best (N > 2)", "Label"),
    _S("tie", ("T",), "Tie", "Label"),
    _S("both_bad", ("B",), "Both bad", "Label"),
    _S("discard", ("X",), "Discard the pair", "Label"),
    _S("strength_slightly", ("A",), "Slightly better", "Strength"),
    _S("strength_clearly", ("S",), "Clearly better", "Strength"),
    _S("strength_much", ("D",), "Much better", "Strength"),
    _S("error_existence", ("Ctrl+1",), "Error: existence (hallucinated object)", "Error type"),
    _S("error_recognition", ("Ctrl+2",), "Error: recognition", "Error type"),
    _S("error_attribute", ("Ctrl+3",), "Error: attribute", "Error type"),
    _S("error_counting", ("Ctrl+4",), "Error: counting", "Error type"),
    _S("error_reasoning", ("Ctrl+5",), "Error: reasoning", "Error type"),
    _S("error_other", ("Ctrl+6",), "Error: other", "Error type"),
    _S("discard_both_wrong", ("Alt+1",), "Discard reason: both wrong", "Discard reason"),
    _S("discard_style_or_length_only", ("Alt+2",), "Discard reason: only style or length differs", "Discard reason"),
    _S("discard_media_unusable", ("Alt+3",), "Discard reason: media unusable", "Discard reason"),
    _S("discard_needs_expert", ("Alt+4",), "Discard reason: needs expert knowledge", "Discard reason"),
    _S("discard_other", ("Alt+5",), "Discard reason: other", "Discard reason"),
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
    _S("zoom_in", ("+", "="), "Zoom in", "Media"),
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
    _S("export", ("Ctrl+Shift+E",), "Export a curated set (VL-RewardBench, TRL or JSONL)", "Review"),
    _S("statistics", ("Ctrl+I",), "Statistics: agreement, judge accuracy, length bias", "View"),
    _S("cheat_sheet", ("?", "F1"), "Show this list", "Help"),
)

BY_ACTION = {s.action: s for s in KEYMAP}


def hint(action: str) -> str:
    """The first key of an action, as shown next to a control (e.g. ``T``)."""
    return BY_ACTION[action].keys[0]
