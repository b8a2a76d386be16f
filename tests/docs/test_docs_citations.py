"""Every file the code, the docs and the tests cite is in the repository, and nothing
cites an issue tracker (the repository has none).

Before this test the code cited five specification pages that lived outside the
repository (the grading design, the student API, the simulator's semantics, the worked
answers and the style guide: about eighty citations, none of which resolved), and more
than eighty comments and docstrings pointed at tracker numbers instead of saying what
they meant. A citation is any ``<name>.md`` or ``docs/<path>`` in a scanned file: it
must name a file of the repository, by its path from the root (``docs/student-api.md``)
or, inside ``docs/`` and in ``mkdocs.yml``, relative to ``docs/`` (a Markdown link such as
``(security.md)``).
Pages the site generates at build time (``tools/mkdocs_hooks.py``, ``GENERATED``)
count as present.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Folders never scanned: tools' and builds' output, environments, caches.
SKIP_DIRS = frozenset({".git", ".venv", "venv", "site", "build", "dist", "results",
                       "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis",
                       "node_modules"})
#: Kinds of files scanned (handout notebooks are generated from solutions/, which is).
SUFFIXES = frozenset({".py", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".sh"})
#: Extension-less files scanned too.
EXTRA_FILES = (".ci/run",)
#: ``.md`` names that are not citations: files the grader writes for a student.
NOT_CITATIONS = frozenset({"feedback.md"})
#: This file: its patterns and examples are not citations.
SELF = Path(__file__).resolve()

#: ``a/b/name.md`` not inside a longer path or URL, with an optional ``#anchor``.
MD_CITATION = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.md)(?![\w-])")
#: A ``docs/...`` path not inside a longer path or URL.
DOCS_PATH = re.compile(r"(?<![\w/.:-])(docs/[\w./-]*[\w/])")
#: A Markdown link target: ``](target)``.
LINK_TARGET = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
#: Issue-tracker references: the word issue (or issues), an optional hash and a number, or a
#: hash and a number in parentheses.
ISSUE_REFERENCE = re.compile(r"\b[Ii]ssues?\s*#?\d+|\(#\d+\)")


def generated_pages() -> frozenset[str]:
    """The pages ``tools/mkdocs_hooks.py`` writes at build time, relative to ``docs/``
    (read from its ``GENERATED`` assignment, without importing mkdocs)."""
    tree = ast.parse((ROOT / "tools" / "mkdocs_hooks.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "GENERATED" for t in node.targets):
            return frozenset(ast.literal_eval(node.value))
    raise AssertionError("tools/mkdocs_hooks.py has no GENERATED tuple")


def scanned_files(root: Path = ROOT) -> Iterator[Path]:
    """Every text file of the repository this test reads, in a stable order."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix in SUFFIXES and path.resolve() != SELF:
                yield path
    for extra in EXTRA_FILES:
        if (root / extra).is_file():
            yield root / extra


def _exists(target: str, base: Path, root: Path, generated: frozenset[str]) -> bool:
    target = target.split("#", 1)[0].rstrip("/")
    if target.removeprefix("docs/") in generated:
        return True
    for start in {root, base}:
        candidate = (start / target).resolve()
        if candidate.exists():
            return True
        try:
            inside_docs = candidate.relative_to((root / "docs").resolve()).as_posix()
        except ValueError:
            continue
        if inside_docs in generated:
            return True
    return False


def unresolved_citations(root: Path = ROOT,
                         generated: frozenset[str] | None = None) -> list[str]:
    """``path:line: citation`` for every cited ``.md`` file or ``docs/`` path that does not
    exist. Paths resolve from the root; inside ``docs/`` also from the citing page."""
    if generated is None:
        generated = generated_pages()
    found = []
    for path in scanned_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        in_docs = path.is_relative_to(root / "docs")
        # mkdocs.yml names its pages relative to docs/, as the pages link to each other
        base = path.parent if in_docs else root / "docs" if path == root / "mkdocs.yml" \
            else root
        for number, line in enumerate(text.splitlines(), 1):
            cited = {m.group(1) for m in MD_CITATION.finditer(line)}
            cited |= {m.group(1) for m in DOCS_PATH.finditer(line)}
            if in_docs:
                cited |= {m.group(1) for m in LINK_TARGET.finditer(line)
                          if "://" not in m.group(1)}
            for target in sorted(cited):
                if Path(target).name in NOT_CITATIONS:
                    continue
                if not _exists(target, base, root, generated):
                    found.append(f"{path.relative_to(root)}:{number}: {target}")
    return found


def issue_references(root: Path = ROOT) -> list[str]:
    """``path:line: text`` for every issue-tracker reference in a scanned file."""
    found = []
    for path in scanned_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for match in ISSUE_REFERENCE.finditer(line):
                found.append(f"{path.relative_to(root)}:{number}: {match.group(0)}")
    return found


def test_every_cited_file_is_in_the_repository() -> None:
    missing = unresolved_citations()
    assert not missing, (
        f"{len(missing)} citation(s) name a file the repository does not have; cite the "
        "file by its path from the root (docs/student-api.md) or, in docs/, relative to "
        "the page:\n" + "\n".join(missing))


def test_nothing_cites_an_issue_tracker() -> None:
    found = issue_references()
    assert not found, (
        f"{len(found)} issue-tracker reference(s); the repository has no tracker: say what "
        "the case is, or in a test's docstring what failed before:\n" + "\n".join(found))


#: A cited page that exists nowhere, for the scanner's own test (built, so that this file
#: cites nothing itself).
ABSENT = "no-such-" + "spec.md"


def test_the_scanner_sees_what_it_must(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text(
        "[ok](here.md) [gone](gone.md) docs/here.md docs/absent.md "
        "[site](https://example.org/x.md) [built](reference/cli.md)\n", encoding="utf-8")
    (tmp_path / "mod.py").write_text(
        '"""See ' + ABSENT + ' and docs/here.md (issue ' '23); feedback.md is written."""\n'
        "# fixed in (#" "7)\n", encoding="utf-8")
    missing = unresolved_citations(tmp_path, generated=frozenset({"reference/cli.md"}))
    assert sorted(missing) == ["docs/here.md:1: docs/absent.md", "docs/here.md:1: gone.md",
                               f"mod.py:1: {ABSENT}"], missing
    assert [entry.split(": ", 1)[1] for entry in issue_references(tmp_path)] == [
        "issue " "23", "(#" "7)"]
