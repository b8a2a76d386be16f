"""``pallas-lab leaderboard RESULTS``: a ranking per performance task.

RESULTS is the folder a batch writes (``<student>/<stem>/results.json``, read with
``graders.batch.store.read_results``) or a CSV gradebook (its ``"<task> predicted ms"``
columns, ``graders.reports.gradebook_csv``). Per performance task the students with a
predicted time are ranked fastest first (equal times share a rank), with the time in
milliseconds and how much slower than the fastest it is; students without a prediction
(their kernel did not run, their blocks did not fit, nothing submitted) are counted
below the ranking. Names are hidden unless ``--names``: a leaderboard shown to a class
then gives ranks and times only. ``--plot FILE`` draws the same as a PNG (one panel per
task; needs matplotlib, the ``report`` or ``plot`` extra).
"""

from __future__ import annotations

import argparse
import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graders.course.catalog import ASSIGNMENTS
from graders.safety.safe_text import csv_value, terminal_text

#: Shown instead of a name when names are hidden.
HIDDEN = "(hidden)"


@dataclass(frozen=True)
class Entry:
    """One student on one performance task: ``predicted_ms`` (None: no prediction)."""

    student: str
    predicted_ms: float | None


@dataclass(frozen=True)
class Board:
    """The ranking of one performance task: ``task`` id, its ``title``, ``ranked``
    (rank, entry) fastest first, and ``missing`` (students without a prediction)."""

    task: str
    title: str
    ranked: list[tuple[int, Entry]]
    missing: list[str]

    @property
    def best_ms(self) -> float | None:
        """The fastest predicted time (ms), or None when nobody has one."""
        return self.ranked[0][1].predicted_ms if self.ranked else None


def _performance_tasks() -> dict[str, str]:
    """Task id -> title of every graded performance task, in course order."""
    return {task.id: f"Task {task.id} {task.title}" for a in ASSIGNMENTS.values()
            for task in a.graded_tasks if task.performance}


def entries_from_results(folder: Path) -> dict[str, list[Entry]]:
    """Task id -> one entry per student graded on its assignment, from a batch folder."""
    from graders.batch.store import read_results
    from graders.reports.gradebook_csv import predicted_ms

    tasks = _performance_tasks()
    found: dict[str, list[Entry]] = {}
    for result in read_results(folder):
        times = predicted_ms(result)
        for task in result.info.graded_tasks:
            if task.id in tasks:
                found.setdefault(task.id, []).append(Entry(result.student, times.get(task.id)))
    return found


