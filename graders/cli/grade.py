"""``pallas-lab grade``: grade submission files, student folders or a class folder.

::

    pallas-lab grade [PATH ...] [--assignment aN]
                     [--format table|gradescope|csv|canvas|moodle|blackboard]
                     [--out PATH] [--timeout S] [--budget S] [--feedback]
                     [--jobs [N]] [--force] [--student NAME] [--task N.M]
                     [--roster CSV] [--report] [--similarity [T]]
                     [--to-gradebook [COURSE]]

Options are checked before anything is graded (``graders.cli.grade_options``); with
``--jobs`` grading is a resumable parallel batch (``graders.batch.run``), otherwise the files
are graded one after the other in this process, each in its own worker.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from graders.batch.discovery import DEFAULT_ROOT, Discovery, Submission, discover
from graders.cli.common import (
    DEFAULT_TIMEOUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    SAMPLES_TIMEOUT,
    add_timeout_options,
    positive_float,
)
from graders.cli.config import add_config_option, say_one_line
from graders.cli.course_config import ConfigError, CourseConfig, load_config
from graders.course.catalog import ASSIGNMENTS
from graders.grading.grade import grade_submission
from graders.grading.result import SubmissionResult
from graders.reports.lms_layouts import LMS_FORMATS
from graders.safety.safe_text import show, terminal_text

NAME = "grade"
#: Formats whose ``--out`` is a file even in a batch.
FILE_FORMATS = ("csv", *LMS_FORMATS)
#: Dask workers (Slurm jobs) of ``--scheduler`` / ``--cluster`` without ``--jobs``.
CLUSTER_JOBS = 2

if TYPE_CHECKING:
    from graders.batch.run import BatchOutcome
    from graders.reports.ledger import Ledger, Standing


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add ``grade`` and its options to the ``pallas-lab`` subcommands ``commands``."""
    grade = commands.add_parser(
        NAME, help="grade submission files, student folders or a class folder",
        description="Grade PATHs: a submission file (its name names the assignment), a student "
                    f"folder of such files, or a class folder of student folders. "
                    f"No PATH grades {DEFAULT_ROOT.relative_to(DEFAULT_ROOT.parents[1])}/.",
    )
    grade.add_argument("paths", nargs="*", metavar="PATH", type=Path)
    add_timeout_options(grade)
    grade.add_argument(
        "--budget", type=positive_float, default=None, metavar="S",
        help="wall-clock seconds one submission file may take in all; then its remaining "
             "checks are recorded as timeout (default: 3 x --timeout per check)",
    )
    grade.add_argument(
        "--format", choices=("table", "gradescope", "csv", *LMS_FORMATS), default="table",
        help="table: terminal summary (default); gradescope: results.json; csv: gradebook; "
             "canvas, moodle, blackboard: that LMS's gradebook-import CSV, keyed by the "
             "--roster (an export of that LMS), final scores",
    )
    grade.add_argument(
        "--out", type=Path, default=None,
        help="gradescope: the results.json file (one submission) or a folder (several; "
             "default results/); csv: the gradebook file (default gradebook.csv); "
             "canvas, moodle, blackboard: the import file (default <format>.csv; those "
             "left out go to <its name>_unmatched.csv beside it); "
             "table: also write the report as text here (with --jobs: the results folder)",
    )
    grade.add_argument(
        "--results", type=Path, default=None, metavar="DIR",
        help="csv, canvas, moodle, blackboard with --jobs: the batch's results folder (default: "
             "the course config's out, else <the --out file's name>_results/ beside it); a "
             "folder graded before is read back, so exporting it grades only what changed",
    )
    grade.add_argument(
        "--feedback", action="store_true", help="table: print the feedback of failed checks"
    )
    grade.add_argument(
        "--jobs", type=int, nargs="?", const=os.cpu_count() or 1, default=None, metavar="N",
        help="grade as a resumable batch, N >= 1 submission files at once (default: the CPU "
             "count): results.json and feedback files per submission and gradebook.csv under --out "
             "(default results/; with --format csv, --out is the gradebook and the results "
             "go to --results, else <its name>_results/ beside it; with an LMS format, --out "
             "is the import file and the results and gradebook.csv go to --results, else "
             "<its name>_results/)",
    )
    grade.add_argument(
        "--scheduler", default=None, metavar="ADDRESS",
        help="batch on a running Dask cluster: send each file to the workers of the Dask "
             "scheduler at ADDRESS (tcp://host:8786 or tls://...); the workers must see the "
             "class and --out folders at the same paths and have pallas-lab installed "
             "(needs the cluster extra)",
    )
    grade.add_argument(
        "--cluster", choices=("slurm",), default=None,
        help="batch on a Dask cluster started here: slurm (dask-jobqueue, configured by its "
             "own config file; --jobs N Slurm jobs of one worker each)",
    )
    grade.add_argument(
        "--force", action="store_true",
        help="batch: grade every student again, even those whose results are current",
    )
    grade.add_argument(
        "--student", action="append", default=None, metavar="NAME",
        help="grade only this student (their folder's name; repeatable); in a batch they are "
             "graded again and the others keep their results",
    )
    grade.add_argument(
        "--task", action="append", default=None, metavar="N.M",
        help="run only this task's checks (repeatable); in a batch its checks are re-run and "
             "merged into each student's current results",
    )
    grade.add_argument(
        "--roster", type=Path, default=None, metavar="CSV",
        help="the class list (plain CSV, or a Canvas/Moodle/Blackboard export): every student "
             "on it gets a row, missing submissions included",
    )
    grade.add_argument(
        "--report", action="store_true",
        help="batch: also write the class report (per-task statistics, histograms, the "
             "mistakes seen) into the results folder",
    )
    grade.add_argument(
        "--similarity", type=float, nargs="?", const=0.5, default=None, metavar="THRESHOLD",
        help="batch: also compare the submissions of each assignment with one another "
             "(copydetect; handout text excluded) and list pairs above THRESHOLD "
             "(default 0.5)",
    )
    late = grade.add_argument_group(
        "late work and adjustments (applied when the gradebook and feedback are written; "
        "no regrading; defaults from pallas-lab.toml: pallas-lab config)")
    late.add_argument(
        "--due", action="append", default=None, metavar="[aN=]WHEN",
        help="due date, e.g. a4='2026-03-01 23:59' or a4=2026-03-01T23:59+01:00 (repeatable; "
             "without aN=: every assignment graded; without a zone: the config's timezone, "
             "else this machine's)")
    late.add_argument("--late-policy", choices=("none", "zero", "percent"), default=None,
                      help="none: lateness only recorded; zero: a late submission scores 0; "
                           "percent: --late-rate percent per started --late-per")
    late.add_argument("--late-per", choices=("day", "hour"), default=None,
                      help="the period the percent policy counts (started periods count)")
    late.add_argument("--late-rate", type=float, default=None, metavar="PERCENT",
                      help="percent taken per period (default 10)")
    late.add_argument("--late-cap", type=float, default=None, metavar="PERCENT",
                      help="the most percent taken in all (default 100)")
    late.add_argument("--extensions", type=Path, default=None, metavar="CSV",
                      help="per-student extensions: student,assignment,due|days|hours,reason")
    late.add_argument("--adjustments", type=Path, default=None, metavar="CSV",
                      help="manual adjustments and regrade outcomes: "
                           "student,item,points|delta,reason,who,regrade")
    add_config_option(grade)
    grade.add_argument(
        "--to-gradebook", nargs="?", type=Path, const=Path(), default=None, metavar="COURSE",
        help="also write each task's score into the nbgrader gradebook of COURSE (default: the "
             "nbgrader course the PATH belongs to)",
    )


