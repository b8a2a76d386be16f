"""Red team of the performance-graded tasks (3.5, and 4.8 / 5.7 once they are graded the
same way): policy-clean submissions that try to earn the speed points without the right
choice, graded through the real CLI (``pallas-lab grade CLASS --format gradescope``).

Each submission in ``tests/redteam/submissions/perf/`` is named ``<attack>__<stem>.py`` and
holds the functions the attacker replaces in the solution of that assignment (appended to
it, later definitions win). The class, with an honest student who submits the solution and
an honest student who makes the same bad choice as the attacks, is graded once.

Two kinds of case:

* ``HOLES`` and ``COUNTING_HOLES``: attacks that worked when they were written. The test
  asserts the honest outcome (the task's points of the honest bad choice), so it fails
  while the hole is open.
  The three Task 3.5 holes share one cause: the threshold is "the best candidate for your
  own kernel", capped by the kernel's verified time at the reference's best blocks, and
  both are the attacker's to raise: a kernel that is correct and does the same work on
  data and on shapes, but does more work (or cannot run) at every block shape except its
  bad choice, makes that choice its own best. The counting holes: ``jax.nn.softmax`` and
  ``jax.nn.logsumexp`` are counted as one transcendental op on their result, so a correct
  Flash or Splash kernel written with them is predicted faster than the fastest legal
  candidate (and a wrong choice earns 4.8's and 5.7's speed points).
* ``CONTAINED``: attacks that are stopped; kept as regression tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import pallas_lab

REPO = Path(__file__).resolve().parents[2]
ATTACKS_DIR = Path(__file__).resolve().parent / "submissions" / "perf"
RUN_LIMIT = 900
#: The lecture's 512^3 blocks with the solution's kernel: legal, 2.9x slower than the
#: fastest legal candidate (1.603 ms at (1024, 2048, 1024)).
BAD_CHOICE_MS = 4.6138


@dataclass(frozen=True)
class PerfAttack:
    """One attack file ``<name>__<stem>.py``: on ``task`` it may earn at most ``points``
    (what its honest counterpart earns); ``says``: phrases its feedback must contain;
    ``others_kept``: every other task keeps the solution's points; ``predicted_ms``: the
    predicted time the gradebook must show, when one is recorded (None: no check)."""

    name: str
    stem: str
    task: str
    points: float
    says: tuple[str, ...] = ()
    others_kept: bool = True
    predicted_ms: float | None = None
    at_least_ms: float | None = None


HOLES = [
    # Dead vector ops at every block shape but 512^3: 3.5 3/10 -> 10/10, 4.614 ms.
    PerfAttack("slow_elsewhere", "a3_matmul", "3.5", 3.0,
               ("the best candidate for your own kernel",), predicted_ms=BAD_CHOICE_MS),
    # Raises on shapes only at every other candidate, slow on data and shapes at the
    # reference's best: 3.5 3/10 -> 10/10, 4.614 ms.
    PerfAttack("raise_on_shapes_elsewhere", "a3_matmul", "3.5", 3.0,
               ("the best candidate for your own kernel",), predicted_ms=BAD_CHOICE_MS),
    # A 32 MiB run_scoped scratch at every other candidate (no detection at all), slow at
    # the reference's best: 3.5 3/10 -> 10/10, 4.614 ms.
    PerfAttack("scoped_hog_elsewhere", "a3_matmul", "3.5", 3.0,
               ("the best candidate for your own kernel",), predicted_ms=BAD_CHOICE_MS),
    # Task 4.8 graded the same way (the best candidate for your own kernel): the solution's
    # kernel plus dead vector ops at every configuration but (1024, 2048, MLE off), the
    # solution's 4.043 ms (+48 %, 3/10).
    PerfAttack("slow_elsewhere", "a4_flash_attention", "4.8", 3.0, predicted_ms=4.0431),
]

COUNTING_HOLES = [
    # jax.nn.softmax / logsumexp counted as one transcendental op: correct Flash Attention
    # at (2048, 2048, MLE off), the solution's 3.241 ms (+19 %, 3/10), predicted 2.495 ms
    # (8.5 % under the fastest legal candidate, 2.728 ms): 4.8 3/10 -> 10/10, 4.3/4.4 kept.
    PerfAttack("composite_softmax", "a4_flash_attention", "4.8", 3.0, at_least_ms=3.241),
    # The same in Splash at (1024, 2048) for every mask: the solution's 11.987 + 8.414 +
    # 8.414 ms (+25 % each, 1/10), predicted 9.760 + 6.832 + 6.832 ms: 5.7 1/10 -> 10/10.
    PerfAttack("composite_softmax", "a5_splash_attention", "5.7", 1.0, at_least_ms=28.815),
]

CONTAINED = [
    # The honest bad choice itself: the baseline every hole is compared with.
    PerfAttack("bad_choice", "a3_matmul", "3.5", 3.0,
               ("(512, 512, 512) are predicted 2.9x slower",), predicted_ms=BAD_CHOICE_MS),
    # float8 products on data and on shapes alike. pallas_sim refuses float8 by every
    # spelling, as it refuses jnp.float8_e4m3fn: the kernel raises (UnsupportedJaxAPIError)
    # in the measured run, no time, 0/10.
    PerfAttack("fp8_everywhere", "a3_matmul", "3.5", 0.0,
               ("refuses float8_e4m3fn by every spelling",), others_kept=False),
    # Dead vector ops at every tiling but (1024, 2048): 5.7's bar is projected from the
    # kernel's work at its choice, never run at the other tilings, so they buy nothing
    # (1/10), as for 3.5 and 4.8.
    PerfAttack("slow_elsewhere", "a5_splash_attention", "5.7", 1.0),
    # Both Flash products in float8 for bf16 inputs, on data and shapes alike: refused as
    # above (and 4.3's drawn cases fail): no time, 0/10.
    PerfAttack("fp8_products", "a4_flash_attention", "4.8", 0.0,
               ("refuses float8_e4m3fn by every spelling",), others_kept=False),
    # Half the products only at the lecture's full size: never run there, honest time.
    PerfAttack("full_size_shortcut", "a3_matmul", "3.5", 3.0,
               ("(512, 512, 512) are predicted",), predicted_ms=BAD_CHOICE_MS),
]


def _student(attack: PerfAttack) -> str:
    return f"{attack.name}__{attack.stem}"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """results.json per "<student>/<stem>" of the graded class."""
    base = tmp_path_factory.mktemp("perf-attacks")
    klass, out = base / "class", base / "results"
    (klass / "honest").mkdir(parents=True)
    attacks = [*HOLES, *COUNTING_HOLES, *CONTAINED]
    for stem in {attack.stem for attack in attacks}:
        shutil.copy(REPO / "solutions" / f"{stem}.py", klass / "honest" / f"{stem}.py")
    for attack in attacks:
        folder = klass / _student(attack)
        folder.mkdir()
        solution = (REPO / "solutions" / f"{attack.stem}.py").read_text(encoding="utf-8")
        text = (ATTACKS_DIR / f"{attack.name}__{attack.stem}.py").read_text(encoding="utf-8")
        (folder / f"{attack.stem}.py").write_text(solution + "\n\n" + text, encoding="utf-8")
    done = subprocess.run([*pallas_lab(), "grade", str(klass), "--jobs", "2", "--format",
                           "gradescope", "--out", str(out)], cwd=base, capture_output=True,
                          text=True, timeout=RUN_LIMIT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return {f"{p.parent.parent.name}/{p.parent.name}": json.loads(p.read_text("utf-8"))
            for p in out.glob("*/*/results.json")}


def _feedback(result: dict[str, Any]) -> str:
    return "\n".join(test.get("output", "") for test in result["tests"])


def _task_scores(result: dict[str, Any]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in result["tests"]:
        scores[test["number"]] = scores.get(test["number"], 0.0) + test["score"]
    return scores


def _predicted_ms(result: dict[str, Any]) -> list[float]:
    """Every ``predicted_ms`` the checks recorded (pallas-lab's record in extra_data)."""
    checks = result.get("extra_data", {}).get("pallas_lab", {}).get("checks", [])
    return [float(c["measures"]["predicted_ms"]) for c in checks
            if isinstance(c, dict) and "predicted_ms" in (c.get("measures") or {})]


def _assert_honest_outcome(results: dict[str, dict[str, Any]], attack: PerfAttack) -> None:
    result = results[f"{_student(attack)}/{attack.stem}"]
    feedback = _feedback(result)
    scores = _task_scores(result)
    assert scores[attack.task] <= attack.points, (
        f"{attack.name}: Task {attack.task} earned {scores[attack.task]} "
        f"(the honest outcome is {attack.points})", scores, _predicted_ms(result))
    if attack.others_kept:
        honest = _task_scores(results[f"honest/{attack.stem}"])
        others = {task: points for task, points in scores.items() if task != attack.task}
        assert others == {task: honest[task] for task in others}, (
            "the attack is graded on its own task only", scores)
    if attack.predicted_ms is not None:
        assert _predicted_ms(result) == [pytest.approx(attack.predicted_ms, rel=1e-4)], (
            "the gradebook shows the honest predicted time of the choice")
    if attack.at_least_ms is not None:
        for got in _predicted_ms(result):
            assert got >= 0.97 * attack.at_least_ms, (
                f"{attack.name}: predicted {got:.3f} ms, below the {attack.at_least_ms} ms "
                "an honest kernel doing the same work gets at this choice")
    for phrase in attack.says:
        assert phrase in feedback, (phrase, feedback[-3000:])


def test_the_honest_student_keeps_full_marks(results: dict[str, dict[str, Any]]) -> None:
    honest = {key: r for key, r in results.items() if key.startswith("honest/")}
    assert honest, sorted(results)
    for key, result in honest.items():
        assert result["score"] == 100, (key, _feedback(result)[-3000:])


@pytest.mark.parametrize("attack", HOLES, ids=[f"{a.name}-{a.stem}" for a in HOLES])
def test_a_bad_choice_earns_no_speed_points_whatever_the_kernel_does_elsewhere(
        results: dict[str, dict[str, Any]], attack: PerfAttack) -> None:
    """Fails while the hole is open: the attack earns the speed points of a choice 2.9x
    slower than the fastest legal candidate."""
    _assert_honest_outcome(results, attack)


@pytest.mark.parametrize("attack", COUNTING_HOLES,
                         ids=[f"{a.name}-{a.stem}" for a in COUNTING_HOLES])
def test_a_composite_softmax_costs_what_its_parts_cost(results: dict[str, dict[str, Any]],
                                                      attack: PerfAttack) -> None:
    """Fails while the hole is open: ``jax.nn.softmax`` / ``jax.nn.logsumexp`` in a correct
    kernel buy a predicted time below the honest kernel's and the speed points of a wrong
    choice (checked under the current absolute thresholds of 4.8 and 5.7)."""
    _assert_honest_outcome(results, attack)


@pytest.mark.parametrize("attack", CONTAINED, ids=[f"{a.name}-{a.stem}" for a in CONTAINED])
def test_contained_attacks_stay_contained(results: dict[str, dict[str, Any]],
                                          attack: PerfAttack) -> None:
    _assert_honest_outcome(results, attack)


def test_a_kernel_value_shows_no_data_in_its_repr() -> None:
    """Fails while the hole is open. In JAX a value inside a kernel is a tracer: its
    ``repr``/``str``/``format`` show shape and dtype, never data, so Python control flow
    cannot depend on the data. pallas_sim's ``Traced<float32[8, 128]>[[0. 0. ...`` shows
    the values, and a shapes-only run (``pallas_sim.estimate``) shows zeros: the channel
    every "detect being measured in the kernel body" attack uses
    (``raise_on_shapes_elsewhere__a3_matmul.py`` here; the fp8 under estimate cases of
    tests/redteam/submissions/performance/)."""
    import numpy as np

    import pallas_sim
    from pallas_sim import jax, jnp, pl

    seen: list[tuple[str, ...]] = []

    def kernel(x_ref, o_ref):
        block = x_ref[...]
        seen.append((repr(block), str(block), f"{block}", repr(block[0, 0])))
        o_ref[...] = block

    def run(x):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), grid=(1,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (0, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (0, 0)))(x)

    run(np.full((8, 128), 2.5, np.float32))
    run(np.full((8, 128), -1.0, np.float32))
    pallas_sim.estimate(run, jax.ShapeDtypeStruct((8, 128), jnp.float32))
    assert seen[0] == seen[1] == seen[2], (
        "what a kernel value prints depends on its data", [s[3] for s in seen])
