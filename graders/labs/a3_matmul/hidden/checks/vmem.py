"""Task 3.3 matmul_vmem_bytes."""

from __future__ import annotations

from hypothesis import strategies as st

import reference.a3_matmul as ref
from graders.checking.compare import assert_equal_int
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case
from graders.labs.a3_matmul.public import worked

from .common import A, MiB

# --- Task 3.3 matmul_vmem_bytes ------------------------------------------------------------

@check(A, "3.3", 4, "worked answers: (4096, 7168) @ (7168, 18432), 1024-blocks, bf16 in, f32 "
                    "out: 664 MiB (1d), 64 MiB (2d), 16 MiB (3d) (lecture §4.1)")
def vmem_worked(s: Session) -> None:
    """Task 3.3: worked answers: (4096, 7168) @ (7168, 18432), 1024-blocks, bf16 in, f32 out: 664
    MiB (1d), 64 MiB (2d), 16 MiB (3d) (lecture §4.1).
    """
    m, n, k = worked.SHAPE
    for grid, mib in worked.VMEM_MIB.items():
        kwargs = {"block": worked.VMEM_BLOCK, "grid": grid, "in_dtype": "bfloat16",
                  "out_dtype": "float32"}
        got = s.invoke("matmul_vmem_bytes", worked.SHAPE, kwargs).value
        try:
            assert_equal_int(got, mib * MiB, f"matmul_vmem_bytes with grid={grid!r}")
        except CheckFailure as failure:
            failure.input = (f"M = {m}, N = {n}, K = {k}, block = {worked.VMEM_BLOCK}, "
                             f"grid = {grid!r}")
            failure.expected = f"{mib * MiB} ({mib} MiB)"
            if grid == "1d" and got == 376 * MiB:
                failure.diagnosis = ("the resident output is counted once; every operand, the "
                                     "whole (M, N) output included, has two buffers")
            raise


@st.composite
def vmem_cases(draw) -> Case:
    """Arguments of matmul_vmem_bytes: (M, N, K) multiples of the block, any grid kind and
    dtype names."""
    block = draw(st.sampled_from([8, 128, 256, 512, 1024, 2048]))
    m, n, k = (block * draw(st.integers(1, 24)) for _ in range(3))
    kwargs = {"block": block, "grid": draw(st.sampled_from(["1d", "2d", "3d"])),
              "in_dtype": draw(st.sampled_from(["bfloat16", "float32", "float16", "int8"])),
              "out_dtype": draw(st.sampled_from(["float32", "bfloat16", "int32"]))}
    return Case((m, n, k), kwargs, ("M", "N", "K"))


@check(A, "3.3", 6, "matmul_vmem_bytes equals the reference's on drawn shapes, blocks, grid "
                     "kinds and dtypes")
def vmem_property(s: Session) -> None:
    """Task 3.3: matmul_vmem_bytes equals the reference's on drawn shapes, blocks, grid kinds and
    dtypes.
    """
    def body(case: Case) -> None:
        got = s.invoke("matmul_vmem_bytes", case.args, case.kwargs).value
        assert_equal_int(got, ref.matmul_vmem_bytes(*case.args, **case.kwargs),
                         "matmul_vmem_bytes")
    run_property(vmem_cases(), body, max_examples=30)
