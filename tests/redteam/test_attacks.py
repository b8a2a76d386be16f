"""Red-team suite: one hostile submission per attack, graded through the real CLI.

Each submission in ``tests/redteam/submissions/`` is the a1 solution followed by
the attack (later definitions replace the solution's functions, module-level
code runs on import). A class folder of them, with honest students graded
before and after, goes through ``pallas-lab grade --format gradescope`` in a
subprocess. Every attack is graded twice (docs/security.md, "Attacks and
their tests"):

* **with the submission policy** (the production configuration): the
  attacks that smuggle ``__import__`` through ``typing.get_type_hints`` and a
  rewritten ``__annotations__`` are refused by the compile-time check (0
  points); the others are refused or contained as the row says;
* **without it** (``PALLAS_LAB_POLICY=off``, test-only): the smuggled
  ``__import__`` works, so the layers below the policy (the worker process,
  the operating-system sandbox, the signed channel, the grader's own
  comparisons) must contain each attack on their own.

For every attack and both runs the tests assert that:

* the run finished (every student has a results.json; the CLI exits 0);
* the score is at most what the honest part earns: the solution's points minus
  the tasks the attack replaced, exactly so when the attack is contained at
  run time (the other checks are unaffected); 0 when the file is refused or
  does not load;
* the honest students still get 100;
* the feedback says what was refused.

Attacks that only the operating-system sandbox stops (reading, writing, /proc,
network, fork bombs) are marked ``needs_sandbox``: with ``PALLAS_LAB_SANDBOX=off``
their run without the policy fails, which is how the suite proves it can fail.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graders.worker import sandbox
from tests.helpers.cli import pallas_lab
from tests.redteam.attacks import (
    ATTACKS,
    BY_NAME,
    HONEST,
    REPO,
    SLEEP_MARK,
    SOLUTION,
    STEM,
    SUBMISSIONS,
    Attack,
)
from tests.redteam.attacks import compose as _compose

#: Seconds every CLI run may take before the test calls the grader hung.
RUN_LIMIT = 300


def _sandbox_expected() -> bool:
    """True when this run should have the namespace sandbox (else sandbox tests skip).

    With ``PALLAS_LAB_SANDBOX`` set to anything, the tests run whatever it says, so
    ``PALLAS_LAB_SANDBOX=off`` makes them fail instead of skipping.
    """
    if os.environ.get(sandbox.ENV_VAR):
        return True
    return sandbox.choose_level() == "namespace"


class _Listener:
    """A TCP listener on the host's loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.server.close()


@dataclass
class Run:
    """What the CLI runs produced: per-student results.json, their output, exit codes."""

    results: dict[str, dict[str, Any]]
    stdout: str
    stderr: str
    returncodes: list[int]
    seconds: float
    classes: dict[str, Path]
    out: dict[str, Path]
    marker: Path
    written: Path
    listener_connections: int
    leftover_sleepers: list[int]
    policy: bool


def _notebook(marker: Path) -> str:
    """The solution as a notebook, plus cells with shell escapes and magics."""
    source = SOLUTION.read_text(encoding="utf-8")
    cells = []
    for chunk in source.split("# %%"):
        if chunk.strip() and not chunk.lstrip().startswith("[markdown]"):
            cells.append(chunk.lstrip("\n"))
    hostile = [f"!touch {marker}", f"%%bash\ntouch {marker}\n", f"%system touch {marker}",
               f"import os\nos.system('touch {marker}')"]
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "cells": [
            {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None,
             "outputs": [], "source": text}
            for i, text in enumerate([*cells, *hostile])
        ],
    })


def _marker_of(marker: Path, name: str) -> Path:
    """The file an attack's hostile side files would create if they ever ran."""
    return marker.with_name(f"{marker.name}-{name}")


def _extras(attack: Attack, klass: Path, marker: Path) -> None:
    folder = klass / attack.name
    solution = SOLUTION.read_text(encoding="utf-8")
    if attack.name == "beside_conftest_sitecustomize_pth":
        folder.mkdir()
        (folder / f"{STEM}.py").write_text(solution, encoding="utf-8")
        touch = f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
        for name in ("conftest.py", "sitecustomize.py", "usercustomize.py"):
            (folder / name).write_text(touch, encoding="utf-8")
        (folder / "evil.pth").write_text(touch.replace("\n", "; ") + "\n", encoding="utf-8")
    elif attack.name == "linked_submission":  # the reference implements the same API
        folder.mkdir()
        (folder / f"{STEM}.py").symlink_to(REPO / "reference" / f"{STEM}.py")
    elif attack.name == "linked_student_folder":
        folder.symlink_to(REPO / "solutions", target_is_directory=True)
    elif attack.name == "notebook_magics":
        folder.mkdir()
        (folder / f"{STEM}.ipynb").write_text(_notebook(marker), encoding="utf-8")
    elif attack.name == "read_hidden_symlink":
        (folder / "ref_link.py").symlink_to(REPO / "reference" / f"{STEM}.py")
        (folder / "link_dir").symlink_to(REPO / "reference", target_is_directory=True)


