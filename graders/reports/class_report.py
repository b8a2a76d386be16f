"""The class report of a batch: what the class scored and what it got wrong.

``pallas-lab grade CLASS --jobs N --report`` writes, into the results folder:

* ``class_report.txt``: per assignment and task, how many students were graded,
  how many had no submission, the mean, median, standard deviation, minimum and
  maximum of the task's points, how many never started it; then a task x
  mistake table: for each "looks like" diagnosis the checks verified, how many
  students' submissions showed it. The diagnoses come from the grader's own
  record (``CheckResult.diagnosis``, results.json's ``extra_data.pallas_lab``
  ``checks[].diagnosis``), never from the feedback's text: a student's exception
  message may hold a line "  looks like: ..." of its own;
* ``class_report_<aN>.png`` (with matplotlib, the ``report`` extra): a score
  histogram per task and the task x mistake counts as a horizontal bar chart.

The numbers come only from the results, never from running anything again.
"""

from __future__ import annotations

import statistics
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from graders.checking.feedback import format_points
from graders.course.catalog import ASSIGNMENTS, Assignment
from graders.grading.result import SubmissionResult
from graders.reports.files import atomic_write_text
from graders.safety.safe_text import terminal_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The report's text file in a batch's results folder.
REPORT_FILE = "class_report.txt"

#: The report's first line: its points are the checks' (what the class got right), not the
#: gradebook's final scores (late penalties and adjustments are about a student, not a task).
SCORE_BASIS = ("Task points as graded by the checks, before late penalties and adjustments "
               "(the gradebook's final scores include those).")

#: Characters per line of a diagnosis in the report's text table (a longer one goes on,
#: whole, on the lines below, indented under it).
MISTAKE_COLUMN = 70
#: A chart's mistake label: characters per line and lines (a diagnosis is a sentence or
#: two; longer ones end in "…").
LABEL_CHARS, LABEL_LINES = 60, 4


@dataclass
class TaskStats:
    """One task over a class: ``points`` (one per graded student), ``max_points``,
    ``missing`` (students without a submission of the assignment), ``not_started`` and
    ``mistakes`` (diagnosis -> number of students for whom a check verified it)."""

    task: str
    title: str
    max_points: float
    points: list[float] = field(default_factory=list)
    missing: int = 0
    not_started: int = 0
    mistakes: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, float]:
        """mean, median, stdev (population; 0 for one student), min and max of ``points``
        (all 0 when nobody was graded)."""
        if not self.points:
            return dict.fromkeys(("mean", "median", "stdev", "min", "max"), 0.0)
        return {"mean": statistics.fmean(self.points), "median": statistics.median(self.points),
                "stdev": statistics.pstdev(self.points), "min": min(self.points),
                "max": max(self.points)}


def diagnosis_key(diagnosis: str) -> str:
    """A verified diagnosis (``CheckResult.diagnosis``) as the report counts it: without
    the lecture section it may name ("... (lecture §2.2)"); "" for none."""
    return diagnosis.split(" (lecture §", 1)[0].strip()


def class_stats(results: Sequence[SubmissionResult], students: Iterable[str] = ()
                ) -> dict[str, list[TaskStats]]:
    """Per assignment id (those with at least one result), its graded tasks' statistics.
    ``missing`` counts the students of ``results`` and ``students`` (e.g. the roster's)
    without a result for that assignment."""
    students = {r.student for r in results} | set(students)
    by_assignment: dict[str, list[SubmissionResult]] = defaultdict(list)
    for result in results:
        by_assignment[result.assignment].append(result)
    stats: dict[str, list[TaskStats]] = {}
    for aid in [a for a in ASSIGNMENTS if a in by_assignment]:
        info: Assignment = ASSIGNMENTS[aid]
        graded = by_assignment[aid]
        missing = len(students - {r.student for r in graded})
        rows = []
        for task in info.graded_tasks:
            row = TaskStats(task.id, task.title, task.points, missing=missing)
            for result in graded:
                rollup = next((t for t in result.tasks() if t.task == task.id), None)
                if rollup is None:
                    continue
                row.points.append(rollup.points)
                row.not_started += rollup.status == "not started"
                # From the grader's own record of what it verified, never from the
                # feedback's text, which quotes what the student's code raised or printed.
                seen = {diagnosis_key(c.diagnosis) for c in result.checks
                        if c.task == task.id and c.status != "passed"}
                row.mistakes.update(seen - {""})
            rows.append(row)
        stats[aid] = rows
    return stats


def _mistake_lines(task: str, count: int, mistake: str) -> list[str]:
    """A row of the mistakes table: task, students, and the whole diagnosis (escaped),
    wrapped at ``MISTAKE_COLUMN`` characters under its first line."""
    text = textwrap.wrap(terminal_text(mistake), MISTAKE_COLUMN, break_on_hyphens=False) or [""]
    lead = f"    {task:<5} {count:>4}  "
    return [lead + text[0], *(" " * len(lead) + line for line in text[1:])]


