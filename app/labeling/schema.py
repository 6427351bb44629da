"""The project's label schema: its error types, discard reasons and strength levels, their
keys, and the annotators' Markdown guidelines. Pure: no store, no Qt.

A schema is written as a TOML file (``resources/label_schema_default.toml`` is the built-in
one, docs/ANNOTATION.md describes the format)::

    title = "Chart QA"
    guidelines = \"\"\"# How to label ...\"\"\"

    [[error_types]]
    name = "wrong_value"          # stored in labels; letters, digits, _ and -
    label = "Wrong value"         # the box in the label panel (default: from the name)
    key = "Ctrl+1"                # optional shortcut
    description = "a value read off the chart is wrong"   # cheat sheet (default: label)
    subkinds = ["axis", "legend"] # optional menu of sub-kinds
    free_text = true              # optional text field (Ctrl+key then focuses it)

    [[discard_reasons]] ...       # name, label, key, description
    [[strengths]] ...             # name, label, key, description

A section left out keeps the built-in entries; an empty list (``strengths = []``) has none.
:func:`parse_schema` reports every problem at once, each as ``FILE:LINE: what``.

The built-in schema is version 1; a project stores each later one as a new version
(``app/store/label_schemas.py``) and every label records the version it was given under,
so a kind a later version drops keeps its meaning for the labels that carry it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..json_guard import loads_json
from ..records import DEFAULT_CHOICES, Choice
from .keymap import Shortcut, keymap_for, reserved_shortcuts

#: The version of the built-in schema (a project without a stored schema uses it).
DEFAULT_VERSION = 1
#: What the stored JSON says it is (a later PairScope may write another).
FORMAT = 1
SECTIONS = ("error_types", "discard_reasons", "strengths")
_TOP_FIELDS = ("title", "guidelines", "format", *SECTIONS)
_FIELDS = {
    "error_types": ("name", "label", "key", "description", "subkinds", "free_text"),
    "discard_reasons": ("name", "label", "key", "description"),
    "strengths": ("name", "label", "key", "description"),
}
_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]{0,39}")
MAX_ENTRIES = 30
MAX_TEXT = 200
MAX_GUIDELINES = 200_000
_MODIFIERS = {"ctrl": "Ctrl", "control": "Ctrl", "alt": "Alt", "shift": "Shift", "meta": "Meta"}
_NAMED_KEYS = {f"F{i}" for i in range(1, 36)} | {"Space", "Home", "End", "PgUp", "PgDown", "Ins", "Del", "Backspace"}
_NAMED_KEYS |= {"Up", "Down", "Left", "Right", "Esc", "Return", "Enter", "Tab"}
_KEY_ALIASES = {"escape": "Esc", "delete": "Del", "insert": "Ins", "pageup": "PgUp", "pagedown": "PgDown"}
#: Largest schema file read (TOML or JSON) and guidelines file, in bytes (UTF-8: at most 4 per character).
MAX_FILE_BYTES = 4 * MAX_GUIDELINES + 1_000_000
MAX_GUIDELINES_BYTES = 4 * MAX_GUIDELINES
#: Longest note kept with a version (``schema set --note``).
MAX_NOTE = 1_000


class LabelSchemaError(ValueError):
    """A schema file (or stored schema) that cannot be used; ``problems`` lists each line."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class LabelSchema:
    """A project's label vocabulary. ``version`` is the project's version number of it."""

    error_types: tuple[Choice, ...]
    discard_reasons: tuple[Choice, ...]
    strengths: tuple[Choice, ...]
    title: str = ""
    guidelines: str = ""
    version: int = DEFAULT_VERSION
    note: str = field(default="", compare=False)

    @property
    def error_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.error_types)

    @property
    def discard_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.discard_reasons)

    @property
    def strength_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.strengths)

    def keymap(self) -> tuple[Shortcut, ...]:
        """Every shortcut of the window under this schema (fixed ones and this schema's)."""
        return keymap_for(self.strengths, self.error_types, self.discard_reasons)

    def to_json(self) -> str:
        """The stored form (without guidelines and version: their own columns), canonical:
        two schemas are the same exactly when their JSON is."""
        body: dict[str, Any] = {"format": FORMAT, "title": self.title}
        for section in SECTIONS:
            body[section] = [_entry_dict(c, section) for c in getattr(self, section)]
        return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def same_as(self, other: LabelSchema) -> bool:
        """The same entries, title and guidelines (versions aside)."""
        return self.to_json() == other.to_json() and self.guidelines == other.guidelines