def apply_config(args: argparse.Namespace) -> CourseConfig:
    """Load the course config (``--config``, else ./pallas-lab.toml or pyproject's
    ``[tool.pallas-lab]``) and fill each option ``args`` left unset from it (a flag always
    wins); parses ``--due`` into ``args.due_dates`` (assignment id, or ``"*"`` -> aware
    time). Raises ``ConfigError`` (one line) for a config or ``--due`` that cannot be
    used."""
    from graders.reports.late import LateError, course_zone, parse_due_flag

    config = load_config(explicit=args.config)
    for key in ("timeout", "budget", "jobs", "roster", "extensions", "adjustments"):
        if key in ("jobs", "roster") and not _names_a_class(args.paths):
            continue  # the config's batch and roster are a class's: a file alone is not
        if getattr(args, key) is None and key in config.values:
            setattr(args, key, config.values[key])
    if args.jobs is None and (args.scheduler or args.cluster):  # a cluster is a batch
        args.jobs = CLUSTER_JOBS
    if "out" in config.values and args.jobs is not None:  # the config's out is a batch's folder
        if args.format in FILE_FORMATS and args.results is None:
            args.results = config.values["out"]
        elif args.format not in FILE_FORMATS and args.out is None:
            args.out = config.values["out"]
    try:
        zone = course_zone(config.values.get("timezone"))
        args.due_dates = {}
        for spec in args.due or ():
            assignment, when = parse_due_flag(spec, zone)
            args.due_dates[assignment or "*"] = when
    except LateError as exc:
        raise ConfigError(str(exc)) from None
    return config


