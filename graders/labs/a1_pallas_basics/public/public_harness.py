"""What a1's public checks run around a student's kernel (shipped in the student bundle).

Runs in the student's own process (``pallas-lab check``) or in the worker (Gradescope's
visible tests); imports only numpy and pallas_sim. It holds no answer: Task 1.1's kernel
runs in the unblocked call the handout itself shows under Task 1.1 (the whole arrays as
one block), never in the grader's blocked call (``harness.py``, which is Task 1.2's
answer and stays with the grader).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from pallas_sim import jax, jnp, pl


def add_kernel(sub: ModuleType, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The student's ``add_kernel`` in the handout's unblocked ``pl.pallas_call`` (no grid,
    every operand one whole block; handout Task 1.1's example).

    x, y: [M, N] arrays of one dtype; returns the [M, N] output of that dtype. Raises
    ``NameError`` when the submission defines no ``add_kernel``, else what the kernel
    raises.
    """
    kernel = getattr(sub, "add_kernel", None)
    if not callable(kernel):
        raise NameError("function 'add_kernel' is not defined in the submission")
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


#: How a dtype reaches the student's vmem_bytes: the handout allows a name, a NumPy dtype
#: (the scalar type such as ``np.float32``, or ``np.dtype("float32")``) or a jnp dtype.
DTYPE_FORMS = ("name", "type", "dtype", "jnp")


def dtype_in_form(name: str, form: str) -> object:
    """The dtype ``name`` (a NumPy dtype name, or "bfloat16") as the handout's
    ``form`` (``DTYPE_FORMS``): the name itself, NumPy's scalar type (``np.float32``;
    bfloat16 is ml_dtypes' type, as ``jnp.bfloat16`` is), ``np.dtype(name)``, or
    ``jnp.<name>``. Raises ``ValueError`` for another form."""
    if form == "name":
        return name
    if form == "jnp":
        return getattr(jnp, "bool_" if name == "bool" else name)
    scalar = np.dtype(jnp.bfloat16 if name == "bfloat16" else name)
    if form == "dtype":
        return scalar
    if form == "type":
        return scalar.type
    raise ValueError(f"unknown dtype form {form!r}; one of {DTYPE_FORMS}")


def vmem_bytes(sub: ModuleType, shapes: list, dtypes: list[str], block_shape: object,
               buffer_count: int, forms: list[str]) -> object:
    """The student's ``vmem_bytes(shapes, dtypes, block_shape, buffer_count)`` with each dtype
    name of ``dtypes`` passed in its form of ``forms`` (``dtype_in_form``), since a check's
    arguments cross to the worker as names only (Task 1.5 accepts NumPy and jnp dtypes too).
    Shapes and block entries are passed as tuples. Returns what the student's function
    returns; raises ``NameError`` when the submission defines no ``vmem_bytes``."""
    func = getattr(sub, "vmem_bytes", None)
    if not callable(func):
        raise NameError("function 'vmem_bytes' is not defined in the submission")
    return func([tuple(shape) for shape in shapes],
                [dtype_in_form(name, form) for name, form in zip(dtypes, forms, strict=True)],
                None if block_shape is None else tuple(block_shape), buffer_count)


def vmem_call_text(shapes: list, dtypes: list[str], block_shape: object, buffer_count: int,
                   forms: list[str]) -> str:
    """The ``vmem_bytes`` question as a student would write the call, each dtype in the form
    it is passed (``'float32'``, ``np.float32``, ``np.dtype('float32')``, ``jnp.float32``):
    the input a failing Task 1.5 check shows."""
    shown = {"name": "{!r}", "type": "np.{}", "dtype": "np.dtype({!r})", "jnp": "jnp.{}"}
    text = ", ".join(shown[form].format(f"{name}_" if name == "bool" and form in ("type", "jnp")
                                        else name)
                     for name, form in zip(dtypes, forms, strict=True))
    block = None if block_shape is None else tuple(block_shape)
    return (f"vmem_bytes({[tuple(shape) for shape in shapes]}, [{text}], "
            f"block_shape={block}, buffer_count={buffer_count})")

