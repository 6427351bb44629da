"""ResponsePane: layouts, safe rendering of hostile text, diff and step highlights, speed."""

from __future__ import annotations

import os
import random
import time

import pytest
from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QColor, QFont, QImage, QTextCursor, QTextDocument, QTextFormat
from PySide6.QtWidgets import QScrollArea, QSplitter

from helpers import WAIT_MS
from pairscope.widgets.response_view import (
    DIFF_COLOR,
    EMPTY_TEXT,
    LIST_BODY_MAX_HEIGHT,
    ResponsePane,
    ResponseText,
    protect_math,
)

MAGENTA = QColor(255, 0, 255)


def responses(*texts: str) -> list[ResponseText]:
    return [ResponseText(f"Response {i}", text) for i, text in enumerate(texts, 1)]


def settle(qtbot, pane: ResponsePane) -> None:
    """Wait until freshly added cards are shown and laid out (Qt shows them from the event loop)."""
    qtbot.waitUntil(lambda: all(c.body.isVisible() and c.body.viewport().width() > 100 for c in pane.cards()))


def text_of(pane: ResponsePane, index: int) -> str:
    return pane.cards()[index].body.document().toPlainText()


def anchors(browser) -> list[tuple[str, int, int]]:
    """(href, position, length) of every link in a browser's document."""
    found = []
    block = browser.document().begin()
    while block.isValid():
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            if fragment.charFormat().isAnchor():
                found.append((fragment.charFormat().anchorHref(), fragment.position(), fragment.length()))
            iterator += 1
        block = block.next()
    return found


def magenta_pixels(widget) -> int:
    image = widget.grab().toImage()
    return sum(
        image.pixelColor(x, y) == MAGENTA for y in range(0, image.height(), 2) for x in range(0, image.width(), 2)
    )


def arm_atime(path) -> None:
    """Make the next read of ``path`` update its atime (relatime updates it when atime < mtime)."""
    st = os.stat(path)
    os.utime(path, (st.st_mtime - 1000, st.st_mtime))


def reads_detectable(tmp_path) -> bool:
    probe = tmp_path / "probe.txt"
    probe.write_text("probe")
    arm_atime(probe)
    before = os.stat(probe).st_atime
    probe.read_text()
    return os.stat(probe).st_atime != before


# --- layout -------------------------------------------------------------------------------


def left_top(widget, pane) -> QPoint:
    return widget.mapTo(pane, QPoint(0, 0))


def test_two_responses_side_by_side(pane, qtbot):
    pane.show_responses(responses("The left answer.", "The right answer."))
    assert pane.layout_mode() == "pair"
    first, second = pane.cards()
    assert isinstance(first.parent(), QSplitter) and first.parent() is second.parent()
    assert first.parent().orientation() == Qt.Orientation.Horizontal
    qtbot.waitUntil(lambda: left_top(second, pane).x() > left_top(first, pane).x() + 300)
    assert left_top(first, pane).y() == left_top(second, pane).y()
    assert [c.title_label.text() for c in pane.cards()] == ["Response 1", "Response 2"]
    assert first.title_label.textFormat() == Qt.TextFormat.PlainText


def test_four_responses_as_a_scrolling_ranked_list(pane, qtbot):
    pane.show_responses(responses("one", "two two", "three three three", "four"))
    assert pane.layout_mode() == "list"
    cards = pane.cards()
    assert [c.title_label.text() for c in cards] == [f"Response {i}" for i in range(1, 5)]
    assert pane.findChild(QScrollArea) is not None
    qtbot.waitUntil(lambda: left_top(cards[3], cards[3].parent()).y() > 0)
    tops = [left_top(c, c.parent()).y() for c in cards]
    assert tops == sorted(tops) and len(set(tops)) == 4
    assert [c.count_label.text() for c in cards] == ["1 word", "2 words", "3 words", "1 word"]
    pane.show_responses(responses("short", "word " * 20_000, "x", "y"))
    settle(qtbot, pane)
    heights = [c.body.height() for c in pane.cards()]
    assert heights[1] == LIST_BODY_MAX_HEIGHT and heights[0] < 120  # long bodies scroll inside
    pane.show_responses(responses("a", "b"))  # replacing the list works
    assert pane.layout_mode() == "pair" and len(pane.cards()) == 2


def test_word_counts(pane):
    pane.show_responses(responses(" ".join(["word"] * 142), "x" * 10 + " y\n\nz", ""))
    assert [c.count_label.text() for c in pane.cards()] == ["142 words", "3 words", "0 words"]