def _names_a_class(paths: Sequence[Path]) -> bool:
    """Whether the PATHs name a class to grade as a batch: some PATH is a folder (a class
    folder, an LMS download), not only single files."""
    return any(Path(path).is_dir() for path in paths)


def run(args: argparse.Namespace, con: Console, err: Console) -> int:
    """Run ``pallas-lab grade`` with the parsed ``args``; returns the exit status."""
    try:
        args.course_config = apply_config(args)
    except ConfigError as exc:
        say_one_line(err, f"pallas-lab grade: {exc}; nothing was graded")
        return EXIT_USAGE
    if args.timeout is None:
        args.timeout = SAMPLES_TIMEOUT if not args.paths else DEFAULT_TIMEOUT
    # Third-party libraries' warnings (nbformat, nbgrader, SQLAlchemy) are noise to a TA:
    # everything the TA needs is in the report, and the student's code runs elsewhere.
    from graders.batch.run import BatchInterrupted

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _grade(args, con, err)
        except BatchInterrupted as stopped:
            if args.force or args.student or args.task:
                rest = ("(the gradebook notes the files not regraded yet): run the same "
                        "command again to regrade the rest; the files regraded keep their "
                        "new results")
            else:
                rest = ("(the gradebook notes the files not graded yet): run the same "
                        "command again to grade the rest")
            show(err, f"pallas-lab grade: {stopped} finished; every file graded before "
                      f"the interrupt keeps its result {rest}")
            return 128 + stopped.signum  # 130 after Ctrl-C, 143 after SIGTERM
        except KeyboardInterrupt:
            show(err, "pallas-lab grade: interrupted; nothing more was graded or written: "
                      "run the same command again to grade what is left")
            return EXIT_INTERRUPTED


def _grade_all(
    submissions: Sequence[Submission], timeout: float, err: Console,
    budget: float | None = None, tasks: Sequence[str] | None = None,
) -> tuple[list[SubmissionResult], bool]:
    """Grade ``submissions`` one after the other, with N/M and the time left on ``err``."""
    from graders.reports.progress import GradingProgress
    from graders.worker import zygote

    results: list[SubmissionResult] = []
    failed = False
    # Several files: their workers fork from one zygote (one interpreter start, not one
    # per file and restart); a single file gains nothing from it.
    serving = zygote.serving() if len(submissions) > 1 else contextlib.nullcontext()
    with serving, GradingProgress(err, len(submissions), transient=True) as progress:
        for sub in submissions:
            progress.now(f"grading {sub.student}/{sub.file.name} as {sub.assignment.id}")
            try:
                results.append(
                    grade_submission(sub, timeout=timeout, budget=budget, tasks=tasks)
                )
            except Exception as exc:  # noqa: BLE001 - the grader's bug: report, go on
                failed = True
                show(err, f"internal error while grading {sub.file}: "
                          f"{type(exc).__name__}: {exc}", style="bold red")
                show(err, traceback.format_exc(), multiline=True)
            progress.advance()
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
    from graders.batch.store import result_path, write_result
    from graders.reports.feedback_files import write_feedback_files

    folder = out if out is not None else Path("results")
    for result in results:
        path = write_result(result, result_path(folder, result.student, result.stem))
        write_feedback_files(result, path.parent)
        show(con, f"wrote {path}")


def _to_gradebook(args: argparse.Namespace, scores: dict, con: Console, err: Console) -> bool:
    from graders.integrations.nbgrader.course import GradebookError, course_of, write_scores

    course = course_of(args.to_gradebook, args.paths)
    try:
        written = write_scores(course, scores)
    except (GradebookError, ImportError) as exc:
        show(err, f"pallas-lab grade: {exc}")
        return False
    show(con, f"wrote {written} task score(s) into the nbgrader gradebook of {course}")
    return True


