"""The Gradescope autograder: ``pallas-lab gradescope --assignment aN`` and its run.

One zip grades one assignment (``--assignment`` is required; ``--assignment
all`` writes one zip per assignment). The zip holds what Gradescope expects
at its top level:

* ``setup.sh``: run once, as root, when Gradescope builds the image. Made for
  Gradescope's **Ubuntu 22.04** base image (it also works on 24.04 and on
  Debian): neither gives pallas-lab what it needs, a Python 3.11+ with
  pip (22.04 has Python 3.10, 24.04 refuses system-wide pip: PEP 668), so
  ``setup.sh`` leaves the system Python alone. It fetches ``uv`` from PyPI
  (``pip download``, which PEP 668 allows; ``uv`` already on PATH is used as
  it is), lets uv create a virtual environment at
  ``$AUTOGRADER_ROOT/pallas-lab-venv`` with the Python version the zip was
  built with (a system one when there is one, else uv installs a standalone
  CPython), installs the pinned dependencies (``requirements.txt``: the
  versions of the machine that built the zip) and puts ``pallas-lab/``
  (``pallas_sim``, ``reference``, ``graders``: the hidden parts stay on the
  autograder) on that environment's path with a ``.pth`` file.
* ``run_autograder``: grades the submission in ``/autograder/submission`` and
  writes ``/autograder/results/results.json``, always: for a missing or
  broken submission a zero score with the reason, and if Python itself
  cannot run, a fallback written by the shell script.

**Which file is graded** (:func:`find_submission`): ``<stem>.py`` and
``<stem>.ipynb`` (``<stem>`` the record's) anywhere in the submission
(the shallowest of each); without either, the only ``.py`` and the only
``.ipynb``, unless its name is another assignment's. When both of the pair
exist, the one rule of ``graders.student.which_file`` picks one: the one that
differs from the handout; when both differ, the one that differs more
(``GRADESCOPE_DECIDE``: Gradescope writes the files itself, so their times need
not be the student's); when neither does, the ``.py``. When there was a choice (both
of the pair, a renamed file, files left out), it and every other ``.py``/``.ipynb``
that was not graded are said in the results' ``output`` and in a ``visible`` 0-point
test, "which file was graded", shown at once; a lone ``<stem>.py`` gets no such test.

results.json follows Gradescope's documented schema (``score``,
``execution_time``, ``output``, ``visibility``, ``tests[]`` with ``name``,
``number``, ``score``, ``max_score``, ``status``, ``output``, ``tags``,
``visibility``). The hidden checks carry the points and are
``after_published``; the public checks (``graders.student.public``, run here
with the student's code in the worker) are ``visible`` at once and worth 0
points, so the score is the hidden grade alone.

``AUTOGRADER_ROOT`` (default ``/autograder``) moves the whole tree:
:func:`dry_run` (``pallas-lab gradescope dry-run ZIP SUBMISSION``) lays out a
temporary folder like ``/autograder``, copies the submission into it as Gradescope
receives it (links stay links and are refused as on Gradescope; a SUBMISSION that is a
link is refused: ``graders.integrations.gradescope.upload``), runs the zip's ``setup.sh`` and
``run_autograder`` there and prints results.json, as Gradescope would.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graders.course.catalog import ASSIGNMENTS, Assignment, assignment_for_stem
from graders.safety.safe_text import terminal_text
from graders.student.which_file import Decide, choose_file

#: The packages shipped in the zip's ``pallas-lab/`` folder (found where they are installed,
#: editable or not).
PACKAGES = ("pallas_sim", "reference", "graders")
DISTRIBUTION = "pallas-lab"
HIDDEN_VISIBILITY = "after_published"
PUBLIC_VISIBILITY = "visible"
#: The uv release setup.sh fetches from PyPI when none is on PATH.
UV_VERSION = "0.13.9"
VENV = "pallas-lab-venv"
#: How the rule of which file is graded breaks a tie between a changed .py and a changed
#: .ipynb here: Gradescope writes the files itself and documents nothing about their times
#: (a browser upload sends none, a Git checkout keeps none, a zip's unpacking is not
#: described), so they need not be the student's; the one that differs more from the
#: handout is graded.
GRADESCOPE_DECIDE: Decide = "changes"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
# Base image: Ubuntu 22.04 (also 24.04, Debian 12). The system Python is left alone:
# uv (from PyPI) makes a virtual environment with Python {python} and the pinned packages.
set -euo pipefail
here="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
root="${{AUTOGRADER_ROOT:-/autograder}}"
venv="$root/{venv}"
tools="$root/pallas-lab-tools"
uv="${{PALLAS_LAB_UV:-$(command -v uv || true)}}"
if [ -z "$uv" ]; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-pip
  fi
  rm -rf "$tools" && mkdir -p "$tools"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tools" "uv=={uv}"
  python3 -m zipfile -e "$tools"/uv-*.whl "$tools/uv"
  uv="$(ls "$tools"/uv/uv-*.data/scripts/uv)"
  chmod +x "$uv"
fi
# the platform's certificate store (a campus or CI proxy's CA too)
export UV_SYSTEM_CERTS="${{UV_SYSTEM_CERTS:-1}}"
"$uv" venv --quiet --python {python} "$venv"
"$uv" pip install --quiet --python "$venv/bin/python" -r "$here/requirements.txt"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
printf '%s\\n' "$here/pallas-lab" > "$site/pallas_lab.pth"
"$venv/bin/python" -c \
    'import graders.integrations.gradescope.autograder, pallas_sim, reference, numpy'
echo "pallas-lab autograder ready: $venv ({assignment})"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. It always leaves results.json.
root="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{PALLAS_LAB_PYTHON:-$root/{venv}/bin/python}}"
mkdir -p "$root/results"
if ! "$python" -m graders.integrations.gradescope.autograder run --root "$root" \
        --assignment {assignment}; then
  if [ ! -s "$root/results/results.json" ]; then
    printf '%s%s\\n' '{{"score": 0, "visibility": "visible", "tests": [], ' \\
      '"output": "The autograder could not run; please tell the course staff."}}' \\
      > "$root/results/results.json"
  fi
fi
exit 0
"""


