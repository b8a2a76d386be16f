"""Fidelity cases of a2_pipelining (the manually double-buffered copy-and-scale of Task 2.5
(lecture §3.2)): ``CASES`` for ``graders.fidelity.cases.cases_for``, which says what a case
is."""

from __future__ import annotations

import ml_dtypes
from hypothesis import strategies as st

from graders.fidelity.cases import F32, FidelityCase, array


@st.composite
def _double_buffered(draw):
    """a2 Task 2.5: x (1-3 blocks of 8 or 16 rows, 128 columns, f32 or bf16) and a scale."""
    block_rows = draw(st.sampled_from([8, 16]))
    rows = block_rows * draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([F32, ml_dtypes.bfloat16]))
    x = array((rows, 128), draw(st.integers(0, 2**16)), dtype)
    return (x, draw(st.sampled_from([2.0, -0.5]))), {"block_rows": block_rows}


#: The functions of this lab that use ``pl``/``pltpu``/``jnp``/``jax`` (as ``func`` or in
#: ``covers``) and the inputs they are compared on.
CASES: tuple[FidelityCase, ...] = (
    FidelityCase("double_buffered_scale", _double_buffered(),
                 covers=("double_buffer_kernel",)),
)