def _batch_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """(the results folder, the gradebook file) of a batch (``--jobs``)."""
    from graders.batch.store import GRADEBOOK

    if args.format == "csv" and args.out is not None:
        return args.results or args.out.parent / f"{args.out.stem}_results", args.out
    if args.format in LMS_FORMATS:
        target = _lms_path(args)
        results = args.results or target.parent / f"{target.stem}_results"
        return results, results / GRADEBOOK
    if args.results is not None:
        return args.results, args.results / GRADEBOOK
    out = args.out if args.out is not None else Path("results")
    return out, out / GRADEBOOK


def _lms_path(args: argparse.Namespace) -> Path:
    """The LMS import file of ``--format canvas|moodle|blackboard``: ``--out``, else
    ``<format>.csv``."""
    return args.out if args.out is not None else Path(f"{args.format}.csv")


def _write_lms(args: argparse.Namespace, results: Sequence[SubmissionResult],
               con: Console, err: Console, out: Path | None = None) -> None:
    """Write the LMS import file and its side file (``graders.reports.lms_export``) from
    ``results`` (those of the batch folder ``out``, when given) and the run's roster,
    ledger and match; one line on what was written, one warning line per student or folder
    left out of it."""
    from graders.batch.store import result_path, stored_time_at
    from graders.reports.lms_export import write_lms_import
    from graders.reports.roster import match_entries

    # the submission times recorded with the results: a classmate this run did not find
    # keeps their late penalty, as in gradebook.csv
    stored = {} if out is None else {
        (r.student, r.assignment): stored_time_at(result_path(out, r.student, r.stem))
        for r in results}

    match = args.roster_match
    known = {*match.matched, *match.strangers, *match.unclear}
    if any(r.student not in known for r in results):
        # students of the results folder this run did not find (a one-folder regrade):
        # matched with the run's, by the one rule, so each keeps their row
        match = match_entries(args.roster_file.entries,
                              sorted(known | {r.student for r in results}))
    done = write_lms_import(args.format, _lms_path(args), args.roster_file,
                            match, results, getattr(args, "ledger", None), stored)
    show(con, f"wrote {done.path} for {args.format.capitalize()}, keyed by {done.key!r} "
              f"(the column to match students by when uploading): {done.students} roster "
              f"student(s), {done.graded} with a final score, {done.empty} without a "
              f"submission (empty cells); {len(done.warnings)} left out or unclear, "
              f"listed in {done.side}")
    for line in done.warnings:
        show(err, f"pallas-lab grade: {line}")


def _print_results(args: argparse.Namespace, results: Sequence[SubmissionResult],
                   problems: Sequence[str], con: Console) -> None:
    from graders.reports.table import print_report

    print_report(results, con, problems=problems, feedback=args.feedback,
                 standings=_standings(getattr(args, "ledger", None), results))


def _dask_client(args: argparse.Namespace, stack: contextlib.ExitStack, err: Console) -> Any:
    """The Dask client of ``--scheduler`` / ``--cluster`` (closed with ``stack``), None
    without them, False (after saying why on ``err``) when it cannot be had."""
    if not (args.scheduler or args.cluster):
        return None
    try:
        from graders.batch.cluster import open_client

        return open_client(stack, scheduler=args.scheduler, cluster=args.cluster,
                           jobs=args.jobs)
    except ImportError as exc:
        problem = (f"--scheduler/--cluster need dask.distributed (and dask-jobqueue for "
                   f"slurm): pip install -e '.[cluster]' ({exc})")
    except (OSError, TimeoutError, ValueError) as exc:
        where = args.scheduler or args.cluster
        problem = f"cannot reach the Dask cluster {where}: {type(exc).__name__}: {exc}"
    say_one_line(err, f"pallas-lab grade: {problem}; nothing was graded")
    return False


