"""A lab's harness and its reference wrapper make the same pallas_call.

The grader runs a student's kernel in the lab's harness (``graders/labs/<stem>/hidden/harness.py``,
the intended pallas_call written for the worker) and compares the student's wrapper with
the reference's (``reference/<stem>.py``). The reference does not import the harness (the
imports point one way: ``pallas_sim`` <- ``reference`` <- ``graders``), so the two calls
are written twice; this test is what warns if they drift: the reference kernel run in the
harness must give the reference wrapper's values through the same grid, semantics, block
shapes, block index at every step, DMAs, scratch and VMEM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pallas_sim
import reference.a1_pallas_basics as ref_a1
import reference.a3_matmul as ref_a3
import reference.a4_flash_attention as ref_a4
import reference.a5_splash_attention as ref_a5
from graders.course.catalog import load_harness


def _rand(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


def _a1() -> tuple[Callable[[], Any], Callable[[], Any]]:
    x, y = _rand((40, 300), 1), _rand((40, 300), 2)
    harness = load_harness("a1")
    return (lambda: ref_a1.blocked_add(x, y, block_shape=(16, 128)),
            lambda: harness.add_kernel(ref_a1, x, y, (16, 128)))


def _a3() -> tuple[Callable[[], Any], Callable[[], Any]]:
    x, y = _rand((32, 48), 3), _rand((48, 64), 4)
    kwargs = {"block_shape": (16, 32, 16), "activation": "relu"}
    harness = load_harness("a3")
    return (lambda: ref_a3.matmul(x, y, **kwargs),
            lambda: harness.matmul_kernel(ref_a3, x, y, **kwargs))


def _a4() -> tuple[Callable[[], Any], Callable[[], Any]]:
    q, k, v = _rand((4, 32, 8), 5), _rand((2, 32, 8), 6), _rand((2, 32, 16), 7)
    kwargs = {"causal": True, "block_q": 16, "block_kv": 8}
    harness = load_harness("a4")
    return (lambda: ref_a4.flash_attention(q, k, v, **kwargs),
            lambda: harness.flash_attention_kernel(ref_a4, q, k, v, sm_scale=8 ** -0.5,
                                                   **kwargs))


def _a5() -> tuple[Callable[[], Any], Callable[[], Any]]:
    q, k, v = _rand((2, 32, 8), 8), _rand((2, 32, 8), 9), _rand((2, 32, 16), 10)
    info = ref_a5.build_mask_info(ref_a5.local_mask(32, (8, 0)), 8, 8)
    harness = load_harness("a5")
    return (lambda: ref_a5.splash_attention(q, k, v, info, sm_scale=0.5),
            lambda: harness.splash_attention_kernel(ref_a5, q, k, v, tuple(info), 0.5))


#: Per lab with a harness: (the reference wrapper run, the reference kernel run in the
#: harness) on one small input that has several blocks on every grid axis.
CALLS = {"a1": _a1, "a3": _a3, "a4": _a4, "a5": _a5}


def _summary(call: Any) -> dict[str, Any]:
    return {
        "grid": tuple(call.grid),
        "dimension semantics": tuple(call.dimension_semantics),
        "operands": [(op.role, op.memory_space, tuple(op.shape), str(op.dtype),
                      None if op.block_shape is None else tuple(op.block_shape),
                      op.dma_count,
                      None if op.block_indices is None else np.asarray(op.block_indices).tolist())
                     for op in call.operands],
        "VMEM bytes": call.vmem_bytes,
        "SMEM bytes": call.smem_bytes,
    }


@pytest.mark.parametrize("lab", sorted(CALLS))
def test_the_harness_call_is_the_reference_wrappers_call(lab: str) -> None:
    wrapper, in_harness = CALLS[lab]()
    with pallas_sim.trace() as by_wrapper:
        want = wrapper()
    with pallas_sim.trace() as by_harness:
        got = in_harness()
    assert len(by_wrapper.calls) == len(by_harness.calls) == 1
    expected, actual = _summary(by_wrapper.calls[0]), _summary(by_harness.calls[0])
    for field in expected:
        assert actual[field] == expected[field], (
            f"{lab}: the harness's pallas_call and the reference wrapper's differ in {field}")
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=1e-6, atol=1e-6)


def test_every_lab_with_a_harness_is_compared() -> None:
    from graders.course.catalog import harness_files

    assert {name for name in harness_files() if not name.endswith("_public")} == set(CALLS)
