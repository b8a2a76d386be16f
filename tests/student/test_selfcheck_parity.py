"""The public self-check sees what grading sees.

* every graded task has a public check (``pallas-lab status`` shows no ``?`` for a correct
  solution);
* the public checks run with the grader's pallas_sim options (parallel grid axes shuffled
  with the grading seed) and draw from the families grading draws from: every correct
  variant of the a1, a2, a3 and a5 corpus passes them all (that every single-mistake
  mutant of all five fails its own task's public check, and no other task's unless that
  task says it depends on it, is ``tests/corpus/test_public_parity.py``);
* ``pallas-lab check`` and ``pallas-lab status`` write nothing into the student's folder
  (no ``.hypothesis/``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from graders.course.catalog import ASSIGNMENTS, assignment_for_stem
from graders.student.public import load_public_checks
from graders.student.selfcheck import SELF_CHECK_SETTINGS, check_file
from tests.corpus.everything import VARIANTS
from tests.corpus.sources import base_source
from tests.helpers.labs import stem_of

ROOT = Path(__file__).resolve().parents[2]
MINE = (stem_of("a1"), stem_of("a2"), stem_of("a3"), stem_of("a5"))
#: The self-check's profile with a fixed seed, so that this suite gives one answer; students
#: get fresh draws from the same strategies.
PINNED = settings(SELF_CHECK_SETTINGS, derandomize=True)


@pytest.mark.parametrize("assignment", sorted(ASSIGNMENTS))
def test_every_graded_task_has_a_public_check(assignment: str) -> None:
    info = ASSIGNMENTS[assignment]
    public = {check.task for check in load_public_checks(assignment)}
    missing = [task.id for task in info.graded_tasks if task.id not in public]
    assert not missing, f"{assignment}: graded tasks without a public check: {missing}"


def test_public_checks_run_with_the_grading_options() -> None:
    import pallas_sim
    from graders.grading.grade import GRADING_SIM_OPTIONS
    from graders.student.selfcheck import SIM_OPTIONS, self_check_environment
    from pallas_sim import jax, jnp, pl, pltpu

    assert SIM_OPTIONS == GRADING_SIM_OPTIONS, "the self-check shuffles as grading does"

    def order() -> list[int]:
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...]

        call = pl.pallas_call(
            kernel, grid=(8,), in_specs=[pl.BlockSpec((1, 128), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((1, 128), lambda i: (i, 0)),
            out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))
        with pallas_sim.trace() as t:
            call(jnp.zeros((8, 128), jnp.float32))
        return t.calls[-1].operands[0].block_indices[:, 0].tolist()

    assert order() == list(range(8)), "outside the self-check the grid runs in order"
    with self_check_environment():
        shuffled = order()
    with pallas_sim.config(**GRADING_SIM_OPTIONS):
        graded = order()
    assert shuffled == graded != list(range(8)), (
        f"inside the self-check the parallel axis is visited as grading visits it: "
        f"{shuffled} vs {graded}")
    assert order() == list(range(8)), "the options are restored afterwards"


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v.stem in MINE],
                         ids=lambda v: f"{v.stem[:2]}-{v.name}")
def test_a_correct_variant_passes_every_public_check(variant, tmp_path: Path) -> None:
    path = tmp_path / f"{variant.stem}.py"
    path.write_text(base_source(variant.stem, variant.name), encoding="utf-8")
    info = assignment_for_stem(variant.stem)
    report = check_file(path, info, timeout=60, profile=PINNED)
    # A variant scored below 100 (Variant.score) is correct but slower on a performance task.
    slower = {t.id for t in info.graded_tasks if t.performance} if variant.score < 100 else set()
    failing = {t.task: t.detail for t in report.tasks
               if t.status != "passed" and t.task not in slower}
    assert not failing, f"{variant.name} is correct ({variant.why}) but fails {failing}"


def test_check_and_status_write_nothing_into_the_folder(tmp_path: Path) -> None:
    for stem in MINE:
        (tmp_path / f"{stem}.py").write_text(
            (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8"), encoding="utf-8")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    for command in (["check"], ["status"]):
        done = subprocess.run([sys.executable, "-m", "graders.cli.main", *command], cwd=tmp_path,
                              text=True, capture_output=True, timeout=300, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "5.4 ✓" in done.stdout, "a correct 5.4 shows ✓ in the status table, not ?"
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before, f"pallas-lab check wrote {sorted(set(after) - set(before))}"


def test_grading_writes_nothing_into_the_folder_it_runs_from(tmp_path: Path) -> None:
    """A TA grades from any folder: grading leaves no ``.hypothesis/`` behind there."""
    (tmp_path / "a1_pallas_basics.py").write_text(
        (ROOT / "solutions" / "a1_pallas_basics.py").read_text(encoding="utf-8"),
        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    done = subprocess.run([sys.executable, "-m", "graders.cli.main", "grade",
                           "a1_pallas_basics.py"],
                          cwd=tmp_path, text=True, capture_output=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "100/100" in done.stdout, done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a1_pallas_basics.py"]
