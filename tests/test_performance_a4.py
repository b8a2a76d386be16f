"""Task 4.8's trusted side (graders/labs/a4_flash_attention/checks.py, timing.py; shared
pieces tests/test_performance_a3.py): the chosen configuration's checks, the standard
call's VMEM arithmetic, and the full-size time built from the grader's call with the
kernel's work measured on small problems, which must equal ``pallas_sim.estimate`` of a
correct wrapper (the student's own sweep agrees with the check)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import pallas_sim
import reference.a4_flash_attention as ref
from graders.assignments import load_harness
from graders.checks import step_model
from graders.labs.a4_flash_attention import checks, timing
from graders.registry import CheckFailure
from pallas_sim import jax, jnp

REPO = Path(__file__).resolve().parents[1]
BEST = (2048, 2048, 70.0)


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + "_perf4", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("reply", "what"), [
    ({"config": "x"}, "two ints and a float or None"),
    ({"config": [2048, 2048, 1.0]}, "outside the candidate sets"),
    ({"config": [2048, 96, None]}, "outside the candidate sets"),
    ({"config": [2048, 2048, 70]}, "outside the candidate sets"),
    ({"config": [2048, 2048]}, "outside the candidate sets"),
])
def test_replies_without_a_candidate_configuration_are_refused(reply, what):
    with pytest.raises(CheckFailure, match=what):
        checks._validate_flash_config(reply)


def test_the_vmem_arithmetic_is_the_standard_calls():
    """``timing.vmem`` (legality without tracing) equals the grader's call's VMEM."""
    for bq in timing.SIZES:
        for bkv in timing.SIZES:
            config = (bq, bkv, None)
            call = timing._standard(config, timing.small_shapes(config))
            if timing.small_steps(config) == 1:
                call = timing._standard(config, [[2, bq, 192], [2, bkv, 192], [2, bkv, 128]])
            assert not isinstance(call, str), config
            assert timing.vmem(config) == (call.vmem_bytes, call.vmem_limit_bytes), config


def test_every_small_problem_has_the_kv_step_classes():
    for config in timing.all_candidates():
        bq, bkv, _ = config
        assert timing.kv_steps(config) == min(3, ref.PERFORMANCE_Q_SHAPE[1] // bkv), config
        assert timing.small_shapes(config)[0][1] == bq, "one q block"
        assert timing.multiplicity(config).sum() == (
            ref.PERFORMANCE_Q_SHAPE[0] * (ref.PERFORMANCE_Q_SHAPE[1] // bq)
            * (ref.PERFORMANCE_Q_SHAPE[1] // bkv)), config


CORRECT = [REPO / "solutions" / "a4_flash_attention.py",
           REPO / "examples" / "submissions" / "ada_correct" / "a4_flash_attention.py",
           *sorted((REPO / "tests" / "corpus" / "variants" / "a4_flash_attention")
                   .glob("*.py"))]


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_the_check_predicts_what_the_students_own_estimate_gives(path):
    """The solution, ada's sample and the correct variants: the time built from the
    grader's call and the measured small steps equals ``pallas_sim.estimate`` of the
    student's own flash_attention at full size (to 1e-9), with MLE on and off and at
    1024-row query blocks."""
    sub = _module(path)
    configs = [BEST, (2048, 2048, None), (1024, 2048, 70.0)]
    harness = load_harness("a4")
    reply = harness.choose_flash_config(
        sub, q_shape=ref.PERFORMANCE_Q_SHAPE, v_shape=ref.PERFORMANCE_V_SHAPE,
        problems=timing.problems(), sweep=tuple(timing.key(c) for c in configs),
        concrete=tuple(timing.key(c) for c in configs))
    q = jax.ShapeDtypeStruct(ref.PERFORMANCE_Q_SHAPE, jnp.bfloat16)
    v = jax.ShapeDtypeStruct(ref.PERFORMANCE_V_SHAPE, jnp.bfloat16)
    for config in configs:
        record = checks._flash_verified(reply, config, whose="this configuration")
        got = timing.full_timeline(config, record).time_s
        want = pallas_sim.estimate(sub.flash_attention, q, q, v, sm_scale=192 ** -0.5,
                                   block_q=config[0], block_kv=config[1],
                                   max_logit_const=config[2]).timelines[0].time_s
        assert got == pytest.approx(want, rel=1e-9), config


def test_mle_off_is_diagnosed_from_the_students_own_sweep():
    text = checks._choice_diagnosis((2048, 2048, None), 3.3e-3, BEST, 2.73e-3,
                                    {BEST: 2.73e-3})
    assert text.startswith("MLE off costs 21% here"), text
    assert step_model.ratio_text(2.1, 1.0) == "2.1x slower"
