"""Reading a verdict out of a judge's raw text, and saying so when there is none.

Every parser reports failure (``parsed=False`` and a reason) instead of guessing: it never
picks the first number in free text. Markdown emphasis (``*``, ``_``, backticks) is ignored;
spans always index the original text, so the UI can highlight the deciding sentence.

Pairwise conventions (positions are as shown to the judge; ``Answer 1`` → 0):

- Explicit verdicts, the last one wins: a line labelled ``Overall Judgment``, ``Final verdict``,
  ``Final judgment``, ``Verdict``, ``Final answer``, ``Final decision``, ``Final choice``,
  ``Better answer``, ``Preferred answer`` or ``Winner`` (a label alone on its line takes the next
  line), a ``[[...]]`` marker, or ``\\boxed{...}``.
- ``[[A]]``, ``[[B]]``, … and ``[[1]]``, ``[[2]]``, … name a position. With two answers
  ``[[C]]`` means a tie (the MT-Bench convention); with three or more it means Answer 3.
  ``[[A>B]]``, ``[[A>>B]]``, ``[[B<A]]`` (Arena-Hard) name the winner; ``[[A=B]]`` and
  ``[[tie]]`` are ties; a marker with a side beyond the answers (``[[A>>D]]``, ``[[E=F]]`` of
  two) is refused. ``\\boxed{2}`` names Answer 2; a boxed number beyond the answers is
  taken for a math result and ignored.
- In a verdict line, tie words (Tie, equal, neither, …) make a tie unless the line names a
  single answer before them ("Answer 2, as the counts are not equal").
- A last line reading ``Answer: 2`` (or ``Answer: B``, ``Response: Tie``) is a verdict too, when
  the position exists; ``Answer: 4`` of two answers is taken for a result (a count) and ignored.
- An output that is nothing but one answer ("Answer 2", "B", "Tie") is that verdict.
- Without an explicit verdict only the final sentence of the last line counts, and only as a
  claim ("Answer 2 is better", "I prefer Response 1") or a bare tie ("Tie.", "It's a tie.").
- A verdict naming two different answers is ambiguous; a position beyond ``n_answers`` is out
  of range; both are failures.

Steps: "Step k: s" lines, else VLRMBench's ``[0, 1, 0]`` indicator list (:func:`parse_step_scores`).
The ``strict`` profile reads a pairwise verdict by VL-RewardBench's official regex
(``official_rules.VLREWARDBENCH_PATTERN``), scores and steps by the bundled templates' exact last lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .official_rules import last_match, step_flags_to_scores, vlrewardbench_claim

_MARKUP = "*_`"


@dataclass(frozen=True)
class PairwiseVerdict:
    """``choice`` is the 0-based position as shown to the judge; ``span`` the character range
    of the deciding text (also set for a verdict line that failed to parse)."""

    choice: int | None
    tie: bool
    parsed: bool
    reason: str
    span: tuple[int, int] | None


@dataclass(frozen=True)
class ScoreVerdict:
    """One pointwise score; ``span`` covers the deciding score text."""

    score: float | None
    parsed: bool
    reason: str
    span: tuple[int, int] | None


@dataclass(frozen=True)
class StepVerdict:
    """One score per step (``None`` where missing or invalid); ``span`` runs from the first to
    the last deciding step line."""

    scores: tuple[int | None, ...]
    parsed: bool
    reason: str
    span: tuple[int, int] | None = None


# --- text without markdown, with a map back to the original ------------------------------


class _Plain:
    """``text`` without markup, and the way back to the original's positions.

    Linear in memory: the plain text is one string (the original itself when it holds no
    markup) and a position is mapped back by counting markup characters chunk by chunk, so
    a 50 MB output costs about 50 MB more, never a list entry per character."""

    def __init__(self, text: str) -> None:
        self.original = text
        has_markup = any(mark in text for mark in _MARKUP)
        self.text = text.translate(_DROP_MARKUP) if has_markup else text

    def _origin(self, p: int) -> int:
        """The original position of plain position ``p`` (``len(text)`` maps to the end)."""
        text, plain = self.original, self.text
        if len(plain) == len(text):
            return p
        if p >= len(plain):
            return len(text)
        start = kept_before = 0
        while True:  # whole chunks before p, counted at C speed
            chunk = text[start : start + _CHUNK]
            kept = len(chunk) - sum(chunk.count(mark) for mark in _MARKUP)
            if kept_before + kept > p:
                break
            start, kept_before = start + len(chunk), kept_before + kept
        for run in _KEPT.finditer(text, start, start + len(chunk)):
            if kept_before + run.end() - run.start() > p:
                return run.start() + p - kept_before
            kept_before += run.end() - run.start()
        raise AssertionError("a plain position inside the text maps into it")  # pragma: no cover

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Original range of plain ``[start, end)``, trimmed of spaces, widened over markup."""
        while end > start and self.text[end - 1].isspace():
            end -= 1
        while start < end and self.text[start].isspace():
            start += 1
        s = self._origin(start)
        e = self._origin(end - 1) + 1 if end > start else s
        # Include the bold markers hugging the verdict so a highlight shows "**...**" whole.
        while s > 0 and self.original[s - 1] in _MARKUP:
            s -= 1
        while e < len(self.original) and self.original[e] in _MARKUP:
            e += 1
        return s, e