def _batch(args: argparse.Namespace, found: Discovery, notes: dict[str, list[str]],
           con: Console, err: Console, *, keep: bool = True) -> int:
    from graders.batch.lock import BatchBusy
    from graders.batch.run import run_batch
    from graders.batch.store import read_results, task_scores_from_results

    out, gradebook = _batch_paths(args)
    selected = _filtered(args, found)
    book_notes = {**_classmates_notes(args, out, found), **notes}
    with contextlib.ExitStack() as stack:
        client = _dask_client(args, stack, err)
        if client is False:
            return EXIT_USAGE
        try:
            outcome = run_batch(selected, out=out, jobs=args.jobs, timeout=args.timeout,
                                err=err, budget=args.budget,
                                force=args.force or bool(args.student), tasks=args.task,
                                gradebook=gradebook, notes=book_notes,
                                ledger=args.ledger, client=client)
        except BatchBusy as busy:
            say_one_line(err, f"pallas-lab grade: {busy}; nothing was graded")
            return EXIT_USAGE
    shown = {s.student for s in selected}
    everyone = {s.student for s in found.submissions}
    class_results = [r for r in read_results(out) if r.student in everyone]
    results = [r for r in class_results if r.student in shown]
    from graders.batch.store import refresh_feedback
    from graders.reports.ledger import Ledger

    # also without a ledger: feedback written under an earlier policy loses its section
    refresh_feedback(out, args.ledger or Ledger())
    if args.format != "gradescope":
        _print_results(args, results, found.problems, con)
    if keep:
        show(con, f"{_outcome_line(args, outcome, len(everyone - shown))}; wrote {gradebook}")
    if outcome.unfinished:
        show(err, f"note: a stopped regrade (--force, --task or --student) has "
                  f"{outcome.unfinished} file(s) it has not regraded yet, marked in the "
                  "gradebook with their earlier results: run that command again to finish it")
    if args.format == "gradescope":
        for problem in found.problems:
            show(err, f"skipped: {problem}")
    for line in _note_lines(notes):
        show(err, line)
    if args.format in LMS_FORMATS:
        # every student of the results folder, as the gradebook is rebuilt from them all:
        # a one-folder regrade must not blank the classmates' cells
        _write_lms(args, read_results(out), con, err, out)
    code = _extras(args, out, class_results, found.submissions, set(notes), con, err)
    if outcome.graded:
        _say_stale_reports(args, out, err)
    for error in outcome.errors:
        show(err, f"internal error while grading {error}", multiline=True)
    if args.to_gradebook is not None and not _to_gradebook(
            args, task_scores_from_results(out), con, err):
        return EXIT_USAGE
    return EXIT_INTERNAL if outcome.errors else code


def _outcome_line(args: argparse.Namespace, outcome: BatchOutcome, unselected: int) -> str:
    """What a batch did, in students: "graded 2 student(s), 9 already had results"; with
    ``--student`` the students left out of the selection are counted as keeping their
    results (they were never pending), not as "0 already had results"; with ``--task``
    it says that only those tasks' checks ran again, merged into the results kept."""
    if outcome.resumed and outcome.skipped:
        return (f"resumed the stopped regrade: graded {outcome.graded} student(s), "
                f"{outcome.skipped} regraded before the stop")
    if not (args.student or args.task):
        return f"graded {outcome.graded} student(s), {outcome.skipped} already had results"
    others = unselected + outcome.skipped
    if args.task:
        # Only those tasks' checks ran again, merged into each current result: nobody lost
        # the rest of their results (a file changed since its result is graded in full).
        who = f" of --student {', '.join(args.student)}" if args.student else ""
        line = (f"re-ran the checks of --task {', '.join(args.task)} for {outcome.graded} "
                f"student(s){who}, merged into their results")
        return line + (f"; {others} other student(s) untouched" if others else "")
    return (f"graded {outcome.graded} student(s) selected by --student "
            f"{', '.join(args.student)}; {others} other student(s) keep their results")


def _extras(args: argparse.Namespace, out: Path, results: Sequence[SubmissionResult],
            submissions: Sequence[Submission], students: set[str], con: Console,
            err: Console) -> int:
    """The class report (over ``results``: the whole class's, whoever was graded now) and
    the similarity check (over ``submissions``) of a batch, when asked for."""
    if args.report:
        from graders.reports.class_report import write_class_report

        for path in write_class_report(results, out, students):
            show(con, f"wrote {path}")
    if args.similarity is not None:
        from graders.reports.similarity_files import similarity_report

        text, paths = similarity_report(submissions, out, threshold=args.similarity)
        con.print(text, markup=False, highlight=False)
        for path in paths:
            show(con, f"wrote {path}")
    return EXIT_OK


def _classmates_notes(args: argparse.Namespace, out: Path,
                      found: Discovery) -> dict[str, list[str]]:
    """The notes the last batch into ``out`` recorded (``graders.batch.store.read_notes``)
    of the students this run did not find (a one-folder regrade into the class's folder):
    a batch rebuilds the gradebook from every result, and a classmate's "misnamed: hw.py"
    or "not graded yet: FILE" would otherwise be lost (a TA's walk). Not printed: they are
    not this run's news. Read once per run (kept in ``args.classmates_notes``: the roster
    match and the batch both use them)."""
    from graders.batch.store import read_notes

    if getattr(args, "classmates_notes", None) is None:
        here = {s.student for s in found.submissions} | set(found.notes)
        args.classmates_notes = {} if not out.is_dir() else {
            student: lines for student, lines in read_notes(out).items()
            if student not in here}
    return args.classmates_notes


