"""The Gradescope autograder: ``pallas-lab gradescope --out autograder.zip`` and its run.

The zip holds what Gradescope's base image expects at its top level:

* ``setup.sh``: installs the pinned dependencies (``requirements.txt``, the
  versions of this machine) and pallas-lab itself from ``pallas-lab/``
  (``pallas_sim``, ``reference``, ``graders``: the hidden parts stay on the
  autograder, never in the student's view);
* ``run_autograder``: grades the file in ``/autograder/submission`` and
  writes ``/autograder/results/results.json``. It writes that file always:
  for a missing or broken submission a zero score with the reason, and if
  Python itself cannot run, a fallback written by the shell script.

results.json follows Gradescope's documented schema (``score``,
``execution_time``, ``output``, ``visibility``, ``tests[]`` with ``name``,
``number``, ``score``, ``max_score``, ``status``, ``output``, ``tags``,
``visibility``). The hidden checks carry the points and are
``after_published``; the public checks (``graders.student.public``, run here
with the student's code in the worker) are ``visible`` at once and worth 0
points, so the score is the hidden grade alone.

``AUTOGRADER_ROOT`` (default ``/autograder``) moves the whole tree, which the
tests use to run the real script in a temporary folder.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import re
import sys
import traceback
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graders.assignments import ASSIGNMENTS, Assignment, assignment_for_stem

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("pallas_sim", "reference", "graders", "pyproject.toml", "README.md")
HIDDEN_VISIBILITY = "after_published"
PUBLIC_VISIBILITY = "visible"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image.
set -euo pipefail
cd /autograder/source
python3 -m pip install --no-cache-dir -r requirements.txt
python3 -m pip install --no-cache-dir --no-deps ./pallas-lab
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. It always leaves results.json.
root="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{PALLAS_LAB_PYTHON:-python3}}"
mkdir -p "$root/results"
if ! "$python" -m graders.autograder run --root "$root"{assignment}; then
  if [ ! -s "$root/results/results.json" ]; then
    printf '%s%s\\n' '{{"score": 0, "visibility": "visible", "tests": [], ' \\
      '"output": "The autograder could not run; please tell the course staff."}}' \\
      > "$root/results/results.json"
  fi
fi
exit 0
"""


def _requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]