class BuildError(RuntimeError):
    """The autograder zip cannot be built (a package or pallas-lab's metadata is missing)."""


def _requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]


def pinned_requirements() -> list[str]:
    """``name==version`` for every runtime dependency of pallas-lab, as installed here.

    Read from the installed distribution's metadata (an editable or a normal
    install alike); optional extras are left out. Raises ``BuildError`` when
    pallas-lab is not installed.
    """
    try:
        specs = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        raise BuildError(f"{DISTRIBUTION} is not installed here (pip install pallas-lab), so "
                         "its dependencies cannot be pinned") from None
    pins = []
    for spec in specs:
        if "extra ==" in spec.replace('"', "").replace("'", ""):
            continue
        name = _requirement_name(spec)
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pins.append(spec.split(";")[0].strip())
    return pins


def package_dir(name: str) -> Path:
    """Where the package ``name`` is imported from; raises ``BuildError`` when it is not."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(f"cannot find the {name} package to ship in the autograder")
    return Path(list(spec.submodule_search_locations)[0])


def build_zip(out: str | Path, *, assignment: str) -> Path:
    """Write the autograder zip of ``assignment`` ("a1") to ``out``; returns its path.

    Every submission is graded as ``assignment`` (``find_submission``). The
    packages are taken from where they are installed, so this works from an
    editable and a normal install. Raises ``KeyError`` for an unknown
    assignment, ``BuildError`` and ``OSError``.
    """
    info = ASSIGNMENTS[assignment]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    scripts = {
        "setup.sh": SETUP_SH.format(python=python, uv=UV_VERSION, venv=VENV,
                                    assignment=f"{info.id} {info.stem}"),
        "run_autograder": RUN_AUTOGRADER.format(assignment=info.id, venv=VENV),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in scripts.items():
            entry = zipfile.ZipInfo(name)
            entry.external_attr = 0o755 << 16
            archive.writestr(entry, text)
        archive.writestr("requirements.txt", "\n".join(pinned_requirements()) + "\n")
        for package in PACKAGES:
            folder = package_dir(package)
            for file in sorted(p for p in folder.rglob("*") if p.is_file()
                               and "__pycache__" not in p.parts and p.suffix != ".pyc"):
                archive.write(file, f"pallas-lab/{package}/{file.relative_to(folder).as_posix()}")
    out.write_bytes(buffer.getvalue())
    return out


# -- the run ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Chosen:
    """The file to grade (``path``), its ``assignment``, and what the student is told about
    the choice (``note``: "" when the submission held only that file)."""

    path: Path
    assignment: Assignment
    note: str = ""


def find_submission(folder: Path, assignment: str) -> Chosen | str:
    """The file under ``folder`` to grade as ``assignment``, or the reason there is none.

    The rule (module docstring): the pair ``<stem>.py``/``<stem>.ipynb`` (else the
    only ``.py``/``.ipynb``, not another assignment's file), the shallowest first,
    decided between by ``graders.student.which_file.choose_file``. ``Chosen.note``
    names the file graded, why, and the other ``.py``/``.ipynb`` files that were not
    ("" when the submission held only that file, under its own name).
    """
    info = ASSIGNMENTS[assignment]
    files = sorted((p for p in folder.rglob("*") if p.is_file()
                    and p.suffix in (".py", ".ipynb")
                    and not any(part.startswith(".") for part in p.relative_to(folder).parts)),
                   key=lambda p: (len(p.relative_to(folder).parts), str(p)))
    shown = [p.relative_to(folder).as_posix() for p in files]
    expected = f"expected {info.stem}.py or {info.stem}.ipynb"
    if not files:
        return f"no .py or .ipynb file was submitted ({expected})"
    others = [p for p in files if assignment_for_stem(p.stem) not in (None, info)]
    pair = [next(iter(p for p in files if p.name == f"{info.stem}{suffix}"), None)
            for suffix in (".py", ".ipynb")]
    why = ""
    if not any(pair):
        for index, suffix in enumerate((".py", ".ipynb")):
            candidates = [p for p in files if p.suffix == suffix and p not in others]
            pair[index] = candidates[0] if len(candidates) == 1 else None
        why = " as {stem}{suffix}"
    present = [p for p in pair if p is not None]
    if not present:
        wrong = [f"{p.name} is {assignment_for_stem(p.stem).id}'s file"  # type: ignore[union-attr]
                 for p in others]
        detail = "; ".join(wrong) if wrong else f"got {', '.join(shown)}"
        return (f"this autograder grades {info.id} ({info.title}): {expected} ({detail})")
    choice = choose_file(present, info.stem, decide=GRADESCOPE_DECIDE)
    chosen = choice.graded if choice.graded is not None else present[0]
    why = why.format(stem=info.stem, suffix=chosen.suffix)
    skipped = [p.relative_to(folder).as_posix() for p in files if p != chosen]
    head = f"Graded {chosen.relative_to(folder).as_posix()}{why}"
    head += f" ({choice.why})" if choice.why else ""
    if skipped:
        return Chosen(chosen, info, f"{head}; not graded: {', '.join(skipped)}.")
    return Chosen(chosen, info, f"{head}." if why or choice.why else "")


def choice_test(note: str) -> dict[str, Any]:
    """The visible, 0-point Gradescope test that names the file graded and why (the rule of
    ``graders.student.which_file``), so the student sees it before the grades are published."""
    return {"name": "which file was graded", "number": "0", "score": 0, "max_score": 0,
            "status": "passed", "output": note, "tags": ["submission"],
            "visibility": PUBLIC_VISIBILITY}


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
        """``graders.checking.registry.run_property`` with the deterministic grading profile."""
        from graders.checking.registry import run_property

        run_property(strategy, body, max_examples=max_examples)


def public_results(path: Path, info: Assignment, timeout: float) -> list[dict[str, Any]]:
    """Gradescope tests (visible, 0 points) of the public checks, run through the worker."""
    from dataclasses import replace

    from graders.grading.grade import run_check
    from graders.grading.session import open_session
    from graders.student.public import load_public_checks

    tests = []
    with open_session(path, info, timeout=timeout) as session:
        for public in load_public_checks(info.id):
            check = replace(public, run=lambda s, p=public: p.run(SessionApi(s)))
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
    from graders.grading.grade import grade_file
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


def run(root: Path, assignment: str, timeout: float) -> int:
    """Grade ``root/submission`` as ``assignment`` into ``root/results/results.json``;
    returns 0 when the submission was graded (or had nothing to grade), 1 when only the
    failure document could be written. Which file was graded is printed and, when there
    was a choice, said in the results' ``output``."""
    from graders.reports.files import atomic_write_text

    target = root / "results" / "results.json"
    try:
        found = find_submission(root / "submission", assignment)
        if isinstance(found, str):
            document, status = failure_results(found), 0
        else:
            # The file's name is the student's: shown as escapes, in Gradescope's log too.
            print(terminal_text(f"grading {found.path} as {found.assignment.id}. "
                                f"{found.note}".rstrip()))
            document, status = results_for(found.path, found.assignment, timeout), 0
            if found.note:
                document["output"] = "\n".join(
                    part for part in (found.note, document.get("output", "")) if part)
                document["tests"] = [choice_test(found.note), *document["tests"]]
    except Exception:  # noqa: BLE001 - whatever happens, Gradescope gets a results.json
        traceback.print_exc()
        document = failure_results("The autograder failed on this submission; please tell "
                                   "the course staff.")
        status = 1
    atomic_write_text(target, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return status


@dataclass(frozen=True)
class DryRun:
    """A local run of an autograder zip: its ``results`` file and the scripts' ``log``
    (what setup.sh and run_autograder printed, as Gradescope's build and run logs)."""

    results: Path
    log: str


def dry_run(archive: str | Path, submission: str | Path, *, root: str | Path | None = None,
            timeout: float = 900.0) -> DryRun:
    """Run an autograder zip as Gradescope would, in a folder laid out like ``/autograder``.

    ``root`` (default: a new temporary folder, kept) gets ``source/`` (the zip,
    unpacked), ``submission/`` (a copy of ``submission``, a folder or one file, as
    Gradescope receives it: links copied as links, never followed, so the zip refuses
    them as on Gradescope; ``graders.integrations.gradescope.upload``) and ``results/``;
    ``setup.sh``
    then ``run_autograder`` run there with ``AUTOGRADER_ROOT=root`` (setup.sh only when
    ``root`` has no environment yet). Returns the results file,
    ``root/results/results.json``, and the log. Raises ``RefusedUpload`` (a
    ``ValueError``) for a ``submission`` that is a symbolic link or holds a FIFO, a
    device or a socket, before anything runs; ``FileNotFoundError`` for a missing zip
    or submission, ``zipfile.BadZipFile``, and ``RuntimeError`` (with the script's
    output) when ``setup.sh`` fails.
    """
    from graders.integrations.gradescope.upload import copy_submission, refuse_link

    archive, submission = Path(archive), Path(submission)
    refuse_link(submission)  # before anything is unpacked or copied
    for path in (archive, submission):
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
    root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="autograder-"))
    for part in ("source", "submission", "results"):
        shutil.rmtree(root / part, ignore_errors=True)
    with zipfile.ZipFile(archive) as unpacked:
        unpacked.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        os.chmod(root / "source" / script, 0o755)
    copy_submission(submission, root / "submission")  # as Gradescope receives it
    (root / "results").mkdir(parents=True)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root)}
    for name in ("PALLAS_LAB_PYTHON", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)  # the zip's own environment, as on Gradescope
    log = ""
    if not (root / VENV / "bin" / "python").exists():
        setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], cwd=root / "source",
                               env=env, capture_output=True, text=True, timeout=timeout)
        log += setup.stdout + setup.stderr
        if setup.returncode != 0:
            raise RuntimeError(f"setup.sh failed ({setup.returncode}):\n{log}")
    graded = subprocess.run([str(root / "source" / "run_autograder")], cwd=root, env=env,
                            capture_output=True, text=True, timeout=timeout, check=False)
    return DryRun(root / "results" / "results.json", log + graded.stdout + graded.stderr)


