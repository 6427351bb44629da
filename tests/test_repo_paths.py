"""Every repository path that the README, docs/*.md and pyproject.toml name exists: a guide
that sends a reader to a file that is not there (or a comment naming a test that checks
something, when no such test exists) is a broken promise."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The repository's top-level folders: a reference starting with one of these is a path.
TOP = ("app", "models", "widgets", "resources", "tests", "bench", "docs", "packaging", ".ci")
_TOP = "|".join(re.escape(t) for t in TOP)
PATH = re.compile(rf"(?<![\w./-])((?:\./)?(?:{_TOP})/[\w./*-]*[\w*])")
LINK = re.compile(r"\]\(([^)\s#]+)")  # a Markdown link's target
GUIDE = re.compile(r"(?<![\w./-])([A-Z][A-Z_]+\.md)\b")  # README.md, STATISTICS.md ...
#: Named on purpose although not in the repository: the team's shared notes live beside the
#: checkout (docs/STACK_NOTES.md compares itself with them).
OUTSIDE = {"FACTS.md"}


def documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "pyproject.toml", *sorted((ROOT / "docs").glob("*.md"))]


def references(text: str):
    """(line number, reference) of every path, relative link and guide name in ``text``."""
    for lineno, line in enumerate(text.splitlines(), 1):
        for match in PATH.finditer(line):
            yield lineno, match.group(1)
        for match in LINK.finditer(line):
            if not re.match(r"[a-z]+:", match.group(1)):  # http:, mailto: ...
                yield lineno, match.group(1)
        for match in GUIDE.finditer(line):
            yield lineno, match.group(1)


def exists(ref: str, document: Path) -> bool:
    ref = ref.rstrip(".,:;")
    if ref.startswith("../") and ref.split("/")[-1] in OUTSIDE:
        return True
    if "/" not in ref:  # a guide's bare name: at the root or in docs/
        return ref in OUTSIDE or (ROOT / ref).exists() or (ROOT / "docs" / ref).exists()
    for base in (ROOT, document.parent):
        if "*" in ref:
            if list(base.glob(ref)):
                return True
            continue
        if (base / ref).exists():
            return True
        # `app/media.VideoReader`, `app/judge/results.record_verdicts`: a module and a name in it
        module, dot, _name = ref.rpartition(".")
        if dot and "/" in module and (base / f"{module}.py").exists():
            return True
    return False


def missing_references(document: Path) -> list[str]:
    text = document.read_text()
    name = document.relative_to(ROOT) if document.is_relative_to(ROOT) else document.name
    return [f"{name}:{n}: {ref}" for n, ref in references(text) if not exists(ref, document)]


def test_every_path_named_in_the_readme_docs_and_pyproject_exists():
    missing = [line for document in documents() for line in missing_references(document)]
    assert missing == []


def test_the_check_finds_references_of_every_kind():
    text = (
        "see `app/cli.py`, [the store](docs/STORE.md), tests/test_nothing_here.py, GHOST.md,"
        " app/media.VideoReader and [a site](https://example.org/x.md)\n"
    )
    refs = [ref for _, ref in references(text)]
    assert refs == [
        "app/cli.py",
        "docs/STORE.md",  # as a path
        "tests/test_nothing_here.py",
        "app/media.VideoReader",
        "docs/STORE.md",  # as a link
        "GHOST.md",
    ]
    readme = ROOT / "README.md"
    assert [ref for ref in refs if not exists(ref, readme)] == ["tests/test_nothing_here.py", "GHOST.md"]


def test_a_planted_broken_reference_fails(tmp_path):
    planted = tmp_path / "PLANTED.md"
    planted.write_text("Run `packaging/no-such-script.sh` (not `packaging/setup.sh`), then read [it](NOPE.md).\n")
    assert missing_references(planted) == [
        "PLANTED.md:1: packaging/no-such-script.sh",
        "PLANTED.md:1: NOPE.md",  # as a link
        "PLANTED.md:1: NOPE.md",  # as a guide's name
    ]