def _entry_dict(choice: Choice, section: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": choice.name, "label": choice.label, "description": choice.description}
    if choice.key:
        out["key"] = choice.key
    if section == "error_types":
        if choice.subkinds:
            out["subkinds"] = list(choice.subkinds)
        if choice.free_text:
            out["free_text"] = True
    return out


def _default_schema() -> LabelSchema:
    return LabelSchema(
        error_types=DEFAULT_CHOICES["error_types"],
        discard_reasons=DEFAULT_CHOICES["discard_reasons"],
        strengths=DEFAULT_CHOICES["strengths"],
        title="PairScope default",
        note="built-in default",
    )


#: The built-in schema: the seed taxonomies (VL-RewardBench's error types and discard rules).
DEFAULT_SCHEMA = _default_schema()


# -- keys ------------------------------------------------------------------------------------


def normalize_key(text: str) -> str | None:
    """A key sequence in one canonical spelling (``ctrl+shift+x`` → ``Ctrl+Shift+X``), or
    ``None`` when it is not one key with optional Ctrl/Alt/Shift/Meta."""
    text = text.strip()
    if not text or (len(text) > 1 and ", " in text):
        return None
    if text.endswith("++") or text == "+":
        mods, key = text[:-2].split("+") if len(text) > 2 else [], "+"
    else:
        *mods, key = text.split("+")
    names = []
    for mod in mods:
        name = _MODIFIERS.get(mod.strip().lower())
        if name is None or name in names:
            return None
        names.append(name)
    key = key.strip()
    if len(key) == 1 and not key.isspace():
        key = key.upper()
    else:
        key = _KEY_ALIASES.get(key.lower()) or next((k for k in _NAMED_KEYS if k.lower() == key.lower()), "")
        if not key:
            return None
    order = ("Ctrl", "Alt", "Shift", "Meta")
    return "+".join([*sorted(names, key=order.index), key])


def _window_keys(sections: dict[str, tuple[Choice, ...]]) -> dict[str, str]:
    """Canonical key → what the window does with it, under a schema of these sections (its
    menus, so their mnemonics, follow the schema): ``keymap.reserved_shortcuts``, the window's table."""
    keymap = keymap_for(sections["strengths"], sections["error_types"], sections["discard_reasons"])
    out: dict[str, str] = {}
    for shortcut in reserved_shortcuts(keymap):
        for key in shortcut.keys:
            canonical = normalize_key(key)
            if canonical is not None:
                out.setdefault(canonical, shortcut.description)
    return out


# -- parsing ---------------------------------------------------------------------------------


class _Lines:
    """Where things are in the TOML text, for ``FILE:LINE`` messages (best effort)."""

    def __init__(self, text: str, source: str):
        self.lines = text.splitlines()
        self.source = source

    def _find(self, pattern: str, start: int = 0, stop: int | None = None) -> int | None:
        regex = re.compile(pattern)
        for i in range(start, len(self.lines) if stop is None else stop):
            if regex.match(self.lines[i]):
                return i
        return None

    def _header(self, section: str, index: int) -> tuple[int, int] | None:
        """(first, end) line indices of the ``index``-th ``[[section]]`` table."""
        heads = [i for i, line in enumerate(self.lines) if re.match(rf"\s*\[\[\s*{section}\s*\]\]", line)]
        if index >= len(heads):
            return None
        end = self._find(r"\s*\[", heads[index] + 1)
        return heads[index], len(self.lines) if end is None else end

    def at(self, section: str | None = None, index: int | None = None, key: str | None = None) -> str:
        line = None
        if section is not None and index is not None:
            span = self._header(section, index)
            if span is not None:
                line = span[0]
                if key is not None:
                    found = self._find(rf"\s*{re.escape(key)}\s*=", span[0] + 1, span[1])
                    line = found if found is not None else line
        if line is None and (key or section):
            line = self._find(rf"\s*(\[+\s*)?{re.escape(section or key or '')}\s*(=|\])")
        return f"{self.source}:{(line or 0) + 1}"


def parse_schema(text: str, source: str = "<schema>") -> LabelSchema:
    """Read a schema file's text; :class:`LabelSchemaError` lists every problem found."""
    import tomllib  # only a schema file needs it (not the window's start)

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"\(at line (\d+), column \d+\)", message)
        line = match.group(1) if match else str(max(1, len(text.splitlines())))
        raise LabelSchemaError([f"{source}:{line}: not valid TOML: {message}"]) from exc
    return schema_from_dict(data, _Lines(text, source))


