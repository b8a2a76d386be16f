"""``pallas-lab``: grade submissions, check one's own file, regenerate handouts, export.

::

    pallas-lab grade [PATH ...] [--assignment aN] [--format table|gradescope|csv]
                     [--out PATH] [--timeout S] [--budget S] [--feedback]
                     [--jobs [N]] [--to-gradebook [COURSE]]
    pallas-lab check [FILE ...] [--task N.M] [--assignment aN]   # graders.student.cli
    pallas-lab status [FOLDER]                                   # graders.student.cli
    pallas-lab release [...] [--bundle DIR]     # graders.release.main
    pallas-lab nbgrader DIR [...]               # graders.nbgrader_course.main
    pallas-lab gradescope --assignment aN       # graders.autograder.main

``check`` and ``status`` run the public checks in this process (the student's
tools); ``grade`` runs the hidden checks with the code in the worker. With
``--jobs`` grading is a resumable parallel batch (``graders.batch``).

Exit status: 0 when grading ran (whatever the scores), 1 when the grader
itself failed (a check's bug, a missing checks module), 2 for usage errors
(nothing to grade, a PATH that does not exist, a class folder that is
ambiguous or two students that would share a name: ``graders.discovery``).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from graders.assignments import ASSIGNMENTS
from graders.discovery import DEFAULT_ROOT, Discovery, Submission, discover
from graders.grading import SubmissionResult, grade_file
from graders.safe_text import show

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a number of seconds must be positive, not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pallas-lab`` (subcommands grade, check, release)."""
    parser = argparse.ArgumentParser(
        prog="pallas-lab",
        description="Grade Pallas kernel exercises in an isolated worker process.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    grade = commands.add_parser(
        "grade", help="grade submission files, student folders or a class folder",
        description="Grade PATHs: a submission file (its name names the assignment), a student "
                    f"folder of such files, or a class folder of student folders. "
                    f"No PATH grades {DEFAULT_ROOT.relative_to(DEFAULT_ROOT.parents[1])}/.",
    )
    grade.add_argument("paths", nargs="*", metavar="PATH", type=Path)
    _common(grade)
    grade.add_argument(
        "--budget", type=_positive_float, default=None, metavar="S",
        help="wall-clock seconds one submission file may take in all; then its remaining "
             "checks are recorded as timeout (default: 3 x --timeout per check)",
    )
    grade.add_argument(
        "--format", choices=("table", "gradescope", "csv"), default="table",
        help="table: terminal summary (default); gradescope: results.json; csv: gradebook",
    )
    grade.add_argument(
        "--out", type=Path, default=None,
        help="gradescope: the results.json file (one submission) or a folder (several; "
             "default results/); csv: the gradebook file (default gradebook.csv); "
             "table: also write the report as text here",
    )
    grade.add_argument(
        "--feedback", action="store_true", help="table: print the feedback of failed checks"
    )
    grade.add_argument(
        "--jobs", type=int, nargs="?", const=os.cpu_count() or 1, default=None, metavar="N",
        help="grade as a resumable batch, N students at once (default: the CPU count): "
             "results.json per submission and gradebook.csv under --out (default results/)",
    )
    grade.add_argument(
        "--to-gradebook", nargs="?", type=Path, const=Path(), default=None, metavar="COURSE",
        help="also write each task's score into the nbgrader gradebook of COURSE (default: the "
             "nbgrader course the PATH belongs to)",
    )
    from graders.student.cli import add_commands

    add_commands(commands)
    for name, what in (("release", "regenerate assignments/ from solutions/ (instructors)"),
                       ("nbgrader", "write an nbgrader course (instructors)"),
                       ("gradescope", "build a Gradescope autograder zip (instructors)"),
                       ("profile", "predicted TPU time of a file's kernels (pallas_sim.estimate)")):
        commands.add_parser(name, help=what, add_help=False)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--assignment", choices=sorted(ASSIGNMENTS), default=None,
        help="grade as this assignment whatever the file is called",
    )
    parser.add_argument(
        "--timeout", type=_positive_float, default=10.0,
        help="seconds each call of a student function may take (default 10)",
    )


def _grade_all(
    submissions: Sequence[Submission], timeout: float, err: Console,
    budget: float | None = None,
) -> tuple[list[SubmissionResult], bool]:
    results: list[SubmissionResult] = []
    failed = False
    for sub in submissions:
        show(err, f"grading {sub.student}/{sub.file.name} as {sub.assignment} ...", style="dim")
        try:
            results.append(
                grade_file(sub.file, assignment=sub.assignment, timeout=timeout,
                           student=sub.student, budget=budget)
            )
        except Exception as exc:  # noqa: BLE001 - the grader's bug: report, go on
            failed = True
            show(err, f"internal error while grading {sub.file}: {type(exc).__name__}: {exc}",
                 style="bold red")
            show(err, traceback.format_exc(), multiline=True)
    return results, failed


def _report_internal(results: Sequence[SubmissionResult], err: Console) -> bool:
    found = False
    for result in results:
        for check in result.internal_errors:
            found = True
            show(err, f"internal error in check {check.assignment} {check.task} "
                      f"{check.check!r} for {result.student}: {check.reason}", style="bold red")
            if check.internal_detail:
                show(err, check.internal_detail, multiline=True)
    return found


