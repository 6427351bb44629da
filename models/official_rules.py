"""The official benchmark scripts' reading rules, reproduced exactly (the ``strict`` parser
profile and the step answers of :mod:`pairscope.models.parsing` build on them).

- VL-RewardBench's verdict regex (:data:`VLREWARDBENCH_PATTERN`, :func:`vlrewardbench_claim`).
- VLRMBench's step answers: one indicator per step, 1 = the step has an error
  (:func:`vlrmbench_step_errors`, :func:`step_flags_to_scores`).
"""

from __future__ import annotations

import re
from collections import deque

#: VL-RewardBench's verdict rule, verbatim from its official scorer: ``cal.py`` in
#: github.com/vl-rewardbench/VL_RewardBench (``distribution``, ``reparse=True``) and the same
#: line in lmms-eval's ``vl_rewardbench`` task (``utils.parse_pred_ans``). It is searched,
#: case-insensitive, in the output with every newline and ``*`` removed
#: (``response.replace("\n", "").replace("*", "")``).
VLREWARDBENCH_PATTERN = (
    r"(?:Overall Judgment|Therefore)\s*.*\s*-*\s*Answer\s*(\d+)\s*is\s*(?:the\s*)?(?:slightly\s*)?better"
)
# The same rule in linear time: re.search's match starts at the first "Overall Judgment" or
# "Therefore" (a later one could only end later), and the greedy ``.*`` ends it at the last
# "Answer N is … better" that starts after it (none can overlap another: each starts with
# "Answer" and holds no second one). tests/test_parsing.py checks the two agree.
_OPENER = re.compile(r"Overall Judgment|Therefore", re.I)
_CLAIM = re.compile(r"Answer\s*(\d+)\s*is\s*(?:the\s*)?(?:slightly\s*)?better", re.I)
_DROPPED = "\n*"
_KEPT = re.compile(r"[^\n*]+")


def last_match(pattern: re.Pattern[str], text: str, pos: int = 0) -> re.Match[str] | None:
    """The last of ``pattern``'s non-overlapping matches in ``text`` from ``pos``, or None."""
    found = deque(pattern.finditer(text, pos), maxlen=1)
    return found[0] if found else None


def _origin(text: str, p: int) -> int:
    """The position in ``text`` of position ``p`` of ``text`` without newlines and ``*``."""
    kept = 0
    for run in _KEPT.finditer(text):
        if kept + run.end() - run.start() > p:
            return run.start() + p - kept
        kept += run.end() - run.start()
    return len(text)


def vlrewardbench_claim(text: str) -> tuple[int, tuple[int, int]] | None:
    """The answer number VL-RewardBench's ``cal.py`` reads from ``text`` and the span of the
    "Answer N is … better" it read (in ``text``, widened over hugging ``*``); None: no match."""
    flat = text.replace("\n", "").replace("*", "") if any(c in text for c in _DROPPED) else text
    opener = _OPENER.search(flat)
    claim = None if opener is None else last_match(_CLAIM, flat, opener.end())
    if claim is None:
        return None
    if flat is text:
        return int(claim.group(1)), (claim.start(), claim.end())
    start, end = _origin(text, claim.start()), _origin(text, claim.end() - 1) + 1
    while start > 0 and text[start - 1] == "*":  # the bold markers hugging the verdict
        start -= 1
    while end < len(text) and text[end] == "*":
        end += 1
    return int(claim.group(1)), (start, end)


def step_flags_to_scores(flags: list[int], scale: int = 5) -> tuple[int, ...]:
    """VLRMBench's per-step indicators (1: the step has an error, 0: none) as step scores on
    1..``scale``: an error is the bottom (1), no error the top (``scale``), so any threshold
    from 1 to ``scale - 1`` reads them as VLRMBench does."""
    return tuple(1 if flag else scale for flag in flags)


def vlrmbench_step_errors(answer: str, n_steps: int) -> list[int] | None:
    """VLRMBench's reading of a step answer (github.com/JCruan519/VLRMBench
    ``model_eval/utils.py``, ``format_model_answer_tolist``): every number in the text in order,
    0 → no error, any other → error, cut or padded with 0 to ``n_steps``. ``None`` when the text
    holds no number (which VLRMBench reads as "no error on any step")."""
    numbers = re.findall(r"\d+", answer)
    if not numbers:
        return None
    flags = [0 if int(number) == 0 else 1 for number in numbers[:n_steps]]
    return flags + [0] * (n_steps - len(flags))