_DROP_MARKUP = str.maketrans("", "", _MARKUP)
_KEPT = re.compile(f"[^{re.escape(_MARKUP)}]+")
_CHUNK = 1 << 16


# --- pairwise patterns ---------------------------------------------------------------------

_NOUN = r"(?:answer|response|assistant|output|candidate|option)"
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
# Letters must be capitals so "an answer a user..." never names a position.
_REF = (
    rf"(?:{_NOUN}\s*+[#(]?\s*+(?P<num>\d+|(?-i:[A-Z]))(?![A-Za-z0-9])"
    rf"|(?P<ord>{'|'.join(_ORDINALS)})\s++(?:{_NOUN}|one)\b)"
)
_ADVERBS = (
    r"(?:(?:clearly|slightly|much|significantly|far|overall|definitely|marginally|somewhat|noticeably"
    r"|the|a\s++bit)\s++)*"
)
_BETTER = (
    r"(?:better|superior|preferred|preferable|stronger|more\s++accurate|more\s++correct|more\s++helpful"
    r"|the\s++winner|wins)\b"
)
_WORSE = r"(?:worse|inferior|weaker|less\s++accurate|less\s++correct)\b"
_VERB = r"(?:(?:is|was|seems|appears|remains|would\s++be)\s++(?:to\s++be\s++)?)?"
_CLAIMS = (
    re.compile(rf"{_REF}\s*+\)?\s*+(?:{_VERB}{_ADVERBS}{_BETTER}|(?:is|was|would\s++be)\s++{_ADVERBS}best\b)", re.I),
    re.compile(
        rf"\b(?:better|best|preferred|superior|stronger|winning)\s++(?:{_NOUN}|one)?\s*+"
        rf"(?:is|would\s++be|[:=\-])?\s*+(?:clearly\s++)?(?:the\s++)?{_REF}",
        re.I,
    ),
    re.compile(rf"\b(?:prefer|choose|pick|select|favou?r)\s++(?:the\s++)?{_REF}", re.I),
)
_WORSE_CLAIM = re.compile(rf"{_REF}\s*+\)?\s*+{_VERB}{_ADVERBS}{_WORSE}", re.I)
_REF_ANY = re.compile(_REF, re.I)
_NEGATED = re.compile(r"\b(?:not|nor|neither|no)\s++(?:the\s++)?$|n't\s++$", re.I)
_BRACKET = re.compile(
    r"\[\[\s*+(?:(?P<one>[A-Za-z]|\d+|tie)|(?P<l>[A-Za-z])\s*+(?P<op>>>|>|<<|<|=)\s*+(?P<r>[A-Za-z]))\s*+\]\]", re.I
)
_BOXED = re.compile(r"\\boxed\{(?P<body>(?:[^{}]|\{[^{}]*\})*)\}")
_BARE = re.compile(rf"[\s\[\](){{}}.:!\"'\\]*(?:{_NOUN}\s*+)?(?P<tok>\d+|[A-Za-z])[\s\[\](){{}}.:!\"']*", re.I)
_TIE = re.compile(r"\b(?:tie|tied|draw|equal|equally|neither|no\s++clear\s++winner|same\s++quality)\b", re.I)
_TIE_ONLY = re.compile(
    r"\W*(?:(?:so|thus|therefore|overall|in\s++conclusion|verdict)\W*)?"
    r"(?:(?:(?:it|this|that)(?:'s|\s++is)|the\s++result\s++is)\s++a\s++)?(?:tie|draw)\W*"
    rf"|.*\b(?:(?:both|the\s++two)\s++(?:{_NOUN}s)\s++are\s++equally\s++\w+|neither\s++{_NOUN}\s++is\s++better)\b\W*",
    re.I,
)
_LABELS = (
    r"(?:overall\s++judge?ment|final\s++judge?ment|(?:final\s++|overall\s++)?verdict|final\s++answer"
    rf"|final\s++decision|final\s++choice|(?:better|preferred)\s++{_NOUN}|winner)"
)
_LABEL_LINE = re.compile(
    rf"^[ \t>#\-+•\d.)]*+(?:(?:my|the|our)\s++)?{_LABELS}"
    r"[ \t]*+(?:[:：=\-–—]|\bis\b|(?=\n)|$)[ \t]*+(?P<rest>[^\n]*)",
    re.I | re.M,
)
# "Answer: 2" as the last line: the label is the noun itself, the rest a bare position.
_ANSWER_LINE = re.compile(rf"^[ \t>#\-+•]*+{_NOUN}[ \t]*+[:：=][ \t]*+(?P<rest>[^\n]*?)[ \t]*+\Z", re.I | re.M)
_NEXT_LINE = re.compile(r"[ \t]*+(?:\n[ \t]*+)+(?P<line>[^\n]*)")
_LABEL_STRONG = re.compile(
    r"\b(?:overall\s++judge?ment|final\s++judge?ment|final\s++verdict)[ \t]*+(?:[:：=]|\bis\b)[ \t]*+(?P<rest>[^\n]*)",
    re.I,
)