def load_schema(path: str | Path) -> LabelSchema:
    """Read a schema file (TOML, or JSON as :meth:`LabelSchema.to_json` writes it), at most
    :data:`MAX_FILE_BYTES`."""
    path = Path(path)
    text = read_bounded(path, MAX_FILE_BYTES, f"larger than {MAX_FILE_BYTES:,} bytes: not a label schema file")
    if path.suffix.lower() == ".json":
        try:
            data = loads_json(text)
        except ValueError as exc:
            raise LabelSchemaError([f"{path}:1: not valid JSON: {exc}"]) from exc
        return schema_from_dict(data, _Lines("", str(path)))
    return parse_schema(text, str(path))


def load_guidelines(path: str | Path) -> str:
    """A Markdown guidelines file (``schema set --guidelines``), refused past its limit."""
    too_long = f"guidelines longer than {MAX_GUIDELINES:,} characters"
    text = read_bounded(Path(path), MAX_GUIDELINES_BYTES, too_long)
    if len(text) > MAX_GUIDELINES:
        raise LabelSchemaError([f"{path}: {too_long}"])
    return text


def read_bounded(path: Path, limit: int, too_large: str) -> str:
    """A UTF-8 text file of at most ``limit`` bytes, never read whole beyond it (then
    :class:`LabelSchemaError` saying ``too_large``)."""
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise LabelSchemaError([f"{path}: {too_large}"])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LabelSchemaError([f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start + 1:,})"]) from None


def label_schema_problems(text: object, guidelines: object, version: int = DEFAULT_VERSION) -> list[str]:
    """Why a schema cannot be stored as ``version`` (its JSON, as ``LabelSchema.to_json`` writes it, and its
    guidelines), ``[]`` when it can: the one check ``schema set`` and merge make before storing one."""
    problems: list[str] = []
    if not isinstance(guidelines, str):
        problems.append(f"label schema version {version}: guidelines must be text (Markdown)")
    elif len(guidelines) > MAX_GUIDELINES:
        problems.append(f"label schema version {version}: guidelines longer than {MAX_GUIDELINES:,} characters")
    if not isinstance(text, str):
        return [*problems, f"label schema version {version}: not text"]
    try:
        schema_from_json(text, version=version, strict=True)
    except LabelSchemaError as exc:
        problems += exc.problems
    return problems


def schema_from_json(
    text: str, guidelines: str = "", version: int = DEFAULT_VERSION, note: str = "", *, strict: bool = False
) -> LabelSchema:
    """A stored schema (:meth:`LabelSchema.to_json`) read back. A key the window now keeps for
    itself (a schema stored before the check knew it) is dropped, the entry kept; ``strict``
    refuses it as ``schema set`` does."""
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise LabelSchemaError([f"label schema version {version}: not valid JSON: {exc}"]) from None
    if not isinstance(data, dict):
        raise LabelSchemaError([f"label schema version {version}: not a JSON object"])
    if data.get("format", FORMAT) != FORMAT:
        raise LabelSchemaError(
            [f"label schema version {version} is in format {data.get('format')!r}; upgrade PairScope to read it"]
        )
    schema = schema_from_dict(data, _Lines("", f"label schema version {version}"), drop_window_keys=not strict)
    return replace(schema, guidelines=guidelines, version=version, note=note)