def _say_stale_reports(args: argparse.Namespace, out: Path, err: Console) -> None:
    """A note for each class-wide file an earlier batch wrote into ``out`` that this one,
    having graded something, did not bring up to date (no ``--report``, ``--similarity``):
    read later, it would describe the class as it was."""
    from graders.reports.class_report import REPORT_FILE
    from graders.reports.similarity_files import SIMILARITY_FILE

    for asked, name, flag in ((args.report, REPORT_FILE, "--report"),
                              (args.similarity is not None, SIMILARITY_FILE, "--similarity")):
        if not asked and (out / name).is_file():
            say_one_line(err, f"note: {out / name} is from an earlier run and does not "
                              f"count the files graded now: add {flag} to bring it up to date")


def _note_lines(notes: dict[str, list[str]]) -> list[str]:
    return [f"{student}: {'; '.join(lines)}" for student, lines in sorted(notes.items())
            if lines]


def _check_options(args: argparse.Namespace, found: Discovery) -> str | None:
    """One line saying why the options cannot work (None when they can), before grading."""
    from graders.batch.discovery import student_folder_of
    from graders.cli.grade_options import (
        gradebook_problem,
        jobs_problem,
        out_kind,
        student_folder_problem,
        writable_problem,
    )

    problem = jobs_problem(args.jobs)
    if problem:
        return problem
    if args.scheduler and args.cluster:
        return "--scheduler and --cluster both name a cluster: give one"
    batch = args.jobs is not None
    if args.results is not None and not batch:
        return ("--results names a batch's results folder: add --jobs N (a folder graded "
                "before is read back, not regraded)")
    if args.results is not None and args.format not in FILE_FORMATS:
        return (f"--results is for --format csv or an LMS format; with --format "
                f"{args.format} the batch's results folder is --out")
    if not batch and (args.force or args.report or args.similarity is not None):
        used = [o for o, on in (("--force", args.force), ("--report", args.report),
                                ("--similarity", args.similarity is not None)) if on]
        return f"{', '.join(used)} work(s) with a batch: add --jobs N"
    if args.similarity is not None and not 0 < args.similarity <= 1:
        return f"--similarity's threshold is a fraction in (0, 1], not {args.similarity:g}"
    if args.similarity is not None and importlib.util.find_spec("copydetect") is None:
        return "--similarity needs copydetect: pip install -e '.[report]'"
    if args.format in LMS_FORMATS and args.roster is None:
        return (f"--format {args.format} needs --roster: the class list exported from "
                f"{args.format.capitalize()}, whose identifiers key the import file")
    if args.task and not batch and args.format != "table":
        return (f"--task with --format {args.format} needs --jobs: a batch merges the task's "
                "checks into each student's results, a single run would write partial scores")
    if args.task:
        known = {t.id for a in ASSIGNMENTS.values() for t in a.tasks}
        unknown = [t for t in args.task if t not in known]
        if unknown:
            return f"--task {unknown[0]}: no such task (tasks look like 1.2, 4.3)"
    if args.student:
        students = {s.student for s in found.submissions}
        unknown = [n for n in args.student if n not in students]
        if unknown:
            return (f"--student {terminal_text(unknown[0])}: no submission of that student "
                    "found under the PATHs")
    if batch:
        # a batch reads its results folder back (resume), so no student may write there
        students = {(s.folder or student_folder_of(s.file)) for s in found.submissions}
        out, gradebook = _batch_paths(args)
        problem = (student_folder_problem(out, found.folders, students)
                   or student_folder_problem(gradebook, found.folders, students)
                   or writable_problem(out, "folder") or writable_problem(gradebook, "file"))
        if problem is None and args.format in LMS_FORMATS:
            target = _lms_path(args)
            problem = (student_folder_problem(target, found.folders, students)
                       or writable_problem(target, "file"))
        if problem is None and gradebook.parent.resolve() != out.resolve() and (
                _holds_results(gradebook.parent)):
            # red team: `--format csv --out r4/gradebook.csv` replaced batch r4's gradebook
            problem = (f"--out {gradebook} is in {gradebook.parent}, the results folder of "
                       "another batch, whose gradebook it would replace: write it elsewhere")
    elif args.out is not None:
        kind = out_kind(args.format, batch, len(found.submissions), args.out)
        problem = writable_problem(args.out, kind)
    if problem:
        return problem
    if args.to_gradebook is not None:
        from graders.integrations.nbgrader.course import course_of

        course = course_of(args.to_gradebook, args.paths)
        return gradebook_problem(course, {s.stem for s in found.submissions})
    return None