@dataclass
class _Reading:
    choice: int | None = None
    tie: bool = False
    error: str | None = None


def _index(tok: str) -> int | str:
    """The position a verdict token names ("2", "B", "second"), or "tie"."""
    tok = tok.lower()
    if tok == "tie":
        return "tie"
    if tok.isdigit():
        return int(tok) - 1
    if tok in _ORDINALS:
        return _ORDINALS.index(tok)
    return ord(tok) - ord("a")


def _label(tok: str) -> str:
    if tok == "tie":
        return "a tie"
    if tok.lower() in _ORDINALS:
        return f"answer {_ORDINALS.index(tok.lower()) + 1}"
    return f"answer {tok.upper()}"


def _ref_token(m: re.Match) -> str:
    return m.group("num") or m.group("ord")


def _bracket_token(m: re.Match, n: int) -> str:
    one = m.group("one")
    if one is not None:
        return "tie" if one.lower() == "tie" or (n == 2 and one.upper() == "C") else one
    if m.group("op") == "=":
        return "tie"
    return m.group("l") if m.group("op").startswith(">") else m.group("r")


def _bracket_outside(m: re.Match, n: int) -> str | None:
    """Why an Arena-Hard marker (``[[A>>D]]``, ``[[E=F]]``) names no verdict among ``n``
    answers: a side names an answer that was not shown; ``None`` when both sides exist."""
    if m.group("op") is None:
        return None
    outside = [tok.upper() for tok in (m.group("l"), m.group("r")) if not 0 <= _index(tok) < n]  # type: ignore[operator]
    if not outside:
        return None
    named = " and ".join(f"answer {tok}" for tok in dict.fromkeys(outside))
    return f"{m.group(0)}: {named} out of range for {n} answers"


def _bare_token(segment: str) -> str | None:
    segment = re.sub(r"\\text\{([^{}]*)\}", r"\1", segment)
    if re.fullmatch(r"\W*(?:tie|draw)\W*", segment, re.I):
        return "tie"
    m = _BARE.fullmatch(segment)
    return m.group("tok") if m else None


def _claims(segment: str) -> list[str]:
    tokens = []
    for pattern in _CLAIMS:
        for m in pattern.finditer(segment):
            if not _NEGATED.search(segment[max(0, m.start() - 12) : m.start()]):
                tokens.append(_ref_token(m))
    return tokens


