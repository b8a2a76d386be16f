"""Known-mistake models of a3_matmul (lecture §4.1, §4.3): what each plausible mistake
computes or raises on a given input, and the diagnosis it earns.

A hidden check names a mistake only when the model's output equals the student's on the
failing input (docs/style.md: a shown diagnosis is verified, not guessed). Every model runs
here, in the trusted grader, on NumPy or in the intended pallas_call.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

import pallas_sim
import reference.a3_matmul as ref
from graders.checking.framework import CheckFailure
from graders.checking.strategies import BF16, Case

#: The intended dimension semantics of the matmul's grid (M/bm, N/bn, K/bk).
SEMANTICS = ("parallel", "parallel", "arbitrary")


def exact_product(x: np.ndarray, y: np.ndarray, activation: str | None = None) -> np.ndarray:
    """The correct result: x [M, K] @ y [K, N] in float64, then ReLU for
    ``activation="relu"`` (the baseline every model differs from)."""
    z = x.astype(np.float64) @ y.astype(np.float64)
    return np.maximum(z, 0.0) if activation == "relu" else z


def relu_every_step(x: np.ndarray, y: np.ndarray, bk: int) -> np.ndarray:
    """A known mistake: ReLU applied to the running sum after every k step."""
    z = np.zeros((x.shape[0], y.shape[1]))
    for k in range(0, x.shape[1], bk):
        z = np.maximum(z + x[:, k:k + bk].astype(np.float64) @ y[k:k + bk].astype(np.float64),
                       0.0)
    return z


def last_step_only(x: np.ndarray, y: np.ndarray, bk: int, activation: str | None) -> np.ndarray:
    """A known mistake: z_ref overwritten at every k step (only the last product survives)."""
    z = x[:, -bk:].astype(np.float64) @ y[-bk:].astype(np.float64)
    return np.maximum(z, 0.0) if activation == "relu" else z


def init_on_axis(x: np.ndarray, y: np.ndarray, block_shape: tuple[int, int, int],
                  activation: str | None, axis: int, memory: str) -> np.ndarray:
    """A known mistake: z_ref zeroed when ``pl.program_id(axis) == 0`` (axis 0 or 1) instead
    of at k == 0. Output blocks whose index on that axis is 0 are zeroed at every k step, so
    only the last product survives; the others are never zeroed and keep the buffer's
    initial contents (NaN when ``memory`` is "poison", zeros when "zero") under the sum."""
    bm, bn, bk = block_shape
    last = last_step_only(x, y, bk, None)
    rest = exact_product(x, y) if memory == "zero" else np.full(last.shape, np.nan)
    rows = np.arange(last.shape[0])[:, None] // bm
    cols = np.arange(last.shape[1])[None, :] // bn
    zeroed = (rows if axis == 0 else cols) == 0
    z = np.where(zeroed, last, rest)
    return np.maximum(z, 0.0) if activation == "relu" else z


def bf16_partials(x: np.ndarray, y: np.ndarray, bk: int) -> np.ndarray:
    """A known mistake: each k step's product left in bfloat16 (no preferred_element_type:
    pallas_sim's dot multiplies in float32 and rounds the result to the inputs' bf16), then
    added to the float32 z_ref."""
    z = np.zeros((x.shape[0], y.shape[1]))
    for k in range(0, x.shape[1], bk):
        part = np.dot(x[:, k:k + bk].astype(np.float32), y[k:k + bk].astype(np.float32))
        z += part.astype(BF16).astype(np.float64)
    return z


def value_models(case: Case, memory: str) -> list[tuple[np.ndarray, str]]:
    """(output, diagnosis) of the known kernel mistakes on this input, run in the standard
    call with fresh output buffers holding ``memory`` ("poison" or "zero")."""
    x, y = case.args
    block = tuple(case.kwargs["block_shape"])
    bk = block[2]
    activation = case.kwargs.get("activation")
    models: list[tuple[np.ndarray, str]] = []
    if memory == "poison":
        models.append((np.full((x.shape[0], y.shape[1]), np.nan),
                       "every output element is NaN: z_ref is not zeroed at k == 0, so the "
                       "first partial product is added to an uninitialized (here NaN-poisoned) "
                       "buffer (lecture §4.1)"))
    for axis in (0, 1):
        models.append((init_on_axis(x, y, block, activation, axis, memory),
                       f"z_ref is zeroed when pl.program_id({axis}) == 0, not at the first k "
                       f"step: output blocks with program_id({axis}) == 0 are zeroed at every "
                       "k step (only the last product survives) and the others never; test "
                       "k = pl.program_id(2), the last grid axis (lecture §4.1)"))
    models.append((last_step_only(x, y, bk, activation),
                   "only the last k step's product is there: z_ref is overwritten at every k "
                   "step instead of accumulated with += (lecture §4.1)"))
    if activation == "relu":
        models += [
            (relu_every_step(x, y, bk),
             "ReLU is applied at every k step: it must see the complete sum, so apply it once "
             "at the last k step (lecture §4.3)"),
            (exact_product(x, y), "the activation is not applied (activation='relu' was given)"),
        ]
    else:
        models.append((exact_product(x, y, "relu"), "ReLU is applied although activation is None"))
        if x.dtype == BF16:
            models.append((bf16_partials(x, y, bk),
                           "the partial products are rounded to bfloat16 before they are "
                           "added: ask the dot for a float32 result with "
                           "preferred_element_type=jnp.float32 (lecture §4.1)"))
    return models


def diagnose_values(got: np.ndarray, case: Case, rel: float, memory: str) -> str | None:
    """The diagnosis of the known mistakes whose output ``got`` is (NaN exactly where it is
    NaN, within ``rel`` of |x| @ |y| elsewhere), else None. When several give this output
    (e.g. with one block on an axis), all are named."""
    x, y = case.args
    bound = error_bound(x, y, rel)
    texts = []
    for values, text in value_models(case, memory):
        if values.shape != got.shape:
            continue
        with np.errstate(invalid="ignore"):
            same = np.where(np.isnan(values), np.isnan(got), np.abs(got - values) <= bound)
        if same.all():
            texts.append(text)
    return either(texts)


def either(texts: list[str]) -> str | None:
    """One diagnosis from the texts of the modelled mistakes that all give the failing
    output: the text itself, or all of them when the input cannot tell them apart."""
    if len(texts) <= 1:
        return texts[0] if texts else None
    return (f"{len(texts)} known mistakes give exactly this output here: "
            + "; or ".join(texts))


def error_bound(x: np.ndarray, y: np.ndarray, rel: float) -> np.ndarray:
    """The allowed error of each output element: ``rel`` · (|x| @ |y|) + 1e-6 ([M, N])."""
    magnitude = np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64))
    return rel * magnitude + 1e-6


REVISIT = re.compile(r"returns to block index (\([^)]*\)) at grid step (\([^)]*\)) after "
                      r"writing it back to HBM at grid step (\([^)]*\))")


AXES = "MNK"


def k_not_last_revisits(case: Case) -> dict[tuple[str, str, str], str]:
    """The revisit errors of the known mistake "K is not the last grid axis", by the
    (block index, revisiting step, write-back step) they report: the intended call with its
    grid axes in each order that does not end with K, run here under the grading options
    (parallel axes shuffled as in the worker), with the semantics written as in the
    handout (by position) or moved with their axes. Values: the grid order, e.g. "(K, M, N)".
    """
    import itertools

    from graders.grading.grade import GRADING_SIM_OPTIONS
    from pallas_sim import jax, jnp, pl, pltpu
    from pallas_sim.extend import PallasSimError, RevisitedOutputBlockError

    x, y = case.args
    bm, bn, bk = case.kwargs["block_shape"]
    sizes = {"M": x.shape[0] // bm, "N": y.shape[1] // bn, "K": x.shape[1] // bk}
    intended = dict(zip(AXES, SEMANTICS, strict=True))
    found: dict[tuple[str, str, str], str] = {}

    def kernel(x_ref, y_ref, z_ref):
        z_ref[...] = jnp.zeros_like(z_ref)

    for order in itertools.permutations(AXES):
        if order[-1] == "K":
            continue
        at = {axis: n for n, axis in enumerate(order)}

        def spec(block, first, second, at=at):
            return pl.BlockSpec(block, lambda *g: (g[at[first]], g[at[second]]))

        for semantics in {SEMANTICS, tuple(intended[axis] for axis in order)}:
            try:
                call = pl.pallas_call(
                    kernel, grid=tuple(sizes[axis] for axis in order),
                    in_specs=[spec((bm, bk), "M", "K"), spec((bk, bn), "K", "N")],
                    out_specs=spec((bm, bn), "M", "N"),
                    out_shape=jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
                    compiler_params=pltpu.CompilerParams(dimension_semantics=semantics))
                with pallas_sim.config(**GRADING_SIM_OPTIONS):
                    call(x, y)
            except RevisitedOutputBlockError as exc:
                match = REVISIT.search(str(exc))
                if match:
                    found.setdefault(match.groups(), f"({', '.join(order)})")
            except PallasSimError:  # e.g. semantics the simulator refuses in this order
                continue
    return found


def revisit_diagnosis(failure: CheckFailure, case: Case) -> CheckFailure:
    """Name the K-not-last grid when the student's RevisitedOutputBlockError is the one such
    a grid raises on this input (same block, same steps); other revisits get no guess."""
    if "RevisitedOutputBlockError" not in failure.what:
        return failure
    match = REVISIT.search(failure.what)
    if match is None:
        return failure
    order = k_not_last_revisits(case).get(match.groups())
    if order is not None:
        failure.diagnosis = (f"the K axis is not the last grid axis (the grid runs over "
                             f"{order}), so an output block is left and later revisited; "
                             "with grid (M/bm, N/bn, K/bk) each output block stays resident "
                             "for its whole k loop (lecture §4.1)")
    return failure


def trace_diagnosis(field: str, got: object, expected: object) -> str | None:
    """The known mistake behind a pallas_call ``field`` (``"grid"``, ``"dimension
    semantics"``) that differs from the intended one: K not last, semantics swapped."""
    if field == "grid" and isinstance(got, tuple) and len(got) == 3 and (
            sorted(got) == sorted(expected)):  # type: ignore[arg-type]
        return ("the grid axes are in another order: (M/bm, N/bn, K/bk), with the reduction "
                "axis K last (lecture §4.1)")
    if field == "dimension semantics":
        return ("M and N blocks are independent ('parallel'); K carries the running sum, so "
                "it is 'arbitrary' (lecture §4.1)")
    return None


def diagnose_block(got: int, peak: float, bandwidth: float, dtype_bytes: int,
                   multiple_of: int) -> str | None:
    """The known mistake of min_compute_bound_block that returns ``got`` here, else None:
    the threshold b > balance·dtype_bytes rounded down to a multiple instead of up, or the
    smallest block above it that is not a multiple of ``multiple_of``."""
    threshold = peak / bandwidth * dtype_bytes
    expected = ref.min_compute_bound_block(peak, bandwidth, dtype_bytes, multiple_of)
    if got == expected:
        return None
    exact = Fraction(peak) / Fraction(bandwidth) * dtype_bytes
    if exact.denominator == 1 and exact % multiple_of == 0 and got == exact:
        return (f"the bound falls exactly on a multiple here: {got} / {dtype_bytes} = "
                f"{float(exact / dtype_bytes):g} FLOP/B equals the balance point "
                f"peak / bandwidth, which is not strictly greater, so {got} is not "
                f"compute-bound; the answer is the next multiple, {expected} (a test with >= "
                "instead of >, or the bound rounded down to a multiple, gives this) "
                "(lecture §4.2)")
    if got == int(threshold // multiple_of) * multiple_of:
        return (f"the block is rounded down: {got} is the largest multiple of {multiple_of} at "
                f"or below the bound b > {threshold:.5g}, so its intensity does not exceed "
                "the balance point; take the smallest multiple above the bound (lecture §4.2)")
    if multiple_of > 1 and got == ref.min_compute_bound_block(peak, bandwidth, dtype_bytes, 1):
        return (f"{got} is the smallest compute-bound block, but it is not a multiple of "
                f"multiple_of = {multiple_of}: step through multiples of it (lecture §4.2, Ex5)")
    return None