def test_titles_never_name_dataset_roles():
    for title in ("Chosen", "rejected answer", "Response 1 (CHOSEN)"):
        with pytest.raises(ValueError):
            ResponseText(title, "text")
    ResponseText("Response 1", "I chose the chosen one")  # only the title is checked


def test_body_is_readable(pane):
    pane.show_responses(responses("text", "more"))
    body = pane.cards()[0].body
    assert body.font().pointSize() == 11
    assert body.lineWrapMode() == body.LineWrapMode.WidgetWidth


# --- untrusted text -----------------------------------------------------------------------


def hostile_markdown(tmp_path) -> tuple[str, list]:
    secret_txt = tmp_path / "secret.txt"
    secret_txt.write_text("TOPSECRET-4711")
    secret_png = tmp_path / "secret.png"
    image = QImage(60, 40, QImage.Format.Format_RGB32)
    image.fill(MAGENTA)
    assert image.save(str(secret_png))
    png_url = QUrl.fromLocalFile(str(secret_png)).toString()
    txt_url = QUrl.fromLocalFile(str(secret_txt)).toString()
    text = (
        f"# Answer\n\n![the photo]({png_url}) and ![]({secret_png}) and ![t]({txt_url})\n\n"
        f'Raw <img src="{png_url}"> and <script>alert(1)</script> and <b>bold?</b>\n\n'
        f"Links: [fileln]({txt_url}), [jsln](javascript:alert(1)), [webln](https://example.com/a)\n"
    )
    return text, [secret_txt, secret_png]


def test_hostile_markdown_reads_no_file(pane, qtbot, tmp_path):
    text, secrets = hostile_markdown(tmp_path)
    detectable = reads_detectable(tmp_path)
    for path in secrets:
        arm_atime(path)
    atimes = [os.stat(p).st_atime for p in secrets]
    pane.show_responses(responses(text, "A harmless answer."))
    settle(qtbot, pane)
    body = pane.cards()[0].body
    assert magenta_pixels(pane) == 0  # the local image was not drawn
    shown = body.document().toPlainText()
    assert "TOPSECRET" not in shown
    assert '<img src="' in shown and "<script>alert(1)</script>" in shown and "<b>bold?</b>" in shown
    assert "[image: the photo]" in shown and "[image: t]" in shown
    # Asking for any resource yields a blank 1x1 image or filler, never the file's content.
    for path in secrets:
        for url in (QUrl.fromLocalFile(str(path)), QUrl(str(path))):
            for kind in QTextDocument.ResourceType.ImageResource, QTextDocument.ResourceType.HtmlResource:
                value = body.loadResource(int(kind), url)
                assert b"TOPSECRET" not in (value.bits().tobytes() if isinstance(value, QImage) else bytes(value))
                if isinstance(value, QImage):
                    assert value.size().width() == 1
    assert body.resource_requests, "the guard was exercised"
    pane.set_markdown(False)
    pane.set_markdown(True)
    pane.grab()
    if detectable:
        assert [os.stat(p).st_atime for p in secrets] == atimes, "a secret file was read"