def _resolve(tokens: list[str], n: int) -> _Reading:
    by_index: dict[int | str, str] = {}
    for tok in tokens:
        by_index.setdefault(_index(tok), tok)
    if len(by_index) > 1:
        if n == 2 and set(by_index) == {0, 1}:
            return _Reading(error="ambiguous: both answers named")
        named = " and ".join(_label(t) for t in by_index.values())
        return _Reading(error=f"ambiguous: {named} named")
    ((key, tok),) = by_index.items()
    if key == "tie":
        return _Reading(tie=True)
    if not 0 <= key < n:  # type: ignore[operator]
        return _Reading(error=f"{_label(tok)} out of range for {n} answers")
    return _Reading(choice=key)  # type: ignore[arg-type]


def _interpret(segment: str, n: int, *, explicit: bool) -> _Reading | None:
    """What ``segment`` says, or None if it names no verdict. ``explicit``: a labelled verdict
    line, where a bare "2" or a lone "Answer 2" counts; elsewhere only claims do."""
    tokens = []
    for m in _BRACKET.finditer(segment):
        if (outside := _bracket_outside(m, n)) is not None:
            return _Reading(error=outside)
        tokens.append(_bracket_token(m, n))
    for m in _BOXED.finditer(segment):
        tok = _bare_token(m.group("body"))
        # A boxed number beyond the answers is a math result, not a verdict.
        if tok is not None and not (tok.isdigit() and not 1 <= int(tok) <= n):
            tokens.append(tok)
    if not tokens and explicit and (tok := _bare_token(segment)) is not None:
        tokens.append(tok)
    tokens += _claims(segment)
    if tokens:
        return _resolve(tokens, n)
    worse = {_index(_ref_token(m)) for m in _WORSE_CLAIM.finditer(segment)}
    if n == 2 and len(worse) == 1 and worse <= {0, 1}:
        return _Reading(choice=1 - worse.pop())  # type: ignore[operator]
    if not explicit:
        return _Reading(tie=True) if _TIE_ONLY.fullmatch(segment) else None
    refs = list(_REF_ANY.finditer(segment))
    tie = _TIE.search(segment)
    # "Tie: Answer 1 and Answer 2 are equally good" is a tie; "Answer 2, as the counts are not
    # equal" names one answer first and is not.
    if tie and (len({_index(_ref_token(m)) for m in refs}) != 1 or tie.start() < refs[0].start()):
        return _Reading(tie=True)
    if refs:
        return _resolve([_ref_token(m) for m in refs], n)
    return _Reading(error="verdict line not understood")


def _explicit_candidates(plain: _Plain, n: int) -> list[tuple[int, int, _Reading]]:
    text = plain.text
    found: list[tuple[int, int, _Reading]] = []
    for pattern in (_LABEL_LINE, _LABEL_STRONG):
        for m in pattern.finditer(text):
            start, end = m.start(), m.end()
            rest = m.group("rest")
            if not rest.strip():  # a label alone on its line: the verdict is on the next line
                nxt = _NEXT_LINE.match(text, m.end())
                if nxt:
                    rest, end = nxt.group("line"), nxt.end()
            if pattern is _LABEL_LINE:
                start = m.start() + len(m.group(0)) - len(m.group(0).lstrip(" \t>#-+•0123456789.)"))
            reading = _interpret(rest, n, explicit=True) if rest.strip() else None
            found.append((start, end, reading or _Reading(error="verdict line is empty")))
    last = _ANSWER_LINE.search(text.rstrip())
    tok = _bare_token(last.group("rest")) if last else None
    if last and tok is not None and (tok == "tie" or 0 <= _index(tok) < n):  # type: ignore[operator]
        found.append((last.start(), last.end(), _resolve([tok], n)))
    for pattern in (_BRACKET, _BOXED):
        for m in pattern.finditer(text):
            bracketed = _interpret(m.group(0), n, explicit=False)
            if bracketed is not None:
                found.append((m.start(), m.end(), bracketed))
    return found


def _final_sentence(text: str) -> tuple[int, int] | None:
    body = text.rstrip()
    if not body:
        return None
    line_start = body.rfind("\n") + 1
    start = line_start
    for b in re.finditer(r"(?<=[.!?])\s++(?=\S)", body[line_start:]):
        start = line_start + b.end()
    return start, len(body)