def _sleepers() -> list[int]:
    """Pids of processes running ``sleep SLEEP_MARK`` (the fork bomb's children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if SLEEP_MARK.encode() in cmdline:
            found.append(int(entry.name))
    return found


def _grade_class(tmp_path_factory: pytest.TempPathFactory, policy: bool) -> Run:
    base = tmp_path_factory.mktemp("redteam-policy-on" if policy else "redteam-policy-off")
    marker = base / "marker-should-never-exist"
    listener = _Listener()
    classes = {group: base / f"class_{group}" for group in ("a", "b")}
    out = {group: base / f"results_{group}" for group in ("a", "b")}
    written = base / "written-should-never-exist"
    substitutions = {"REPO": str(REPO), "MARKER": str(marker), "PORT": str(listener.port),
                     "SLEEP": SLEEP_MARK, "WRITTEN": str(written)}
    for klass in classes.values():
        klass.mkdir()
        for name in HONEST:
            (klass / name).mkdir()
            shutil.copy(SOLUTION, klass / name / f"{STEM}.py")
    for attack in _graded(policy):
        klass = classes[attack.group]
        subs = {**substitutions, "CLASS": str(klass), "RESULTS": str(out[attack.group])}
        if (SUBMISSIONS / f"{attack.name}.py").exists():
            (klass / attack.name).mkdir()
            (klass / attack.name / f"{STEM}.py").write_text(_compose(attack, subs, policy),
                                                             encoding="utf-8")
        _extras(attack, klass, _marker_of(marker, attack.name))
    timeouts = {"a": "10", "b": "4"}  # b holds the attacks that must time out
    env = {**os.environ, "PALLAS_LAB_POLICY": "on" if policy else "off"}
    started = time.monotonic()
    processes = {
        group: subprocess.Popen(
            [*pallas_lab(), "grade", str(classes[group]), "--format", "gradescope",
             "--out", str(out[group]), "--timeout", timeouts[group]],
            cwd=base, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for group in classes
    }
    stdout, stderr, codes = "", "", []
    try:
        for process in processes.values():
            o, e = process.communicate(timeout=RUN_LIMIT)
            stdout, stderr = stdout + o, stderr + e
            codes.append(process.returncode)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
        listener.close()
    seconds = time.monotonic() - started
    leftovers = _sleepers()
    for pid in leftovers:  # the fork bomb's children, by pid (only when the sandbox is off)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    results = {}
    for group in classes:
        for path in out[group].glob(f"*/{STEM}/results.json"):
            results[path.parent.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    return Run(results, stdout, stderr, codes, seconds, classes, out, marker, written,
               listener.connections, leftovers, policy)


def _graded(policy: bool) -> list[Attack]:
    return [attack for attack in ATTACKS if policy or attack.below]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The class graded without the policy: the layers below it on their own."""
    return _grade_class(tmp_path_factory, policy=False)


@pytest.fixture(scope="module")
def run_with_policy(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The class graded as in production, with the submission policy."""
    return _grade_class(tmp_path_factory, policy=True)


@pytest.fixture(params=[True, False], ids=["policy", "below-policy"])
def any_run(request: pytest.FixtureRequest) -> Run:
    """Each of the two runs in turn."""
    return request.getfixturevalue("run_with_policy" if request.param else "run")


def _feedback(result: dict[str, Any]) -> str:
    return "\n".join(test.get("output", "") for test in result["tests"])


def test_the_runs_finish_with_every_student_graded(any_run: Run) -> None:
    run = any_run
    assert run.returncodes == [0, 0], run.stderr[-3000:]
    expected = {a.name for a in _graded(run.policy)} | set(HONEST)
    assert expected <= set(run.results), sorted(expected - set(run.results))


def test_honest_students_graded_around_the_attacks_get_full_marks(any_run: Run) -> None:
    for group in ("a", "b"):
        for name in HONEST:
            # Both groups' honest students share a name; each group's folder is separate.
            path = any_run.out[group] / name / STEM / "results.json"
            result = json.loads(path.read_text(encoding="utf-8"))
            assert result["score"] == 100, (group, name, _feedback(result))


@pytest.mark.parametrize(("name", "policy"), [
    pytest.param(a.name, policy, id=f"{a.name}-{'policy' if policy else 'below-policy'}")
    for a in ATTACKS for policy in (True, False) if policy or a.below])
def test_an_attack_earns_at_most_the_honest_part_and_is_named(
        request: pytest.FixtureRequest, name: str, policy: bool) -> None:
    attack = BY_NAME[name]
    run = request.getfixturevalue("run_with_policy" if policy else "run")
    mode, says = attack.outcome(policy)
    if attack.needs_sandbox and mode == "contained" and not policy and not _sandbox_expected():
        _without_sandbox()
    result = run.results[name]
    feedback = _feedback(result)
    honest = attack.honest(policy)
    assert result["score"] <= honest, feedback
    if mode != "custom" or attack.score is not None:
        assert result["score"] == honest, (
            f"{name}: the checks the attack does not touch must be unaffected\n{feedback}")
    for phrase in says:
        assert phrase in feedback, f"{name}: the feedback does not say {phrase!r}:\n{feedback}"
    for test in result["tests"]:
        if test["number"] in attack.replaces and mode == "contained":
            assert test["score"] == 0, test


def _without_sandbox() -> None:
    """No namespace sandbox here: a failure in CI (whose machine must provide it), a skip
    on a developer's machine without root or unshare(2)."""
    reason = "this machine cannot give the worker the namespace sandbox"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}, but CI must run the sandboxed red-team tests")
    pytest.skip(reason)


