"""Task 5.7's trusted timing: the grader's full-size Splash trace with
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
from graders.checking import step_model
from graders.course.catalog import load_harness
from graders.labs.a5_splash_attention.hidden import splash_timing as st

ROOT = Path(__file__).resolve().parents[2]
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


def test_harness_and_grader_build_the_same_pattern():
    assert np.array_equal(harness.small_pattern(512, 2048), st.small_pattern(512, 2048))


def _record(problem, raw, rows=None):
    shape = None if rows is None else (rows, st.DV)
    record = step_model.parse_record(raw, num_steps=len(problem.table.rows),
                                     sample_shape=shape)
    assert isinstance(record, step_model.StepRecord), record
    return record


def _solution_work(blocks, masks=ref.PERFORMANCE_MASKS):
    problem = st.small_problem(*blocks, masks)
    (raw,) = harness.choose_splash_blocks(sol, [problem.request()], head_dim=st.D,
                                          value_dim=st.DV, sm_scale=st.SCALE)
    return st.class_work(problem, _record(problem, raw))


@pytest.mark.parametrize(("kind", "blocks"), SOME)
def test_an_honest_kernel_s_time_is_what_estimate_gives_its_wrapper(kind, blocks):
    """The student's own sweep (``pallas_sim.estimate`` of a correct wrapper at full size)
    and the grader's computed time agree for every mask and tiling."""
    work = _solution_work(blocks)
    got = st.full_time(kind, *blocks, work).time_s
    info = ref.performance_mask_info(kind, *blocks)
    want = pallas_sim.estimate(sol.splash_attention, Q, Q, V, info,
                               sm_scale=st.SCALE).timelines[0].time_s
    assert got == pytest.approx(want, rel=1e-12), (kind, blocks, got, want)
    assert st.time_floor(kind, *blocks, work) <= got


def test_the_concrete_run_of_the_solution_matches_dense_attention_and_its_shapes_run():
    problem = st.small_problem(2048, 1024, ("causal",))
    rows = st.sample_rows(problem, 3)
    concrete, shapes = harness.choose_splash_blocks(
        sol, [{**problem.request(), "seed": 3, "rows": rows}, problem.request()],
        head_dim=st.D, value_dim=st.DV, sm_scale=st.SCALE)
    want = st.expected_rows(problem, 3, rows)
    real = _record(problem, concrete, len(rows))
    assert np.abs(real.sample - want).max() < 1e-5
    assert not step_model.work_differences(real, _record(problem, shapes))


def test_a_class_is_charged_its_most_expensive_step():
    problem = st.small_problem(2048, 2048)  # rows (P), (P, F, P), (F, P)
    classes = problem.table.classes
    assert classes[3] == classes[5] == (1, False, True)
    record = step_model.StepRecord(
        ops={"vpu_ops": np.array([1, 2, 3, 9, 5, 4], np.int64)}, num_steps=6,
        largest_intermediate=0, scoped_vmem_bytes=0)
    work = st.class_work(problem, record)
    by_class = dict(zip(work.labels, work.record.ops["vpu_ops"].tolist(), strict=True))
    assert by_class == {(1, True, True): 1, (1, True, False): 2, (2, False, False): 3,
                        (1, False, True): 9, (2, True, False): 5}


def test_a_tiling_over_the_scoped_vmem_has_no_time():
    with pytest.raises(pallas_sim.VmemOOMError, match="limit 32.00M"):
        st.full_time("causal", 4096, 4096, _solution_work((2048, 2048)))


@pytest.mark.parametrize("kind", ref.PERFORMANCE_MASKS)
def test_the_solutions_projected_bar_is_the_references_best(kind):
    """The solution's work measured at (1024, 2048) (the §6.2 table's blocks, +25 %) and
    projected onto every legal candidate from the reference's: the bar is the reference
    kernel's best time for the mask, and the candidate the reference's best."""
    from graders.labs.a5_splash_attention.hidden.checks import performance

    chosen, masks = (1024, 2048), (kind,)
    work = _solution_work(chosen, masks)
    legal = performance._legal_candidates()
    works = {b: st.projected_work(kind, b, chosen, masks, work) for b in legal}
    found = step_model.fastest(list(works), lambda b: st.time_floor(kind, *b, works[b]),
                               lambda b: st.full_time(kind, *b, works[b]).time_s)
    best = tuple(ref.BEST_SPLASH_BLOCKS[kind])
    assert found is not None
    assert found[1] == pytest.approx(ref.predicted_splash_time(kind, best), rel=1e-9)
    assert st.full_time(kind, *chosen, work).time_s > 1.1 * found[1]