def parse_pairwise(text: str, n_answers: int = 2) -> PairwiseVerdict:
    """Which of ``n_answers`` answers the judge chose, by the conventions in the module doc."""
    if n_answers < 2:
        raise ValueError(f"pairwise judging needs at least 2 answers, got {n_answers}")
    if not text or not text.strip():
        return PairwiseVerdict(None, False, False, "empty output", None)
    plain = _Plain(text)
    candidates = _explicit_candidates(plain, n_answers)
    if candidates:
        # The verdict ending last wins; of two ending together (a label line holding a [[B]]
        # marker) the longer one is the deciding sentence.
        start, end, reading = max(candidates, key=lambda c: (c[1], -c[0]))
        how = "verdict line"
    elif (whole := _bare_token(plain.text.strip())) is not None:
        # The whole output is one answer ("Answer 2", "B", "Tie"): what a parsing model or a
        # judge told to answer with the letter alone writes.
        reading = _resolve([whole], n_answers)
        (start, end), how = (0, len(plain.text)), "whole output"
    else:
        final = _final_sentence(plain.text)
        claim = _interpret(plain.text[final[0] : final[1]], n_answers, explicit=False) if final else None
        if claim is None or final is None:
            return PairwiseVerdict(None, False, False, "no verdict line", None)
        reading = claim
        (start, end), how = final, "final sentence"
    span = plain.span(start, end)
    if reading.error:
        return PairwiseVerdict(None, False, False, reading.error, span)
    return PairwiseVerdict(reading.choice, reading.tie, True, "tie" if reading.tie else how, span)


# --- scores --------------------------------------------------------------------------------

_NUM = r"\d+(?:\.\d+)?(?!\.?\d)"
_OF = rf"(?:\s*+(?:/|out\s++of)\s*+(?P<den>{_NUM}))"
_VALUE = rf"(?:\[\[\s*+(?P<v1>{_NUM})\s*+\]\]|(?P<v2>{_NUM}))"
_SCORE_PATTERNS = (
    # "Score: 7/10", "Overall Score - 4" at the start of a line
    re.compile(
        rf"^[ \t>#\-+•]*+(?:(?:overall|final|total)\s++)?(?:score|rating|grade)"
        rf"[ \t]*+(?:[:：=\-–—]|\bis\b)?[ \t]*+{_VALUE}{_OF}?",
        re.I | re.M,
    ),
    # "... Final score: 7" inside a line needs the colon
    re.compile(rf"\b(?:score|rating|grade)[ \t]*+[:：=][ \t]*+{_VALUE}{_OF}?", re.I),
    # "I give it a score of 7/10" needs the denominator
    re.compile(
        rf"\b(?:score|rating|rate\s++(?:it|this(?:\s++\w+)?)|grade)(?:\s++(?:of|as|at))?\s++{_VALUE}{_OF}", re.I
    ),
    # A lone "[[8]]" (MT-Bench)
    re.compile(rf"\[\[\s*+(?P<v1>{_NUM})\s*+\]\]{_OF}?"),
)


def parse_score(text: str, scale: int = 10, *, minimum: int = 1) -> ScoreVerdict:
    """The judge's score on ``minimum``..``scale``; the last score line wins. A score out of
    range or given out of another scale (``4/5`` when 10 is expected) is a failure."""
    if not text or not text.strip():
        return ScoreVerdict(None, False, "empty output", None)
    plain = _Plain(text)
    matches = [m for p in _SCORE_PATTERNS for m in p.finditer(plain.text)]
    if not matches:
        return ScoreVerdict(None, False, "no score line", None)
    m = max(matches, key=lambda m: (m.end(), -m.start()))
    start = m.start() + len(m.group(0)) - len(m.group(0).lstrip(" \t>#-+•"))
    span = plain.span(start, m.end())
    value = float(m.group("v1") or m.group("v2"))
    shown = m.group("v1") or m.group("v2")
    if m.group("den") is not None and float(m.group("den")) != scale:
        return ScoreVerdict(None, False, f"score {shown}/{m.group('den')} is not out of {scale}", span)
    if not minimum <= value <= scale:
        return ScoreVerdict(None, False, f"score {shown} out of range {minimum}–{scale}", span)
    return ScoreVerdict(value, True, "score line", span)


# --- step scores ---------------------------------------------------------------------------

