"""How sure the judge was of its verdict, from the log-probabilities of the generated tokens.

Both backends store per generated token ``{"token": str, "logprob": float, "top": [{"token",
"logprob"}, ...]}`` (``Generation.logprobs``): the transformers backend from the model's raw
logits, an OpenAI-compatible endpoint from the ``logprobs`` it returns. One function reads a
confidence out of that shape for both.

**Pairwise confidence** (:func:`pairwise_confidence`): the parser's verdict span (e.g. the line
``Overall Judgment: Answer 2 is better``) is searched for the token that names the chosen
position — ``2``, ``B`` or ``second``, whichever form the verdict used (digits first, then
capital letters, then ordinals; the last occurrence in the span). At that generated token the
probabilities of the token itself and of its stored top alternatives are summed per allowed
answer *in the same form* (``1``…``N``, ``A``…, ``first``…: the mode's answer set), and the
chosen answer's share of that sum is the confidence:

    confidence = P(chosen label) / Σ_{j < N} P(label j)

Alternatives outside the stored top list count as 0, so with top-5 the value is an upper bound
(for a two-answer verdict both labels are nearly always among the top five). Token strings are
compared without surrounding spaces and markup (``**``, ``[[``, ``.``), so `` 2`` and ``2``
both mean answer 2 (their probabilities add up). A verdict whose naming token carries more than
the label (``2nd``), a tie, or a verdict that cannot be found among the tokens has no
confidence (``None``: shown as n/a). Pointwise scores and step scores have none either: their
verdict (a score on a scale of several tokens) is not one choice among the allowed answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

#: Characters a verdict token may carry around its label: ``**2**``, ``[[B]]``, ``2.``, ``(A)``.
_WRAPPING = " \t\n\r*_`[](){}.:,;!?\"'\\"
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")

TokenLogprobs = Sequence[dict[str, Any]]


def normalise(token: str) -> str:
    """A token's text without surrounding whitespace and markup, upper-cased (``" **b"`` → ``B``)."""
    return token.strip(_WRAPPING).upper()


def answer_forms(n_answers: int) -> list[list[str]]:
    """The allowed answers' labels in each form a verdict may use: digits, capital letters,
    ordinal words (normalised, see :func:`normalise`); a form is left out where it runs out."""
    forms = [[str(j + 1) for j in range(n_answers)]]
    if n_answers <= 26:
        forms.append([chr(ord("A") + j) for j in range(n_answers)])
    if n_answers <= len(_ORDINALS):
        forms.append([w.upper() for w in _ORDINALS[:n_answers]])
    return forms


def _label_pattern(label: str) -> re.Pattern:
    if label.isdigit():
        return re.compile(rf"(?<![0-9]){label}(?![0-9])")
    if len(label) == 1:  # a capital letter standing alone (never the "A" of "An", nor "a")
        return re.compile(rf"(?<![A-Za-z]){label}(?![A-Za-z])")
    return re.compile(rf"\b{label}\b", re.I)


def _find_label(segment: str, position: int, n_answers: int) -> tuple[int, list[str]] | None:
    """Where in ``segment`` the chosen position is named (offset of its label) and the form
    (every allowed answer's label in it); ``None`` when it is not named."""
    for labels in answer_forms(n_answers):
        hits = list(_label_pattern(labels[position]).finditer(segment))
        if hits:
            return hits[-1].start(), labels
    return None


def token_offsets(logprobs: TokenLogprobs, text: str, anchor: tuple[int, int] | None = None) -> list[int] | None:
    """The start offset in ``text`` of every generated token. When the tokens' strings do not
    join to ``text`` exactly (a decoder that merges bytes differently), the text of ``anchor``
    (the verdict span) is looked for among the joined tokens and the offsets are shifted to it;
    ``None`` when that fails too."""
    starts, at = [], 0
    for entry in logprobs:
        starts.append(at)
        at += len(str(entry.get("token", "")))
    joined = "".join(str(entry.get("token", "")) for entry in logprobs)
    if joined == text:
        return starts
    if anchor is None:
        return None
    found = joined.rfind(text[anchor[0] : anchor[1]])
    if found < 0 or anchor[1] <= anchor[0]:
        return None
    shift = found - anchor[0]
    return [s - shift for s in starts]


def _token_at(starts: list[int], logprobs: TokenLogprobs, offset: int) -> int | None:
    """Index of the token that covers character ``offset``."""
    for i in range(len(starts) - 1, -1, -1):
        if starts[i] <= offset:
            length = len(str(logprobs[i].get("token", "")))
            return i if offset < starts[i] + max(length, 1) else None
    return None


def label_confidence(entry: dict[str, Any], labels: Sequence[str], chosen: int) -> float | None:
    """At one generated token: the chosen label's probability renormalised over ``labels``,
    from its stored top alternatives plus the token itself when the top list lacks it;
    ``None`` when the token itself is not the chosen label."""
    token = str(entry.get("token", ""))
    if normalise(token) != labels[chosen]:
        return None
    mass = [0.0] * len(labels)
    top = list(entry.get("top") or ())
    if not any(str(alt.get("token", "")) == token for alt in top):
        top.append(entry)
    for alt in top:
        label = normalise(str(alt.get("token", "")))
        if label in labels:
            logprob = alt.get("logprob")  # null: stored −∞ (JSON has no infinity)
            mass[labels.index(label)] += math.exp(float(logprob)) if logprob is not None else 0.0
    total = sum(mass)
    return mass[chosen] / total if total > 0 else None


def pairwise_confidence(
    logprobs: TokenLogprobs | None, text: str, span: tuple[int, int] | None, position: int, n_answers: int
) -> float | None:
    """The probability the judge gave answer ``position`` (0-based, as shown) among the
    ``n_answers`` answers, at the token of the verdict ``span`` that names it (see the module
    doc); ``None`` where it cannot be read."""
    if not logprobs or span is None or not 0 <= position < n_answers:
        return None
    found = _find_label(text[span[0] : span[1]], position, n_answers)
    if found is None:
        return None
    offset, labels = found
    starts = token_offsets(logprobs, text, span)
    if starts is None:
        return None
    index = _token_at(starts, logprobs, span[0] + offset)
    if index is None:
        return None
    return label_confidence(logprobs[index], labels, position)


__all__ = ["answer_forms", "label_confidence", "normalise", "pairwise_confidence", "token_offsets"]
