"""The rules of the test suite's slices, applied by the root conftest.py: which test modules
are end to end (marker ``e2e``), which tests name a lab (markers ``a1`` .. ``a5``)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

# What makes a test module end to end: it names one of the command lines (run in a
# subprocess, ``-m graders.cli.main``, or in process, ``graders.cli.main import main``), the CLI
# helpers of tests/helpers/cli.py, or one of the calls that grade a whole file through a
# worker (a file, or a class in a batch), or it builds a virtual environment to install
# into. The rule reads the module's source and the sources of the project's helper modules
# it imports (tests/redteam/replies.py grades through the CLI for its test modules).
E2E_PATTERN = re.compile(
    r"graders\.(?:student\.)?cli\b|graders\.(?:integrations\.gradescope\.)?autograder\b|tests\.helpers\.cli\b"
    r"|\brun_batch\b|^import venv\b"
    r"|\bgrade_file\b|\bgraded_sample\b|graders\.student\.selfcheck import[^\n]*\bcheck_file\b")
ROOT = Path(__file__).resolve().parents[2]
FIDELITY_DIR = ROOT / "tests" / "fidelity"


E2E_PATTERN = re.compile(E2E_PATTERN.pattern, re.MULTILINE)
HELPER_IMPORT = re.compile(r"^\s*from (tests(?:\.\w+)+|\.\w+) import", re.MULTILINE)


@functools.cache
def e2e_module(path: Path) -> bool:
    """Whether the test module at ``path`` runs a CLI or grades whole files (``E2E_PATTERN``),
    itself or through a helper module of tests/ it imports."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    if E2E_PATTERN.search(text):
        return True
    for module in HELPER_IMPORT.findall(text):
        if module.startswith("."):
            helper = path.parent / (module[1:] + ".py")
        else:
            helper = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        if helper != path and helper.name != "__init__.py" and e2e_module(helper):
            return True
    return False


def assignments() -> list:
    """The discovered labs, in course order."""
    from graders.course.catalog import ASSIGNMENTS

    return list(ASSIGNMENTS.values())


@functools.cache
def _lab_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    patterns = []
    for assignment in assignments():
        names = "|".join(re.escape(name) for name in (assignment.stem, assignment.id))
        patterns.append((assignment.id, re.compile(rf"(?<![A-Za-z0-9])(?:{names})(?![0-9])")))
    return tuple(patterns)


def lab_markers(nodeid: str) -> list[str]:
    """The lab ids whose id (``a3``) or stem (``a3_matmul``) the node id names as a word."""
    return [lab for lab, pattern in _lab_patterns() if pattern.search(nodeid)]
