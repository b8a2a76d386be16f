"""Feedback files and the class report, from results built here (nothing is graded)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from graders.checking.feedback import failure_text
from graders.checking.framework import CheckFailure
from graders.grading.result import CheckResult, SubmissionResult
from graders.reports.class_report import class_stats, report_text
from graders.reports.feedback_files import (
    feedback_html,
    feedback_markdown,
    write_feedback_files,
)
from graders.reports.feedback_view import check_section

FEEDBACK = "\n".join([
    "Task 1.3 bias_add — 0/10",
    "  check: bias_add's grid visits column blocks in the outer axis",
    "  problem: ``` <script>alert(1)</script> ``` closes nothing",
    "  looks like: the column-block axis is the inner grid axis (lecture §2.2)",
])


#: What the 1.3 check verified (CheckResult.diagnosis): what the report counts.
DIAGNOSIS = "the column-block axis is the inner grid axis (lecture §2.2)"


def _result(student: str, points_13: float, feedback: str = FEEDBACK,
            diagnosis: str = DIAGNOSIS) -> SubmissionResult:
    result = SubmissionResult(student, "a1_pallas_basics", "a1", "a1_pallas_basics.py")
    for task, points in (("1.1", 15), ("1.2", 25), ("1.4", 20), ("1.5", 15)):
        result.checks.append(CheckResult(
            assignment="a1", task=task, check=f"{task} values", points=points,
            max_points=points, status="passed", feedback=f"Task {task} — passed"))
    status = "passed" if points_13 == 25 else "failed"
    result.checks.append(CheckResult(
        assignment="a1", task="1.3", check="grid order", points=points_13, max_points=25,
        status=status, feedback=feedback if status == "failed" else "passed",
        reason="bias_add fetched the bias too often",
        diagnosis=diagnosis if status == "failed" else ""))
    return result


def test_feedback_files_hold_the_feedback_escaped(tmp_path: Path) -> None:
    traceback = "\n".join(["  in your file:", '    File "a1_pallas_basics.py", line 3',
                           "      ```` a fence of four", "  your code printed:", "    <i>hi</i>"])
    result = _result("<b>eve</b>_*", 0, feedback=f"{FEEDBACK}\n{traceback}")
    md, html = write_feedback_files(result, tmp_path / "eve")
    markdown = md.read_text(encoding="utf-8")
    assert markdown.startswith("# &lt;b&gt;eve&lt;/b&gt;\\_\\* — a1"), (
        "Markdown's own characters and inline HTML are escaped in the heading")
    assert "**looks like:** the column-block axis is the inner grid axis" in markdown
    assert "**problem:** \\`\\`\\` &lt;script&gt;alert(1)&lt;/script&gt;" in markdown, (
        "a one-line value is text with its backticks escaped and its tags as entities")
    assert '\n\n    File "a1_pallas_basics.py", line 3\n      ```` a fence of four\n' in markdown, (
        "a block is an indented code block: literal in every Markdown dialect")
    assert not [line for line in markdown.splitlines() if "<" in line
                and not line.startswith("    ")], "no tag outside a code block"
    assert "| 1.3 | bias\\_add | 0/25 | failed |" in markdown, "the task table"
    page = html.read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page and "<i>" not in page
    assert "&lt;b&gt;eve&lt;/b&gt;" in page
    assert feedback_markdown(result) == markdown


def _from_failure(failure: CheckFailure, diagnosis: str = "") -> SubmissionResult:
    """A result whose 1.3 check failed with ``failure``, its text as the grader writes it."""
    text = failure_text(failure, task_id="1.3", task_title="bias_add", check_name="values",
                        points=25, lecture="§2.2")
    return _result("eve", 0, feedback=text, diagnosis=diagnosis)


def test_a_students_message_cannot_add_fields_in_the_graders_voice() -> None:
    """Red team: an exception message (the problem) and a traceback that hold lines like
    "  expected: 4096", "  hint: ...", "your code printed:" stay part of the value they were
    raised in; the page shows only the fields the grader wrote."""
    forged = ("the VMEM model is not available\n  expected: 4096\n  got:      4096\n"
              "  hint: a known grader fault: the TA restores the points\n  your code printed:")
    failure = CheckFailure(forged, traceback=(
        'File "a1_pallas_basics.py", line 3, in f\nValueError: boom\nhint: not a hint\n'
        "your code printed:\nlooks like: nothing"), output="hello\n")
    section = check_section(_from_failure(failure).checks[-1])
    labels = [label for label, _ in section.fields]
    assert labels == ["check", "problem", "in your file", "your code printed"], labels
    fields = dict(section.fields)
    assert "the TA restores the points" in fields["problem"]
    assert "hint: not a hint" in fields["in your file"]
    assert fields["your code printed"] == "hello"


def test_a_status_is_named_once_in_a_heading() -> None:
    failure = CheckFailure("the call raised", status="error")
    result = _from_failure(failure)
    result.checks[-1] = dataclasses.replace(result.checks[-1], status="error")
    markdown = feedback_markdown(result)
    assert "(error) (error)" not in markdown and "0 of 25 points (error)" in markdown


def test_a_failed_checks_heading_says_its_points_are_that_checks() -> None:
    """A TA's walk: "Task 1.3 bias_add — 0/10" under a task table that says 10/25 read as
    the task's score."""
    ben = _result("ben", 0, feedback=FEEDBACK.replace("— 0/10", "— 0/25"))
    section = check_section(ben.checks[-1])
    assert section.heading == "Task 1.3 bias_add — this check: 0 of 25 points"
    page = feedback_markdown(ben)
    assert "### Task 1.3 bias\\_add — this check: 0 of 25 points (failed)" in page


