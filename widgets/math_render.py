"""LaTeX in responses drawn as formulas, with matplotlib's mathtext (no TeX install).

A response's math spans (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``) reach the document as
code spans (``render_budget.protect_math`` keeps Markdown from eating them). Each one that
mathtext can draw is replaced by an image of the formula; the LaTeX stays as the image's
name, tooltip and alt text, and one formula is one character to the word diff, which no
longer cuts through it. What mathtext cannot parse (``\\begin{align}``, unknown macros) stays
as it was, monospace.

Drawing takes 40–100 ms a formula (and seconds for matplotlib's first import), so it never
happens on the GUI thread: :class:`MathImages` draws on one worker thread and says when an
image is ready (``ready``, on the GUI thread); a card shows the code until then and
re-renders. Images are cached (LRU) by formula, size and colour.
"""

from __future__ import annotations

import queue
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtGui import QColor, QImage, QTextCursor, QTextDocument, QTextImageFormat

#: A code span that is one math span, delimiters included (what protect_math wraps).
_MATH = re.compile(r"\$\$(?P<dd>.+?)\$\$|\$(?P<d>[^$]+?)\$|\\\((?P<p>.+?)\\\)|\\\[(?P<b>.+?)\\\]", re.DOTALL)
#: Formulas longer than this stay as code (mathtext's time grows with them).
MAX_FORMULA = 400
CACHE_SIZE = 512
DPI = 100
URL_SCHEME = "pairscope-math"
#: The drawing thread ends after this long without a formula to draw.
IDLE_S = 0.5


@dataclass(frozen=True)
class MathSpan:
    """One math span in a document: [start, end) positions, its LaTeX and whether it is display math."""

    start: int
    end: int
    latex: str
    display: bool


def math_spans(doc: QTextDocument) -> list[MathSpan]:
    """The math spans of ``doc``: monospace fragments (or blocks of a code block, for
    display math over several lines) that are exactly one ``$…$``/``$$…$$``/``\\(…\\)``/``\\[…\\]``."""
    spans: list[MathSpan] = []
    block = doc.begin()
    while block.isValid():
        text = block.text()
        stripped = text.strip()
        if stripped in ("$$", "\\[") and block.next().isValid():  # display math over several lines
            closing = "$$" if stripped == "$$" else "\\]"
            lines, end_block = [], block.next()
            while end_block.isValid() and end_block.text().strip() != closing:
                lines.append(end_block.text())
                end_block = end_block.next()
            if end_block.isValid() and lines:
                latex = " ".join(line.strip() for line in lines)
                spans.append(MathSpan(block.position(), end_block.position() + len(end_block.text()), latex, True))
                block = end_block.next()
                continue
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            iterator += 1
            if not fragment.charFormat().fontFixedPitch():
                continue
            found = _MATH.fullmatch(fragment.text().strip())
            if found is None:
                continue
            latex = next(g for g in found.groups() if g is not None).strip()
            display = found.group("dd") is not None or found.group("b") is not None
            if latex and len(latex) <= MAX_FORMULA:
                spans.append(MathSpan(fragment.position(), fragment.position() + fragment.length(), latex, display))
        block = block.next()
    return spans


def _draw(latex: str, point_size: float, colour: str) -> QImage | None:
    """The formula as an image (transparent background), or ``None`` when mathtext cannot
    parse it. On the worker thread: QImage (not QPixmap) may be made off the GUI thread."""
    import numpy as np
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    try:
        # \frac in a line of text is drawn at script size by mathtext: too small to read on screen.
        shown = re.sub(r"\\frac(?=[\s{\\])", r"\\dfrac", latex)
        parsed = MathTextParser("agg").parse(f"${shown}$", dpi=DPI, prop=FontProperties(size=point_size * 1.1))
    except (ValueError, RuntimeError, KeyError, IndexError):  # mathtext's parse errors are ValueErrors
        return None
    alpha = np.asarray(parsed.image, dtype=np.uint8)
    if alpha.ndim != 2 or not alpha.size:
        return None
    height, width = alpha.shape
    rgb = QColor(colour)
    pixels = np.empty((height, width, 4), dtype=np.uint8)  # BGRA: Format_ARGB32 on little-endian
    pixels[..., 0], pixels[..., 1], pixels[..., 2], pixels[..., 3] = rgb.blue(), rgb.green(), rgb.red(), alpha
    image = QImage(pixels.data, width, height, 4 * width, QImage.Format.Format_ARGB32)
    return image.copy()  # owns its pixels once ``pixels`` is gone


