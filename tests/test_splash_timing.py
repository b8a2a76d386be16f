"""Task 5.7's trusted timing (issue 23, items 1-2): the grader's full-size Splash trace with
each step's op counts taken from its class in a small measured run.

What must hold: the fast tile tables are the reference's MaskInfo; the small problems hold
exactly the classes they claim and are what the reference builds from their dense mask;
the harness and the trusted side build the same pattern and inputs; and, for an honest
kernel, the time computed this way is the one ``pallas_sim.estimate`` gives its wrapper at
full size (the student's own sweep agrees with the check).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import pallas_sim
import reference.a5_splash_attention as ref
from graders.assignments import load_harness
from graders.checks import step_classes
from graders.labs.a5_splash_attention import splash_timing as st

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("solution_a5_timing",
                                               ROOT / "solutions" / "a5_splash_attention.py")
sol = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sol)
harness = load_harness("a5")
Q = pallas_sim.jax.ShapeDtypeStruct((st.HEADS, st.LENGTH, st.D), pallas_sim.jnp.bfloat16)
V = pallas_sim.jax.ShapeDtypeStruct((st.HEADS, st.LENGTH, st.DV), pallas_sim.jnp.bfloat16)
#: Tilings spread over the candidates (the full 72 take the reference's builder 8 s).
SOME = [("causal", (2048, 2048)), ("causal", (256, 1024)), ("local", (512, 1024)),
        ("local", (4096, 2048)), ("document", (4096, 256)), ("document", (2048, 4096))]


@pytest.mark.parametrize(("kind", "blocks"), SOME)
def test_the_tile_tables_are_the_reference_mask_info(kind, blocks):
    info = ref.performance_mask_info(kind, *blocks)
    table = st.tile_table(kind, *blocks)
    for name, got in (("active_rows", table.rows), ("active_cols", table.cols),
                      ("block_mask", table.kinds), ("mask_next", table.nxt),
                      ("bounds_start", table.starts), ("bounds_end", table.ends)):
        assert np.array_equal(got, getattr(info, name)), name
    assert table.patterns == max(1, len(info.partial_mask_blocks))


@pytest.mark.parametrize("blocks", [(2048, 2048), (256, 512), (4096, 1024), (1024, 4096)])
def test_a_small_problem_is_the_reference_mask_info_of_its_mask_and_has_every_class(blocks):
    problem = st.small_problem(*blocks)
    mask = problem.mask_rows(np.arange(problem.length_q))
    info = ref.build_mask_info(mask, *blocks)
    for name, got in (("active_rows", problem.table.rows), ("active_cols", problem.table.cols),
                      ("block_mask", problem.table.kinds), ("mask_next", problem.table.nxt),
                      ("bounds_start", problem.table.starts),
                      ("bounds_end", problem.table.ends)):
        assert np.array_equal(got, getattr(info, name)), name
    assert len(info.partial_mask_blocks) <= 1
    assert set(problem.table.classes) == st.classes_at(*blocks)
    for kind in ref.PERFORMANCE_MASKS:
        assert set(st.tile_table(kind, *blocks).classes) <= set(problem.table.classes)


def test_harness_and_grader_build_the_same_pattern_and_inputs():
    assert np.array_equal(harness.small_pattern(512, 2048), st.small_pattern(512, 2048))
    problem = st.small_problem(1024, 1024)
    mine = st.small_inputs(problem, 7)
    theirs = harness.small_inputs((problem.length_q, problem.length_kv), st.D, st.DV, 7)
    for a, b in zip(mine, theirs, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint16), b.view(np.uint16))


def _solution_per_class(blocks, masks=ref.PERFORMANCE_MASKS):
    problem = st.small_problem(*blocks, masks)
    (record,) = harness.choose_splash_blocks(sol, [problem.request()], head_dim=st.D,
                                             value_dim=st.DV, sm_scale=st.SCALE)
    counts = step_classes.read_counts(record["counts"], len(problem.table.rows))
    return st.class_counts(problem, counts)


@pytest.mark.parametrize(("kind", "blocks"), SOME)
def test_an_honest_kernel_s_time_is_what_estimate_gives_its_wrapper(kind, blocks):
    """The student's own sweep (``pallas_sim.estimate`` of a correct wrapper at full size)
    and the grader's computed time agree for every mask and tiling."""
    per_class = _solution_per_class(blocks)
    got = st.full_time(kind, *blocks, per_class).time_s
    info = ref.performance_mask_info(kind, *blocks)
    want = pallas_sim.estimate(sol.splash_attention, Q, Q, V, info,
                               sm_scale=st.SCALE).timelines[0].time_s
    assert got == pytest.approx(want, rel=1e-12), (kind, blocks, got, want)
    assert st.time_floor(kind, *blocks, per_class) <= got


def test_the_concrete_run_of_the_solution_matches_dense_attention_and_its_shapes_run():
    problem = st.small_problem(2048, 1024, ("causal",))
    rows = st.sample_rows(problem, 3)
    concrete, shapes = harness.choose_splash_blocks(
        sol, [{**problem.request(), "seed": 3, "rows": rows}, problem.request()],
        head_dim=st.D, value_dim=st.DV, sm_scale=st.SCALE)
    want = st.expected_rows(problem, 3, rows)
    assert np.abs(concrete["rows"] - want).max() < 1e-5
    steps = len(problem.table.rows)
    assert not step_classes.counts_differ(step_classes.read_counts(concrete["counts"], steps),
                                          step_classes.read_counts(shapes["counts"], steps))


@pytest.mark.parametrize("bad", [
    [], {"vpu_ops": [1, 2]}, {"vpu_ops": [1, -2, 3]}, {"vpu_ops": [1, 2.0, 3]},
    {"vpu_ops": [1, True, 3]}, {"secret": [1, 2, 3]}, {"vpu_ops": [1, 2, 1 << 60]},
    {"mxu_flops_": [1, 2, 3]}])
def test_counts_that_are_not_per_step_op_counts_are_refused(bad):
    with pytest.raises(step_classes.CountsRefused):
        step_classes.read_counts(bad, 3)


def test_a_class_is_charged_its_most_expensive_step():
    counts = {"vpu_ops": np.array([5, 9, 7]), "vector_ops": np.array([1, 1, 4])}
    assert step_classes.per_class(counts, ["a", "b", "a"]) == {
        "a": {"vpu_ops": 7, "vector_ops": 4}, "b": {"vpu_ops": 9, "vector_ops": 1}}


def test_a_tiling_over_the_scoped_vmem_has_no_time():
    with pytest.raises(pallas_sim.VmemOOMError, match="limit 32.00M"):
        st.full_time("causal", 4096, 4096, _solution_per_class((2048, 2048)))
