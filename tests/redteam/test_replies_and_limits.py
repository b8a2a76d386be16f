"""Red-team: replies the grader must not believe, decode blindly or spend unbounded work on,
and limits that hold for a submission's whole process tree (docs/security.md, rows
"vacuous comparisons" to "slow but correct").

Each hostile submission in ``tests/redteam/submissions/`` is a solution followed by the
attack (later definitions replace the solution's functions). A class folder of them, with
an honest student, goes through ``pallas-lab grade --format gradescope`` in a subprocess,
as a TA would run it. Submissions that forge replies or fork reach past the in-process
defences with the smuggling trick of ``_smuggle.txt``; their runs set
``PALLAS_LAB_POLICY=off`` so that the layer under test is tested on its own.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.redteam.replies import (
    REPO,
    STEMS,
    Graded,
    compose,
    grade_class,
    solution,
)


def task_points(result: dict[str, Any]) -> dict[str, float]:
    """Points per task id in a results.json."""
    points: dict[str, float] = {}
    for test in result["tests"]:
        points[test["number"]] = points.get(test["number"], 0) + test["score"]
    return points


def feedback(result: dict[str, Any], task: str | None = None) -> str:
    """The feedback of every check (of one task)."""
    return "\n".join(t["output"] for t in result["tests"] if task in (None, t["number"]))


# -- vacuous comparisons and unbounded grader work -------------------------------------------


@pytest.fixture(scope="module")
def replies(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    base = tmp_path_factory.mktemp("replies")
    students = {
        "honest": {"a2": solution("a2")},
        "nan_schedule": {"a2": compose("a2", "nan_schedule")},
        "many_patterns": {"a5": compose("a5", "many_patterns")},
    }
    return grade_class(base, students)


def test_the_run_finishes_with_every_student_graded(replies: Graded) -> None:
    assert replies.returncode == 0, replies.stderr[-3000:]
    assert replies.of("honest", "a2")["score"] == 100, feedback(replies.of("honest", "a2"))
    assert {("nan_schedule", STEMS["a2"]), ("many_patterns", STEMS["a5"])} <= set(
        replies.results), sorted(replies.results)


def test_a_nan_schedule_breaks_every_rule_and_is_named(replies: Graded) -> None:
    result = replies.of("nan_schedule", "a2")
    points = task_points(result)
    assert points["2.1"] == 0, (
        "NaN intervals obey no rule of the model: all 30 points of Task 2.1 are lost\n"
        + feedback(result, "2.1"))
    for test in result["tests"]:
        if test["number"] == "2.1":
            assert "NaN" in test["output"], test["output"]
    assert points["2.3"] == 0 and "NaN" in feedback(result, "2.3"), feedback(result, "2.3")
    assert points["2.4"] == 0 and "inf" in feedback(result, "2.4"), feedback(result, "2.4")
    assert points["2.2"] == 20, "render_gantt is the solution's: its 20 points stay"


def test_many_distinct_patterns_are_refused_before_any_pairwise_work(replies: Graded) -> None:
    result = replies.of("many_patterns", "a5")
    by_name = {t["name"]: t for t in result["tests"] if t["number"] == "5.3"}
    fields = next(t for name, t in by_name.items() if name.startswith("build_mask_info equals"))
    invariants = next(t for name, t in by_name.items() if name.startswith("MaskInfo invariants"))
    assert fields["score"] == 0 and invariants["score"] == 0, (fields, invariants)
    assert "holds more patterns than the mask has partial tiles" in fields["output"], fields
    assert "at most one pattern per partial tile" in invariants["output"], invariants
    assert "30001 patterns" in invariants["output"], invariants["output"]
    points = task_points(result)
    # Worked answers use tiles of more than 64 elements and the errors check raises: the
    # attack leaves them as honest as the solution (5 + 5). mask_stats counts the
    # solution's own patterns, so its drawn check (3) fails too.
    assert points["5.3"] == 10 and points["5.5"] == 2, feedback(result)
    assert result["score"] == 100 - 15 - 3, feedback(result)


# -- forged but signed replies ---------------------------------------------------------------

#: MiB of JSON header the forged reply sends (the default budget allows about 1 MiB here).
FORGED_MIB = 16
#: MiB the grader may use beyond grading honest a1 files: decoding the 16 MiB header of
#: empty lists took it from 292 MiB (honest) to 574 MiB before replies were validated
#: before decoding (measured on the course machine).
GRADER_RSS_SLACK_MIB = 64


@pytest.fixture(scope="module")
def honest_rss(tmp_path_factory: pytest.TempPathFactory) -> float:
    """Peak RSS (MiB) of the grader grading two honest a1 files: the baseline."""
    base = tmp_path_factory.mktemp("baseline")
    run = grade_class(base, {"honest": {"a1": solution("a1")}, "other": {"a1": solution("a1")}},
                      measure_rss=True)
    assert run.returncode == 0 and run.rss_mib is not None, run.stderr[-3000:]
    return run.rss_mib


@pytest.fixture(scope="module")
def forged(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    base = tmp_path_factory.mktemp("forged")
    students = {
        "honest": {"a1": solution("a1")},
        "forged_json_reply": {"a1": compose("a1", "forged_json_reply", smuggle=True).replace(
            "@@MIB@@", str(FORGED_MIB))},
        "forged_npz_header": {"a1": compose("a1", "forged_npz_header", smuggle=True)},
    }
    return grade_class(base, students, measure_rss=True)


def _vmem_worked(result: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in result["tests"] if t["number"] == "1.5"
                and t["name"].startswith("worked answers"))


def test_forged_replies_are_the_submissions_error_not_the_graders(forged: Graded) -> None:
    assert forged.returncode == 0, (
        "a forged reply is the submission's fault: no internal grader error, exit status 0\n"
        + forged.stderr[-3000:])
    assert "internal" not in forged.stderr, forged.stderr[-3000:]
    assert forged.of("honest", "a1")["score"] == 100, feedback(forged.of("honest", "a1"))
    for name in ("forged_json_reply", "forged_npz_header"):
        result = forged.of(name, "a1")
        worked = _vmem_worked(result)
        assert worked["score"] == 0 and "(error)" in worked["output"], worked["output"]
        assert "not your fault" not in feedback(result), feedback(result)
        # Only the one forged call fails: vmem_property's calls are honest.
        assert result["score"] == 100 - 6, feedback(result)


def test_an_oversize_json_reply_is_refused_by_its_size(forged: Graded) -> None:
    output = _vmem_worked(forged.of("forged_json_reply", "a1"))["output"]
    assert "the reply of vmem_bytes was refused" in output, output
    assert f"{FORGED_MIB}.0 MiB" in output and "expected for these inputs" in output, output


def test_an_npz_header_claiming_terabytes_is_refused_before_allocation(forged: Graded) -> None:
    output = _vmem_worked(forged.of("forged_npz_header", "a1"))["output"]
    assert "the reply of vmem_bytes was refused" in output, output
    assert "float64[1099511627776]" in output and "8.0 TiB" in output, output


def test_the_graders_memory_stays_bounded(forged: Graded, honest_rss: float) -> None:
    assert forged.rss_mib is not None
    assert forged.rss_mib <= honest_rss + GRADER_RSS_SLACK_MIB, (
        f"the grader peaked at {forged.rss_mib:.0f} MiB while grading forged replies, "
        f"{honest_rss:.0f} MiB while grading honest files")


# -- limits for the whole process tree ---------------------------------------------------------

#: The memory limit of a submission's process tree in these runs (PALLAS_LAB_MEMORY), and
#: what the fork_memory attack tries to hold beyond it: 6 children of 128 MiB each.
TREE_MEMORY_MIB, CHILDREN, CHILD_MIB = 256, 6, 128
#: A sleep length no other process uses: fork_escape's children carry it on their command line.
SLEEP_MARK = f"{5000 + os.getpid() % 1000}.{time.time_ns() % 10**6:06d}"


def _sleepers() -> list[int]:
    """Pids of processes running ``sleep SLEEP_MARK`` (fork_escape's children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if SLEEP_MARK.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _tree_students() -> dict[str, dict[str, str]]:
    memory = compose("a1", "fork_memory", smuggle=True).replace(
        "@@CHILDREN@@", str(CHILDREN)).replace("@@CHILD_MIB@@", str(CHILD_MIB))
    escape = compose("a1", "fork_escape", smuggle=True).replace("@@SLEEP@@", SLEEP_MARK)
    return {"honest": {"a1": solution("a1")}, "fork_memory": {"a1": memory},
            "fork_escape": {"a1": escape}}


@dataclass
class TreeRuns:
    """The CLI runs of the tree attacks, by configuration, and the sleepers each left."""

    runs: dict[str, Graded]
    leftovers: dict[str, list[int]]


def _full_sandbox_here() -> bool:
    """True when this machine gives workers the namespace level and a cgroup. With
    PALLAS_LAB_SANDBOX or PALLAS_LAB_CGROUP set, the tests run whatever they say (so
    switching a layer off makes them fail instead of skipping)."""
    from graders.worker import cgroups, sandbox

    if os.environ.get(sandbox.ENV_VAR) or os.environ.get(cgroups.ENV_VAR):
        return True
    try:
        return sandbox.choose_level() == "namespace" and cgroups.available() is not None
    except (RuntimeError, ValueError):
        return False


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> TreeRuns:
    if os.geteuid() != 0 or not _full_sandbox_here():
        reason = "the tree limits under test need root, unshare(2) and a writable cgroup"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}, but CI must run them")
        pytest.skip(reason)
    configs = {
        # the full sandbox: namespaces and a cgroup for the process tree, workers exec'd
        "full": {"PALLAS_LAB_ZYGOTE": "off"},
        # no PID namespace (the sandbox switched off, as root): only the cgroup holds the tree
        "process": {"PALLAS_LAB_SANDBOX": "off"},
        # namespaces, but no cgroup: one process per worker
        "no-cgroup": {"PALLAS_LAB_CGROUP": "off"},
        # the full sandbox around workers forked from a batch's zygote (--jobs)
        "zygote": {},
    }
    extra = {"zygote": ("--jobs", "1")}
    runs, leftovers = {}, {}
    for name, env in configs.items():
        base = tmp_path_factory.mktemp(f"tree-{name}")
        runs[name] = grade_class(base, _tree_students(), "--timeout", "20",
                                 *extra.get(name, ()),
                                 env={"PALLAS_LAB_MEMORY": f"{TREE_MEMORY_MIB}M", **env})
        leftovers[name] = _sleepers()
        for pid in leftovers[name]:  # by pid: only what this test's attack started
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    return TreeRuns(runs, leftovers)


