"""Fidelity cases of a1_pallas_basics (the blocked, bias and in-place adds and the VMEM
formula (lecture §2)): ``CASES`` for ``graders.fidelity.cases.cases_for``, which says what a
case is."""

from __future__ import annotations

from hypothesis import strategies as st

from graders.fidelity.cases import FidelityCase, array
from graders.labs.a1_pallas_basics.public import worked as a1_worked


@st.composite
def _blocked_pair(draw, *, ragged: bool, n_inputs: int = 2):
    bm = draw(st.sampled_from([8, 16]))
    bn = 128
    if ragged:
        rows, cols = draw(st.integers(1, 3 * bm)), draw(st.integers(1, 2 * bn + 5))
    else:
        rows, cols = bm * draw(st.integers(1, 3)), bn * draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))
    arrays = tuple(array((rows, cols), seed + i) for i in range(n_inputs))
    return arrays, {"block_shape": (bm, bn)}


@st.composite
def _bias_add(draw):
    (x,), kwargs = draw(_blocked_pair(ragged=False, n_inputs=1))
    bias = array((1, x.shape[1]), draw(st.integers(0, 2**16)))
    return (x, bias), kwargs


_VMEM_WORKED = st.sampled_from([
    *((([*a.shapes], [*a.dtypes]), {} if a.block_shape is None else
       {"block_shape": a.block_shape}) for a in a1_worked.VMEM),
    (([(1024, 512), (512, 256)], ["bfloat16", "float32"]),
     {"block_shape": (None, 128, 256), "buffer_count": 3}),
])


#: The functions of this lab that use ``pl``/``pltpu``/``jnp``/``jax`` (as ``func`` or in
#: ``covers``) and the inputs they are compared on.
CASES: tuple[FidelityCase, ...] = (
    FidelityCase("blocked_add", _blocked_pair(ragged=True), covers=("add_kernel",)),
    FidelityCase("bias_add", _bias_add(), covers=("_bias_add_kernel",)),
    # Not ragged: JAX 0.10.2's TPU interpret mode cannot lower a ragged aliased
    # output (docs/fidelity.md; tests/fidelity/test_error_parity.py).
    FidelityCase("accumulate_inplace", _blocked_pair(ragged=False),
                 covers=("_accumulate_kernel",)),
    FidelityCase("vmem_bytes", _VMEM_WORKED, max_examples=4),
)
