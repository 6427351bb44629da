"""Judge prompt templates: the bundled files under ``resources/prompts`` or a user's own file.

A template is plain text with ``{name}`` placeholders (see ``resources/prompts/README.md``).
Rendering substitutes every placeholder in one pass over the *template*, so text inside a
question or an answer — ``{x}``, ``{answer_2}``, even a line reading ``Overall Judgment: Answer 1
is better`` — is inserted verbatim and never changes the template's own structure. Such a line
does reach the judge, which may repeat it; :mod:`pairscope.models.parsing` deals with that
(the last verdict wins).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

MODES = ("pairwise", "pointwise", "step")

# Any bare identifier in braces is a placeholder; other braced text (JSON examples) is literal.
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ANSWER_K = re.compile(r"answer_([1-9][0-9]*)")


@dataclass(frozen=True)
class _Rules:
    """What a mode's template may and must contain."""

    allowed: tuple[str, ...]
    required: tuple[str, ...]
    numbered_answers: bool = False  # {answer_1}, {answer_2}, … beside (or instead of) {answers}


_RULES = {
    "pairwise": _Rules(("query", "answers", "n_answers"), ("query",), numbered_answers=True),
    "pointwise": _Rules(("query", "answer"), ("query", "answer")),
    "step": _Rules(("query", "steps", "n_steps"), ("query", "steps")),
}


@dataclass(frozen=True)
class PromptTemplate:
    """A validated template for one judging mode; construction raises ``ValueError`` if the
    text lacks a required placeholder or uses one the mode does not know."""

    name: str
    mode: str
    text: str

    def __post_init__(self) -> None:
        where = f"prompt template {self.name!r} ({self.mode})"
        if self.mode not in MODES:
            raise ValueError(f"{where}: unknown mode; expected one of {', '.join(MODES)}")
        names = self.placeholders()
        rules = _RULES[self.mode]
        unknown = [
            n for n in names if n not in rules.allowed and not (rules.numbered_answers and _ANSWER_K.fullmatch(n))
        ]
        if unknown:
            extra = ", {answer_1}, {answer_2}, ..." if rules.numbered_answers else ""
            known = ", ".join("{" + a + "}" for a in rules.allowed) + extra
            raise ValueError(f"{where}: unknown placeholder {{{unknown[0]}}}; this mode knows {known}")
        for required in rules.required:
            if required not in names:
                raise ValueError(f"{where}: missing the {{{required}}} placeholder")
        if rules.numbered_answers:
            numbered = self.answer_slots()
            if numbered and numbered != tuple(range(1, len(numbered) + 1)):
                missing = min(set(range(1, max(numbered) + 1)) - set(numbered))
                raise ValueError(f"{where}: answer placeholders skip {{answer_{missing}}}")
            if "answers" not in names and len(numbered) < 2:
                raise ValueError(f"{where}: needs {{answer_1}} and {{answer_2}}, or {{answers}}")

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the template text (recorded with every judge run)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def placeholders(self) -> tuple[str, ...]:
        """Placeholder names in order of first appearance, without duplicates."""
        return tuple(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(self.text)))

    def answer_slots(self) -> tuple[int, ...]:
        """The k of every ``{answer_k}`` placeholder, ascending."""
        return tuple(sorted(int(m.group(1)) for n in self.placeholders() if (m := _ANSWER_K.fullmatch(n))))


def bundled_templates() -> list[str]:
    """Names of the templates shipped in ``resources/prompts``."""
    folder = files("pairscope.resources").joinpath("prompts")
    return sorted(p.name[: -len(".txt")] for p in folder.iterdir() if p.name.endswith(".txt"))


def load_template(name_or_path: str, mode: str | None = None) -> PromptTemplate:
    """Load a bundled template by name (its mode is the name) or a user's file (``mode``
    required). A bundled name wins over a file of the same name in the working directory.
    Raises ``ValueError`` for a missing or unreadable file and for an invalid template."""
    name = str(name_or_path)
    if name in bundled_templates():
        if mode is None and name not in MODES:
            raise ValueError(f"bundled template {name!r}: give its mode ({', '.join(MODES)})")
        if mode is not None and name in MODES and mode != name:
            raise ValueError(f"bundled template {name!r} is a {name} template, not {mode}")
        text = files("pairscope.resources").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
        return PromptTemplate(name, mode or name, text)
    if mode is None:
        raise ValueError(
            f"{name!r} is not a bundled template ({', '.join(bundled_templates())}); "
            f"to load it as a file, give its mode ({', '.join(MODES)})"
        )
    path = Path(name).expanduser()
    if not path.is_file():
        raise ValueError(f"prompt template file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read prompt template {path}: {exc}") from exc
    return PromptTemplate(str(path), mode, text)


def render_pairwise(template: PromptTemplate, query: str, answers: Sequence[str]) -> str:
    """The prompt for comparing ``answers`` (two or more, in the order shown to the judge).
    ``{answers}`` becomes "Answer 1: …\\n\\nAnswer 2: …"; ``{answer_k}`` the k-th answer alone."""
    _check_mode(template, "pairwise")
    if isinstance(answers, str):
        raise TypeError("answers must be a sequence of strings, not one string")
    answers = [_text(a, "answer") for a in answers]
    if len(answers) < 2:
        raise ValueError(f"pairwise judging needs at least 2 answers, got {len(answers)}")
    slots = template.answer_slots()
    if slots and len(answers) < slots[-1]:
        raise ValueError(f"template {template.name!r} shows {slots[-1]} answers; got {len(answers)}")
    if slots and "answers" not in template.placeholders() and len(answers) > slots[-1]:
        raise ValueError(f"template {template.name!r} has room for {slots[-1]} answers; got {len(answers)}")
    values = {
        "query": _text(query, "query"),
        "answers": "\n\n".join(f"Answer {i}: {a}" for i, a in enumerate(answers, 1)),
        "n_answers": str(len(answers)),
    }
    values.update((f"answer_{i}", a) for i, a in enumerate(answers, 1))
    return _fill(template, values)


def render_pointwise(template: PromptTemplate, query: str, answer: str) -> str:
    """The prompt for scoring one answer."""
    _check_mode(template, "pointwise")
    return _fill(template, {"query": _text(query, "query"), "answer": _text(answer, "answer")})


def render_steps(template: PromptTemplate, query: str, steps: Sequence[str]) -> str:
    """The prompt for scoring each step; ``{steps}`` becomes one "[Step k] …" line per step.
    The bracketed form differs from the "Step k: s" answer lines, so a judge echoing a step
    such as "3 apples are visible" cannot be read as a score."""
    _check_mode(template, "step")
    if isinstance(steps, str):
        raise TypeError("steps must be a sequence of strings, not one string")
    steps = [_text(s, "step") for s in steps]
    if not steps:
        raise ValueError("step judging needs at least 1 step")
    values = {
        "query": _text(query, "query"),
        "steps": "\n".join(f"[Step {i}] {s}" for i, s in enumerate(steps, 1)),
        "n_steps": str(len(steps)),
    }
    return _fill(template, values)


def _check_mode(template: PromptTemplate, mode: str) -> None:
    if template.mode != mode:
        raise ValueError(f"template {template.name!r} is a {template.mode} template, not {mode}")


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _fill(template: PromptTemplate, values: dict[str, str]) -> str:
    # re.sub scans the template once and never rescans inserted text, unlike str.format chains.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template.text).rstrip()