class MathImages(QObject):
    """Formula images drawn on one worker thread; ``ready`` says one was drawn (GUI thread)."""

    ready = Signal()
    _done = Signal()
    _instance: MathImages | None = None

    def __init__(self) -> None:
        super().__init__()
        self._cache: OrderedDict[tuple, QImage | None] = OrderedDict()
        self._lock = threading.Lock()
        self._asked: set[tuple] = set()
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._done.connect(self.ready.emit)  # queued: emitted from the worker, received on the GUI thread

    @classmethod
    def shared(cls) -> MathImages:
        """The process's one instance (one worker thread, one cache)."""
        if cls._instance is None:
            cls._instance = MathImages()
        return cls._instance

    def image(self, latex: str, point_size: float, colour: str = "#1a1a1a") -> QImage | None | bool:
        """The formula's image; ``None`` when it cannot be drawn; ``False`` while it is being
        drawn (``ready`` follows)."""
        key = (latex, round(point_size, 1), colour)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            if key in self._asked:
                return False
            self._asked.add(key)
            self._queue.put(key)
            if self._thread is None:  # started on demand; it ends when idle
                self._thread = threading.Thread(target=self._work, name="pairscope-math", daemon=True)
                self._thread.start()
        return False

    def _work(self) -> None:
        while True:
            try:
                key = self._queue.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            try:
                image = _draw(*key)
            except Exception:  # noqa: BLE001 (a formula that breaks mathtext stays as code)
                image = None
            with self._lock:
                self._cache[key] = image
                self._asked.discard(key)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            if self._queue.empty():
                try:
                    self._done.emit()
                except RuntimeError:  # the application is gone
                    return


def render_math(doc: QTextDocument, point_size: float, images: MathImages | None = None) -> int:
    """Replace each math span of ``doc`` whose image is drawn by the image; returns how many
    spans still wait for theirs (``images.ready`` then asks for another pass)."""
    images = images or MathImages.shared()
    waiting = 0
    cursor = QTextCursor(doc)
    cursor.beginEditBlock()
    for n, span in reversed(list(enumerate(math_spans(doc)))):
        image = images.image(span.latex, point_size)
        if image is False:
            waiting += 1
            continue
        if not isinstance(image, QImage):  # None: the formula does not parse, shown as text
            continue
        name = f"{URL_SCHEME}:{n}/{abs(hash(span.latex))}"
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), image)
        fmt = QTextImageFormat()
        fmt.setName(name)
        fmt.setWidth(image.width())
        fmt.setHeight(image.height())
        fmt.setToolTip(("$$" if span.display else "$") + span.latex + ("$$" if span.display else "$"))
        fmt.setVerticalAlignment(QTextImageFormat.VerticalAlignment.AlignMiddle)
        cursor.setPosition(span.start)
        cursor.setPosition(span.end, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertImage(fmt)
        if span.display:  # display math on a line of its own within its paragraph
            after = doc.characterAt(cursor.position())
            if after not in ("\u2029", "\u2028", "") and cursor.position() < doc.characterCount() - 1:
                if after == " ":  # the soft line break Markdown made a space
                    cursor.deleteChar()
                cursor.insertText("\u2028")
            cursor.setPosition(span.start)
            if span.start > cursor.block().position() and doc.characterAt(span.start - 1) != "\u2028":
                cursor.insertText("\u2028")
    cursor.endEditBlock()
    return waiting


def formulas(doc: QTextDocument) -> list[str]:
    """The LaTeX of every formula drawn in ``doc`` (their tooltips), in order."""
    out = []
    block = doc.begin()
    while block.isValid():
        iterator = block.begin()
        while not iterator.atEnd():
            fmt = iterator.fragment().charFormat()
            if fmt.isImageFormat() and fmt.toImageFormat().name().startswith(URL_SCHEME):
                out.append(fmt.toolTip())
            iterator += 1
        block = block.next()
    return out


__all__ = ["MathImages", "MathSpan", "formulas", "math_spans", "render_math"]