# The score must end its line or be followed by a separator, so an echoed step such as
# "Step 1: 3 apples are visible" is not read as a score.
_STEP_LINE = re.compile(
    rf"^[ \t>#\-+•]*+step[ \t]*+(?P<k>\d+)(?!\d)[ \t]*+(?:score|rating)?[ \t]*+(?:[:：=\-–—]|\bis\b)?[ \t]*+"
    rf"(?:(?:score[ds]?|rating|rated)[ \t]*+(?:[:=]|of|is)?[ \t]*+)?(?:\[\[[ \t]*+)?(?P<v>{_NUM})(?:[ \t]*+\]\])?"
    rf"(?:[ \t]*+(?:/|out\s++of)[ \t]*+(?P<den>\d+))?"
    r"(?=[ \t]*+(?:[.,;:)]*[ \t]*+$|[(\-–—]|[,;.][ \t]))",
    re.I | re.M,
)


# VLRMBench's answer: one indicator per step, 1 = the step has an error ("[0, 1, 0]").
_STEP_FLAGS = re.compile(r"\[[ \t]*+[01](?:[ \t]*+,[ \t]*+[01])*+[ \t]*+,?[ \t]*+\]")


def parse_step_scores(text: str, n_steps: int, scale: int = 5) -> StepVerdict:
    """One score in 1..``scale`` per step from "Step k: s" lines (last line per step wins);
    parsed only if every step has a valid score and no line names a step beyond ``n_steps``.
    Without step lines, the last list of 0/1 indicators (VLRMBench's ``[0, 1, 0]``, 1 = error)
    is read when it holds one per step (:func:`step_flags_to_scores`)."""
    if n_steps < 1:
        raise ValueError(f"step judging needs at least 1 step, got {n_steps}")
    empty = (None,) * n_steps
    if not text or not text.strip():
        return StepVerdict(empty, False, "empty output")
    plain = _Plain(text)
    last: dict[int, re.Match] = {}
    for m in _STEP_LINE.finditer(plain.text):
        last[int(m.group("k"))] = m
    if not last:
        flags = last_match(_STEP_FLAGS, plain.text)
        if flags is None:
            return StepVerdict(empty, False, "no step score lines or [0, 1, …] list")
        values = [int(v) for v in re.findall(r"[01]", flags.group(0))]
        span = plain.span(flags.start(), flags.end())
        if len(values) != n_steps:
            return StepVerdict(empty, False, f"a list of {len(values)} step indicators for {n_steps} steps", span)
        return StepVerdict(step_flags_to_scores(values, scale), True, "step indicator list", span)
    problems = [f"step {k} out of range for {n_steps} steps" for k in sorted(last) if not 1 <= k <= n_steps]
    scores: list[int | None] = []
    for k in range(1, n_steps + 1):
        line = last.get(k)
        if line is None:
            problems.append(f"no score for step {k}")
            scores.append(None)
            continue
        value = line.group("v")
        if line.group("den") is not None and int(line.group("den")) != scale:
            problems.append(f"step {k} score {value}/{line.group('den')} is not out of {scale}")
        elif not value.isdigit():
            problems.append(f"step {k} score {value} is not a whole number")
        elif not 1 <= int(value) <= scale:
            problems.append(f"step {k} score {value} out of range 1–{scale}")
        else:
            scores.append(int(value))
            continue
        scores.append(None)
    deciding = list(last.values())
    first = min(deciding, key=lambda m: m.start())
    start = first.start() + len(first.group(0)) - len(first.group(0).lstrip(" \t>#-+•"))
    span = plain.span(start, max(m.end() for m in deciding))
    return StepVerdict(tuple(scores), not problems, "; ".join(problems) or "step lines", span)


def rationale(text: str, span: tuple[int, int] | None = None) -> str:
    """The judge's text before the deciding verdict, stripped. Without ``span`` the verdict is
    looked for as pairwise, then as a score, then as step lines; with none, all the text."""
    if span is None:
        for verdict in (parse_pairwise(text, 26), parse_score(text), parse_step_scores(text, 1)):
            if verdict.span is not None:
                span = verdict.span
                break
    return (text[: span[0]] if span else text).strip()


# --- strict profile: the official scripts' rules -----------------------------------------