def _vmem_feedback(run: Graded, student: str) -> str:
    return feedback(run.of(student, "a1"), "1.5")


@pytest.mark.parametrize("config", ["full", "process", "no-cgroup", "zygote"])
def test_the_tree_runs_finish_and_honest_work_keeps_its_score(tree: TreeRuns, config: str
                                                               ) -> None:
    run = tree.runs[config]
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.of("honest", "a1")["score"] == 100, feedback(run.of("honest", "a1"))
    for student in ("fork_memory", "fork_escape"):
        assert run.of(student, "a1")["score"] == 100 - 6, feedback(run.of(student, "a1"))


@pytest.mark.parametrize("config", ["full", "process", "zygote"])
def test_forked_children_share_one_memory_limit(tree: TreeRuns, config: str) -> None:
    text = _vmem_feedback(tree.runs[config], "fork_memory")
    held = [int(mib) for mib in re.findall(r"alive holding (\d+) MiB together", text)]
    assert held or "more than their 256.0 MiB of memory" in text, text
    assert max(held, default=0) < TREE_MEMORY_MIB, (
        f"children of one submission held {max(held, default=0)} MiB together; its limit is "
        f"{TREE_MEMORY_MIB} MiB\n{text}")


@pytest.mark.parametrize("config", ["full", "process", "zygote"])
def test_the_tree_holds_fewer_processes_than_its_limit_and_none_survive(tree: TreeRuns,
                                                                        config: str) -> None:
    from graders.worker import sandbox

    text = _vmem_feedback(tree.runs[config], "fork_escape")
    forked = [int(n) for n in re.findall(r"forked (\d+), then", text)]
    assert forked and max(forked) < sandbox.TREE_PIDS, text
    assert tree.leftovers[config] == [], (
        f"{len(tree.leftovers[config])} children of fork_escape outlived the grader")


