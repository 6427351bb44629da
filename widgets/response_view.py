"""Response pane: N candidate responses, rendered safely, with diff and step highlights.

Response text is untrusted. Markdown is rendered without HTML, links are never followed by
the widget (http/https links are only reported through ``link_activated``), and no resource
(image, style sheet) is ever read: ``SafeTextBrowser.loadResource`` answers every request
with a blank image. Returning nothing is not enough: Qt then reads the file itself (checked
with PySide6 6.12: a local PNG named in ``![](file:///...)`` was loaded and drawn).

Rendering has a budget (``render_budget``): whatever its shape, a response is shown as a
bounded document (long unbroken runs cut, huge text as a plain-text preview, huge tables as
code, Markdown too costly to lay out as plain text); the card's "Show all" renders the whole
text as plain text, only when asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QByteArray, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QImage,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextOption,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QScrollArea,
    QSplitter,
    QTextBrowser,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .math_render import MathImages, render_math
from .plain_text import plain_label
from .render_budget import (
    DIFF_LIMIT,
    DIFF_SPAN_LIMIT,
    RenderPlan,
    plan_body,
    plan_full,
    plan_steps,
    show_all_steps,
    word_count,
)
from .render_budget import protect_math as protect_math  # re-exported: where it used to live
from .text_diff import Span, coarsen, word_diff

ALLOWED_LINK_SCHEMES = frozenset({"http", "https"})
EMPTY_TEXT = "(empty response)"
SHOW_ALL, SHOW_LESS = "Show all", "Show less"
DIFF_COLOR = QColor("#ffd98a")
CURRENT_STEP_COLOR = QColor("#cfe2ff")
MUTED_COLOR = "#8a8f98"
MARK_STYLE = {True: ("✓", "#1e7b34", "#e3f5e6"), False: ("✗", "#b3261e", "#fbe4e2"), None: ("○", MUTED_COLOR, None)}
BODY_POINT_SIZE = 11
#: Past this share of changed text, a pair's word diff is off by default: two independently
#: written 150-word answers share only function words, and colouring the rest tells nothing.
MOSTLY_DIFFERENT = 0.6
LIST_BODY_MAX_HEIGHT = 420
_MARKDOWN = QTextDocument.MarkdownFeature.MarkdownDialectGitHub | QTextDocument.MarkdownFeature.MarkdownNoHTML
_ROLE_WORDS = re.compile(r"\b(chosen|rejected)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ResponseText:
    """One response as shown: a neutral title ("Response 1"), its text and optional steps."""

    title: str
    text: str
    steps: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if _ROLE_WORDS.search(self.title):
            raise ValueError(f"blind labelling: a title must not name a dataset role: {self.title!r}")


def word_count_text(text: str) -> str:
    """ "142 words"; past ``render_budget.COUNT_LIMIT`` characters an estimate, "≈1,767,000 words"."""
    count, exact = word_count(text)
    return ("" if exact else "≈") + f"{count:,} word" + ("" if count == 1 else "s")


class SafeTextBrowser(QTextBrowser):
    """A read-only browser that loads no resource and follows no link."""

    link_activated = Signal(QUrl)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.resource_requests: list[QUrl] = []
        self.anchorClicked.connect(self._on_anchor)

    def loadResource(self, kind: int, name: QUrl | str):
        self.resource_requests.append(QUrl(name))
        if kind == QTextDocument.ResourceType.ImageResource:
            # A null image makes Qt fall back to reading the file by name: answer a real one.
            blank = QImage(1, 1, QImage.Format.Format_ARGB32)
            blank.fill(Qt.GlobalColor.transparent)
            return blank
        return QByteArray(b" ")

    def doSetSource(self, name: QUrl | str, kind=None) -> None:
        """Never navigate (backspace, history or a stray setSource call)."""

    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme().lower() in ALLOWED_LINK_SCHEMES:
            self.link_activated.emit(QUrl(url))


class ResponseCard(QFrame):
    """One response: title, word count and body (Markdown, plain text or numbered steps).

    The body is budgeted (``render_budget.plan_body``); when part of the response is left
    out, a note says what and "Show all" renders the whole text as plain text (on demand)."""

    #: The body now shows something else (the user chose "Show all" or "Show less").
    view_changed = Signal()

    def __init__(self, response: ResponseText, parent=None):
        super().__init__(parent)
        self.response = response
        self.setObjectName("responseCard")
        self.setStyleSheet("QFrame#responseCard { border: 1px solid #c9ced6; border-radius: 6px; }")
        self.title_label = plain_label(response.title)
        self.title_label.setStyleSheet("font-weight: bold;")
        self.count_label = plain_label(word_count_text(response.text or "\n".join(response.steps)))
        self.count_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.budget_note = plain_label("")
        self.budget_note.setWordWrap(True)
        self.budget_note.setStyleSheet(f"color: {MUTED_COLOR}; font-style: italic;")
        self.budget_note.hide()
        self.show_all_button = QToolButton()
        self.show_all_button.setText(SHOW_ALL)
        self.show_all_button.setAutoRaise(True)
        self.show_all_button.setToolTip("Render the whole response as plain text")
        self.show_all_button.hide()
        self.show_all_button.clicked.connect(self._toggle_show_all)
        self.body = SafeTextBrowser()
        self.body.setFrameShape(QFrame.Shape.NoFrame)
        self.body.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.body.document().setUndoRedoEnabled(False)
        font = QFont(self.body.font())
        font.setPointSize(BODY_POINT_SIZE)
        self.body.setFont(font)
        header = QHBoxLayout()
        header.addWidget(self.title_label)
        header.addStretch(1)
        header.addWidget(self.count_label)
        budget_row = QHBoxLayout()
        budget_row.addWidget(self.budget_note, 1)
        budget_row.addWidget(self.show_all_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 8)
        layout.addLayout(header)
        layout.addLayout(budget_row)
        layout.addWidget(self.body, 1)
        self._fit = False
        self._marks: dict[int, bool] = {}
        self._current: int | None = None
        self._diff_selections: list[QTextEdit.ExtraSelection] = []
        self._markdown = True
        self._show_all = False
        self._cut = False
        self.body.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._math_waiting = False  # formulas still being drawn: the card renders again when they are
        MathImages.shared().ready.connect(self._math_ready)
        #: "Show all" text not yet in the document: one slice per turn of the event loop.
        self._fill_rest: list[str] = []

    def _math_ready(self) -> None:
        if self._math_waiting:
            self._math_waiting = False
            self.render_body(self._markdown)
            self.view_changed.emit()  # the pane diffs what is shown now

    def set_response(self, response: ResponseText) -> None:
        """Show another response in this card (marks, the current step and "Show all" start
        afresh); call :meth:`render_body` afterwards. Reusing cards keeps stepping fast."""
        self.response = response
        self.title_label.setText(response.title)
        self.count_label.setText(word_count_text(response.text or "\n".join(response.steps)))
        self._marks = {}
        self._current = None
        self._diff_selections = []
        self._show_all = False
        self._cut = False

    @property
    def is_empty(self) -> bool:
        text = self.response.text
        return (not text or text.isspace()) and not self.response.steps

    @property
    def has_steps(self) -> bool:
        return bool(self.response.steps)

    def is_cut(self) -> bool:
        """Part of the response is left out of the budgeted view ("Show all" is offered)."""
        return self._cut

    def showing_all(self) -> bool:
        return self._show_all

    def set_show_all(self, enabled: bool) -> None:
        """Render the whole response as plain text (True) or the budgeted view (False)."""
        enabled = enabled and self._cut
        if enabled == self._show_all:
            return
        self._show_all = enabled
        self.render_body(self._markdown)
        self.view_changed.emit()

    def _toggle_show_all(self) -> None:
        self.set_show_all(not self._show_all)

    def render_body(self, markdown: bool) -> None:
        """(Re)build the body; step marks, the current step and "Show all" survive."""
        self._markdown = markdown
        doc = self.body.document()
        self._diff_selections = []
        self._math_waiting = False
        self._fill_rest = []  # a "Show all" still filling in stops here
        self.body.setExtraSelections([])  # each selection's cursor would follow every edit below
        plan = RenderPlan("", False)
        # Empty the document before changing the wrap mode: Qt would re-wrap the old text.
        doc.setPlainText("")
        if self.is_empty:
            self._set_wrap(False)
            QTextCursor(doc).insertText(EMPTY_TEXT, _muted())
        elif self.has_steps:
            steps, plan = plan_steps(self.response.steps, full=self._show_all)
            self._set_wrap(plan.wrap_anywhere)
            # One block per step, so block number == step index.
            lines = (f"{MARK_STYLE[None][0]} {i}. {_one_line(step)}" for i, step in enumerate(steps, 1))
            doc.setPlainText("\n".join(lines))
            self._apply_marks()
        elif self._show_all:  # plain text, added a slice per turn of the event loop (_fill_more)
            plan = plan_full(self.response.text)
            self._set_wrap(plan.wrap_anywhere)
            first, *self._fill_rest = show_all_steps(plan.text)
            doc.setPlainText(first)
            if self._fill_rest:
                QTimer.singleShot(0, self._fill_more)
        else:
            plan = plan_body(self.response.text, markdown)
            self._set_wrap(plan.wrap_anywhere)
            render_plan(doc, plan)
            if plan.markdown and ("$" in plan.text or "\\" in plan.text):  # formulas drawn (math_render)
                self._math_waiting = render_math(doc, self.body.font().pointSizeF()) > 0
        if not self._show_all:
            self._cut = plan.cut
        self.budget_note.setText(plan.note)
        self.budget_note.setVisible(bool(plan.note))
        self.show_all_button.setText(SHOW_LESS if self._show_all else SHOW_ALL)
        self.show_all_button.setVisible(self._cut)
        self._refresh_selections()

    def filling(self) -> bool:
        """ "Show all" is still adding the text to the document (a slice per event-loop turn)."""
        return bool(self._fill_rest)

    def _fill_more(self) -> None:
        if not self._fill_rest:
            return  # rendered afresh meanwhile
        cursor = QTextCursor(self.body.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(self._fill_rest.pop(0))
        if self._fill_rest:
            QTimer.singleShot(0, self._fill_more)
        else:
            self._refresh_selections()
            self.view_changed.emit()  # the whole text is in: the pane diffs it now

    def _set_wrap(self, anywhere: bool) -> None:
        mode = QTextOption.WrapMode.WrapAnywhere if anywhere else QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere
        if self.body.wordWrapMode() != mode:
            self.body.setWordWrapMode(mode)

    def set_fit_height(self, fit: bool) -> None:
        """In a scrolling list the body takes its content's height (capped); else it expands."""
        self._fit = fit
        if not fit:
            self.body.setMinimumHeight(0)
            self.body.setMaximumHeight(16777215)
        self._fit_height()

    def set_diff_spans(self, spans: Sequence[Span]) -> None:
        fmt = QTextCharFormat()
        fmt.setBackground(DIFF_COLOR)
        # In an edit block a cursor does not lay its block out to learn its x position.
        batch = QTextCursor(self.body.document())
        batch.beginEditBlock()
        self._diff_selections = [self._selection(s.start, s.end, fmt) for s in spans if s.changed]
        batch.endEditBlock()
        self._refresh_selections()

    def diff_fragments(self) -> list[str]:
        return [s.cursor.selectedText().replace("\u2029", "\n") for s in self._diff_selections]

    def set_step_marks(self, marks: Mapping[int, bool | None]) -> None:
        self._marks = {int(i): mark for i, mark in marks.items() if mark is not None}
        if self.has_steps:
            self._apply_marks()

    def set_current_step(self, step: int | None) -> None:
        self._current = step if self.has_steps and step is not None and 0 <= step < len(self.response.steps) else None
        self._refresh_selections()
        if self._current is not None:
            self.body.setTextCursor(QTextCursor(self.body.document().findBlockByNumber(self._current)))
            self.body.ensureCursorVisible()

    def step_marks(self) -> dict[int, bool]:
        return dict(self._marks)

    def current_step(self) -> int | None:
        return self._current

    def _apply_marks(self) -> None:
        doc = self.body.document()
        edit = QTextCursor(doc)
        edit.beginEditBlock()
        for i in range(len(self.response.steps)):
            glyph, colour, background = MARK_STYLE[self._marks.get(i)]
            block = doc.findBlockByNumber(i)
            block_format = QTextBlockFormat()
            block_format.setBottomMargin(4)
            block_format.setLeftMargin(28)
            block_format.setTextIndent(-24)  # hanging indent: wrapped lines align after "✓ 1."
            if background:
                block_format.setBackground(QColor(background))
            cursor = QTextCursor(block)
            cursor.setBlockFormat(block_format)
            cursor.movePosition(QTextCursor.MoveOperation.NextCharacter, QTextCursor.MoveMode.KeepAnchor)
            glyph_format = QTextCharFormat()
            glyph_format.setForeground(QColor(colour))
            glyph_format.setFontWeight(QFont.Weight.Bold)
            cursor.insertText(glyph, glyph_format)
        edit.endEditBlock()

    def _refresh_selections(self) -> None:
        selections = list(self._diff_selections)
        if self._current is not None:
            block = self.body.document().findBlockByNumber(self._current)
            fmt = QTextCharFormat()
            fmt.setBackground(CURRENT_STEP_COLOR)
            fmt.setProperty(QTextFormat.Property.FullWidthSelection, True)
            end = block.position() + block.length() - 1
            # Full width needs the block's separator selected; the last block has none, so
            # an empty selection at its end covers its last line.
            selections.append(self._selection(block.position(), end + 1 if block.next().isValid() else end, fmt))
            if not block.next().isValid():
                selections.append(self._selection(end, end, fmt))
        self.body.setExtraSelections(selections)

    def _selection(self, start: int, end: int, fmt: QTextCharFormat) -> QTextEdit.ExtraSelection:
        selection = QTextEdit.ExtraSelection()
        selection.cursor = QTextCursor(self.body.document())
        selection.cursor.setPosition(start)
        selection.cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        selection.format = fmt
        return selection

    def _fit_height(self, *_args) -> None:
        if not self._fit:
            return
        chrome = 2 * self.body.frameWidth() + 6
        height = int(self.body.document().size().height()) + chrome
        self.body.setFixedHeight(max(48, min(height, LIST_BODY_MAX_HEIGHT)))


