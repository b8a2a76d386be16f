"""Public checks of a1_pallas_basics (lecture §2): worked answers and ``x + y`` oracles."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from graders.student.public import Api, Mismatch, arrays, assert_close, public_check, seeds

A = "a1"
MiB = 1 << 20


@st.composite
def blocked_pairs(draw, dividing: bool = False) -> dict:
    """x, y f32 of a drawn 2-D shape and a block_shape; edges ragged unless ``dividing``."""
    bm, bn = draw(st.sampled_from([1, 8, 16])), draw(st.sampled_from([8, 128]))
    nm, nn = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    m = nm * bm if dividing else draw(st.integers(1, nm * bm))
    n = nn * bn if dividing else draw(st.integers(1, nn * bn))
    return {"x": arrays((m, n), draw(seeds)), "y": arrays((m, n), draw(seeds)),
            "block_shape": (bm, bn)}


@public_check(A, "1.1", "add_kernel in the standard pallas_call writes x + y in every block")
def add_kernel_values(api: Api) -> None:
    """Task 1.1: add_kernel in the standard pallas_call writes x + y in every block."""
    def body(case: dict) -> None:
        got = api.kernel("a1", "add_kernel", case["x"], case["y"], case["block_shape"])
        assert_close(got, case["x"] + case["y"], rtol=1e-6, atol=1e-6, what="the output")
    api.run_property(blocked_pairs(), body)


@public_check(A, "1.2", "blocked_add(x, y, block_shape=...) equals x + y (ragged shapes too)")
def blocked_add_values(api: Api) -> None:
    """Task 1.2: blocked_add(x, y, block_shape=...) equals x + y (ragged shapes too)."""
    def body(case: dict) -> None:
        got = api.call("blocked_add", case["x"], case["y"], block_shape=case["block_shape"])
        assert_close(got.value, case["x"] + case["y"], rtol=1e-6, atol=1e-6,
                     what="blocked_add's result")
    api.run_property(blocked_pairs(), body)


@public_check(A, "1.2", "worked answer: f32[2048, 2048] with (512, 512) blocks: grid (4, 4), "
                        "reads 32 MiB, writes 16 MiB, 6 MiB of VMEM (lecture §2.2)")
def blocked_add_worked(api: Api) -> None:
    """Task 1.2: worked answer: f32[2048, 2048] with (512, 512) blocks: grid (4, 4), reads 32
    MiB, writes 16 MiB, 6 MiB of VMEM (lecture §2.2).
    """
    x = np.ones((2048, 2048), np.float32)
    result = api.call("blocked_add", x, x, block_shape=(512, 512))
    if not result.traces:
        raise Mismatch("blocked_add made no pallas_call", expected="one pl.pallas_call")
    call = result.traces[-1]
    got = (tuple(call.grid), call.hbm_bytes_read / MiB, call.hbm_bytes_written / MiB,
           call.vmem_bytes / MiB)
    expected = ((4, 4), 32.0, 16.0, 6.0)
    if got != expected:
        raise Mismatch("the pallas_call differs from the lecture's",
                       input="x = y = f32[2048,2048], block_shape = (512, 512)",
                       expected="grid (4, 4), read 32 MiB, written 16 MiB, VMEM 6 MiB",
                       got=f"grid {got[0]}, read {got[1]:g} MiB, written {got[2]:g} MiB, "
                           f"VMEM {got[3]:g} MiB")


@public_check(A, "1.3", "bias_add(x, bias) equals x + bias")
def bias_add_values(api: Api) -> None:
    """Task 1.3: bias_add(x, bias) equals x + bias."""
    def body(case: dict) -> None:
        bias = case["y"][:1]
        got = api.call("bias_add", case["x"], bias, block_shape=case["block_shape"])
        assert_close(got.value, case["x"] + bias, rtol=1e-6, atol=1e-6, what="bias_add's result")
    api.run_property(blocked_pairs(dividing=True), body)


@public_check(A, "1.3", "worked answer: f32[1024, 1024] with (128, 128) blocks makes "
                        "2·64 + 8 = 136 DMAs (lecture §2.3)")
def bias_add_worked(api: Api) -> None:
    """Task 1.3: worked answer: f32[1024, 1024] with (128, 128) blocks makes 2·64 + 8 = 136 DMAs
    (lecture §2.3).
    """
    x, bias = np.zeros((1024, 1024), np.float32), np.ones((1, 1024), np.float32)
    result = api.call("bias_add", x, bias, block_shape=(128, 128))
    dmas = sum(call.dma_count for call in result.traces)
    if dmas != 136:
        raise Mismatch("bias_add does not fetch each bias block once per column of blocks",
                       input="x = f32[1024,1024], bias = f32[1,1024], block_shape = (128, 128)",
                       expected="136 DMAs (64 x blocks + 8 bias blocks + 64 write-backs)",
                       got=f"{dmas} DMAs" + (" (the column-block axis is the inner one)"
                                             if dmas == 192 else ""))


@public_check(A, "1.4", "accumulate_inplace(acc, x) returns acc itself, holding acc + x")
def accumulate_values(api: Api) -> None:
    """Task 1.4: accumulate_inplace(acc, x) returns acc itself, holding acc + x."""
    def body(case: dict) -> None:
        acc, x = case["x"].copy(), case["y"]
        expected = acc + x
        got = api.call("accumulate_inplace", acc, x, block_shape=case["block_shape"])
        assert_close(got.value, expected, rtol=1e-6, atol=1e-6, what="the result")
        if got.returned_arg != 0:
            raise Mismatch("the result is a new array, not acc updated in place",
                           expected="acc itself (input_output_aliases={0: 0})",
                           got="another array")
    api.run_property(blocked_pairs(dividing=True), body)


@public_check(A, "1.5", "worked answers: 48 MiB, 192 MiB unblocked; 6 MiB with (512, 512) "
                        "blocks (lecture §2.2)")
def vmem_worked(api: Api) -> None:
    """Task 1.5: worked answers: 48 MiB, 192 MiB unblocked; 6 MiB with (512, 512) blocks (lecture
    §2.2).
    """
    f32 = ["float32"] * 3
    cases = [([(2048, 2048)] * 3, None, 48), ([(4096, 4096)] * 3, None, 192),
             ([(4096, 4096)] * 3, (512, 512), 6)]
    for shapes, block, mib in cases:
        got = api.call("vmem_bytes", shapes, f32, block).value
        if got != mib * MiB:
            raise Mismatch("vmem_bytes differs from the lecture",
                           input=f"shapes = {shapes}, block_shape = {block}",
                           expected=f"{mib * MiB} ({mib} MiB)", got=repr(got))


@public_check(A, "1.5", "vmem_bytes follows the formula: whole arrays once, or buffer_count "
                        "buffers of one block per operand")
def vmem_formula(api: Api) -> None:
    """Task 1.5: vmem_bytes follows the formula: whole arrays once, or buffer_count buffers of
    one block per operand.
    """
    @st.composite
    def cases(draw) -> dict:
        n = draw(st.integers(1, 4))
        shapes = [(draw(st.integers(1, 64)), draw(st.integers(1, 512))) for _ in range(n)]
        dtypes = [draw(st.sampled_from(["float32", "bfloat16", "int8"])) for _ in range(n)]
        block = draw(st.one_of(st.none(), st.tuples(st.integers(1, 64), st.integers(1, 512))))
        return {"shapes": shapes, "dtypes": dtypes, "block_shape": block,
                "buffer_count": draw(st.integers(1, 4))}

    size = {"float32": 4, "bfloat16": 2, "int8": 1}

    def body(case: dict) -> None:
        if case["block_shape"] is None:
            expected = sum(math.prod(s) * size[d]
                           for s, d in zip(case["shapes"], case["dtypes"], strict=True))
        else:
            expected = sum(case["buffer_count"] * math.prod(case["block_shape"]) * size[d]
                           for d in case["dtypes"])
        got = api.call("vmem_bytes", case["shapes"], case["dtypes"], case["block_shape"],
                       case["buffer_count"]).value
        if got != expected:
            raise Mismatch("vmem_bytes differs from the formula", expected=str(expected),
                           got=repr(got))
    api.run_property(cases(), body)