#: Verdict parser profiles. ``lenient`` reads every convention above; ``strict`` reads a
#: pairwise verdict exactly as VL-RewardBench's official scorer does (``official_rules.VLREWARDBENCH_PATTERN``)
#: and a score or step scores only from the bundled templates' exact last line(s).
PARSERS = ("lenient", "strict")


def parse_pairwise_strict(text: str, n_answers: int = 2) -> PairwiseVerdict:
    """The verdict VL-RewardBench's official scorer reads (``official_rules.VLREWARDBENCH_PATTERN``): the
    last "Answer N is [the] [slightly] better" after the first "Overall Judgment" or
    "Therefore", across lines and bold. It has no tie: ``Overall Judgment: Tie`` is unparsed
    (``cal.py``: doesntMatch). A number beyond ``n_answers`` is refused (``cal.py`` would count
    any number but the rejected answer's as agreeing)."""
    if not text or not text.strip():
        return PairwiseVerdict(None, False, False, "empty output", None)
    claim = vlrewardbench_claim(text)
    if claim is None:
        return PairwiseVerdict(None, False, False, "no 'Overall Judgment … Answer N is better' (official rule)", None)
    n, span = claim
    if not 1 <= n <= n_answers:
        return PairwiseVerdict(None, False, False, f"answer {n} out of range for {n_answers} answers", span)
    return PairwiseVerdict(n - 1, False, True, "official rule", span)


_STRICT_SCORE = re.compile(r"Score: (?P<v>\d+)/(?P<den>\d+)")
_STRICT_STEP = re.compile(r"Step (?P<k>\d+): (?P<v>\d+)")


def _last_lines(text: str, n: int) -> list[tuple[int, int]]:
    """Spans of the last ``n`` non-empty lines (stripped), oldest first; fewer if there are fewer."""
    spans: list[tuple[int, int]] = []
    end = len(text)
    while len(spans) < n and end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        if line.strip():
            lead = len(line) - len(line.lstrip())
            spans.append((start + lead, start + len(line.rstrip())))
        end = start - 1
    return spans[::-1]


def parse_score_strict(text: str, scale: int = 10, *, minimum: int = 1) -> ScoreVerdict:
    """Only a last line reading exactly ``Score: N/10`` counts."""
    lines = _last_lines(text or "", 1)
    if not lines:
        return ScoreVerdict(None, False, "empty output", None)
    span = lines[0]
    m = _STRICT_SCORE.fullmatch(text[span[0] : span[1]])
    if m is None or int(m.group("den")) != scale:
        return ScoreVerdict(None, False, f"last line is not 'Score: N/{scale}'", None)
    value = int(m.group("v"))
    if not minimum <= value <= scale:
        return ScoreVerdict(None, False, f"score {value} out of range {minimum}–{scale}", span)
    return ScoreVerdict(float(value), True, "score line", span)


def parse_step_scores_strict(text: str, n_steps: int, scale: int = 5) -> StepVerdict:
    """Only when the last ``n_steps`` lines read exactly ``Step 1: s`` … ``Step n: s`` in order."""
    empty = (None,) * n_steps
    lines = _last_lines(text or "", n_steps)
    if len(lines) < n_steps:
        return StepVerdict(empty, False, f"fewer than {n_steps} lines")
    scores: list[int | None] = []
    for k, (start, end) in enumerate(lines, start=1):
        m = _STRICT_STEP.fullmatch(text[start:end])
        if m is None or int(m.group("k")) != k or not 1 <= int(m.group("v")) <= scale:
            return StepVerdict(empty, False, f"line {k} of the last {n_steps} is not 'Step {k}: s'")
        scores.append(int(m.group("v")))
    return StepVerdict(tuple(scores), True, "step lines", (lines[0][0], lines[-1][1]))


def pairwise_parser(profile: str):
    """The pairwise parser of a profile (see ``PARSERS``)."""
    return {"lenient": parse_pairwise, "strict": parse_pairwise_strict}[_profile(profile)]


def score_parser(profile: str):
    return {"lenient": parse_score, "strict": parse_score_strict}[_profile(profile)]


def step_parser(profile: str):
    return {"lenient": parse_step_scores, "strict": parse_step_scores_strict}[_profile(profile)]


def _profile(profile: str) -> str:
    if profile not in PARSERS:
        raise ValueError(f"parser must be one of {', '.join(PARSERS)}, got {profile!r}")
    return profile