def _write_gradescope(results: Sequence[SubmissionResult], out: Path | None, con: Console) -> None:
    from graders.reports.gradescope import results_text, write_results_json

    if len(results) == 1 and (out is None or not out.is_dir()):
        if out is None:
            sys.stdout.write(results_text(results[0]))
        else:
            show(con, f"wrote {write_results_json(results[0], out)}")
        return
    from graders.reports.files import student_folder_name

    folder = out if out is not None else Path("results")
    for result in results:
        path = write_results_json(
            result, folder / student_folder_name(result.student) / result.stem / "results.json")
        show(con, f"wrote {path}")


def _to_gradebook(args: argparse.Namespace, scores: dict, con: Console, err: Console) -> bool:
    from graders.nbgrader_course import GradebookError, course_of, write_scores

    course = course_of(args.to_gradebook, args.paths)
    try:
        written = write_scores(course, scores)
    except (GradebookError, ImportError) as exc:
        show(err, f"pallas-lab grade: {exc}")
        return False
    show(con, f"wrote {written} task score(s) into the nbgrader gradebook of {course}")
    return True


def _batch(args: argparse.Namespace, found: Discovery, con: Console, err: Console) -> int:
    from graders.batch import GRADEBOOK, run_batch, task_scores_from_results

    out = args.out if args.out is not None else Path("results")
    graded, skipped, errors = run_batch(found.submissions, out=out, jobs=args.jobs,
                                        timeout=args.timeout, err=err, budget=args.budget)
    show(con, f"graded {graded} student(s), {skipped} already had results; "
              f"wrote {out / GRADEBOOK}")
    for problem in found.problems:
        show(err, f"skipped: {problem}")
    for error in errors:
        show(err, f"internal error while grading {error}", multiline=True)
    if args.to_gradebook is not None and not _to_gradebook(
            args, task_scores_from_results(out), con, err):
        return EXIT_USAGE
    return EXIT_INTERNAL if errors else EXIT_OK


def _say_isolation(err: Console) -> None:
    """One line on stderr when workers get less than the full sandbox (namespaces and a
    cgroup for the process tree): the TA must know what a submission can do here."""
    from graders.worker import sandbox

    try:
        level = sandbox.choose_level()
        warning = sandbox.describe(level, sandbox.choose_tree_level(level))[1]
    except (RuntimeError, ValueError):
        return  # a forced level that is not available: every submission reports it
    if warning:
        err.print(warning, markup=False, highlight=False, style="yellow", soft_wrap=True)


def _grade(args: argparse.Namespace, con: Console, err: Console) -> int:
    found = discover(args.paths, assignment=args.assignment)
    if found.ambiguities:  # grading would drop or merge students without a word
        for ambiguity in found.ambiguities:
            show(err, f"pallas-lab grade: {ambiguity}")
        return EXIT_USAGE
    if not found.submissions:
        for problem in found.problems:
            show(err, f"pallas-lab grade: {problem}")
        show(err, "pallas-lab grade: nothing to grade")
        return EXIT_USAGE
    if any(not Path(p).exists() for p in args.paths):
        for problem in found.problems:
            show(err, f"pallas-lab grade: {problem}")
        return EXIT_USAGE
    _say_isolation(err)
    if args.jobs is not None:
        return _batch(args, found, con, err)
    results, failed = _grade_all(found.submissions, args.timeout, err, args.budget)
    if args.to_gradebook is not None:
        from graders.nbgrader_course import scores_of_results

        if not _to_gradebook(args, scores_of_results(results), con, err):
            return EXIT_USAGE
    if args.format == "table":
        from graders.reports.table import print_report

        print_report(results, con, problems=found.problems, feedback=args.feedback)
        if args.out is not None:
            from graders.reports.files import atomic_write_text

            text = Console(record=True, width=120, file=io.StringIO())
            print_report(results, text, problems=found.problems, feedback=args.feedback)
            atomic_write_text(args.out, text.export_text())
    elif args.format == "gradescope":
        _write_gradescope(results, args.out, err if args.out is None else con)
        for problem in found.problems:
            show(err, f"skipped: {problem}")
    else:
        from graders.reports.gradebook_csv import write_gradebook

        path = write_gradebook(results, args.out or Path("gradebook.csv"))
        show(con, f"wrote {path} ({len(results)} submission(s))")
        for problem in found.problems:
            show(err, f"skipped: {problem}")
    internal = _report_internal(results, err)
    return EXIT_INTERNAL if failed or internal else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pallas-lab`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "release":
        from graders import release

        return int(release.main(argv[1:]) or 0)
    if argv and argv[0] == "nbgrader":
        from graders import nbgrader_course

        return int(nbgrader_course.main(argv[1:]) or 0)
    if argv and argv[0] == "gradescope":
        from graders import autograder

        return int(autograder.main(argv[1:]) or 0)
    if argv and argv[0] == "profile":
        from graders import kernel_profile

        return int(kernel_profile.main(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    con = Console()
    err = Console(stderr=True)
    if args.command == "grade":
        return _grade(args, con, err)
    from graders.student.cli import run_check, run_status

    if args.command == "status":
        return run_status(args, con)
    return run_check(args, con, err)


if __name__ == "__main__":
    sys.exit(main())
