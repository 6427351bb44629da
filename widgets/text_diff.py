"""Word-level diff of two texts, as character spans of the original strings (no Qt).

Texts are split into tokens (numbers, words, single punctuation marks); whitespace is not
compared, so whitespace-only differences are not reported. Tokens are aligned with
``difflib.SequenceMatcher(autojunk=False)``, so frequent short tokens such as numbers align
precisely. Large inputs are reduced first: the common prefix and suffix are stripped, then
lines, then sentences, then tokens found once on each side (as in patience diff) are
aligned, and only the blocks between them are diffed word by word; a block still too large
after that is marked changed as a whole. 2 x 100k characters take 25-100 ms.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from difflib import SequenceMatcher
from itertools import accumulate, compress, islice, repeat
from operator import add, contains, or_, sub
from typing import NamedTuple


class Span(NamedTuple):
    """Characters ``text[start:end]``; ``changed`` when they differ from the other text."""

    start: int
    end: int
    changed: bool


#: Largest (tokens of a) x (tokens of b) diffed word by word in one SequenceMatcher call (a
#: quarter of it between patience anchors). Completely different English-like 2,000-word
#: blocks (~4M pairs) take ~40 ms, 3,000-word blocks ~130 ms (Python 3.11).
#: Levels of _diff: 0 split by lines, 1 by sentences, 2 by unique tokens, 3 give up.
WORD_BUDGET = 4_000_000

# (whitespace before, token): a number, a word, or one other character.
_TOKEN = re.compile(r"(\s*)(\d+(?:[.,:]\d+)*|\w+(?:['’]\w+)*|[^\w\s])")
_SENTENCE_END = frozenset(".!?;:")

# An opcode: (equal, a_lo, a_hi, b_lo, b_hi) over token indices.
_Op = tuple[bool, int, int, int, int]


def word_diff(a: str, b: str) -> tuple[list[Span], list[Span]]:
    """Spans covering ``a`` and ``b`` in order, contiguous and merged; empty text → ``[]``."""
    if a == b:
        return ([Span(0, len(a), False)] if a else []), ([Span(0, len(b), False)] if b else [])
    ka, pa, la = _tokenize(a)
    kb, pb, lb = _tokenize(b)
    flags_a = [False] * len(ka)
    flags_b = [False] * len(kb)
    for equal, alo, ahi, blo, bhi in _diff(ka, kb, la, lb, 0, len(ka), 0, len(kb), level=0):
        if not equal:
            flags_a[alo:ahi] = [True] * (ahi - alo)
            flags_b[blo:bhi] = [True] * (bhi - blo)
    return _spans(a, pa, flags_a, la), _spans(b, pb, flags_b, lb)


def coarsen(spans: list[Span], limit: int) -> list[Span]:
    """At most ``limit`` changed spans that still cover every change: when there are more,
    the changes separated by the shortest unchanged gaps are merged (highlighting those gaps
    too). A view draws each span as one selection; thousands of them make every repaint slow."""
    changed = [s for s in spans if s.changed]
    if len(changed) <= max(1, limit):
        return spans
    gaps = sorted(b.start - a.end for a, b in zip(changed, changed[1:]))
    threshold = gaps[len(changed) - max(1, limit) - 1]  # merging gaps <= it leaves <= limit spans
    merged: list[list[int]] = []
    for span in changed:
        if merged and span.start - merged[-1][1] <= threshold:
            merged[-1][1] = span.end
        else:
            merged.append([span.start, span.end])
    out: list[Span] = []
    position = 0
    for start, end in merged:
        if start > position:
            out.append(Span(position, start, False))
        out.append(Span(start, end, True))
        position = end
    if position < spans[-1].end:
        out.append(Span(position, spans[-1].end, False))
    return out


def changed_fragments(text: str, spans: list[Span]) -> list[str]:
    """The changed parts of ``text`` (a convenience for tests and tooltips)."""
    return [text[s.start : s.end] for s in spans if s.changed]


def _tokenize(text: str) -> tuple[list[str], list[tuple[int, int]], list[bool]]:
    """Non-whitespace tokens: their text, (start, end) and whether a line break follows.

    Whitespace is left out of the comparison: it is the most frequent token by far and
    would make SequenceMatcher several times slower without making the diff more precise.
    """
    pairs = _TOKEN.findall(text)
    if not pairs:
        return [], [], []
    # Built with C-level map/accumulate: a per-token Python loop was 2/3 of a 100 KB diff.
    spaces, keys = (list(column) for column in zip(*pairs))
    token_lengths = list(map(len, keys))
    ends = list(accumulate(map(add, map(len, spaces), token_lengths)))
    places = list(zip(map(sub, ends, token_lengths), ends))
    line_ends = list(map(contains, islice(spaces, 1, None), repeat("\n")))
    line_ends.append(False)
    return keys, places, line_ends


def _diff(ka, kb, la, lb, alo: int, ahi: int, blo: int, bhi: int, level: int) -> list[_Op]:
    head: list[_Op] = []
    tail: list[_Op] = []
    p = 0
    while alo + p < ahi and blo + p < bhi and ka[alo + p] == kb[blo + p]:
        p += 1
    if p:
        head.append((True, alo, alo + p, blo, blo + p))
        alo, blo = alo + p, blo + p
    s = 0
    while alo < ahi - s and blo < bhi - s and ka[ahi - 1 - s] == kb[bhi - 1 - s]:
        s += 1
    if s:
        tail.append((True, ahi - s, ahi, bhi - s, bhi))
        ahi, bhi = ahi - s, bhi - s
    if alo == ahi and blo == bhi:
        middle: list[_Op] = []
    elif alo == ahi or blo == bhi:
        middle = [(False, alo, ahi, blo, bhi)]
    elif (ahi - alo) * (bhi - blo) <= (WORD_BUDGET if level < 3 else WORD_BUDGET // 4):
        matcher = SequenceMatcher(None, ka[alo:ahi], kb[blo:bhi], autojunk=False)
        middle = [
            (tag == "equal", alo + i1, alo + i2, blo + j1, blo + j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    elif level < 2:
        middle = _segment_diff(ka, kb, la, lb, alo, ahi, blo, bhi, level)
    elif level == 2:
        middle = _anchor_diff(ka, kb, la, lb, alo, ahi, blo, bhi, level)
    else:
        middle = [(False, alo, ahi, blo, bhi)]
    return head + middle + tail


def _segment_diff(ka, kb, la, lb, alo, ahi, blo, bhi, level) -> list[_Op]:
    """Align lines (level 0) or sentences (level 1), then diff the differing blocks."""
    bounds_a = _segments(ka, la, alo, ahi, level)
    bounds_b = _segments(kb, lb, blo, bhi, level)
    if len(bounds_a) == 1 and len(bounds_b) == 1:
        return _diff(ka, kb, la, lb, alo, ahi, blo, bhi, level + 1)
    keys_a = ["\x00".join(ka[i:j]) for i, j in bounds_a]
    keys_b = ["\x00".join(kb[i:j]) for i, j in bounds_b]
    ops: list[_Op] = []
    matcher = SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a1, a2 = _at(bounds_a, i1, ahi), _at(bounds_a, i2, ahi)
        b1, b2 = _at(bounds_b, j1, bhi), _at(bounds_b, j2, bhi)
        if tag == "equal":
            ops.append((True, a1, a2, b1, b2))
        else:
            ops.extend(_diff(ka, kb, la, lb, a1, a2, b1, b2, level + 1))
    return ops


def _anchor_diff(ka, kb, la, lb, alo, ahi, blo, bhi, level) -> list[_Op]:
    """Patience-style: align the tokens found exactly once on each side, diff between them."""
    count_a = Counter(ka[alo:ahi])
    count_b = Counter(kb[blo:bhi])
    where_b = {kb[j]: j for j in range(blo, bhi) if count_b[kb[j]] == 1 and count_a[kb[j]] == 1}
    anchors = _longest_increasing([(i, where_b[ka[i]]) for i in range(alo, ahi) if ka[i] in where_b])
    if not anchors:
        return [(False, alo, ahi, blo, bhi)]
    ops: list[_Op] = []
    i0, j0 = alo, blo
    for i, j in anchors:
        ops.extend(_diff(ka, kb, la, lb, i0, i, j0, j, level + 1))
        ops.append((True, i, i + 1, j, j + 1))
        i0, j0 = i + 1, j + 1
    ops.extend(_diff(ka, kb, la, lb, i0, ahi, j0, bhi, level + 1))
    return ops


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by first item) increasing in the second item."""
    tails: list[int] = []
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        position = bisect_left(tails, j)
        if position == len(tails):
            tails.append(j)
            tail_index.append(k)
        else:
            tails[position] = j
            tail_index[position] = k
        previous[k] = tail_index[position - 1] if position else -1
    result = []
    k = tail_index[-1] if tail_index else -1
    while k >= 0:
        result.append(pairs[k])
        k = previous[k]
    return result[::-1]