class ResponsePane(QWidget):
    """Shows N responses: two side by side (with a word diff), more as a scrolling list.

    The word diff runs after the cards are shown, in three turns of the event loop (diff,
    then each card's highlights, which need the card's full layout): two 100 KB responses
    cost ~90 ms of GUI time there, in slices of ≤ ~50 ms, and the first paint never waits
    for them. A newer item replaces a pending diff; :meth:`highlighted_fragments` finishes a
    pending one at once."""

    link_activated = Signal(QUrl)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._cards: list[ResponseCard] = []
        self._markdown = True
        self._diff: bool | None = None  # None: automatic (off where most words differ)
        self._diff_skipped = False  # the pair shown differs in most words (see MOSTLY_DIFFERENT)
        self._diff_job: Iterator[None] | None = None
        self._diff_timer = QTimer(self)
        self._diff_timer.setSingleShot(True)
        self._diff_timer.setInterval(0)
        self._diff_timer.timeout.connect(self._diff_step)
        self._mode = "empty"
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._content: QWidget = plain_label("No responses")
        self._layout.addWidget(self._content)

    def show_responses(self, responses: Sequence[ResponseText]) -> None:
        """Replace the shown responses; two → side by side, more → a vertical list."""
        self._diff_skipped = False  # a new pair: decided again
        if self._cards and 0 < len(responses) <= 2 and len(responses) == len(self._cards):
            # Same layout as before: refill the cards instead of rebuilding the widgets
            # (measured: half of the time of stepping to the next item went to rebuilding).
            for card, response in zip(self._cards, responses):
                card.set_response(response)
                card.render_body(self._markdown)
            self._apply_diff()
            return
        self._layout.removeWidget(self._content)
        self._content.hide()  # deleteLater waits for the event loop; hide it now
        self._content.deleteLater()
        self._cards = [ResponseCard(response) for response in responses]
        if not self._cards:
            self._mode, self._content = "empty", plain_label("No responses")
        elif len(self._cards) <= 2:
            splitter = QSplitter(Qt.Orientation.Horizontal)
            splitter.setChildrenCollapsible(False)
            for card in self._cards:
                splitter.addWidget(card)
            self._mode, self._content = ("pair" if len(self._cards) == 2 else "single"), splitter
        else:
            inner = QWidget()
            column = QVBoxLayout(inner)
            for card in self._cards:
                card.set_fit_height(True)
                column.addWidget(card)
            column.addStretch(1)
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(inner)
            self._mode, self._content = "list", scroll
        self._layout.addWidget(self._content)
        for card in self._cards:
            card.body.link_activated.connect(self.link_activated)
            card.view_changed.connect(self._apply_diff)
            card.render_body(self._markdown)
        self._apply_diff()

    def layout_mode(self) -> str:
        """ "empty", "single", "pair" (side by side) or "list"."""
        return self._mode

    def cards(self) -> list[ResponseCard]:
        return list(self._cards)

    def set_markdown(self, enabled: bool) -> None:
        """Rendered Markdown (True) or the literal text (False) for every card."""
        if enabled == self._markdown:
            return
        self._markdown = enabled
        for card in self._cards:
            card.render_body(enabled)
        self._apply_diff()

    def markdown_enabled(self) -> bool:
        return self._markdown

    def set_diff_highlight(self, enabled: bool | None) -> None:
        """Highlight the word diff on every pair (True), on none (False), or — the default,
        ``None`` — on pairs that do not differ in most words (:data:`MOSTLY_DIFFERENT`)."""
        self._diff = enabled
        self._apply_diff()

    def diff_highlight_enabled(self) -> bool:
        """Whether the diff is highlighted on the pair shown (``H`` flips this)."""
        return bool(self._diff) if self._diff is not None else not self._diff_skipped

    @property
    def diff_skipped(self) -> bool:
        """The pair shown differs in most words and its diff is left off (it would colour
        most of both responses); ``H`` turns it on."""
        return self._diff is None and self._diff_skipped

    def highlighted_fragments(self, card_index: int) -> list[str]:
        """The texts highlighted as differing in one card (for tests and tooltips); a pending
        diff runs first."""
        while self._diff_job is not None:
            self._diff_step()
        return self._cards[card_index].diff_fragments()

    def diff_pending(self) -> bool:
        """The word diff of the shown pair is scheduled and not finished."""
        return self._diff_job is not None

    def set_step_marks(self, card_index: int, marks: Mapping[int, bool | None]) -> None:
        """Show ✓ (True), ✗ (False) or nothing (None, or absent) beside each step."""
        self._cards[card_index].set_step_marks(marks)

    def set_current_step(self, card_index: int, step_index: int | None) -> None:
        """Highlight one step (None clears) and scroll it into view."""
        self._cards[card_index].set_current_step(step_index)

    def _apply_diff(self) -> None:
        """Clear the highlights now; schedule the diff of what is shown, if it applies."""
        self._diff_timer.stop()
        self._diff_job = None
        for card in self._cards:
            card.set_diff_spans([])
        if self._diff is False or len(self._cards) != 2 or any(c.is_empty or c.has_steps for c in self._cards):
            return
        if any(card.body.document().characterCount() > DIFF_LIMIT or card.filling() for card in self._cards):
            return  # "Show all" of a huge response: the word diff would block for seconds (or it is not all in yet)
        self._diff_job = self._diff_steps(self._cards[0], self._cards[1])
        self._diff_timer.start()

    def _diff_step(self) -> None:
        """One slice of the pending diff; the next one on the next turn of the event loop."""
        self._diff_timer.stop()
        if self._diff_job is None:
            return
        try:
            next(self._diff_job)
        except StopIteration:
            self._diff_job = None
        else:
            self._diff_timer.start()

    def _diff_steps(self, first: ResponseCard, second: ResponseCard) -> Iterator[None]:
        # Diff what is on screen: positions in toPlainText() are document positions.
        spans_a, spans_b = word_diff(first.body.document().toPlainText(), second.body.document().toPlainText())
        self._diff_skipped = changed_share(spans_a, spans_b) > MOSTLY_DIFFERENT
        if self.diff_skipped:  # automatic, and most words differ: nothing to highlight
            return
        yield
        first.set_diff_spans(coarsen(spans_a, DIFF_SPAN_LIMIT))
        yield
        second.set_diff_spans(coarsen(spans_b, DIFF_SPAN_LIMIT))


