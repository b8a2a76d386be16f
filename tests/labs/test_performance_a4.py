"""Task 4.8's trusted side (graders/labs/a4_flash_attention/hidden/checks/performance.py,
timing.py; shared pieces tests/labs/test_performance_a3.py): the chosen configuration's checks,
the standard call's VMEM arithmetic, and the full-size time built from the grader's call
with the kernel's work measured on small problems, which must equal ``pallas_sim.estimate``
of a correct wrapper (the student's own sweep agrees with the check)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import pallas_sim
import reference.a4_flash_attention as ref
from graders.checking import step_model
from graders.checking.registry import CheckFailure
from graders.course.catalog import load_harness
from graders.labs.a4_flash_attention.hidden import timing
from graders.labs.a4_flash_attention.hidden.checks import performance
from pallas_sim import jax, jnp

REPO = Path(__file__).resolve().parents[2]
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
        performance._validate_flash_config(reply)


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
        record = performance._flash_verified(reply, config, whose="this configuration")
        got = timing.full_timeline(config, record).time_s
        want = pallas_sim.estimate(sub.flash_attention, q, q, v, sm_scale=192 ** -0.5,
                                   block_q=config[0], block_kv=config[1],
                                   max_logit_const=config[2]).timelines[0].time_s
        assert got == pytest.approx(want, rel=1e-9), config


def test_mle_off_is_diagnosed_from_the_students_own_sweep():
    text = performance._choice_diagnosis((2048, 2048, None), 3.3e-3, BEST, 2.73e-3,
                                    {BEST: 2.73e-3})
    assert text.startswith("MLE off costs 21% here"), text
    assert step_model.ratio_text(2.1, 1.0) == "2.1x slower"


class _InProcess:
    """A grading session stand-in that runs the lab's harness in this process (the worker
    would run the same code): for driving a check on a trusted module."""

    def __init__(self, module) -> None:
        self.module = module

    def invoke(self, name, args, kwargs, *, harness, timeout):
        value = getattr(load_harness(harness), name)(self.module, *args, **kwargs)
        return type("Reply", (), {"value": value})()


def _variant_module(name: str):
    import types

    from tests.corpus.sources import base_source

    module = types.ModuleType(name.replace("-", "_"))
    exec(compile(base_source("a4_flash_attention", name), f"{name}.py", "exec"),
         module.__dict__)
    return module


def test_a_slower_kernel_earns_the_choice_at_its_own_best_candidate():
    """The corpus variant f32-kv-guarded-slower is correct and 18 % slower
    than the reference kernel; its best candidate is (4096, 1024, 70.0), not the
    reference's (2048, 2048, 70.0). Choosing it passes the speed check (the threshold was
    the reference kernel's time: 3 of 10), while MLE off at the same blocks fails, diagnosed
    on its measured work, projected: measured at (4096, 1024, None), its work with MLE is
    projected from the reference's MLE saving, 2.941 ms (22 %; its own kernel run there
    takes 3.221 ms, 12 %: its extra rescale by exp(0) under MLE is work the reference does
    not do, which a projection cannot see)."""
    module = _variant_module("f32-kv-guarded-slower")
    assert module.choose_flash_config() == (4096, 1024, 70.0)
    performance.flash_config_fast(_InProcess(module))  # passes: raises nothing
    _, config, record, line = performance._flash_chosen_time(_InProcess(module))
    _, ref_best_s = performance.best_flash_candidate()
    assert line.time_s > 1.1 * ref_best_s, "slower than the reference's best by > 10 %"
    module.choose_flash_config = lambda: (4096, 1024, None)
    with pytest.raises(CheckFailure, match="than \\(4096, 1024, 70.0\\), the best") as info:
        performance.flash_config_fast(_InProcess(module))
    assert info.value.diagnosis.startswith("MLE off costs 22% here"), info.value.diagnosis
    assert "projected" in info.value.diagnosis


def _attack_module(name: str):
    import types

    text = (REPO / "solutions" / "a4_flash_attention.py").read_text(encoding="utf-8") + (
        "\n\n" + (REPO / "tests" / "redteam" / "submissions" / "perf"
                   / f"{name}__a4_flash_attention.py").read_text(encoding="utf-8"))
    module = types.ModuleType(name)
    exec(compile(text, f"{name}.py", "exec"), module.__dict__)
    return module


def test_the_solutions_projected_threshold_is_the_references_best():
    """The solution counts what the reference counts: its work projected from (1024, 2048,
    None) is the reference's at every legal candidate, so the threshold is the reference's
    best, (2048, 2048, 70.0) at 2.7281 ms."""
    module = _attack_module("slow_elsewhere")
    solution = _module(REPO / "solutions" / "a4_flash_attention.py")
    for sub in (solution, module):  # the attack is the solution at its choice
        sub.choose_flash_config = lambda: (1024, 2048, None)
        _, config, record, line = performance._flash_chosen_time(_InProcess(sub))
        (fastest, best_s), _, records = performance.projected_best(config, record)
        assert fastest == BEST and best_s == pytest.approx(
            performance.best_flash_candidate()[1], rel=1e-12)
        for other in (BEST, (512, 512, None)):
            want = timing.reference_record(other)
            assert all(np.array_equal(records[other].ops[k], want.ops[k]) for k in want.ops)
        with pytest.raises(CheckFailure, match="48 % slower than \\(2048, 2048, 70.0\\)"):
            performance.flash_config_fast(_InProcess(sub))


def test_a_kernel_whose_values_are_wrong_gets_no_time():
    """The classic mistake (l not rescaled by alpha) computes wrong values on the small
    problem's checked sample: no time is given (Task 4.3 charges the mistake)."""
    import types

    source = (REPO / "solutions" / "a4_flash_attention.py").read_text(encoding="utf-8")
    wrong = "l_new = alpha * l_scratch_ref[:, :1] + p.sum(axis=1, keepdims=True)"
    assert source.count(wrong) == 2  # Task 4.3's kernel first, then 4.7's
    module = types.ModuleType("no_rescale")
    exec(compile(source.replace(wrong, "l_new = l_scratch_ref[:, :1] + p.sum(axis=1, "
                                       "keepdims=True)", 1), "no_rescale.py", "exec"),
         module.__dict__)
    module.choose_flash_config = lambda: (2048, 2048, None)
    with pytest.raises(CheckFailure, match="output at your configuration .* is wrong"):
        performance._flash_chosen_time(_InProcess(module))


def test_the_slides_start_names_both_of_its_causes():
    """The slides' starting point (1024, 2048) without MLE is slow for two reasons: MLE off,
    and block_q. Naming only MLE (an honest-student pass found it so) would charge a student
    who then turns MLE on a second time for the blocks: both are named, and MLE alone is
    said not to reach the bar."""
    slow = 3.4e-3 * 0.9  # the same blocks with MLE: still above 1.1 x the best's 2.7281 ms
    text = performance._choice_diagnosis((1024, 2048, None), 3.4e-3, BEST, 2.7281e-3,
                                    {(1024, 2048, 70.0): slow})
    assert text.startswith("MLE off costs 11% here"), text
    assert "even with MLE" in text and "block_q 2048 instead of 1024" in text, text
    only_mle = performance._choice_diagnosis((2048, 2048, None), 3.3e-3, BEST, 2.73e-3,
                                        {BEST: 2.73e-3})
    assert "instead of" not in only_mle, only_mle