def schema_from_dict(data: Any, where: _Lines, *, drop_window_keys: bool = False) -> LabelSchema:
    problems: list[str] = []
    if not isinstance(data, dict):
        raise LabelSchemaError([f"{where.source}:1: a schema is a table of sections"])
    for name in data:
        if name not in _TOP_FIELDS:
            problems.append(f"{where.at(key=name)}: unknown field {name!r} (known: {', '.join(_TOP_FIELDS)})")
    title = _text(data.get("title", ""), "title", where.at(key="title"), problems)
    guidelines = data.get("guidelines", "")
    if not isinstance(guidelines, str):
        problems.append(f"{where.at(key='guidelines')}: guidelines must be text (Markdown)")
        guidelines = ""
    elif len(guidelines) > MAX_GUIDELINES:
        problems.append(f"{where.at(key='guidelines')}: guidelines longer than {MAX_GUIDELINES:,} characters")
    sections: dict[str, tuple[Choice, ...]] = {}
    at: dict[tuple[str, str], int] = {}  # (section, name) -> its entry's index in the file
    for section in SECTIONS:
        if section not in data:
            sections[section] = getattr(DEFAULT_SCHEMA, section)
            continue
        sections[section] = _section(data[section], section, where, problems, at)
    _check_keys(sections, where, problems, at, drop_window_keys)
    if problems:
        raise LabelSchemaError(problems)
    return LabelSchema(
        error_types=sections["error_types"],
        discard_reasons=sections["discard_reasons"],
        strengths=sections["strengths"],
        title=title,
        guidelines=guidelines,
    )


def _text(value: Any, what: str, at: str, problems: list[str]) -> str:
    if not isinstance(value, str):
        problems.append(f"{at}: {what} must be text, not {value!r}")
        return ""
    if len(value) > MAX_TEXT or "\n" in value:
        problems.append(f"{at}: {what} must be one line of at most {MAX_TEXT} characters")
    return value.strip()


def _section(
    entries: Any, section: str, where: _Lines, problems: list[str], at: dict[tuple[str, str], int]
) -> tuple[Choice, ...]:
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        problems.append(f"{where.at(key=section)}: {section} must be a list of tables ([[{section}]])")
        return ()
    if len(entries) > MAX_ENTRIES:
        problems.append(f"{where.at(section, MAX_ENTRIES)}: more than {MAX_ENTRIES} {section}")
    out: list[Choice] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        before = len(problems)
        for name in entry:
            if name not in _FIELDS[section]:
                known = ", ".join(_FIELDS[section])
                problems.append(f"{where.at(section, i, name)}: unknown field {name!r} in {section} (known: {known})")
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            problems.append(
                f"{where.at(section, i, 'name')}: {section} entry {i + 1} needs a name of lower-case letters,"
                f" digits, _ or - (at most 40), not {name!r}"
            )
            continue
        if name in seen:
            problems.append(
                f"{where.at(section, i, 'name')}: duplicate name {name!r} in {section} (entry {seen[name]})"
            )
        seen.setdefault(name, i + 1)
        label = _text(
            entry.get("label", name.replace("_", " ").capitalize()), "label", where.at(section, i, "label"), problems
        )
        description = _text(
            entry.get("description", label), "description", where.at(section, i, "description"), problems
        )
        key = entry.get("key")
        if key is not None:
            key = _text(key, "key", where.at(section, i, "key"), problems) or None
        subkinds = entry.get("subkinds", [])
        if not isinstance(subkinds, list) or not all(isinstance(s, str) and s.strip() for s in subkinds):
            problems.append(f"{where.at(section, i, 'subkinds')}: subkinds must be a list of texts")
            subkinds = []
        free_text = entry.get("free_text", False)
        if not isinstance(free_text, bool):
            problems.append(f"{where.at(section, i, 'free_text')}: free_text must be true or false")
            free_text = False
        if subkinds and free_text:
            problems.append(
                f"{where.at(section, i, 'free_text')}: {name!r} has both subkinds and free_text; choose one"
            )
        if len(problems) == before:
            at[(section, name)] = i
            out.append(Choice(name, label, key, description or label, tuple(s.strip() for s in subkinds), free_text))
    return tuple(out)