def _folder_size(root: Path) -> int:
    """Bytes of the regular files under ``root`` (links not followed)."""
    return sum(p.lstat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _dry_run_command(args: argparse.Namespace, own: Path | None) -> int:
    """``dry-run``'s work once its options are parsed: run the zip in ``args.root``, else in
    ``own`` (the temporary folder ``main`` made and removes unless ``--keep``), print
    results.json on stdout and the log, then where the folder is, on stderr."""
    root = args.root if args.root is not None else own
    try:
        results = dry_run(args.zip, args.submission, root=root)
    except (FileNotFoundError, zipfile.BadZipFile, ValueError) as exc:  # RefusedUpload
        print(f"pallas-lab gradescope dry-run: {terminal_text(str(exc))}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"pallas-lab gradescope dry-run: {exc}", file=sys.stderr)
        return 1
    # The zip's log and results.json carry what the submission named and printed: the log
    # is shown as escapes, results.json re-serialised with every non-ASCII character as a
    # JSON escape (the same data; the file itself is left as Gradescope would read it).
    sys.stderr.write(terminal_text(results.log, multiline=True))
    shown = results.results.read_text(encoding="utf-8")
    try:
        shown = json.dumps(json.loads(shown), indent=2, ensure_ascii=True) + "\n"
    except ValueError:
        shown = terminal_text(shown, multiline=True)
    sys.stdout.write(shown)
    size = f"{_folder_size(root) / 2**20:.0f} MiB"
    if own is None:
        print(f"wrote {results.results}", file=sys.stderr)
    elif args.keep:
        print(f"wrote {results.results}; kept {own} ({size})", file=sys.stderr)
    else:
        print(f"removed the temporary folder {own} ({size}); --keep keeps it",
              file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``pallas-lab gradescope --assignment aN [--out ZIP]``, ``... dry-run ZIP SUBMISSION``
    and ``run`` (used by run_autograder); returns the exit status (2: usage errors)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        parser = argparse.ArgumentParser(
            prog="python -m graders.integrations.gradescope.autograder run")
        parser.add_argument("--root", type=Path, default=Path("/autograder"))
        parser.add_argument("--assignment", choices=sorted(ASSIGNMENTS), required=True)
        parser.add_argument("--timeout", type=float, default=10.0)
        args = parser.parse_args(argv[1:])
        return run(args.root, args.assignment, args.timeout)
    if argv and argv[0] == "dry-run":
        parser = argparse.ArgumentParser(
            prog="pallas-lab gradescope dry-run",
            description="Run an autograder zip's setup.sh and run_autograder in a temporary "
                        "folder laid out like /autograder (AUTOGRADER_ROOT) and print "
                        "results.json.")
        parser.add_argument("zip", type=Path, metavar="ZIP")
        parser.add_argument("submission", type=Path, metavar="SUBMISSION",
                            help="a submission file or a folder of them")
        parser.add_argument("--root", type=Path, default=None,
                            help="the folder to use (default: a new temporary one, removed "
                                 "afterwards); a root whose setup.sh already ran is reused")
        parser.add_argument("--keep", action="store_true",
                            help="keep the temporary folder (the zip's environment, the "
                                 "submission's copy, results.json) and print where it is")
        args = parser.parse_args(argv[1:])
        own = None if args.root is not None else Path(tempfile.mkdtemp(prefix="autograder-"))
        try:
            return _dry_run_command(args, own)
        finally:
            if own is not None and not args.keep:
                shutil.rmtree(own, ignore_errors=True)
    parser = argparse.ArgumentParser(
        prog="pallas-lab gradescope",
        description="Build a Gradescope autograder zip for one assignment (setup.sh, "
                    "run_autograder, pallas-lab). `pallas-lab gradescope dry-run ZIP "
                    "SUBMISSION` runs one locally.")
    parser.add_argument("--assignment", choices=[*sorted(ASSIGNMENTS), "all"], required=True,
                        help="the assignment this autograder grades (all: one zip each)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the zip (default autograder-<id>.zip); with --assignment all, "
                             "the folder of the zips (default: the current folder)")
    args = parser.parse_args(argv)
    ids = sorted(ASSIGNMENTS) if args.assignment == "all" else [args.assignment]
    if args.assignment == "all":
        folder = args.out if args.out is not None else Path()
        if folder.exists() and not folder.is_dir():
            print(f"pallas-lab gradescope: --out {folder} must be a folder with "
                  "--assignment all", file=sys.stderr)
            return 2
        targets = [folder / f"autograder-{i}.zip" for i in ids]
    else:
        target = args.out if args.out is not None else Path(f"autograder-{args.assignment}.zip")
        if target.is_dir():
            print(f"pallas-lab gradescope: --out {target} is a folder; give the zip's file "
                  "name", file=sys.stderr)
            return 2
        targets = [target]
    try:
        for assignment, target in zip(ids, targets, strict=True):
            print(f"wrote {build_zip(target, assignment=assignment)} ({assignment})")
    except (BuildError, OSError) as exc:
        print(f"pallas-lab gradescope: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