def _holds_results(folder: Path) -> bool:
    """Whether ``folder`` is a batch's results folder (a student's results.json in it, or
    the notes a batch records)."""
    from graders.batch.store import NOTES_FILE

    return (folder / NOTES_FILE).is_file() or next(folder.glob("*/*/results.json"),
                                                    None) is not None


def _filtered(args: argparse.Namespace, found: Discovery) -> list[Submission]:
    """The submissions this run grades: of ``--student``s, of assignments with a
    ``--task``."""
    subs = found.submissions
    if args.student:
        subs = [s for s in subs if s.student in args.student]
    if args.task:
        subs = [s for s in subs
                if any(t.id in args.task for t in s.assignment.tasks)]
    return subs


def _roster_notes(args: argparse.Namespace, found: Discovery) -> dict[str, list[str]]:
    """Discovery's notes, plus the roster's (``graders.reports.roster.match_entries``): a row
    for each student on it without a submission, and a note on submitters who are not on
    it or who could not be told apart from a classmate. Keeps the roster and the match in
    ``args.roster_file`` and ``args.roster_match`` (None without ``--roster``). Raises
    ``RosterError``."""
    notes = {k: list(v) for k, v in found.notes.items()}
    args.roster_file = args.roster_match = None
    if args.roster is None:
        return notes
    from graders.reports.roster import NO_SUBMISSION, match_entries, read_roster_file

    roster = read_roster_file(args.roster)
    students = {s.student for s in found.submissions} | set(found.notes)
    if args.jobs is not None:
        # A batch into a class's results folder (a one-folder regrade): the classmates
        # with results there are not "missing" (a TA's walk: each got that note).
        from graders.batch.store import read_results

        out = _batch_paths(args)[0]
        if out.is_dir():  # and those a stopped batch had not graded yet, misnamed files'
            students |= {r.student for r in read_results(out)}
            students |= {student for student, lines in _classmates_notes(args, out, found).items()
                         if lines != [NO_SUBMISSION]}  # the roster's own: worked out again
    match = match_entries(roster.entries, sorted(students))
    args.roster_file, args.roster_match = roster, match
    for entry in match.missing:
        notes.setdefault(entry.name, []).append(NO_SUBMISSION)
    for entry, why in match.contested.items():
        notes.setdefault(entry.name, []).append(f"missing: {why}, so none is given this row")
    for student in match.strangers:
        notes.setdefault(student, []).append("not on the roster")
    for student, why in match.unclear.items():
        notes.setdefault(student, []).append(f"not matched to the roster: {why}")
    return notes


def _lms_roster_problem(args: argparse.Namespace) -> str | None:
    """Why the roster cannot key ``--format``'s LMS import file (None when it can, or when
    the format is no LMS's): it has none of that LMS's key columns."""
    if args.format not in LMS_FORMATS or args.roster_file is None:
        return None
    from graders.reports.lms_layouts import LAYOUTS, missing_key_problem

    return missing_key_problem(LAYOUTS[args.format], args.roster_file, args.roster)


def _ledger(args: argparse.Namespace, found: Discovery, notes: dict[str, list[str]]
            ) -> Ledger | None:
    """The run's lateness and adjustments (``graders.reports.ledger``) from the flags and
    the course config, or None when neither gives a due date, extensions or adjustments.
    Raises ``LateError`` for a policy, extensions or adjustments file that cannot be used
    at all; a bad row only costs that row (``Ledger.problems``)."""
    from dataclasses import replace

    from graders.reports.adjustments import read_adjustments
    from graders.reports.late import course_zone, read_extensions
    from graders.reports.ledger import build_ledger

    config: CourseConfig = args.course_config
    graded = {s.assignment.id for s in found.submissions}
    due = dict(config.due)
    for assignment, when in args.due_dates.items():
        for target in (sorted(graded) if assignment == "*" else [assignment]):
            due[target] = when
    if not (due or args.extensions or args.adjustments):
        return None
    changes = {field: value for field, value in (
        ("kind", args.late_policy), ("per", args.late_per), ("rate", args.late_rate),
        ("cap", args.late_cap)) if value is not None}
    default = replace(config.late, **changes).check()
    policies = {a: replace(p, **changes).check() for a, p in config.policies.items()}
    zone = course_zone(config.values.get("timezone"))
    extensions, problems = (read_extensions(args.extensions, zone)
                            if args.extensions else ([], []))
    adjustments, more = read_adjustments(args.adjustments) if args.adjustments else ([], [])
    students = {s.student for s in found.submissions} | set(notes) | _graded_before(args)
    return build_ledger(found.submissions, students, due=due, policies=policies,
                        default_policy=default, extensions=extensions,
                        adjustments=adjustments, problems=[*problems, *more], zone=zone)