def report_text(stats: dict[str, list[TaskStats]]) -> str:
    """The text rendering of ``class_stats``: a line saying which points it counts, then a
    statistics table and a mistakes table per assignment."""
    lines = [SCORE_BASIS, ""]
    for aid, rows in stats.items():
        info = ASSIGNMENTS[aid]
        lines.append(f"{aid} {info.title}")
        lines.append(f"  {'task':<5} {'graded':>6} {'missing':>7} {'not started':>11} "
                     f"{'mean':>6} {'median':>6} {'stdev':>6} {'min':>5} {'max':>5}  of")
        for row in rows:
            s = row.summary()
            lines.append(
                f"  {row.task:<5} {len(row.points):>6} {row.missing:>7} {row.not_started:>11} "
                f"{s['mean']:>6.1f} {s['median']:>6.1f} {s['stdev']:>6.1f} "
                f"{format_points(s['min']):>5} {format_points(s['max']):>5}  "
                f"{format_points(row.max_points)}")
        mistakes = [(row.task, m, n) for row in rows for m, n in row.mistakes.most_common()]
        lines.append("  mistakes seen (task, students, diagnosis):")
        if not mistakes:
            lines.append("    none diagnosed")
        for task, mistake, count in mistakes:
            lines.extend(_mistake_lines(task, count, mistake))
        lines.append("")
    return "\n".join(lines)


def mistake_label(task: str, mistake: str) -> str:
    """A bar's label in the chart: "task: diagnosis", escaped, wrapped on lines of
    ``LABEL_CHARS`` characters, at most ``LABEL_LINES`` lines (then "…")."""
    return "\n".join(textwrap.wrap(f"{task}: {terminal_text(mistake)}", LABEL_CHARS,
                                   max_lines=LABEL_LINES, placeholder=" …"))


def class_figure(aid: str, rows: list[TaskStats]) -> Figure:
    """The chart of one assignment: a histogram of points per task, and below them the
    diagnosed mistakes as bars labelled in full (``mistake_label``), the figure as tall
    and wide as its labels need. Needs matplotlib (the ``report`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    mistakes = [(mistake_label(row.task, m), n) for row in rows
                for m, n in row.mistakes.most_common()]
    columns = len(rows)
    label_lines = sum(label.count("\n") + 1 for label, _ in mistakes)
    bars_height = max(2.0, 0.9 + 0.16 * label_lines + 0.08 * len(mistakes))
    width = max(3.2 * columns, 11.0 if mistakes else 0.0)
    figure = plt.figure(figsize=(width, 3.2 + (bars_height if mistakes else 0.0)),
                        layout="constrained")
    grid = figure.add_gridspec(2 if mistakes else 1, columns,
                               height_ratios=[3.2, bars_height] if mistakes else None)
    for i, row in enumerate(rows):
        axes = figure.add_subplot(grid[0, i])
        axes.hist(row.points, bins=10, range=(0, row.max_points), color="tab:blue")
        axes.set_title(f"Task {row.task}", fontsize=9)
        axes.set_xlabel(f"points (of {format_points(row.max_points)})", fontsize=8)
        axes.set_ylabel("students", fontsize=8)
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    if mistakes:
        axes = figure.add_subplot(grid[1, :])
        labels, counts = zip(*reversed(mistakes), strict=True)
        axes.barh(range(len(counts)), counts, color="tab:red")
        axes.set_yticks(range(len(counts)), labels, fontsize=7)
        axes.set_xlabel("students whose submission shows the mistake", fontsize=8)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_title("mistakes seen (task: diagnosis)", fontsize=9)
    figure.suptitle(f"{aid} {ASSIGNMENTS[aid].title}: {len(rows[0].points)} graded, "
                    f"{rows[0].missing} missing", fontsize=10)
    return figure


def _plot(aid: str, rows: list[TaskStats], path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure = class_figure(aid, rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def write_class_report(results: Sequence[SubmissionResult], folder: Path,
                       students: Iterable[str] = ()) -> list[Path]:
    """Write ``class_report.txt`` and, when matplotlib is installed, one
    ``class_report_<aN>.png`` per assignment into ``folder`` (``students``: everyone who
    should have a result, as in ``class_stats``); returns the paths written. Raises
    ``OSError`` when they cannot be written."""
    stats = class_stats(results, students)
    written = [atomic_write_text(folder / REPORT_FILE, report_text(stats))]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return written
    for aid, rows in stats.items():
        if rows:
            written.append(_plot(aid, rows, folder / f"class_report_{aid}.png"))
    return written