def entries_from_csv(path: Path) -> dict[str, list[Entry]]:
    """Task id -> one entry per gradebook row, from a CSV gradebook's ``"<task> predicted
    ms"`` columns (an empty cell: no prediction; a row without the task's points column
    and without a time: not graded on it, left out).

    Raises:
      ValueError: a cell that is neither empty nor a finite number (names the row).
    """
    from graders.reports.gradebook_csv import predicted_column

    found: dict[str, list[Entry]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        wanted = {task: predicted_column(task) for task in _performance_tasks()
                  if predicted_column(task) in columns}
        for row in reader:
            student = csv_value(row.get("student") or "")
            for task, column in wanted.items():
                cell = (row.get(column) or "").strip()
                if not cell and not (row.get(task) or "").strip():
                    continue
                value = None
                if cell:
                    value = float(cell)
                    if not math.isfinite(value):
                        raise ValueError(f"{path}: {column} of {student!r} is {cell!r}, "
                                         "not a finite number of ms")
                found.setdefault(task, []).append(Entry(student, value))
    return found


def load_entries(results: Path) -> dict[str, list[Entry]]:
    """The entries of a batch folder or a CSV gradebook (``FileNotFoundError`` when
    ``results`` is neither)."""
    if results.is_dir():
        return entries_from_results(results)
    if results.is_file():
        return entries_from_csv(results)
    raise FileNotFoundError(f"{results}: no such batch folder or gradebook CSV")


def boards(entries: dict[str, list[Entry]]) -> list[Board]:
    """One ``Board`` per performance task that has entries, in course order. Equal times
    share a rank (1, 1, 3); ties are listed by name."""
    titles = _performance_tasks()
    out: list[Board] = []
    for task, title in titles.items():
        if task not in entries:
            continue
        timed = sorted((e for e in entries[task] if e.predicted_ms is not None),
                       key=lambda e: (e.predicted_ms, e.student))
        ranked: list[tuple[int, Entry]] = []
        for position, entry in enumerate(timed, start=1):
            tied = ranked and ranked[-1][1].predicted_ms == entry.predicted_ms
            ranked.append((ranked[-1][0] if tied else position, entry))
        missing = sorted(e.student for e in entries[task] if e.predicted_ms is None)
        out.append(Board(task, title, ranked, missing))
    return out


def board_text(board: Board, *, names: bool = False) -> str:
    """The ranking of ``board`` as text lines: rank, student (``HIDDEN`` unless
    ``names``), predicted ms, percent slower than the fastest; then who has no time."""
    lines = [f"{board.title}: predicted time on the lecture's shape (ms, lower is better)"]
    best = board.best_ms
    for rank, entry in board.ranked:
        assert entry.predicted_ms is not None and best is not None
        who = terminal_text(entry.student) if names else HIDDEN
        slower = entry.predicted_ms / best - 1 if best > 0 else 0.0
        lines.append(f"  {rank:>4}  {who:<28} {entry.predicted_ms:>10.4f} ms  "
                     f"{'fastest' if rank == 1 else f'+{slower:.1%}'}")
    if not board.ranked:
        lines.append("  nobody has a predicted time yet")
    if board.missing:
        who = (": " + ", ".join(terminal_text(s) for s in board.missing)) if names else ""
        lines.append(f"  no predicted time ({len(board.missing)} student"
                     f"{'' if len(board.missing) == 1 else 's'}){who}")
    return "\n".join(lines)


def write_plot(all_boards: Sequence[Board], path: Path, *, names: bool = False) -> Path:
    """Draw one horizontal bar panel per board (fastest on top, a dashed line at 10 %
    above the fastest) to the PNG ``path``; labels are names only with ``names``.

    Raises:
      ImportError: matplotlib is not installed (``pip install 'pallas-lab[report]'``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [b for b in all_boards if b.ranked] or list(all_boards)
    fig, axes = plt.subplots(len(shown), 1, squeeze=False,
                             figsize=(7, 1.2 + 0.3 * max([len(b.ranked) for b in shown] + [3])
                                      * len(shown)))
    for ax, board in zip(axes[:, 0], shown, strict=True):
        labels = [(e.student if names else f"#{rank}") for rank, e in board.ranked]
        times = [e.predicted_ms for _, e in board.ranked]
        ax.barh(range(len(times)), times, color="tab:blue")
        ax.set_yticks(range(len(times)), labels)
        ax.invert_yaxis()
        if board.best_ms is not None:
            ax.axvline(board.best_ms * 1.1, color="tab:red", linestyle="--",
                       label="fastest + 10 %")
            ax.legend(loc="best", fontsize="small")
        missing = f" ({len(board.missing)} without a time)" if board.missing else ""
        ax.set_title(board.title, fontsize="medium")
        ax.set_xlabel(f"predicted time (ms){missing}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``pallas-lab leaderboard RESULTS [--names] [--plot FILE]``; returns the exit status
    (0; 2 when RESULTS cannot be read or ``--plot`` lacks matplotlib)."""
    parser = argparse.ArgumentParser(
        prog="pallas-lab leaderboard",
        description="Rank the class on each performance task by its predicted time.")
    parser.add_argument("results", type=Path, metavar="RESULTS",
                        help="a batch folder (pallas-lab grade --out DIR) or a CSV gradebook")
    parser.add_argument("--names", action="store_true",
                        help="show students' names (hidden by default)")
    parser.add_argument("--plot", type=Path, metavar="FILE",
                        help="also draw the rankings to this PNG (needs matplotlib)")
    args = parser.parse_args(argv)
    try:
        found = boards(load_entries(args.results))
    except (OSError, ValueError, csv.Error) as exc:
        print(f"pallas-lab leaderboard: {exc}")
        return 2
    if not found:
        print(f"{args.results}: no performance task was graded there")
        return 0
    print("\n\n".join(board_text(b, names=args.names) for b in found))
    if args.plot is not None:
        try:
            write_plot(found, args.plot, names=args.names)
        except ImportError:
            print("pallas-lab leaderboard: --plot needs matplotlib "
                  "(pip install 'pallas-lab[report]')")
            return 2
        print(f"wrote {args.plot}")
    return 0
