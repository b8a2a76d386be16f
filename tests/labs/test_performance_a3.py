"""Task 3.5's trusted side (graders/labs/a3_matmul/hidden/checks/performance.py, timing.py and
graders/checking/step_model.py): what it accepts from the worker's plain-data reply, and the
full-size time it predicts from the grader's standard call with the kernel's work measured
on small problems, which must equal ``pallas_sim.estimate`` of a correct wrapper (the
student's own sweep agrees with the check)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import pallas_sim
from graders.checking import step_model
from graders.checking.registry import CheckFailure
from graders.course.catalog import load_harness
from graders.labs.a3_matmul.hidden import timing
from graders.labs.a3_matmul.hidden.checks import performance
from pallas_sim import jax, jnp

REPO = Path(__file__).resolve().parents[2]
BEST = (1024, 2048, 1024)


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + "_perf", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _measured(sub, blocks: list[tuple[int, int, int]], concrete: list[tuple[int, int, int]]):
    harness = load_harness("a3")
    return harness.choose_matmul_blocks(
        sub, problems=timing.problems(), candidates=timing.SIZES,
        sweep=tuple(timing.key(b) for b in blocks),
        concrete=tuple(timing.key(b) for b in concrete))


@pytest.mark.parametrize(("reply", "what"), [
    ({"blocks": "1024"}, "tuple of three ints"),
    ({"blocks": [1024, 2048, 96]}, "outside the candidate set"),
    ({"blocks": [1024, 2048]}, "outside the candidate set"),
    ({"blocks": [1024.0, 2048, 1024]}, "outside the candidate set"),
])
def test_replies_without_three_candidate_blocks_are_refused(reply, what):
    with pytest.raises(CheckFailure, match=what):
        performance._validate_blocks(reply)


@pytest.mark.parametrize(("blocks", "what"), [
    ((1024, 1024, 2048), "do not divide"),
    ((2048, 2048, 1024), "do not fit the 32 MiB scoped VMEM"),
])
def test_blocks_that_do_not_divide_or_fit_are_refused_by_the_grader(blocks, what):
    """The grader decides on its own call (no student code): bk = 2048 does not divide
    7168; 2048 × 2048 blocks need 48 MiB of double buffers."""
    with pytest.raises(CheckFailure, match=what):
        performance._require_fits(blocks)


def _record(ops: dict, steps: int = 3, **more) -> dict:
    return {"grid": [1, 1, steps], "num_steps": steps, "ops": ops, "largest_intermediate": 4,
            "vmem_bytes": 0, "scoped_vmem_bytes": 0, **more}


@pytest.mark.parametrize("raw", [
    None, "x", {"ops": {}}, _record({"vpu_ops": [1, 2]}), _record({"vpu_ops": [1, 2, -1]}),
    _record({"vpu_ops": [1, 2, 3.0]}), _record({"made_up": [1, 2, 3]}),
    _record({"vpu_ops": [1, 2, True]}), _record({"vpu_ops": [1, 2, 1 << 70]}),
    {**_record({}), "num_steps": 4},
])
def test_hostile_records_are_refused(raw):
    with pytest.raises(CheckFailure, match="not a measurement"):
        step_model.parse_record(raw, num_steps=3)


def test_a_sample_of_another_shape_is_refused():
    raw = _record({"vpu_ops": [1, 1, 1]}, sample=np.zeros((2, 3), np.float64))
    with pytest.raises(CheckFailure, match="output sample"):
        step_model.parse_record(raw, num_steps=3, sample_shape=(2, 3))


def test_counts_that_differ_between_data_and_shapes_are_refused():
    concrete = step_model.parse_record(_record({"eup_ops": [8, 8, 8]}), num_steps=3)
    abstract = step_model.parse_record(_record({"eup_ops": [8, 0, 8]}), num_steps=3)
    assert not step_model.work_differences(concrete, concrete)
    with pytest.raises(CheckFailure, match="different work when it runs on shapes only"):
        step_model.require_same_work(concrete, abstract, where="your blocks", input="x")


def test_the_lower_bound_prunes_only_slower_candidates():
    times = {"a": 3.0, "b": 1.0, "c": 2.0, "d": 5.0}
    bounds = {"a": 2.5, "b": 0.5, "c": 1.5, "d": 4.0}
    ran = []

    def exact(k):
        ran.append(k)
        return times[k]

    assert step_model.fastest(times, bounds.__getitem__, exact) == ("b", 1.0)
    assert ran == ["b"], "every other bound is at least the best time: not simulated"


CORRECT = [REPO / "solutions" / "a3_matmul.py",
           *sorted((REPO / "tests" / "corpus" / "variants" / "a3_matmul").glob("*.py"))]
#: Variants whose wrapper's pallas_call is not the standard one: scratch_accumulator keeps
#: the running sum in an f32 scratch (Task 3.2 allows it). Their time is the standard
#: call's around their kernel, which accumulates in z there.
NOT_THE_STANDARD_CALL = {"scratch_accumulator"}


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_the_check_predicts_what_the_students_own_estimate_gives(path):
    """For the solution and the correct corpus variants: the time built from the grader's
    call and the kernel's measured small steps equals ``pallas_sim.estimate`` of the
    student's own matmul at full size (to 1e-9), at the fast candidates and at the
    lecture's 512³ and 1024³ blocks (for a wrapper that is not the standard call: the
    estimate of the standard call around their kernel)."""
    sub = _module(path)
    blocks = [BEST, (1024, 1024, 1024), (512, 512, 512), (2048, 1024, 512)]
    reply = _measured(sub, blocks, concrete=blocks)
    x = jax.ShapeDtypeStruct((4096, 7168), jnp.bfloat16)
    y = jax.ShapeDtypeStruct((7168, 18432), jnp.bfloat16)
    harness = load_harness("a3")
    for b in blocks:
        record = performance._verified(reply, b, whose="these blocks")
        got = timing.full_timeline(b, record).time_s
        if path.stem in NOT_THE_STANDARD_CALL:
            def wrapper(a, c, *, block_shape):
                return harness.matmul_kernel(sub, a, c, block_shape=block_shape)
        else:
            wrapper = sub.matmul
        want = pallas_sim.estimate(wrapper, x, y, block_shape=b).timelines[0].time_s
        assert got == pytest.approx(want, rel=1e-9), b


def test_the_vmem_arithmetic_is_the_standard_calls():
    """``timing.vmem`` (which decides legality without tracing 125 calls) equals the VMEM
    and scoped limit of the grader's standard call at every divisible candidate, and
    ``fits`` is exactly "its trace does not raise VmemOOMError"."""
    for blocks in timing.all_candidates():
        if not timing.divides(blocks):
            continue
        call = timing.small_call(blocks)
        if isinstance(call, str):
            assert not timing.fits(blocks), blocks
        else:
            assert timing.fits(blocks), blocks
            assert timing.vmem(blocks) == (call.vmem_bytes, call.vmem_limit_bytes), blocks


def test_the_fastest_candidate_is_predicted_once_per_process():
    first = performance.best_candidate()
    assert first[0] == BEST and 1.5e-3 < first[1] < 1.7e-3, (
        "the fastest legal candidate is predicted at about 1.60 ms (docs/performance-model.md)")
    assert performance.best_candidate() is first, "cached: computed once per grading process"


def test_the_solutions_projected_threshold_is_the_references_best():
    """The solution's kernel counts what the reference's counts at its blocks, so its
    projection at every other candidate is the reference's record there and the
    threshold is the reference's best (1.6030 ms at (1024, 2048, 1024) or its mirror)."""
    sub = _module(REPO / "solutions" / "a3_matmul.py")
    chosen = (512, 512, 512)
    reply = _measured(sub, [], concrete=[chosen])
    record = performance._verified(reply, chosen, whose="your blocks")
    for b in [BEST, (1024, 1024, 1024), (256, 2048, 512)]:
        got = timing.projected(b, chosen, record)
        want = timing.reference_record(b)
        assert set(got.ops) == set(want.ops)
        assert all(np.array_equal(got.ops[k], want.ops[k]) for k in want.ops), b
    (fastest, best_s), _ = performance.projected_best(chosen, record)
    assert fastest in (BEST, (2048, 1024, 1024))
    assert best_s == pytest.approx(performance.best_candidate()[1], rel=1e-12)