def pinned_requirements() -> list[str]:
    """``name==version`` for every runtime dependency of pallas-lab, as installed here."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = []
    for spec in project["dependencies"]:
        name = _requirement_name(spec)
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pins.append(spec)
    return pins


def build_zip(out: str | Path, *, assignment: str | None = None) -> Path:
    """Write the autograder zip to ``out``; returns its path.

    ``assignment`` fixes the assignment (then any single ``.py``/``.ipynb``
    is graded as it); otherwise the submitted file's name chooses it.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    option = f" --assignment {assignment}" if assignment else ""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", SETUP_SH),
                           ("run_autograder", RUN_AUTOGRADER.format(assignment=option))):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            archive.writestr(info, text)
        archive.writestr("requirements.txt", "\n".join(pinned_requirements()) + "\n")
        for part in SHIPPED:
            path = ROOT / part
            files = [path] if path.is_file() else sorted(
                p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
            for file in files:
                archive.write(file, f"pallas-lab/{file.relative_to(ROOT).as_posix()}")
    out.write_bytes(buffer.getvalue())
    return out


# -- the run ------------------------------------------------------------------------------------

def find_submission(folder: Path, assignment: str | None) -> tuple[Path, Assignment] | str:
    """The file to grade under ``folder`` and its assignment, or the reason there is none."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".py", ".ipynb")
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    if assignment is not None:
        info = ASSIGNMENTS[assignment]
        named = [p for p in files if p.stem == info.stem] or files
        if not named:
            return f"no .py or .ipynb file was submitted (expected {info.stem}.py)"
        return named[0], info
    for path in files:
        found = assignment_for_stem(path.stem)
        if found is not None:
            return path, found
    expected = ", ".join(f"{a.stem}.py" for a in ASSIGNMENTS.values())
    got = ", ".join(p.name for p in files) or "nothing"
    return f"no assignment file was submitted (expected one of {expected}; got {got})"


class SessionApi:
    """``graders.student.public.Api`` over a grading ``Session``: the code runs in the worker."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def call(self, func: str, *args: Any, **kwargs: Any) -> Any:
        """``Api.call`` through ``Session.invoke``."""
        from graders.student.public import Result

        reply = self.session.invoke(func, args, kwargs)
        returned = reply.returned_arg if isinstance(reply.returned_arg, int) else None
        return Result(reply.value, list(reply.traces), returned)

    def kernel(self, harness: str, func: str, *args: Any, **kwargs: Any) -> Any:
        """``Api.kernel`` through the worker's harness."""
        return self.session.invoke(func, args, kwargs, harness=harness).value

    def run_property(self, strategy: Any, body: Any, *, max_examples: int = 10) -> None:
        """``framework.run_property`` (deterministic profile), mismatches as CheckFailures."""
        from graders.checks.framework import run_property

        run_property(strategy, lambda example: _as_failure(body, example),
                     max_examples=max_examples)


def _as_failure(fn: Any, *args: Any) -> None:
    from graders.checks.framework import CheckFailure
    from graders.student.public import Mismatch

    try:
        fn(*args)
    except Mismatch as failure:
        raise CheckFailure(failure.what, input=failure.input, expected=failure.expected,
                           got=failure.got) from None


def public_results(path: Path, info: Assignment, timeout: float) -> list[dict[str, Any]]:
    """Gradescope tests (visible, 0 points) of the public checks, run through the worker."""
    from graders.checks.framework import Check
    from graders.grading import open_session, run_check
    from graders.student.public import load_public_checks

    tests = []
    with open_session(path, info, timeout=timeout) as session:
        for public in load_public_checks(info.id):
            check = Check(info.id, public.task, public.name, 0.0,
                          lambda s, p=public: _as_failure(p.run, SessionApi(s)))
            result = run_check(session, check, info)
            tests.append({
                "name": f"self-check: {public.name}", "number": public.task, "score": 0,
                "max_score": 0, "status": "passed" if result.status == "passed" else "failed",
                "output": result.feedback, "tags": [info.id, f"task {public.task}", "public"],
                "visibility": PUBLIC_VISIBILITY,
            })
    return tests


def results_for(path: Path, info: Assignment, timeout: float) -> dict[str, Any]:
    """The results.json document for one submission file."""
    from graders.grading import grade_file
    from graders.reports.gradescope import results_json

    result = grade_file(path, assignment=info.id, timeout=timeout, student="submission")
    document = results_json(result)
    for test in document["tests"]:
        test["visibility"] = HIDDEN_VISIBILITY
    document["tests"] = public_results(path, info, timeout) + document["tests"]
    document["visibility"] = HIDDEN_VISIBILITY
    return document


def failure_results(message: str) -> dict[str, Any]:
    """results.json for a submission that cannot be graded: score 0 and the reason."""
    return {"score": 0, "output": message, "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}


def run(root: Path, assignment: str | None, timeout: float) -> int:
    """Grade ``root/submission`` into ``root/results/results.json``; returns 0 when the
    submission was graded, 1 when only the failure document could be written."""
    from graders.reports.files import atomic_write_text

    target = root / "results" / "results.json"
    try:
        found = find_submission(root / "submission", assignment)
        if isinstance(found, str):
            document, status = failure_results(found), 0
        else:
            document, status = results_for(*found, timeout), 0
    except Exception:  # noqa: BLE001 - whatever happens, Gradescope gets a results.json
        traceback.print_exc()
        document = failure_results("The autograder failed on this submission; please tell "
                                   "the course staff.")
        status = 1
    atomic_write_text(target, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """``pallas-lab gradescope --out autograder.zip`` (and ``run``, used by run_autograder)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        parser = argparse.ArgumentParser(prog="python -m graders.autograder run")
        parser.add_argument("--root", type=Path, default=Path("/autograder"))
        parser.add_argument("--assignment", choices=sorted(ASSIGNMENTS), default=None)
        parser.add_argument("--timeout", type=float, default=10.0)
        args = parser.parse_args(argv[1:])
        return run(args.root, args.assignment, args.timeout)
    parser = argparse.ArgumentParser(
        prog="pallas-lab gradescope",
        description="Build a Gradescope autograder zip (setup.sh, run_autograder, pallas-lab).")
    parser.add_argument("--out", type=Path, default=Path("autograder.zip"))
    parser.add_argument("--assignment", choices=sorted(ASSIGNMENTS), default=None,
                        help="grade every submission as this assignment (default: by file name)")
    args = parser.parse_args(argv)
    print(f"wrote {build_zip(args.out, assignment=args.assignment)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
