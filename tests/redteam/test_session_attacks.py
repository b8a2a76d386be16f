"""Red team (session): what a student's file name can smuggle into the TA's console.

``pallas-lab gradescope dry-run ZIP SUBMISSION`` writes the zip's log (what setup.sh and
run_autograder printed) to the TA's stderr as it is. run_autograder's grader prints
``grading <path> as aN.`` with the submitted file's name raw; Gradescope grades the only
``.py`` of a submission whatever it is called ("as a1_pallas_basics.py"), so a student
who names their file ``x\\x1b]0;OWNED\\x07\\x1b[2J\\u202e.py`` retitles and clears the TA's
terminal (and reverses the rest of the line) during a dry run. Everywhere else
(``grade``'s table, progress, gradebook) such names are shown as escapes
(docs/ta-guide.md, "Formats"; docs/security.md, "Class folders").

The zip here is the real run_autograder script (``RUN_AUTOGRADER``) with a no-op setup.sh
and a root whose environment already exists (a wrapper around this interpreter with this
checkout on its path), so it grades with this checkout in a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOSTILE = "x\x1b]0;OWNED\x07\x1b[2J\u202e.py"


def test_dry_run_log_shows_a_hostile_file_name_as_escapes(tmp_path: Path) -> None:
    from graders.integrations.gradescope.autograder import RUN_AUTOGRADER, VENV

    archive = tmp_path / "autograder-a1.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("setup.sh", "#!/usr/bin/env bash\nexit 0\n")
        out.writestr("run_autograder", RUN_AUTOGRADER.format(assignment="a1", venv=VENV))
    root = tmp_path / "root"
    python = root / VENV / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    submission = tmp_path / "upload"
    submission.mkdir()
    (submission / HOSTILE).write_bytes(
        (REPO / "examples" / "submissions" / "ada_correct" / "a1_pallas_basics.py").read_bytes())

    run = subprocess.run(
        [sys.executable, "-m", "graders.cli.main", "gradescope", "dry-run", str(archive),
         str(submission), "--root", str(root)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
        text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert '"score": 100' in run.stdout  # it was graded (as a1_pallas_basics.py)
    # Before a fix: stderr holds "grading .../x\x1b]0;OWNED\x07\x1b[2J\u202e.py as a1."
    assert "\x1b" not in run.stderr, run.stderr[:500]
    assert "\x07" not in run.stderr
    assert "\u202e" not in run.stderr
    assert "\u202e" not in run.stdout  # results.json printed to the terminal as well
