"""Hypothesis strategies for the graders' inputs.

Arrays are drawn as (shape, dtype, seed) and filled by a seeded NumPy
generator: hypothesis shrinks the shape and the seed, which keeps shrinking
fast and the smallest failing input readable.  Each case prints as the call a
student can paste into their own notebook to reproduce the failure.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from graders.checking.values import describe_value

F32 = np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
I32 = np.dtype(np.int32)


def make_array(shape: tuple[int, ...], dtype: np.dtype, seed: int, *, low: float = -4.0,
               high: float = 4.0) -> np.ndarray:
    """Deterministic array: uniform in [low, high) for floats, small ints for ints."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


@dataclasses.dataclass(frozen=True)
class Case:
    """One call: positional args, keyword args, and how to print them.

    ``args``/``kwargs`` hold the real values; ``labels`` gives, per argument
    name, how the array was made (shape, dtype, seed) for the feedback.
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    names: tuple[str, ...]

    def __repr__(self) -> str:
        parts = [f"{n} = {describe(a)}" for n, a in zip(self.names, self.args, strict=True)]
        parts += [f"{k} = {describe(v)}" for k, v in self.kwargs.items()]
        return ", ".join(parts)


def describe(value: Any) -> str:
    """A drawn value as feedback prints it (``graders.checking.values.describe_value``)."""
    return describe_value(value)


def _block_and_dim(draw: st.DrawFn, dividing: bool | None, blocks: list[int],
                   max_blocks: int) -> tuple[int, int]:
    b = draw(st.sampled_from(blocks))
    n = draw(st.integers(1, max_blocks))
    if dividing is True:
        return b, n * b
    if dividing is False:
        return b, (n - 1) * b + draw(st.integers(1, b - 1)) if b > 1 else n
    return b, draw(st.integers(1, n * b))


@st.composite
def blocked_2d(draw: st.DrawFn, *, dividing: bool | None = None,
               dtypes: tuple[np.dtype, ...] = (F32, BF16, I32),
               row_blocks: tuple[int, ...] = (1, 8, 16, 32),
               col_blocks: tuple[int, ...] = (8, 128, 256),
               max_blocks: int = 5) -> tuple[tuple[int, int], tuple[int, int], np.dtype]:
    """(shape, block_shape, dtype) of a 2-D blocked op; ``dividing`` True forces
    multiples of the block, False forces a ragged edge on some axis, None either."""
    bm, m = _block_and_dim(draw, None if dividing is False else dividing, list(row_blocks),
                           max_blocks)
    bn, n = _block_and_dim(draw, dividing, [b for b in col_blocks if b > 1] if dividing is False
                           else list(col_blocks), max_blocks)
    dtype = draw(st.sampled_from(dtypes))
    return (m, n), (bm, bn), dtype


seeds = st.integers(0, 2**16)
