"""Red-team suite for the submission policy and for wrappers bound to their pallas_call.

Each submission in ``tests/redteam/submissions/policy/`` is named
``<attack>__<stem>.py`` and holds the functions an attacker replaces in the
solution of that assignment. Before the policy every one of them
earned points without solving its task: a kernel with no kernel logic read
the harness's inputs through a generator's frame (3.1 30/30), modules
re-exported by allowed ones reached the live trace list (1.3 25/25 with a
forged DMA count), rebinding a pallas_sim module attribute replaced the
grader's own pallas_call (1.1 15/15 for a wrong kernel), zeroing a ref's
public read counter hid unskipped tiles (a4 94 → 100), a decoy pallas_call
next to NumPy's product passed every wrapper check (3.2 30/30) and a wrapper
with no pallas_call kept 14/30 (3.2) and 12/20 (4.4).

The whole class, with an honest student who submits the solutions, goes
through ``pallas-lab grade --format gradescope`` once, as in production.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graders.course.catalog import ASSIGNMENTS
from tests.helpers.cli import pallas_lab

REPO = Path(__file__).resolve().parents[2]
ATTACKS_DIR = Path(__file__).resolve().parent / "submissions" / "policy"
RUN_LIMIT = 600


@dataclass(frozen=True)
class PolicyAttack:
    """One attack: its file's ``name`` and ``stem``; ``lost`` the tasks it must score 0 on
    (every other task keeps its full points; ``None``: the whole file is refused); ``says``
    the phrases its feedback must contain; ``kept``: points a lost task still earns from
    checks the attack does not touch."""

    name: str
    stem: str
    lost: tuple[str, ...] | None
    says: tuple[str, ...]
    kept: float = 0.0

    @property
    def expected(self) -> float:
        """The score the honest rest of the file earns."""
        tasks = next(a for a in ASSIGNMENTS.values() if a.stem == self.stem).tasks
        if self.lost is None:
            return 0.0
        return sum(t.points for t in tasks if t.id not in self.lost) + self.kept


ATTACKS = [
    PolicyAttack("frame_walk", "a3_matmul", None, ("access to '.gi_frame' is not allowed",)),
    # The kernel raises where it reaches for the frame, so the wrapper (the solution's) fails
    # its value and trace checks too; its argument checks (4 points) stand.
    # Task 3.5 (performance) times the same kernel in the grader's call: lost with 3.1.
    PolicyAttack("frame_walk_computed", "a3_matmul", ("3.1", "3.2", "3.5"),
                 ("reading '.gi_frame' of a generator is not allowed while grading",), kept=4),
    PolicyAttack("reexported_modules", "a1_pallas_basics", None,
                 ("import of 'dataclasses.sys' is not allowed",)),
    PolicyAttack("reexported_computed", "a1_pallas_basics", ("1.3",),
                 ("reading '.sys' of module dataclasses is not allowed while grading",)),
    PolicyAttack("module_rebinding", "a1_pallas_basics", None,
                 ("setting or deleting attributes of module pallas_sim.pl is not allowed",)),
    # A wrapper's fault is charged to the wrapper's task alone: the performance tasks 3.5 and
    # 4.8 time the honest kernel in the grader's own pallas_call and keep their points.
    PolicyAttack("decoy_call", "a3_matmul", ("3.2",),
                 ("what matmul returned is not the output of its pallas_call",)),
    PolicyAttack("no_call", "a3_matmul", ("3.2",), ("matmul made no pallas_call",)),
    PolicyAttack("no_call", "a4_flash_attention", ("4.4",),
                 ("flash_attention made no pallas_call",)),
]
#: Found by the red-team review of the policy (whole submissions, "# full submission"):
UPDATE_WRAPPER = ("update_wrapper/wraps with assigned= or updated= is not allowed",)
ATTACKS += [
    # functools.update_wrapper read and wrote attributes by name with the real getattr and
    # setattr: the live trace list, tracing.record and pl.pallas_call were within reach.
    PolicyAttack("forge_trace_record", "a4_flash_attention", None, UPDATE_WRAPPER),
    PolicyAttack("forged_call", "a3_matmul", None, UPDATE_WRAPPER),
    PolicyAttack("patch_pallas_call", "a3_matmul", None, UPDATE_WRAPPER),
    # ... and took exec from a module's private state, run by numpy's fromfunction, out of
    # the audit hook's sight (3.4 is where it lives; the rest of the file is honest, but was
    # written before Task 3.5: its predicted time is refused as no prediction of the matmul).
    PolicyAttack("unguarded_exec", "a3_matmul", ("3.4", "3.5"), UPDATE_WRAPPER, kept=8),
    # A real pallas_call with an empty kernel, NumPy's product written into its output.
    PolicyAttack("overwrite_output", "a3_matmul", ("3.1", "3.2", "3.5"),
                 ("what matmul returned is not the output of its pallas_call",)),
    # A legal str of two million newlines once took the grader to 750 MB and 9 s.
    PolicyAttack("gantt_newlines", "a2_pipelining", ("2.2",), ("render_gantt",)),
]
#: A submission of ten million characters (the grader's compile-time check once took 5 GB).
HUGE = ("huge_source", "a1_pallas_basics")

#: The reads-reset kernel raises on the tiles it tries to hide, so its causal checks fail;
#: what matters is that it never beats the honest non-skipping kernel it started from.
READS_RESET = ("reads_reset", "a4_flash_attention")


def _student(attack: str, stem: str) -> str:
    return f"{attack}__{stem}"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """results.json per student folder of the graded class."""
    base = tmp_path_factory.mktemp("policy-attacks")
    klass, out = base / "class", base / "results"
    (klass / "honest").mkdir(parents=True)
    stems = {attack.stem for attack in ATTACKS} | {READS_RESET[1]}
    for stem in stems:
        shutil.copy(REPO / "solutions" / f"{stem}.py", klass / "honest" / f"{stem}.py")
    for path in sorted(ATTACKS_DIR.glob("*__*.py")):
        name, stem = path.stem.split("__")
        folder = klass / _student(name, stem)
        folder.mkdir()
        solution = (REPO / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
        attack = path.read_text(encoding="utf-8")
        text = attack if attack.startswith("# full submission") else (
            solution + "\n\n" + attack)
        (folder / f"{stem}.py").write_text(text, encoding="utf-8")
    name, stem = HUGE
    (klass / _student(name, stem)).mkdir()
    huge = (REPO / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
    (klass / _student(name, stem) / f"{stem}.py").write_text(
        huge + "\n_BIG = [" + "1," * 5_000_000 + "]\n", encoding="utf-8")
    done = subprocess.run([*pallas_lab(), "grade", str(klass), "--format", "gradescope", "--out",
                           str(out)], cwd=base, capture_output=True, text=True,
                          timeout=RUN_LIMIT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, dict[str, Any]] = {}
    sizes = {}
    for path in out.glob("*/*/results.json"):
        sizes[f"{path.parent.parent.name}/{path.parent.name}"] = path.stat().st_size
        found[f"{path.parent.parent.name}/{path.parent.name}"] = json.loads(
            path.read_text(encoding="utf-8"))
    found["sizes"] = sizes
    return found


def _feedback(result: dict[str, Any]) -> str:
    return "\n".join(test.get("output", "") for test in result["tests"])


def _task_scores(result: dict[str, Any]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in result["tests"]:
        scores[test["number"]] = scores.get(test["number"], 0.0) + test["score"]
    return scores


def test_the_honest_student_keeps_full_marks(results: dict[str, dict[str, Any]]) -> None:
    honest = {key: r for key, r in results.items() if key.startswith("honest/")}
    assert len(honest) == 4, sorted(results)
    for key, result in honest.items():
        assert result["score"] == 100, (key, _feedback(result))


@pytest.mark.parametrize("attack", ATTACKS, ids=[f"{a.name}-{a.stem}" for a in ATTACKS])
def test_an_attack_earns_only_the_honest_rest_and_is_named(
        results: dict[str, dict[str, Any]], attack: PolicyAttack) -> None:
    result = results[f"{_student(attack.name, attack.stem)}/{attack.stem}"]
    feedback = _feedback(result)
    assert result["score"] == attack.expected, (
        f"{attack.name}: expected {attack.expected} (the tasks it does not attack keep their "
        f"points, the attacked ones lose them), got {result['score']}\n{feedback}")
    if attack.lost:
        scores = _task_scores(result)
        assert sum(scores[task] for task in attack.lost) == attack.kept, scores
    for phrase in attack.says:
        assert phrase in feedback, f"{attack.name}: the feedback does not say {phrase!r}"


def test_zeroing_a_refs_read_counter_never_beats_the_kernel_it_hides(
        results: dict[str, dict[str, Any]]) -> None:
    name, stem = READS_RESET
    result = results[f"{_student(name, stem)}/{stem}"]
    feedback = _feedback(result)
    skipping = [t for t in result["tests"] if t["number"] == "4.3" and "do no work" in t["name"]]
    assert len(skipping) == 1 and skipping[0]["score"] == 0, skipping
    assert result["score"] < 94, (
        "a kernel that computes every tile scores 94 honestly; hiding its reads must not "
        f"raise that\n{feedback}")
    assert "setting or deleting attributes of a Ref object is not allowed" in feedback


def test_a_huge_source_is_refused_before_it_is_parsed(
        results: dict[str, dict[str, Any]]) -> None:
    name, stem = HUGE
    result = results[f"{_student(name, stem)}/{stem}"]
    assert result["score"] == 0
    assert "a submission may be at most 1 MiB" in _feedback(result)


def test_what_a_submission_returns_never_swells_the_report(
        results: dict[str, dict[str, Any]]) -> None:
    sizes = results["sizes"]
    assert sizes, "results.json files were written"
    largest = max(sizes, key=sizes.get)
    assert sizes[largest] < 256 * 1024, (
        f"{largest}'s results.json is {sizes[largest]} bytes: what a submission returns or "
        "prints reaches the report only capped")