def _at(bounds: list[tuple[int, int]], index: int, hi: int) -> int:
    return bounds[index][0] if index < len(bounds) else hi


def _segments(keys: list[str], line_ends: list[bool], lo: int, hi: int, level: int) -> list[tuple[int, int]]:
    """Token ranges of the lines (level 0) or sentences (level 1) in ``keys[lo:hi]``."""
    ends = line_ends[lo:hi]
    if level == 1:
        ends = list(map(or_, ends, map(_SENTENCE_END.__contains__, keys[lo:hi])))
    bounds = []
    start = lo
    for i in compress(range(lo, hi), ends):
        bounds.append((start, i + 1))
        start = i + 1
    if start < hi:
        bounds.append((start, hi))
    return bounds


def _spans(text: str, places: list[tuple[int, int]], flags: list[bool], line_ends: list[bool]) -> list[Span]:
    """Spans from token flags: a changed span runs from its first changed token's start to
    its last one's end, so spaces inside a change are changed; a line break splits it."""
    if not text:
        return []
    edges = [(i, False) for i in range(len(flags)) if flags[i] != (flags[i - 1] if i else False)]
    breaks = [(i, True) for i in range(1, len(flags)) if flags[i] and flags[i - 1] and line_ends[i - 1]]
    spans: list[Span] = []
    start, changed = 0, False
    for i, is_break in sorted(edges + breaks):
        if is_break:
            spans.append(Span(start, places[i - 1][1], True))
            spans.append(Span(places[i - 1][1], places[i][0], False))
            start = places[i][0]
            continue
        boundary = places[i][0] if flags[i] else places[i - 1][1]
        if boundary > start:
            spans.append(Span(start, boundary, changed))
        start, changed = boundary, flags[i]
    if changed:
        spans.append(Span(start, places[-1][1], True))
        start, changed = places[-1][1], False
    if start < len(text):
        spans.append(Span(start, len(text), False))
    return spans