def _graded_before(args: argparse.Namespace) -> set[str]:
    """The students a batch's results folder holds results of (graded by an earlier run):
    their extensions and adjustments apply though this run did not find them."""
    if args.jobs is None:
        return set()
    from graders.batch.store import student_of_result

    out, _ = _batch_paths(args)
    return {student_of_result(p) for p in out.glob("*/*/results.json")} if out.is_dir() \
        else set()


def _standings(ledger: Ledger | None, results: Sequence[SubmissionResult]
               ) -> dict[tuple[str, str], Standing]:
    """(student, assignment id) -> standing of each result the ledger is active for."""
    if ledger is None:
        return {}
    return {(r.student, r.assignment): ledger.standing(
                r.student, r.info, {t.task: t.points for t in r.tasks() if t.graded})
            for r in results if ledger.active(r.assignment)}


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
    problem = _check_options(args, found)
    ledger = None
    if problem is None:
        from graders.reports.late import LateError
        from graders.reports.roster import RosterError

        try:
            notes = _roster_notes(args, found)
            ledger = _ledger(args, found, notes)
            problem = _lms_roster_problem(args)
        except (RosterError, LateError) as exc:
            problem = str(exc)
    if problem is not None:  # one line, however narrow the terminal
        err.print(Text(terminal_text(f"pallas-lab grade: {problem}; nothing was graded")),
                  soft_wrap=True)
        return EXIT_USAGE
    _say_isolation(err)
    args.ledger = ledger
    for line in ledger.problems if ledger is not None else ():
        say_one_line(err, f"pallas-lab grade: {line}")
    if args.jobs is not None:
        return _batch(args, found, notes, con, err)
    if not args.paths and args.out is None and args.format == "table" \
            and args.to_gradebook is None and not args.report and args.similarity is None:
        # The bundled samples (the README's first command): a batch of two graders at a
        # time into a temporary folder, then the same table; nothing is left behind.
        import tempfile

        with tempfile.TemporaryDirectory(prefix="pallas-lab-samples-") as folder:
            args.jobs, args.out = max(1, min(2, os.cpu_count() or 1)), Path(folder)
            return _batch(args, found, notes, con, err, keep=False)
    submissions = _filtered(args, found)
    results, failed = _grade_all(submissions, args.timeout, err, args.budget, args.task)
    code = EXIT_OK
    if args.format == "table":
        _print_results(args, results, found.problems, con)
        for line in _note_lines(notes):
            show(err, line)
        if args.out is not None:
            from graders.reports.files import atomic_write_text
            from graders.reports.table import print_report

            text = Console(record=True, width=120, file=io.StringIO())
            print_report(results, text, problems=found.problems, feedback=args.feedback,
                         standings=_standings(ledger, results))
            atomic_write_text(args.out, text.export_text())
    elif args.format == "gradescope":
        _write_gradescope(results, args.out, err if args.out is None else con)
        for problem in found.problems:
            show(err, f"skipped: {problem}")
    elif args.format in LMS_FORMATS:
        _write_lms(args, results, con, err)
        for problem in found.problems:
            show(err, f"skipped: {problem}")
        for line in _note_lines(notes):
            show(err, line)
        say_one_line(err, "note: every file was graded for this export; with --jobs N and "
                          "--results DIR (a class graded before) it is read back instead")
    else:
        from graders.reports.gradebook_csv import write_gradebook

        path = write_gradebook(results, args.out or Path("gradebook.csv"), notes=notes,
                               ledger=ledger)
        show(con, f"wrote {path} ({len(results)} submission(s))")
        for problem in found.problems:
            show(err, f"skipped: {problem}")
    if args.to_gradebook is not None:
        from graders.integrations.nbgrader.course import scores_of_results

        if not _to_gradebook(args, scores_of_results(results), con, err):
            code = EXIT_USAGE
    internal = _report_internal(results, err)
    return EXIT_INTERNAL if failed or internal else code
