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
        "see `app/cli/main.py`, [the store](docs/STORE.md), tests/test_nothing_here.py, GHOST.md,"
        " app/media.VideoReader and [a site](https://example.org/x.md)\n"
    )
    refs = [ref for _, ref in references(text)]
    assert refs == [
        "app/cli/main.py",
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


# -- docstrings and comments in the code -------------------------------------------------------

#: A fully qualified name in the code's own text: ``pairscope.app.judge.votes.decide``.
QUALIFIED = re.compile(r"\bpairscope(?:\.\w+)+")
#: A short module reference in double back-quotes: ``app.judge.votes``, ``models.parsing``.
SHORT = re.compile(r"``((?:app|models|widgets)(?:\.\w+)+)``")
#: Modules that moved (git log --diff-filter=R): their old short names, named in any form.
_GONE = "judge_cli|judge_results|stats_data|item_preview"
GONE = re.compile(rf"\b((?:judging|{_GONE})\.\w+)|``({_GONE})``")


def code_files() -> list[Path]:
    """The production code (tests and benches name planted, made-up paths on purpose)."""
    folders = ("app", "models", "widgets")
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def defines(module: Path, name: str) -> bool:
    """Whether ``module``'s source defines or imports ``name`` at some level (text only)."""
    pattern = rf"^\s*(?:class|def|async def)\s+{name}\b|^\s*{name}\s*[:=]|\bimport\b.*\b{name}\b|\bas\s+{name}\b"
    return bool(re.search(pattern, module.read_text(encoding="utf-8"), re.M))


def resolves(dotted: str) -> bool:
    """Whether ``pairscope.a.b.c`` names a package, a module, or a name a module defines
    (nothing is imported: the folders are read as text)."""
    parts = dotted.split(".")
    if parts[0] != "pairscope":
        return False
    path = ROOT
    for i, part in enumerate(parts[1:], start=1):
        if (path / part / "__init__.py").is_file():
            path = path / part
        elif (path / f"{part}.py").is_file():
            return i + 1 == len(parts) or defines(path / f"{part}.py", parts[i + 1])
        else:
            return defines(path / "__init__.py", part)
    return True


def stale_code_references(files) -> list[str]:
    """Every path and module named in the code's docstrings and comments that does not exist."""
    found = []
    for file in files:
        for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            refs = [m.group(1) for m in PATH.finditer(line) if not exists(m.group(1), file)]
            refs += [q for q in QUALIFIED.findall(line) if not resolves(q.rstrip("."))]
            refs += [s for s in SHORT.findall(line) if not resolves("pairscope." + s)]
            refs += [dotted or bare for dotted, bare in GONE.findall(line)]
            name = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file.name
            found += [f"{name}:{lineno}: {r}" for r in refs]
    return found


def test_every_module_and_path_the_code_names_exists():
    assert stale_code_references(code_files()) == []


def test_a_docstring_naming_a_moved_module_fails(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""Decided by ``app.judge.votes`` (see app/judge/votes.py), not ``app.judging.vote``;\n'
        'read by pairscope.app.store.Store and pairscope.app.nowhere.thing, or app/gone.py."""\n'
    )
    assert stale_code_references([planted]) == [
        "planted.py:1: app.judging.vote",
        "planted.py:1: judging.vote",
        "planted.py:2: app/gone.py",
        "planted.py:2: pairscope.app.nowhere.thing",
    ]
