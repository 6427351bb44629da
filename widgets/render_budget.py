"""What a response card may render at once, and the LaTeX protection for its Markdown (no Qt).

Response text is untrusted and often degenerate (judge runs loop, datasets hold base64 blobs
and 10 MB dumps). Qt lays a document out on the GUI thread, and some shapes cost far more
than their size (measured with PySide6 6.11, bench/render_bench.py, docs/PERFORMANCE.md):

* a run of characters with no line-break opportunity is wrapped in quadratic time (200 KB:
  4.5 s), whatever the Markdown;
* Markdown lists cost quadratically in their items (8,000 items: 0.9 s), tables ~0.2 ms per
  cell, inline markup ~10 µs per marker character;
* plain text is cheap (Qt lays large documents out lazily, block by block).

So :func:`plan_body` bounds what is shown: at most :data:`TOTAL_LIMIT` characters, unbroken
runs cut at :data:`RUN_LIMIT`, Markdown only up to :data:`MARKDOWN_LIMIT` characters and an
estimated layout cost (:func:`markdown_cost_us`), tables beyond :data:`TABLE_CELL_LIMIT`
cells as code blocks. What is left out is one "Show all" away (:func:`plan_full`: the whole
text, plain). Every function here is linear in its input.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Characters put in the document at most; beyond it, a plain-text preview and "Show all".
TOTAL_LIMIT = 100_000
#: Longest text rendered as Markdown (50 KB of prose: ~15 ms); longer text is plain.
MARKDOWN_LIMIT = 50_000
#: Longest run without a line-break opportunity shown; a longer one is cut with a marker.
RUN_LIMIT = 1_000
#: Table cells rendered as tables in one response; further tables become code blocks.
TABLE_CELL_LIMIT = 250
#: List items rendered as Markdown (Qt's cost grows with their square; 1,000 items ~15 ms).
LIST_ITEM_LIMIT = 1_500
#: Estimated Markdown layout cost (µs, see :func:`markdown_cost_us`) above which plain text is shown.
MARKDOWN_COST_LIMIT_US = 60_000
#: Longest shown text (either side) the word diff runs on.
DIFF_LIMIT = 200_000
#: Most highlighted diff spans per card (closer changes are merged beyond it: ``text_diff.coarsen``).
DIFF_SPAN_LIMIT = 300
#: Longest text whose words are counted exactly; beyond it the count is extrapolated.
COUNT_LIMIT = 200_000
#: "Show all": longest line (text block) it puts in the document; longer lines go in pieces,
#: each ending at its last space, so Qt never lays out one huge block (a 2 MB line: 1.4 s).
FULL_LINE_LIMIT = 10_000
#: "Show all": characters added to the document per turn of the event loop (the rest follow).
SHOW_ALL_STEP = 50_000


@dataclass(frozen=True)
class RenderPlan:
    """What a card puts in its document: ``text`` as Markdown or plain text.

    ``cut``: some of the response is not shown (offer "Show all"); ``note``: why the view
    differs from the whole response rendered as asked ("" when it does not);
    ``wrap_anywhere``: the text holds a run too long to wrap at word boundaries quickly.
    """

    text: str
    markdown: bool
    cut: bool = False
    note: str = ""
    wrap_anywhere: bool = False


def plan_body(text: str, markdown: bool) -> RenderPlan:
    """The budgeted view of one response (``markdown``: the pane's Markdown switch)."""
    shown, runs, covered = _bounded(text, TOTAL_LIMIT)
    notes = []
    if covered < len(text):
        notes.append(f"Showing the first {covered:,} of {len(text):,} characters as plain text")
    if runs:
        notes.append(f"Cut {_n(runs, 'unbroken run')} longer than {RUN_LIMIT:,} characters")
    cut = bool(notes)
    if markdown and covered == len(text):
        if len(shown) > MARKDOWN_LIMIT:
            notes.append(f"Shown as plain text: longer than {MARKDOWN_LIMIT:,} characters")
        else:
            fenced, tables, cells = _fence_tables(shown)
            protected = protect_math(fenced)
            if markdown_cost_us(protected, cells) > MARKDOWN_COST_LIMIT_US:
                notes.append("Shown as plain text: too much Markdown to lay out quickly")
            else:
                if tables:
                    notes.append(f"{_n(tables, 'large table')} shown as plain text")
                return RenderPlan(protected, True, cut, _sentence(notes))
    return RenderPlan(shown, False, cut, _sentence(notes))


def _bounded(text: str, limit: int) -> tuple[str, int, int]:
    """(shown, runs cut, characters of ``text`` covered): ``text`` with its long runs cut
    (:func:`cut_long_runs`) and then cut to about ``limit`` characters at a line end or a
    space. Only the part that can be shown is scanned, so a 10 MB text costs no more
    than a 100 KB one."""
    out: list[str] = []
    size = pos = runs = 0
    while len(text) - pos > RUN_LIMIT:  # what is left can hold a long run
        room = limit - size
        match = _long_run().search(text, pos, pos + room + RUN_LIMIT + 1)
        if match is None or match.start() - pos > room:
            break
        out.append(text[pos : match.start()])
        brk = _break().search(text, match.end())  # the run may go on past the searched window
        run_end = brk.start() if brk else len(text)
        out.append(_cut_run(match.start(), run_end, text))
        size += len(out[-2]) + len(out[-1])
        runs += 1
        pos = run_end
    if len(text) - pos <= limit - size:
        out.append(text[pos:])
        return "".join(out), runs, len(text)
    end = pos + _cut_point(text[pos : pos + max(0, limit - size)], max(0, limit - size))
    out.append(text[pos:end])
    return "".join(out), runs, end


def _cut_run(start: int, end: int, text: str) -> str:
    return f"{text[start : start + RUN_LIMIT]} … ({end - start - RUN_LIMIT:,} more characters)"


def plan_full(text: str) -> RenderPlan:
    """ "Show all": the whole response, plain text (wrapped anywhere if a run would be slow);
    lines longer than :data:`FULL_LINE_LIMIT` are shown in pieces (:func:`split_long_lines`)."""
    shown, pieces = split_long_lines(text)
    note = f"Showing all {len(text):,} characters as plain text"
    if pieces:
        note += f"; lines over {FULL_LINE_LIMIT:,} characters are shown in pieces"
    return RenderPlan(shown, False, False, note + ".", has_long_run(text))


def split_long_lines(text: str, limit: int = FULL_LINE_LIMIT) -> tuple[str, int]:
    """``text`` with each line longer than ``limit`` broken into lines of at most ``limit``
    characters (after the last space of each piece when it has one in its second half, else at
    ``limit``), and how many breaks were added. Nothing but line breaks is added."""
    if len(text) <= limit or all(len(line) <= limit for line in text.split("\n")):
        return text, 0
    out: list[str] = []
    breaks = 0
    for line in text.split("\n"):
        start = 0
        while len(line) - start > limit:
            space = line.rfind(" ", start + limit // 2, start + limit)
            end = space + 1 if space >= 0 else start + limit
            out.append(line[start:end])
            start = end
            breaks += 1
        out.append(line[start:])
    return "\n".join(out), breaks


def show_all_steps(text: str, step: int = SHOW_ALL_STEP) -> list[str]:
    """``text`` in consecutive slices of at most ``step`` characters: what "Show all" adds to
    the document per turn of the event loop (at least one slice, maybe empty)."""
    return [text[k : k + step] for k in range(0, len(text), step)] or [""]


def plan_steps(steps: Sequence[str], full: bool = False) -> tuple[list[str], RenderPlan]:
    """Step texts as shown (one each, so block number == step index) and the plan's flags;
    each step gets an equal share of :data:`TOTAL_LIMIT` (at least 200 characters)."""
    if full:
        return list(steps), RenderPlan("", False, False, "Showing all steps in full.", any(map(has_long_run, steps)))
    share = max(200, min(TOTAL_LIMIT, TOTAL_LIMIT // max(1, len(steps))))
    shown: list[str] = []
    longer = runs = 0
    for step in steps:
        text, n, covered = _bounded(step, share)
        if covered < len(step):
            text += f" … ({len(step) - covered:,} more characters)"
            longer += 1
        shown.append(text)
        runs += n
    notes = []
    if longer:
        notes.append(f"{_n(longer, 'step')} cut to {share:,} characters")
    if runs:
        notes.append(f"Cut {_n(runs, 'unbroken run')} longer than {RUN_LIMIT:,} characters")
    return shown, RenderPlan("", False, bool(notes), _sentence(notes))


def plan_plain(text: str, limit: int = TOTAL_LIMIT) -> RenderPlan:
    """A plain-text view of untrusted text (a judge's rationale, a note): runs cut at
    :data:`RUN_LIMIT` and at most about ``limit`` characters, with a note saying so."""
    shown, runs, covered = _bounded(text, limit)
    notes = []
    if covered < len(text):
        notes.append(f"Showing the first {covered:,} of {len(text):,} characters")
    if runs:
        notes.append(f"Cut {_n(runs, 'unbroken run')} longer than {RUN_LIMIT:,} characters")
    return RenderPlan(shown, False, bool(notes), _sentence(notes))


def excerpt(text: str, span: tuple[int, int] | None, limit: int = TOTAL_LIMIT) -> tuple[str, tuple[int, int] | None]:
    """``text`` bounded like :func:`plan_plain` with the deciding ``span`` kept in view: the
    start of the text, ``… (N characters not shown) …``, the span, then the start of what
    follows it. Returns the shown text and where the span is in it."""
    if span is None:
        plan = plan_plain(text, limit)
        return plan.text + (f" … ({plan.note})" if plan.cut else ""), None
    start, end = max(0, min(span[0], len(text))), max(0, min(span[1], len(text)))
    deciding, runs, covered = _bounded(text[start:end], max(RUN_LIMIT, limit // 4))
    if covered < end - start:
        deciding += f" … ({end - start - covered:,} more characters)"
    after, _, after_covered = _bounded(text[end:], max(RUN_LIMIT, limit // 8))
    if after_covered < len(text) - end:
        after += f" … ({len(text) - end - after_covered:,} more characters not shown)"
    before, _, before_covered = _bounded(text[:start], max(0, limit - len(deciding) - len(after)))
    if before_covered < start:
        before += f" … ({start - before_covered:,} characters not shown) … "
    return before + deciding + after, (len(before), len(before) + len(deciding))


class StreamBudget:
    """What text streamed into a plain view may add, piece by piece: unbroken runs cut at
    :data:`RUN_LIMIT`, at most ``limit`` characters in all; ``dropped`` counts the rest."""

    def __init__(self, limit: int = TOTAL_LIMIT):
        self.limit = limit
        self.shown = self.dropped = 0
        self._run = 0  # characters of the unbroken run the view ends with

    @property
    def full(self) -> bool:
        return self.shown >= self.limit

    def take(self, text: str) -> str:
        """The part of ``text`` to append (``""`` once full); one pass over it."""
        out: list[str] = []
        pos, n = 0, len(text)
        breaks = _break()
        while pos < n:
            if self.shown >= self.limit:
                self.dropped += n - pos
                break
            brk = breaks.search(text, pos)
            run_end = brk.start() if brk else n
            length, allowed = run_end - pos, max(0, RUN_LIMIT - self._run)
            keep = min(length, allowed, self.limit - self.shown)
            out.append(text[pos : pos + keep])
            self.shown += keep
            self.dropped += length - keep
            if length > allowed and self._run <= RUN_LIMIT:  # this run just passed the limit
                out.append(_RUN_CUT)
                self.shown += len(_RUN_CUT)
                self._run = RUN_LIMIT + 1  # the rest of the run is left out, even in later pieces
            else:
                self._run += keep
            if brk is None:
                break
            pos = run_end
            if self.shown < self.limit:
                out.append(brk.group())
                self.shown += 1
                self._run = 0
                pos = brk.end()
        return "".join(out)


_RUN_CUT = " … (unbroken run cut)"


def word_count(text: str) -> tuple[int, bool]:
    """(words, exact): words counted exactly up to :data:`COUNT_LIMIT` characters, else
    extrapolated from the first :data:`COUNT_LIMIT` (splitting 10 MB costs ~120 ms)."""
    if len(text) <= COUNT_LIMIT:
        return len(text.split()), True
    sample = text[:COUNT_LIMIT]
    return int(round(len(sample.split()) * len(text) / len(sample), -3)), False


def _cut_point(text: str, limit: int) -> int:
    """Where to cut ``text`` to at most ``limit`` characters: a line end or space near it."""
    for sep, window in (("\n", 2_000), (" ", 200)):
        at = text.rfind(sep, max(0, limit - window), limit)
        if at > 0:
            return at
    return limit


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _sentence(notes: list[str]) -> str:
    return "; ".join(notes) + "." if notes else ""


# --- unbroken runs ------------------------------------------------------------------------

# Characters after which Qt (ICU line breaking) may wrap: spaces other than the no-break ones
# (U+00A0, U+2007, U+202F are runs), and CJK, kana, Hangul and emoji, which break anywhere.
# Counting a breakable character as unbreakable only cuts a little early; the reverse would
# leave a slow run in place, so anything else (letters, digits, punctuation) is a run.
_BREAKS = (
    " \t\n\r\f\v\x1c-\x1f\x85\u1680\u2000-\u2006\u2008-\u200b\u2028\u2029\u205f\u3000"
    "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U0001f300-\U0001faff\U00020000-\U0003ffff"
)


@functools.cache
def _long_run() -> re.Pattern[str]:
    """A run longer than :data:`RUN_LIMIT` (compiled on first use: ~5 ms at start-up otherwise).
    A run starts after a break (the lookbehind fails at once inside a run: linear time)."""
    return re.compile(f"(?<![^{_BREAKS}])[^{_BREAKS}]{{{RUN_LIMIT + 1},}}")


@functools.cache
def _break() -> re.Pattern[str]:
    """One character Qt may wrap after (compiled on first use)."""
    return re.compile(f"[{_BREAKS}]")


def has_long_run(text: str) -> bool:
    return len(text) > RUN_LIMIT and _long_run().search(text) is not None


def cut_long_runs(text: str) -> tuple[str, int]:
    """``text`` with every run longer than :data:`RUN_LIMIT` cut to it, plus a marker saying
    how much was left out; and how many runs were cut."""
    count = 0

    def cut(match: re.Match) -> str:
        nonlocal count
        count += 1
        return _cut_run(match.start(), match.end(), text)

    if len(text) <= RUN_LIMIT:  # no run can be longer
        return text, 0
    return _long_run().sub(cut, text), count


# --- Markdown cost ------------------------------------------------------------------------

_MARKUP = "*_`[<&~"
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]", re.MULTILINE)
# Per-unit costs measured on one core (bench machine, PySide6 6.11), rounded up.
_US_PER_CHAR, _US_PER_LINE, _US_PER_MARKUP, _US_PER_LIST_ITEM, _US_PER_CELL = 0.35, 6, 10, 20, 190


def markdown_cost_us(markdown: str, table_cells: int | None = None) -> float:
    """Estimated µs for Qt to parse and lay out ``markdown`` (infinite past a hard limit);
    ``table_cells``: the cells of its tables, when known (else they are counted)."""
    items = len(_LIST_ITEM.findall(markdown))
    if items > LIST_ITEM_LIMIT:
        return float("inf")
    if table_cells is None:
        table_cells = sum(cells for *_, cells in _tables(markdown.split("\n"))) if "|" in markdown else 0
    return (
        len(markdown) * _US_PER_CHAR
        + markdown.count("\n") * _US_PER_LINE
        + sum(markdown.count(c) for c in _MARKUP) * _US_PER_MARKUP
        + items * _US_PER_LIST_ITEM
        + table_cells * _US_PER_CELL
    )


# --- tables -------------------------------------------------------------------------------

# A GitHub table's delimiter row: cells of dashes with optional colons, at least one pipe.
_DELIMITER_ROW = re.compile(r"^ {0,3}(?=[^|\n]*\|)\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")


def _tables(lines: list[str]) -> list[tuple[int, int, int]]:
    """(first line, end line, cells) of each GitHub table: a header line with a pipe, the
    delimiter row, and the rows up to the next blank line."""
    found = []
    i = 1
    while i < len(lines):
        if "|" in lines[i - 1] and "-" in lines[i] and _DELIMITER_ROW.match(lines[i]):
            columns = lines[i].strip().strip("|").count("|") + 1
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            found.append((i - 1, end, columns * (end - i)))
            i = end + 1
        else:
            i += 1
    return found


def fence_large_tables(markdown: str) -> tuple[str, int]:
    """Tables past :data:`TABLE_CELL_LIMIT` cells (counted in order) as fenced code blocks:
    the same text in monospace, without Qt's per-cell cost. Returns the text and how many
    tables were fenced."""
    text, fenced, _ = _fence_tables(markdown)
    return text, fenced


def _fence_tables(markdown: str) -> tuple[str, int, int]:
    """(text, tables fenced, cells of the tables kept)."""
    if "|" not in markdown or "-" not in markdown:
        return markdown, 0, 0
    lines = markdown.split("\n")
    kept, over = 0, []
    for first, end, cells in _tables(lines):
        if kept + cells > TABLE_CELL_LIMIT:
            over.append((first, end))
        else:
            kept += cells
    for first, end in reversed(over):
        block = lines[first:end]
        longest = max((len(run) for line in block for run in _TICK_RUN.findall(line)), default=0)
        fence = "`" * max(3, longest + 1)
        lines[first:end] = [fence, *block, fence]
    return ("\n".join(lines) if over else markdown), len(over), kept


# --- LaTeX protection: a single pass ------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ANY_FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})", re.MULTILINE)
_TICK_RUN = re.compile(r"`+")
# Where something may start: a backtick run, "$$" or "$", "\[" or "\(".
_CANDIDATE = re.compile(r"`+|\$\$?|\\[(\[]")
# Inside $...$: the next character that is not plain content.
_DOLLAR_STOP = re.compile(r"[$\\\n]")


def protect_math(markdown: str) -> str:
    """Wrap LaTeX spans in code so Markdown shows them verbatim (no emphasis, no escapes).

    Math is ``$$..$$``, ``\\[..\\]``, ``\\(..\\)`` or ``$..$`` (no space inside the dollars,
    no digit after the closing one, so "$5 and $10" is not math); code spans and fenced code
    are left alone. One left-to-right scan: unmatched openers cost nothing extra.
    """
    if "$" not in markdown and "\\" not in markdown:
        return markdown
    if not _ANY_FENCE.search(markdown):
        return _protect_chunk(markdown)
    out: list[str] = []
    chunk: list[str] = []
    fence = None
    for line in markdown.splitlines(keepends=True):
        opener = _FENCE.match(line)
        if fence is None and opener:
            out.append(_protect_chunk("".join(chunk)))
            chunk = []
            fence = opener.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = None
        else:
            chunk.append(line)
    out.append(_protect_chunk("".join(chunk)))
    return "".join(out)


def _protect_chunk(s: str) -> str:
    """Wrap each math span of ``s`` (text outside fenced code) in a code span."""
    if "$" not in s and "\\" not in s:
        return s
    n = len(s)
    out: list[str] = []
    copied = 0  # s[:copied] is in out
    runs_by_length: dict[int, list[int]] | None = None
    find_closer = {"$$": _forward_finder(s, "$$"), "\\[": _forward_finder(s, "\\]"), "\\(": _forward_finder(s, "\\)")}
    i = 0
    while True:
        m = _CANDIDATE.search(s, i)
        if m is None:
            break
        p, token = m.start(), m.group(0)
        end = -1  # end of a math span starting at p
        if token[0] == "`":
            # A code span: the next run of exactly as many backticks (CommonMark); an
            # unmatched run is literal text.
            if runs_by_length is None:
                runs_by_length = {}
                for run in _TICK_RUN.finditer(s):
                    runs_by_length.setdefault(len(run.group(0)), []).append(run.start())
            starts = runs_by_length.get(len(token), [])
            k = bisect_right(starts, p)
            i = starts[k] + len(token) if k < len(starts) else m.end()
            continue
        if token in find_closer:
            q = find_closer[token](p + 3)  # at least one character inside
            end = q + 2 if q >= 0 else -1
        else:  # a single "$"
            end = _dollar_end(s, p, n)
        if end < 0:
            i = p + 1
            continue
        out.append(s[copied:p])
        out.append(_wrap_math(s[p:end]))
        copied = i = end
    if not out:
        return s
    out.append(s[copied:])
    return "".join(out)


def _dollar_end(s: str, p: int, n: int) -> int:
    """End of the ``$..$`` span opening at ``p``, or -1: not after a backslash or ``$``, no
    space or ``$`` after the opener; content of escapes (backslash + any character) and
    characters other than ``$``, backslash and newline; the closer follows neither a space
    nor a backslash, and no digit or ``$`` follows it."""
    if p and s[p - 1] in "\\$":
        return -1
    if p + 1 >= n or s[p + 1].isspace() or s[p + 1] == "$":
        return -1
    j = p + 1
    while True:
        stop = _DOLLAR_STOP.search(s, j)
        if stop is None:
            return -1
        k = stop.start()
        c = s[k]
        if c == "\\":
            if k + 1 >= n:
                return -1
            j = k + 2
        elif c == "\n":
            return -1
        else:  # the closing "$", or nothing (content cannot contain a bare "$")
            before = s[k - 1]
            after = s[k + 1] if k + 1 < n else ""
            if before.isspace() or before == "\\" or after == "$" or after.isdecimal():
                return -1
            return k + 1


def _forward_finder(s: str, needle: str) -> Callable[[int], int]:
    """``s.find(needle, start)`` for non-decreasing starts, remembering the last answer: a
    text of unmatched openers is searched once, not once per opener."""
    last_start, last_hit = 0, -2  # -2: not searched yet

    def find(start: int) -> int:
        nonlocal last_start, last_hit
        if last_hit != -2 and last_start <= start and (last_hit >= start or last_hit == -1):
            return last_hit
        last_start, last_hit = start, s.find(needle, start)
        return last_hit

    return find


def _wrap_math(math: str) -> str:
    longest = max((len(run) for run in _TICK_RUN.findall(math)), default=0)
    if "\n" in math:  # display math keeps its line breaks as a code block
        fence = "`" * max(3, longest + 1)
        return f"\n{fence}\n{math}\n{fence}\n"
    return f"{'`' * (longest + 1)}{math}{'`' * (longest + 1)}"  # math never starts with "`"