def _check_keys(
    sections: dict[str, tuple[Choice, ...]],
    where: _Lines,
    problems: list[str],
    at_index: dict[tuple[str, str], int],
    drop_window_keys: bool = False,
) -> None:
    """Every key is one valid key, used once, and none the window uses (``drop_window_keys``:
    such a key is taken off its entry instead, in ``sections``)."""
    fixed = _window_keys(sections)
    if drop_window_keys:
        for section in SECTIONS:
            sections[section] = tuple(
                replace(c, key=None) if c.key and normalize_key(c.key) in fixed else c for c in sections[section]
            )
    used: dict[str, str] = {}
    for section in SECTIONS:
        for choice in sections[section]:
            if not choice.key:
                continue
            at = where.at(section, at_index.get((section, choice.name)), "key")
            canonical = normalize_key(choice.key)
            if canonical is None:
                problems.append(
                    f"{at}: key {choice.key!r} of {choice.name!r} is not a key (one key, optionally with"
                    ' Ctrl+, Alt+, Shift+ or Meta+; e.g. "Ctrl+7" or "Q")'
                )
            elif canonical in fixed:
                problems.append(
                    f"{at}: key {choice.key!r} of {choice.name!r} is taken by the window ({fixed[canonical]})"
                )
            elif canonical in used:
                problems.append(f"{at}: key {choice.key!r} of {choice.name!r} is also the key of {used[canonical]}")
            else:
                used[canonical] = f"{section} {choice.name!r}"


# -- writing ---------------------------------------------------------------------------------


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # not allowed in a TOML literal string


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def to_toml(schema: LabelSchema) -> str:
    """The schema as a file :func:`parse_schema` reads back the same."""
    out = [f"# PairScope label schema (version {schema.version} of its project)", ""]
    out.append(f"title = {_toml_string(schema.title)}")
    if schema.guidelines:
        text = schema.guidelines
        if "'''" not in text and not _CONTROL.search(text) and not text.endswith("'"):
            out.append(f"guidelines = '''\n{text}'''")
        else:
            out.append(f"guidelines = {_toml_string(text)}")
    empty = [section for section in SECTIONS if not getattr(schema, section)]
    out += [f"{section} = []" for section in empty]  # before the first table, or it would be the table's
    for section in SECTIONS:
        for choice in getattr(schema, section):
            out += ["", f"[[{section}]]"]
            for key, value in _entry_dict(choice, section).items():
                if isinstance(value, bool):
                    out.append(f"{key} = {'true' if value else 'false'}")
                elif isinstance(value, list):
                    out.append(f"{key} = [{', '.join(_toml_string(v) for v in value)}]")
                else:
                    out.append(f"{key} = {_toml_string(value)}")
    return "\n".join(out) + "\n"


def kind_order_key(order: tuple[str, ...]):
    """Sort key putting kinds in ``order`` (a schema's) first, unknown ones after by name."""
    return lambda kind: (order.index(kind) if kind in order else len(order), kind)


def error_kind_order(data: Any) -> tuple[str, ...]:
    """The error-kind order of a stats data set: its project's schema order when it carries
    one (``error_kind_order``), else the built-in one."""
    return tuple(getattr(data, "error_kind_order", None) or DEFAULT_SCHEMA.error_names)
