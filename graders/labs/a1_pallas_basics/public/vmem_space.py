"""The questions Task 1.5's checks ask of ``vmem_bytes`` (lecture §2.1, §2.2): one space,
drawn by the grader's hidden property and by the public self-check alike.

A general formula must hold beyond the handout's examples: any number of operands of any
rank, any NumPy dtype given in any form the handout allows, block entries that are None,
TPU-shaped or any size, and any buffer count. Each question is a dict with ``shapes``,
``dtypes`` (names), ``block_shape``, ``buffer_count`` and ``forms`` (how each dtype is
passed: ``public_harness.DTYPE_FORMS``).
"""

from __future__ import annotations

from hypothesis import strategies as st

from graders.labs.a1_pallas_basics.public.public_harness import DTYPE_FORMS

#: The dtypes drawn (by name): TPU's own, and NumPy dtypes of other widths.
VMEM_DTYPES = ("float32", "bfloat16", "int32", "int8", "float16", "float64", "int16", "uint8",
               "uint32", "bool")

#: Block entries per dimension, from the last one back (then any size from 1): multiples
#: of 128 lanes last, of 8 sublanes next, small counts before.
_TILED = ([128, 256, 384, 512, 640, 1024], [8, 16, 24, 40, 128, 256, 512], [1, 2, 3, 4, 6])


def block_entry(axis_from_last: int) -> st.SearchStrategy[int | None]:
    """One block_shape entry (``axis_from_last`` 0 for the last dimension): None (a
    squeezed dimension, one element of it per block), a TPU-shaped size, or any size."""
    return st.one_of(st.none(), st.sampled_from(_TILED[min(axis_from_last, 2)]),
                     st.integers(1, 1536))


@st.composite
def vmem_questions(draw) -> dict:
    """Strategy: 1-6 operands of one rank (1-4), dims up to 65536, a dtype each in a drawn
    form, an optional block of that rank and 1-16 buffers."""
    n, ndim = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    shapes = [tuple(draw(st.integers(1, 65536 if ndim == 1 else 4096)) for _ in range(ndim))
              for _ in range(n)]
    block = (tuple(draw(block_entry(ndim - 1 - axis)) for axis in range(ndim))
             if draw(st.booleans()) else None)
    return {"shapes": shapes, "dtypes": [draw(st.sampled_from(VMEM_DTYPES)) for _ in range(n)],
            "block_shape": block, "buffer_count": draw(st.integers(1, 16)),
            "forms": [draw(st.sampled_from(DTYPE_FORMS)) for _ in range(n)]}


#: Questions every run asks, beyond the TPU's dtypes and the handout's sizes: six operands
#: of rank 4 in a block with entries that are not powers of two, twelve buffers; and whole
#: 1-D arrays longer than 4096 elements.
WIDE_QUESTIONS = (
    {"shapes": [(4, 8, 1024, 640)] * 6,
     "dtypes": ["float64", "int16", "uint8", "uint32", "bool", "float32"],
     "block_shape": (2, None, 24, 384), "buffer_count": 12,
     "forms": ["name", "type", "dtype", "jnp", "name", "type"]},
    {"shapes": [(100000,), (70000,)], "dtypes": ["float64", "bool"], "block_shape": None,
     "buffer_count": 5, "forms": ["dtype", "jnp"]},
)