def _attack(name: str):
    text = (REPO / "solutions" / "a3_matmul.py").read_text(encoding="utf-8") + "\n\n" + (
        REPO / "tests" / "redteam" / "submissions" / "perf" / f"{name}__a3_matmul.py"
    ).read_text(encoding="utf-8")
    path = REPO / ".pytest_cache" / f"attack_{name}_a3.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return _module(path)


@pytest.mark.parametrize("name", ["slow_elsewhere", "raise_on_shapes_elsewhere",
                                  "scoped_hog_elsewhere"])
def test_what_a_kernel_does_at_other_blocks_cannot_raise_the_threshold(name):
    """The red team's attacks (tests/redteam/submissions/perf/): extra work, raising on
    shapes only or a 32 MiB run_scoped at every block shape but the bad choice 512³. The
    kernel runs only at its choice, where it is the solution: the threshold is projected
    from that, the reference's best, and 512³ is 2.9x slower (3 of 10, as honest)."""
    sub = _attack(name)
    chosen = (512, 512, 512)
    reply = _measured(sub, [], concrete=[chosen])
    record = performance._verified(reply, chosen, whose="your blocks")
    (fastest, best_s), _ = performance.projected_best(chosen, record)
    got_s = timing.full_timeline(chosen, record).time_s
    assert fastest in (BEST, (2048, 1024, 1024))
    assert got_s / best_s == pytest.approx(4.6138 / 1.6030, rel=1e-3)
