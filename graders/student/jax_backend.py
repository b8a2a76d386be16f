"""``pallas-lab check --backend jax FILE``: run your own file on real JAX Pallas.

Registered in ``graders.student.cli.CHECK_BACKENDS``.  For each file it starts
``python -m graders.fidelity.run`` (:data:`RUNNER`; student code runs in that
subprocess only, and this module never imports ``graders.fidelity``),
which calls the file's kernels and wrappers on pallas_sim and on JAX's two
CPU interpreters (``interpret=True`` and TPU interpret mode) and compares the
outputs on drawn inputs.  Per task the report says: passed (runs on real
Pallas and agrees with pallas_sim), failing (with the difference and the
input), not started (still a stub), or "no self-check" when nothing in the
task runs on Pallas.  Needs ``pip install 'pallas-lab[jax]'``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from graders.checking.status import Status
from graders.course.catalog import Assignment
from graders.student.selfcheck import FileReport, TaskOutcome, module_source

#: The program each file runs in (``python -m RUNNER FILE``): JSON lines out. It is a
#: program, not an import, so the student commands and ``graders.fidelity`` import
#: nothing of each other; the bundle ships it (``graders.release.bundle.PROGRAMS``).
RUNNER = "graders.fidelity.run"
MODES = {"hlo": "interpret=True", "tpu": "TPU interpret mode"}


def _file_report(path: Path, assignment: Assignment, rows: list[dict], problem: str | None
                 ) -> FileReport:
    tasks = []
    for task in assignment.tasks:
        mine = [r for r in rows if task.id in r.get("tasks", ())]
        if problem is not None:
            tasks.append(TaskOutcome(task=task.id, title=task.title, status=Status.ERROR,
                                     check="load the file on real JAX", detail=[problem]))
            continue
        if not mine:
            tasks.append(TaskOutcome(task=task.id, title=task.title, status=Status.NO_SELF_CHECK,
                                     check="nothing of this task runs on Pallas"))
            continue
        funcs = sorted({r["func"] for r in mine})
        check = (f"{', '.join(funcs)} on real JAX Pallas ({' and '.join(MODES.values())}) "
                 "agree with pallas_sim on drawn inputs")
        bad = [r for r in mine if r["status"] in ("differs", "error")]
        if bad:
            status = Status.ERROR if all(r["status"] == "error" for r in bad) else Status.FAILING
            detail = [f"{r['func']} on {MODES.get(r['mode'], r['mode'])}: {r['detail']}"
                      for r in bad]
            tasks.append(TaskOutcome(task=task.id, title=task.title, status=status,
                                     check=check, detail=detail))
        elif any(r["status"] == "not started" for r in mine):
            tasks.append(TaskOutcome(task=task.id, title=task.title, status=Status.NOT_STARTED,
                                     check=check))
        else:
            n = sum(r["compared"] for r in mine)
            tasks.append(TaskOutcome(task=task.id, title=task.title, status=Status.PASSED,
                                     check=check, detail=[f"{n} comparisons"]))
    return FileReport(assignment, path, tasks)


def check_on_jax(path: Path, assignment: Assignment, timeout: float) -> FileReport:
    """Run ``path`` on both backends in a subprocess; the per-task report.

    Never raises for a bad file, a missing JAX or a timeout: those become
    "error" tasks with the reason.
    """
    if importlib.util.find_spec("jax") is None:
        return _file_report(path, assignment, [], "JAX is not installed: pip install "
                            "'pallas-lab[jax]' (CPU jax and jaxlib) to run on real Pallas")
    with tempfile.TemporaryDirectory(prefix="pallas-lab-jax-") as folder:
        try:
            source, _ = module_source(path)
        except (OSError, ValueError) as exc:
            return _file_report(path, assignment, [], f"cannot read {path.name}: {exc}")
        module = Path(folder) / f"{assignment.stem}.py"  # a notebook becomes its module text
        module.write_text(source, encoding="utf-8")
        cmd = [sys.executable, "-m", RUNNER, str(module)]
        try:
            # The package root as the working folder, so ``-m graders...`` resolves in a
            # source checkout as in an installed bundle; the file's path is absolute.
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  cwd=Path(__file__).resolve().parents[2], check=False)
        except subprocess.TimeoutExpired:
            return _file_report(path, assignment, [], f"gave up after {timeout:.0f} s")
    rows, problem = [], None
    for line in done.stdout.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the student's own prints
        if isinstance(row, dict) and "load_error" in row:
            problem = str(row["load_error"])
        elif isinstance(row, dict) and {"func", "status", "mode"} <= set(row):
            rows.append(row)
    if problem is None and done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        problem = "the JAX run failed: " + " / ".join(tail)
    return _file_report(path, assignment, rows, problem)


def run_jax_backend(args: argparse.Namespace, con: Console) -> list[FileReport]:
    """The ``jax`` entry of ``CHECK_BACKENDS``: every target file on real JAX."""
    reports = []
    for path, assignment in args.targets:
        con.print(f"running {path} on real JAX Pallas (interpret=True, TPU interpret mode) ...",
                  style="dim", markup=False)
        report = check_on_jax(Path(path), assignment, timeout=max(300.0, 5 * args.timeout))
        if args.task:
            report.tasks = [t for t in report.tasks if t.task == args.task]
        reports.append(report)
    return reports