def changed_share(spans_a: Sequence[Span], spans_b: Sequence[Span]) -> float:
    """The share of both texts' characters the word diff marks as changed (0 … 1)."""
    total = sum(s.end - s.start for s in (*spans_a, *spans_b))
    changed = sum(s.end - s.start for s in (*spans_a, *spans_b) if s.changed)
    return changed / total if total else 0.0


def _one_line(text: str) -> str:
    """Keep a multi-line step in one block (a line separator, not a paragraph break)."""
    return text.strip().replace("\r\n", "\n").replace("\n", "\u2028")


def render_plan(doc: QTextDocument, plan) -> None:
    """Put untrusted text into ``doc`` as ``plan`` (``render_budget``) says: Markdown without
    raw HTML and with images replaced by their alt text, else plain text. The one safe
    renderer of dataset and project text (responses, guidelines)."""
    if plan.markdown:
        doc.setMarkdown(plan.text, _MARKDOWN)
        if "![" in plan.text:
            _replace_images(doc)
    else:
        doc.setPlainText(plan.text)


def _replace_images(doc: QTextDocument) -> None:
    """Show "[image: alt]" in place of each Markdown image (which would load nothing anyway)."""
    found = []
    block = doc.begin()
    while block.isValid():
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            if fragment.charFormat().isImageFormat():
                alt = fragment.charFormat().stringProperty(QTextFormat.Property.ImageAltText)
                found += [(fragment.position() + k, alt) for k in range(fragment.length())]
            iterator += 1
        block = block.next()
    cursor = QTextCursor(doc)
    cursor.beginEditBlock()
    for position, alt in reversed(found):
        cursor.setPosition(position)
        cursor.setPosition(position + 1, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(f"[image: {alt}]" if alt else "[image]", _muted())
    cursor.endEditBlock()


def _muted() -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(MUTED_COLOR))
    fmt.setFontItalic(True)
    return fmt
