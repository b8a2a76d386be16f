"""Grading a class of hostile submissions through ``pallas-lab grade`` in a subprocess: the
helpers of tests/redteam/test_replies_and_limits.py and tests/redteam/test_keyring.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.labs import stems

REPO = Path(__file__).resolve().parents[2]
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
#: Seconds a CLI run may take before the test calls the grader hung (a hang guard only).
RUN_LIMIT = 300
STEMS = stems()


def solution(assignment: str) -> str:
    """The solution of ``assignment`` (an honest student's file)."""
    return (REPO / "solutions" / f"{STEMS[assignment]}.py").read_text(encoding="utf-8")


def compose(assignment: str, attack: str, *, smuggle: bool = False) -> str:
    """The solution of ``assignment`` followed by the attack (and the smuggling trick)."""
    parts = [solution(assignment)]
    if smuggle:
        parts.append((SUBMISSIONS / "_smuggle.txt").read_text(encoding="utf-8"))
    parts.append((SUBMISSIONS / f"{attack}.py").read_text(encoding="utf-8"))
    return "\n\n".join(parts)


@dataclass
class Graded:
    """One CLI run: results.json per (student, stem), the exit status and the output."""

    results: dict[tuple[str, str], dict[str, Any]]
    returncode: int
    stdout: str
    stderr: str
    rss_mib: float | None = None

    def of(self, student: str, assignment: str) -> dict[str, Any]:
        """The results.json of one student's file."""
        return self.results[(student, STEMS[assignment])]


def grade_class(base: Path, students: dict[str, dict[str, str]], *args: str,
                env: dict[str, str] | None = None, measure_rss: bool = False) -> Graded:
    """Write ``students`` ({name: {assignment: source}}) under ``base/class`` and grade the
    class through the CLI with ``args``; ``env`` is added to this process's environment.
    With ``measure_rss`` the CLI runs in a wrapper that records the grader process's peak
    resident memory (``ru_maxrss`` of that process alone, not of its workers)."""
    klass, out = base / "class", base / "results"
    for student, files in students.items():
        (klass / student).mkdir(parents=True)
        for assignment, text in files.items():
            (klass / student / f"{STEMS[assignment]}.py").write_text(text, encoding="utf-8")
    rss_file = base / "grader-rss-kib"
    if measure_rss:
        cli = [sys.executable, "-c", RSS_WRAPPER, str(rss_file)]
    else:
        script = Path(sys.executable).parent / "pallas-lab"
        cli = [str(script)] if script.exists() else [sys.executable, "-m", "graders.cli.main"]
    run = subprocess.run(
        [*cli, "grade", str(klass), "--format", "gradescope", "--out", str(out), *args],
        cwd=base, capture_output=True, text=True, timeout=RUN_LIMIT, check=False,
        env={**os.environ, "PALLAS_LAB_POLICY": "off", **(env or {})},
    )
    results = {}
    for path in out.glob("*/*/results.json"):
        results[(path.parent.parent.name, path.parent.name)] = json.loads(
            path.read_text(encoding="utf-8"))
    rss = int(rss_file.read_text()) / 1024 if measure_rss and rss_file.exists() else None
    return Graded(results, run.returncode, run.stdout, run.stderr, rss)


#: Runs ``pallas-lab`` in this interpreter and writes its peak RSS (KiB) to argv[1] at exit.
RSS_WRAPPER = """
import atexit, resource, runpy, sys
path = sys.argv.pop(1)
atexit.register(lambda: open(path, "w").write(
    str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))
sys.argv[0] = "pallas-lab"
runpy.run_module("graders.cli.main", run_name="__main__", alter_sys=True)
"""
