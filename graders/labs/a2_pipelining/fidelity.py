"""Fidelity cases of a2_pipelining: what tests/fidelity runs on pallas_sim and on real JAX.

Each :class:`~graders.fidelity.cases.FidelityCase` names a public function of the solution
(or a submission), the kernels it exercises and a strategy of ``(args, kwargs)``; shapes are
small, since JAX's TPU interpret mode costs tens of milliseconds per grid step. Found by
``graders.fidelity.cases.cases_for`` (no central table). Ships with the student bundle
(``pallas-lab check --backend jax``).
"""

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
