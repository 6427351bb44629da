"""Untrusted text (dataset fields, model output, file names, error messages) shown as text.

Qt renders a string as HTML wherever it *guesses* it is rich text (``Qt::mightBeRichText``: a
known tag before the first line break, or ``&lt;``): a QLabel left at its default AutoText,
every tooltip, a static ``QMessageBox`` call. Rendered HTML loads what an
``<img src="file:///…">`` names, from disk, as soon as it is shown: ``/dev/zero`` fills
memory, a FIFO hangs the window. So untrusted text goes

- into a QLabel set to ``Qt.TextFormat.PlainText`` (:func:`plain_label`), or
- where Qt has no format switch (tooltips, the text of a static QMessageBox call), through
  :func:`inert_html`: escaped and wrapped in one ``<p>``, which Qt treats as rich text that
  holds nothing but text.

Both are bounded (:func:`bounded`): a 10 MB prompt in a tooltip or a one-line caption would
freeze the window while Qt lays it out.
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

#: Characters a tooltip shows at most.
TOOLTIP_LIMIT = 2_000
#: Characters a one-line label (a caption, a status line) shows at most.
LINE_LIMIT = 500
#: Characters a multi-line label (a note, an error message) shows at most.
TEXT_LIMIT = 20_000

#: Lines a tooltip or message shows at most; a run without spaces may wrap after WRAP_RUN.
MAX_LINES, WRAP_RUN = 40, 80
_LONG_RUN = re.compile(rf"\S{{{WRAP_RUN}}}(?=\S)")

# C0 controls (but tab and newline) and DEL: shown as their Unicode control pictures (␀, ␛ …).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PICTURE = {**{chr(c): chr(0x2400 + c) for c in range(0x20)}, "\x7f": "\u2421"}


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def visible(text: str) -> str:
    """Control characters (a terminal escape, a NUL) as visible symbols; tab and newline kept."""
    return _CONTROLS.sub(lambda m: _PICTURE[m[0]], text)


def inert_html(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` (bounded) as rich text that renders as exactly that text: for the texts of
    static QMessageBox calls and tooltips, which Qt renders as HTML when they look like it."""
    if not text:
        return ""
    return "<p style='white-space:pre-wrap'>" + html.escape(visible(bounded(text, limit))) + "</p>"


def tooltip(text: str) -> str:
    """A tooltip showing untrusted ``text`` as text: escaped, at most TOOLTIP_LIMIT characters
    in at most MAX_LINES lines, and a run without spaces may wrap every WRAP_RUN characters
    (at a zero-width space), so the tooltip stays screen-sized whatever the text."""
    text = bounded(text, TOOLTIP_LIMIT)
    lines = text.split("\n")
    if len(lines) > MAX_LINES:
        text = "\n".join(lines[:MAX_LINES]) + "…"
    return inert_html(_LONG_RUN.sub("\\g<0>\u200b", text))


def plain_label(
    text: str = "", parent: QWidget | None = None, *, word_wrap: bool = False, any_width: bool = False
) -> QLabel:
    """A QLabel that never renders its text as rich text. ``any_width``: its text never
    widens the window (a 1 MB line without a break point)."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(word_wrap)
    if any_width:
        policy = label.sizePolicy()
        policy.setHorizontalPolicy(QSizePolicy.Policy.Ignored)
        label.setSizePolicy(policy)
    label.setText(text)
    return label