def test_without_a_cgroup_a_worker_cannot_fork_at_all(tree: TreeRuns) -> None:
    run = tree.runs["no-cgroup"]
    for student in ("fork_memory", "fork_escape"):
        text = _vmem_feedback(run, student)
        assert re.search(r"forked 0\b", text), text
    assert tree.leftovers["no-cgroup"] == []


def test_a_sandbox_weaker_than_the_full_one_is_said_once_and_recorded(tree: TreeRuns) -> None:
    full, process, single = (tree.runs[n] for n in ("full", "process", "no-cgroup"))
    assert "weaker than the full sandbox" not in full.stderr, full.stderr
    for run, words in ((process, "sandbox level 'process'"),
                       (single, "one process per worker")):
        lines = [line for line in run.stderr.splitlines() if "weaker than the full sandbox" in line]
        assert len(lines) == 1 and words in lines[0], run.stderr[-2000:]
    recorded = {name: run.of("honest", "a1")["extra_data"]["sandbox"]
                for name, run in tree.runs.items()}
    assert recorded["full"].startswith("namespace, cgroup v"), recorded
    assert recorded["zygote"] == recorded["full"], recorded
    assert recorded["process"].startswith("process, cgroup v"), recorded
    assert recorded["no-cgroup"] == "namespace, one process per worker", recorded