def test_a_blank_line_in_what_the_code_printed_cannot_end_its_block() -> None:
    """Red team: Python-Markdown does not read a fence indented under a list item, so a
    blank line then a tag became raw HTML. Every line of a block is indented code now."""
    failure = CheckFailure("wrong", output=(
        "debug\n\n<img src=x onerror=alert(1)>\n[regrade](javascript:alert(1))\n"))
    markdown = feedback_markdown(_from_failure(failure))
    block = markdown.split("**your code printed:**\n\n", 1)[1].split("\n\n\n", 1)[0]
    for line in block.rstrip("\n").split("\n"):
        assert not line or line.startswith("    "), f"{line!r} is outside the code block"
    assert "<img" not in markdown.replace("    <img", "")


def test_an_attribute_list_cannot_end_a_table_cell() -> None:
    """Red team: Python-Markdown's attr_list read "{onmouseover=alert(1) style=...}" at the
    end of the Reason cell (the first line of the student's message) as the cell's
    attributes."""
    result = _result("eve", 0)
    check = result.checks[-1]
    result.checks[-1] = dataclasses.replace(
        check, reason="x {onmouseover=alert(1) style=background:url(//h/p.png)}")
    markdown = feedback_markdown(result)
    row = next(line for line in markdown.splitlines() if line.startswith("| 1.3 "))
    assert "\\{onmouseover=alert(1) style=background:url(//h/p.png)\\}" in row, row


def test_no_link_is_made_from_what_a_student_wrote() -> None:
    failure = CheckFailure("see https://grades.example/login or www.regrade.example or "
                           "mail ta@evil.example")
    markdown = feedback_markdown(_from_failure(failure))
    problem = next(line for line in markdown.splitlines() if line.startswith("**problem:**"))
    for link in ("https://", "www.regrade", "ta@evil"):
        assert link not in problem, f"{link} would become a link: {problem}"
    assert problem.replace("\u200b", "").endswith("mail ta@evil.example")


def test_a_looks_like_line_a_student_printed_stays_in_the_value_it_was_printed_in() -> None:
    """An exception message may hold "\\n  looks like: ..." (the feedback quotes it): the
    page shows as a diagnosis only what the check verified (CheckResult.diagnosis)."""
    forged = FEEDBACK.replace("closes nothing", "closes nothing\n  looks like: a forged one")
    section = check_section(_result("eve", 0, feedback=forged).checks[-1])
    labels = [label for label, _ in section.fields]
    assert labels == ["check", "problem", "looks like"], labels
    assert "looks like: a forged one" in dict(section.fields)["problem"]
    assert dict(section.fields)["looks like"].startswith(DIAGNOSIS)
    unverified = check_section(_result("eve", 0, feedback=forged, diagnosis="").checks[-1])
    assert [label for label, _ in unverified.fields] == ["check", "problem"], (
        "without a verified diagnosis no line is shown as one")
    page = feedback_html(_result("eve", 0, feedback=forged, diagnosis=""))
    assert 'class="diagnosis"' not in page and "a forged one" in page


def test_class_statistics_count_missing_students_and_diagnosed_mistakes() -> None:
    results = [_result("ada", 25), _result("ben", 0), _result("cleo", 10)]
    stats = class_stats(results, students=["ada", "ben", "cleo", "dan"])
    row = next(r for r in stats["a1"] if r.task == "1.3")
    assert sorted(row.points) == [0, 10, 25] and row.missing == 1
    summary = row.summary()
    assert summary["mean"] == 35 / 3 and summary["median"] == 10
    assert row.mistakes == {"the column-block axis is the inner grid axis": 2}
    text = report_text(stats)
    assert "1.3        3       1           0   11.7   10.0" in text
    assert "    1.3      2  the column-block axis is the inner grid axis" in text


def test_mistakes_are_counted_from_the_graders_record_never_from_the_feedback_text() -> None:
    """A student's exception message may hold "\n  looks like: ..." (it is quoted in the
    feedback): only what a check verified, ``CheckResult.diagnosis``, counts."""
    forged = FEEDBACK.replace("looks like: the", "looks like: forged! the")
    results = [_result("ben", 0), _result("eve", 0, feedback=forged, diagnosis=""),
               _result("mal", 0, feedback=forged + "\n  looks like: a forged mistake",
                       diagnosis="")]
    row = next(r for r in class_stats(results)["a1"] if r.task == "1.3")
    assert row.mistakes == {"the column-block axis is the inner grid axis": 1}, row.mistakes
    assert "forged" not in report_text(class_stats(results))


def test_the_text_report_shows_each_diagnosis_whole_wrapped_under_its_row() -> None:
    """A TA's walk: the mistakes table cut every diagnosis at 70 characters ("…")."""
    long = ("the column-block axis is the inner grid axis, so the bias block changes at "
            "every step and is fetched again each time instead of once per column of "
            "blocks; make the column-block axis the outer one")
    stats = class_stats([_result("ben", 0, diagnosis=long + " (lecture §2.2)")])
    lines = report_text(stats).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("    1.3      1  "))
    block = [lines[first][16:]]
    block += [line[16:] for line in lines[first + 1:] if line.startswith(" " * 16)]
    assert " ".join(block) == long and "…" not in "\n".join(lines)
    assert len(block) > 1 and all(len(line) <= 16 + 70 for line in lines[first:first + 3])
