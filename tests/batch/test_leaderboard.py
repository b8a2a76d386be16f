"""The class view of performance tasks: the gradebook's predicted-time
column and ``pallas-lab leaderboard``.

Results are built by hand (``CheckResult`` with ``measures``) and written the way a batch
writes them (``graders.batch.store.write_result``), so no submission is graded here; the grading
side (Task 3.5's check records ``predicted_ms``) is covered by the a3 samples and corpus.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from graders.batch import leaderboard
from graders.batch.store import gradebook_from_results, read_results, result_path, write_result
from graders.checking.measures import PREDICTED_MS
from graders.cli.main import main as cli_main
from graders.course.catalog import ASSIGNMENTS
from graders.grading.result import CheckResult, SubmissionResult
from graders.reports.gradebook_csv import predicted_column, write_gradebook

A3 = ASSIGNMENTS["a3"]
TASK = "3.5"
COLUMN = predicted_column(TASK)
#: Predicted ms of Task 3.5 per student; None: their blocks did not run (no prediction).
TIMES = {"ada": 1.3437, "ben": 4.7431, "zed": 1.3437, "cleo": None}


def a3_result(student: str, predicted: float | None) -> SubmissionResult:
    """An a3 result with every check passed except Task 3.5's when there is no time."""
    checks = []
    for task in A3.graded_tasks:
        ran = task.id != TASK or predicted is not None
        checks.append(CheckResult(
            assignment="a3", task=task.id, check=f"check of {task.id}",
            points=task.points if ran else 0.0, max_points=task.points,
            status="passed" if ran else "failed", feedback="",
            measures={PREDICTED_MS: predicted} if task.id == TASK and ran else {}))
    return SubmissionResult(student=student, stem=A3.stem, assignment="a3",
                            file=f"{A3.stem}.py", checks=checks)


@pytest.fixture
def batch_folder(tmp_path: Path) -> Path:
    out = tmp_path / "results"
    for student, predicted in TIMES.items():
        write_result(a3_result(student, predicted), result_path(out, student, A3.stem))
    return out


def rows(text: str) -> dict[str, dict[str, str]]:
    return {row["student"]: row for row in csv.DictReader(text.splitlines())}


def test_a3_has_one_performance_task_and_still_totals_100():
    performance = [t.id for t in A3.graded_tasks if t.performance]
    assert performance == [TASK], "Task 3.5 (choose_matmul_blocks) is a3's performance task"
    assert A3.max_score == 100, "3.3 gave up 10 points for 3.5, so a3 still totals 100"
    assert A3.task(TASK).title.endswith("(performance)"), "reports say it is graded on speed"


def test_results_json_keeps_the_predicted_time(batch_folder: Path):
    back = {r.student: r for r in read_results(batch_folder)}
    measured = [c.measures for c in back["ada"].checks if c.task == TASK]
    assert measured == [{PREDICTED_MS: 1.3437}], (
        "the check's measures survive results.json (pallas-lab's record), so a gradebook "
        "rebuilt from a batch folder has the time")
    assert all(not c.measures for c in back["cleo"].checks), "no prediction, no measure"


def test_gradebook_from_a_batch_folder_has_a_predicted_ms_column(batch_folder: Path):
    book = rows(gradebook_from_results(batch_folder))
    header = list(next(iter(book.values())))
    assert header[header.index(TASK) + 1] == COLUMN == "3.5 predicted ms", (
        "the predicted time (ms) follows the task columns, before the assignment total")
    assert book["ada"][COLUMN] == "1.3437" and book["ben"][COLUMN] == "4.7431"
    assert book["cleo"][COLUMN] == "", "a student without a prediction has an empty cell"
    assert book["ada"]["a3"] == "100" and book["cleo"]["a3"] == "90"


def test_written_gradebook_has_the_same_column(tmp_path: Path):
    path = write_gradebook([a3_result(s, t) for s, t in TIMES.items()], tmp_path / "gb.csv")
    book = rows(path.read_text(encoding="utf-8"))
    assert {s: r[COLUMN] for s, r in book.items()} == {
        "ada": "1.3437", "ben": "4.7431", "cleo": "", "zed": "1.3437"}


@pytest.mark.parametrize("source", ["folder", "csv"])
def test_ranking_hides_names_and_counts_students_without_a_time(
        batch_folder: Path, tmp_path: Path, source: str, capsys: pytest.CaptureFixture[str]):
    results = batch_folder
    if source == "csv":
        results = tmp_path / "gradebook.csv"
        results.write_text(gradebook_from_results(batch_folder), encoding="utf-8")
    assert cli_main(["leaderboard", str(results)]) == 0
    text = capsys.readouterr().out
    assert not any(name in text for name in TIMES), f"names must be hidden by default:\n{text}"
    ranked = [line.split() for line in text.splitlines() if "ms  " in line]
    assert [(r[0], r[2]) for r in ranked] == [("1", "1.3437"), ("1", "1.3437"), ("3", "4.7431")], (
        "fastest first; equal times share rank 1, the next is 3")
    assert "+253.0%" in text, "4.7431 ms is 253 % slower than 1.3437 ms"
    assert "no predicted time (1 student)" in text


def test_ranking_with_names(batch_folder: Path, capsys: pytest.CaptureFixture[str]):
    assert cli_main(["leaderboard", str(batch_folder), "--names"]) == 0
    text = capsys.readouterr().out
    order = [line.split()[1] for line in text.splitlines() if "ms  " in line]
    assert order == ["ada", "zed", "ben"], "ties listed by name, then slower students"
    assert "no predicted time (1 student): cleo" in text


def test_plot_is_a_png(batch_folder: Path, tmp_path: Path):
    png = tmp_path / "board.png"
    assert cli_main(["leaderboard", str(batch_folder), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "--plot writes a PNG file"


def test_boards_without_any_time_and_unreadable_results(tmp_path: Path):
    board = leaderboard.boards({TASK: [leaderboard.Entry("cleo", None)]})[0]
    assert board.ranked == [] and board.missing == ["cleo"] and board.best_ms is None
    assert "nobody has a predicted time yet" in leaderboard.board_text(board)
    assert cli_main(["leaderboard", str(tmp_path / "nowhere")]) == 2


def test_a4_has_one_performance_task_picked_up_by_the_reports():
    """Task 4.8 (choose_flash_config) is a4's performance task: the gradebook gives it a
    predicted-ms column and the leaderboard a board with no code of its own."""
    from graders.reports.gradebook_csv import performance_task_ids

    a4 = ASSIGNMENTS["a4"]
    assert [t.id for t in a4.graded_tasks if t.performance] == ["4.8"]
    assert a4.max_score == 100, "4.6 and 4.7 gave up 5 points each for 4.8"
    assert performance_task_ids(["a3", "a4"]) == ["3.5", "4.8"]
    assert predicted_column("4.8") == "4.8 predicted ms"
    assert "4.8" in leaderboard._performance_tasks()