def test_only_http_links_are_reported_never_opened(pane, qtbot, tmp_path):
    text, _ = hostile_markdown(tmp_path)
    pane.show_responses(responses(text, "Another answer."))
    body = pane.cards()[0].body
    settle(qtbot, pane)
    emitted: list[QUrl] = []
    pane.link_activated.connect(emitted.append)
    links = {body.document().toPlainText()[pos : pos + n]: href for href, pos, n in anchors(body)}
    assert set(links) == {"fileln", "jsln", "webln"}
    for href, position, _ in anchors(body):
        cursor = QTextCursor(body.document())
        cursor.setPosition(position + 2)
        body.setTextCursor(cursor)
        body.ensureCursorVisible()
        point = body.cursorRect(cursor).center()
        assert body.anchorAt(point) == href
        qtbot.mouseClick(body.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert [u.toString() for u in emitted] == ["https://example.com/a"]
    for hostile in ("file:///etc/passwd", "javascript:alert(1)", "data:text/html,x", "qrc:/x", "relative.md"):
        body.anchorClicked.emit(QUrl(hostile))
    body.setSource(QUrl(links["fileln"]))
    assert len(emitted) == 1
    assert body.source().isEmpty() and "TOPSECRET" not in body.document().toPlainText()


def test_plain_text_toggle_shows_literal_markdown(pane):
    pane.show_responses(responses("Some **bold** and `code`.", "Other **bold** text."))
    assert pane.markdown_enabled()
    assert text_of(pane, 0) == "Some bold and code."
    cursor = QTextCursor(pane.cards()[0].body.document())
    cursor.setPosition(6)
    assert cursor.charFormat().fontWeight() == QFont.Weight.Bold
    pane.set_markdown(False)
    assert not pane.markdown_enabled()
    assert text_of(pane, 0) == "Some **bold** and `code`."
    assert text_of(pane, 1) == "Other **bold** text."
    pane.set_markdown(True)
    assert text_of(pane, 0) == "Some bold and code."


# --- math ---------------------------------------------------------------------------------


def test_latex_stays_visible_and_monospace_until_drawn_then_is_drawn_as_formulas(pane, qtbot):
    """Math is never eaten by Markdown: first shown as monospace code, then (matplotlib's
    mathtext, off the GUI thread) as drawn formulas that keep their LaTeX as tooltip; what
    mathtext cannot draw stays code. A formula is one character to the word diff."""
    from pairscope.widgets.math_render import MathImages, formulas

    text = (
        "Let $a_1 * b_2$ and $x*y*z$ where \\(a_b\\) and $\\{x\\}$ and $\\frac{a}{b}$.\n\n\\[ x^2 \\]"
        " and $\\begin{align} q \\end{align}$"
    )
    MathImages.shared()._cache.clear()  # drawn afresh: the first view shows the code
    pane.show_responses(responses(text, "x"))
    shown = text_of(pane, 0)
    for math in ("$a_1 * b_2$", "$x*y*z$", "\\(a_b\\)", "$\\{x\\}$", "$\\frac{a}{b}$", "\\[ x^2 \\]"):
        assert math in shown
    cursor = QTextCursor(pane.cards()[0].body.document())
    cursor.setPosition(shown.index("a_1") + 1)
    assert cursor.charFormat().fontFixedPitch()
    doc = pane.cards()[0].body.document()
    qtbot.waitUntil(lambda: len(formulas(doc)) == 6, timeout=WAIT_MS)
    assert formulas(doc) == ["$a_1 * b_2$", "$x*y*z$", "$a_b$", "$\\{x\\}$", "$\\frac{a}{b}$", "$$x^2$$"]
    drawn = doc.toPlainText()
    assert "frac" not in drawn and drawn.count("\ufffc") == 6  # one object character per formula
    assert "\\begin{align} q \\end{align}" in drawn  # mathtext cannot draw it: left as code
    assert pane.cards()[0].body.resource_requests == []  # the images are the document's own


def test_protect_math_leaves_code_money_and_fences_alone():
    assert protect_math("It costs $5 and $10.") == "It costs $5 and $10."
    assert protect_math("Use `$x*y$` here") == "Use `$x*y$` here"
    assert protect_math("```\n$x*y$\n```\n$a*b$") == "```\n$x*y$\n```\n`$a*b$`"
    assert protect_math("Escaped \\$x*y\\$ is not math") == "Escaped \\$x*y\\$ is not math"
    assert protect_math("$`a`$") == "``$`a`$``"
    assert protect_math("$$\na*b\n$$") == "\n```\n$$\na*b\n$$\n```\n"


# --- diff ---------------------------------------------------------------------------------


@pytest.mark.parametrize("markdown", [True, False])
def test_diff_highlights_exactly_the_changed_number(pane, markdown):
    pane.set_markdown(markdown)
    pane.show_responses(responses("There are 3 sinks.", "There are 2 sinks."))
    assert pane.highlighted_fragments(0) == ["3"]
    assert pane.highlighted_fragments(1) == ["2"]
    [selection] = [s for s in pane.cards()[0].body.extraSelections()]
    assert selection.format.background().color() == DIFF_COLOR
    pane.set_diff_highlight(False)
    assert pane.highlighted_fragments(0) == [] and pane.cards()[0].body.extraSelections() == []
    pane.set_diff_highlight(True)
    assert pane.highlighted_fragments(1) == ["2"]


def test_diff_only_for_exactly_two(pane):
    pane.show_responses(responses("There are 3 sinks.", "There are 2 sinks.", "There are 4 sinks."))
    assert all(pane.highlighted_fragments(i) == [] for i in range(3))


def test_diff_survives_the_markdown_toggle(pane):
    pane.show_responses(responses("A **red** car with 4 doors.", "A **blue** car with 4 doors."))
    assert pane.highlighted_fragments(0) == ["red"]
    pane.set_markdown(False)
    assert pane.highlighted_fragments(0) == ["red"] and pane.highlighted_fragments(1) == ["blue"]


def test_100k_character_responses_render_quickly(pane, qtbot):
    rng = random.Random(5)
    vocab = ["the", "sink", "is", "**white**", "and", "3", "cats", "`x`", "- item\n", "\n\n", "on", "a", "mat."]
    a = " ".join(rng.choice(vocab) for _ in range(30_000))[:100_000]
    words = a.split(" ")
    for i in rng.sample(range(len(words)), 10):
        words[i] = f"EDIT{i}"
    b = " ".join(words)
    for markdown in (True, False):
        pane.set_markdown(markdown)
        started = time.perf_counter()
        pane.show_responses(responses(a, b))
        shown = time.perf_counter()
        settle(qtbot, pane)
        pane.grab()
        painted = time.perf_counter()
        print(
            f"\nshow_responses 2x{len(a):,} chars, markdown={markdown}: {(shown - started) * 1000:.0f} ms"
            f" (+ first paint {(painted - shown) * 1000:.0f} ms)"
        )
        assert sum(f.startswith("EDIT") for f in pane.highlighted_fragments(1)) == 10
        assert shown - started < 3.0
    assert text_of(pane, 0) == a


# --- steps and empty responses ------------------------------------------------------------


def test_steps_with_marks_and_current_step(pane):
    steps = ("Count the **sinks**.", "There are 3 sinks.\nOne is hidden.", "So the answer is 3.")
    pane.show_responses([ResponseText("Response 1", "full text", steps), ResponseText("Response 2", "other")])
    card = pane.cards()[0]
    doc = card.body.document()
    assert doc.blockCount() == 3
    assert doc.findBlockByNumber(0).text() == "○ 1. Count the **sinks**."  # steps are plain text
    assert doc.findBlockByNumber(1).text().startswith("○ 2. There are 3 sinks.")
    assert pane.highlighted_fragments(0) == []  # no word diff against a step list

    pane.set_step_marks(0, {0: True, 1: False, 2: None})
    texts = [doc.findBlockByNumber(i).text()[:4] for i in range(3)]
    assert texts == ["✓ 1.", "✗ 2.", "○ 3."]
    backgrounds = [doc.findBlockByNumber(i).blockFormat().background() for i in range(3)]
    assert backgrounds[0].color().green() > backgrounds[0].color().red()
    assert backgrounds[1].color().red() > backgrounds[1].color().green()
    assert backgrounds[2].style() == Qt.BrushStyle.NoBrush

    pane.set_current_step(0, 2)  # the last step
    assert all(s.cursor.blockNumber() == 2 for s in card.body.extraSelections())
    pane.set_current_step(0, 1)
    [current] = card.body.extraSelections()
    assert current.cursor.selectedText().startswith("✗ 2. There are 3 sinks.")
    assert current.format.property(QTextFormat.Property.FullWidthSelection)
    pane.set_markdown(False)  # marks and the current step survive a re-render
    assert doc.findBlockByNumber(0).text().startswith("✓ 1.")
    assert card.body.extraSelections()[0].cursor.selectedText().startswith("✗ 2.")
    pane.set_current_step(0, None)
    assert card.body.extraSelections() == []
    pane.set_step_marks(0, {})
    assert doc.findBlockByNumber(0).text().startswith("○ 1.")


def test_empty_response_placeholder(pane):
    pane.show_responses(responses("", "   \n ", "Real text."))
    for index in (0, 1):
        card = pane.cards()[index]
        assert text_of(pane, index) == EMPTY_TEXT
        cursor = QTextCursor(card.body.document())
        cursor.setPosition(3)
        assert cursor.charFormat().fontItalic()
        assert card.count_label.text() == "0 words"
    pane.show_responses(responses("", "Something"))
    assert pane.highlighted_fragments(0) == [] and pane.highlighted_fragments(1) == []


def test_no_responses(pane):
    pane.show_responses([])
    assert pane.layout_mode() == "empty" and pane.cards() == []


def test_the_diff_is_off_by_default_where_most_words_differ_and_h_turns_it_on(pane):
    """Two independently written answers share only function words: colouring the rest of
    both said nothing (issue 24). Off by default there; the toggle still turns it on."""
    a = "The image shows three red apples on a wooden table next to a tall glass of water."
    b = "Two grey cats sleep on one blue sofa while rain falls outside the big window today."
    pane.show_responses(responses(a, b))
    assert pane.highlighted_fragments(0) == [] and pane.diff_skipped and not pane.diff_highlight_enabled()
    pane.set_diff_highlight(not pane.diff_highlight_enabled())  # what H does
    assert pane.highlighted_fragments(0) and pane.diff_highlight_enabled() and not pane.diff_skipped
    pane.set_diff_highlight(None)  # automatic again: a pair differing in one number is highlighted
    pane.show_responses(responses("There are 3 sinks.", "There are 2 sinks."))
    assert pane.highlighted_fragments(0) == ["3"] and not pane.diff_skipped