def _sandboxed(name: str) -> None:
    if not _sandbox_expected():
        _without_sandbox()


def test_hidden_files_are_not_readable_by_path(run: Run) -> None:
    _sandboxed("read_hidden_path")
    feedback = _feedback(run.results["read_hidden_path"])
    assert "READ" not in feedback, feedback
    # Both checks of Task 1.5 call it: each report lists the five paths.
    assert feedback.count("refused (FileNotFoundError, FileNotFoundError)") == 2 * 5, feedback


def test_links_beside_the_submission_lead_nowhere(run: Run) -> None:
    _sandboxed("read_hidden_symlink")
    feedback = _feedback(run.results["read_hidden_symlink"])
    assert "READ" not in feedback and feedback.count("refused (FileNotFoundError)") == 2 * 4


def test_proc_shows_no_grader_process(run: Run) -> None:
    _sandboxed("read_proc")
    feedback = _feedback(run.results["read_proc"])
    for secret in ("pallas-lab grade", "graders.cli.main", "pytest", "sandbox.py", str(REPO),
                   "[1 cmdline]"):
        assert secret not in feedback, f"/proc showed {secret!r}:\n{feedback}"


def test_nothing_is_written_outside_the_workers_own_directory(run: Run) -> None:
    _sandboxed("write_outside")
    feedback = _feedback(run.results["write_outside"])
    assert "WROTE" not in feedback, feedback
    assert not run.written.exists()
    assert not (run.out["a"] / "pwned.json").exists()
    honest = run.classes["a"] / "aaa_honest" / f"{STEM}.py"
    assert honest.read_text(encoding="utf-8") == SOLUTION.read_text(encoding="utf-8")


def test_there_is_no_network(run: Run) -> None:
    _sandboxed("network")
    assert run.listener_connections == 0
    assert "CONNECTED" not in _feedback(run.results["network"])


def test_a_fork_bomb_leaves_no_process_behind(run: Run) -> None:
    _sandboxed("fork_bomb")
    assert run.leftover_sleepers == [], "the fork bomb's children outlived the grader"
    feedback = _feedback(run.results["fork_bomb"])
    forked = int(feedback.split("forked ")[1].split(",")[0])
    assert forked < sandbox.LIMITS_BY_NAME["RLIMIT_NPROC"], feedback


def test_files_beside_the_submission_never_run(run: Run) -> None:
    assert not _marker_of(run.marker, "beside_conftest_sitecustomize_pth").exists()
    assert run.results["beside_conftest_sitecustomize_pth"]["score"] == 100


def test_notebook_magics_and_shell_escapes_never_run(run: Run) -> None:
    result = run.results["notebook_magics"]
    assert not _marker_of(run.marker, "notebook_magics").exists()
    assert result["score"] == 100, _feedback(result)


def test_forged_scores_stay_output(run: Run) -> None:
    result = run.results["forged_output"]
    assert result["score"] == 85
    assert sum(test["score"] for test in result["tests"]) == 85
    for test in result["tests"]:  # printed text is never a result, at most "your output"
        if "score: 100/100" in test["output"] or '"score": 100' in test["output"]:
            before = test["output"].split("score: 100/100")[0].split('"score": 100')[0]
            assert "your code printed:" in before, test["output"]


def test_huge_output_is_capped_in_the_report(run: Run) -> None:
    path = run.out["b"] / "huge_output" / STEM / "results.json"
    assert path.stat().st_size < 64 * 1024, path.stat().st_size


def test_feedback_names_no_grader_internals(any_run: Run) -> None:
    for name, result in any_run.results.items():
        if name == "read_hidden_path":  # its own report names the paths it tried
            continue
        feedback = _feedback(result)
        for secret in ("graders/checking", "reference/", "Traceback (most recent call last)"):
            assert secret not in feedback, f"{name}: {secret!r} in\n{feedback}"