# -- a wall-clock budget per submission ---------------------------------------------------------

#: The per-call timeout of this run and how long the slow submission waits in every call.
SLOW_TIMEOUT, SLOW_SLEEP = 0.5, 0.4


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    base = tmp_path_factory.mktemp("slow")
    students = {
        "slow_but_correct": {"a1": compose("a1", "slow_but_correct", smuggle=True).replace(
            "@@SLEEP@@", str(SLOW_SLEEP))},
        # a handout left as it is: every call fails at once, whatever the timeout
        "untouched": {"a1": (REPO / "assignments" / f"{STEMS['a1']}.py").read_text(
            encoding="utf-8")},
    }
    return grade_class(base, students, "--timeout", str(SLOW_TIMEOUT))


def test_a_slow_submission_stops_at_its_wall_budget(slow: Graded) -> None:
    assert slow.returncode == 0, slow.stderr[-3000:]
    result = slow.of("slow_but_correct", "a1")
    stopped = [t for t in result["tests"] if "wall-clock budget" in t["output"]]
    assert stopped, f"graded in {result['execution_time']} s without a budget\n" + feedback(
        result)
    from graders.checking.framework import load_checks
    from graders.grading.grade import CHECK_BUDGET_TIMEOUTS

    budget = len(load_checks("a1")) * CHECK_BUDGET_TIMEOUTS * SLOW_TIMEOUT
    assert f"budget of {budget:g} s" in stopped[0]["output"], stopped[0]["output"]
    assert all("(timeout)" in t["output"] and t["score"] == 0 for t in stopped)
    last = result["tests"][-1]
    assert last in stopped, "every check after the budget is spent is a timeout"
    assert "was not run" in last["output"], last["output"]
    untouched = slow.of("untouched", "a1")
    assert untouched["score"] == 0 and not any(
        "wall-clock budget" in t["output"] for t in untouched["tests"]), feedback(untouched)


def test_trace_records_that_contradict_themselves_are_the_submissions_error(
        tmp_path: Path) -> None:
    run = grade_class(tmp_path, {"honest": {"a4": solution("a4")},
                                 "forged_trace": {"a4": compose("a4", "forged_trace",
                                                                smuggle=True)}})
    assert run.returncode == 0, (
        "a forged trace is the submission's fault, not an internal error\n" + run.stderr[-3000:])
    result = run.of("forged_trace", "a4")
    skipping = next(t for t in result["tests"] if t["name"].startswith("with causal=True, grid"))
    assert skipping["score"] == 0 and "(error)" in skipping["output"], skipping["output"]
    assert "the trace of flash_attention_kernel could not be read" in skipping["output"]
    assert "block indices of shape (0, 0)" in skipping["output"], skipping["output"]
    assert "not your fault" not in feedback(result), feedback(result)
    assert run.of("honest", "a4")["score"] == 100
