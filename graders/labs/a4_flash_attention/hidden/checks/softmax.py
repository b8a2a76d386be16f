"""Task 4.1 online_softmax."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st

import reference.a4_flash_attention as ref
from graders.checking.compare import as_array, assert_close, fmt_array
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case, make_array, seeds
from graders.labs.a4_flash_attention.hidden.diagnose import (
    close_to,
    diagnose_masked,
    diagnose_trace,
)
from graders.labs.a4_flash_attention.public import worked
from graders.labs.a4_flash_attention.public.public_checks.softmax import mask_rows

from .common import F32, F64, SCALES, A

# --- Task 4.1 online_softmax ---------------------------------------------------------------

@st.composite
def softmax_cases(draw) -> Case:
    """Strategy: x ([n] or [rows, n], f32/f64, three logit scales) and a block size."""
    rows = draw(st.one_of(st.none(), st.integers(1, 5)))
    n = draw(st.integers(1, 40))
    block = draw(st.integers(1, 12))
    low, high = draw(st.sampled_from(SCALES))
    dtype = draw(st.sampled_from([F32, F64]))
    shape = (n,) if rows is None else (rows, n)
    x = make_array(shape, dtype, draw(seeds), low=low, high=high)
    return Case((x, block), {}, ("x", "block_size"))


def _unpack_softmax(value: object, x: np.ndarray, block: int) -> tuple[np.ndarray, list]:
    """Split online_softmax's reply into (probs, [(m, l), ...]) or fail clearly."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise CheckFailure("online_softmax must return a pair (probs, trace)",
                           expected="(probs, trace)", got=_kind(value))
    probs, trace = value
    if not isinstance(trace, (tuple, list)):
        raise CheckFailure("the trace must be a list of (m, l) pairs", expected="a list",
                           got=_kind(trace))
    n_blocks = -(-x.shape[-1] // block)
    if len(trace) != n_blocks:
        raise CheckFailure("the trace must hold one (m, l) pair per block",
                           expected=f"{n_blocks} pairs (cdiv({x.shape[-1]}, {block}))",
                           got=f"{len(trace)} entries")
    pairs = []
    for k, pair in enumerate(trace):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise CheckFailure(f"trace entry {k} must be an (m, l) pair", expected="(m, l)",
                               got=_kind(pair))
        pairs.append((as_array(pair[0], f"m of block {k}"), as_array(pair[1], f"l of block {k}")))
    return as_array(probs, "probs"), pairs


def _kind(v: object) -> str:
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)} items"
    return fmt_array(v) if isinstance(v, np.ndarray) else type(v).__name__


def _fmt_trace(pairs: list) -> str:
    def one(a: np.ndarray) -> str:
        a = np.asarray(a, dtype=np.float64)
        return f"{a.item():.5g}" if a.size == 1 else np.array2string(a, precision=4,
                                                                     separator=", ")
    shown = [f"({one(m)}, {one(l)})" for m, l in pairs[:6]]
    return "[" + ", ".join(shown) + (", ...]" if len(pairs) > 6 else "]")


def _compare_trace(got: list, expected: list, x: np.ndarray, block: int) -> None:
    rtol, atol = 1e-4, 1e-6
    for k, ((gm, gl), (em, el)) in enumerate(zip(got, expected, strict=True)):
        ok = (np.shape(gm) == np.shape(em) and np.shape(gl) == np.shape(el)
              and close_to(gm, em, rtol, atol) and close_to(gl, el, rtol, atol))
        if not ok:
            raise CheckFailure(f"the running (m, l) after block {k} is wrong",
                               expected=_fmt_trace(expected), got=_fmt_trace(got),
                               diagnosis=diagnose_trace(got, x, block))


@check(A, "4.1", 5, "worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), "
                    "block 2 (lecture §5.1)")
def online_softmax_worked(s: Session) -> None:
    """Task 4.1: worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), block 2
    (lecture §5.1).
    """
    rtol = worked.WORKED_RTOL
    for answer in worked.SOFTMAX_TRACES:
        x, block, trace = np.asarray(answer.x, dtype=np.float32), answer.block_size, answer.trace
        got_probs, got_trace = _unpack_softmax(s.invoke("online_softmax", (x, block)).value, x,
                                               block)
        label = f"x = {list(answer.x)}, block_size = {block}"
        for k, ((gm, gl), (em, el)) in enumerate(zip(got_trace, trace, strict=True)):
            if not (close_to(gm, em, rtol, 0) and close_to(gl, el, rtol, 0)):
                raise CheckFailure(f"the (m, l) pair after block {k} differs from the lecture's",
                                   input=label, expected=str(list(trace)),
                                   got=_fmt_trace(got_trace),
                                   diagnosis=diagnose_trace(got_trace, x, block))
        if answer.probs is not None:
            try:
                assert_close(got_probs, np.asarray(answer.probs), rtol, 0, what="softmax")
            except CheckFailure as failure:
                failure.input = label
                raise


@check(A, "4.1", 4, "online_softmax's probabilities equal the softmax over the last axis "
                    "(drawn [n] and [rows, n] inputs, blocks that do not divide n, large logits)")
def online_softmax_probs(s: Session) -> None:
    """Task 4.1: online_softmax's probabilities equal the softmax over the last axis (drawn [n]
    and [rows, n] inputs, blocks that do not divide n, large logits).
    """
    def body(case: Case) -> None:
        x, block = case.args
        probs, _ = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        expected, _ = ref.online_softmax(x, block)
        assert_close(probs, expected, 1e-4, 1e-7, what="probs")
    run_property(softmax_cases(), body, max_examples=25)


@check(A, "4.1", 3, "online_softmax's trace holds the running (m, l) after each block")
def online_softmax_trace(s: Session) -> None:
    """Task 4.1: online_softmax's trace holds the running (m, l) after each block."""
    def body(case: Case) -> None:
        x, block = case.args
        _, got = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        _, expected = ref.online_softmax(x, block)
        _compare_trace(got, list(expected), x, block)
    run_property(softmax_cases(), body, max_examples=25)


@dataclasses.dataclass(frozen=True)
class MaskedSoftmaxCase:
    """One online_softmax call on masked rows: ``x`` holds -inf entries (masked keys)."""

    x: np.ndarray
    block_size: int

    @property
    def args(self) -> tuple[np.ndarray, int]:
        return (self.x, self.block_size)

    def __repr__(self) -> str:
        values = np.array2string(np.asarray(self.x, np.float64), precision=4, separator=", ",
                                 max_line_width=10**6, threshold=10**6)
        return (f"x = {self.x.dtype.name}{list(self.x.shape)} {values}, "
                f"block_size = {self.block_size}")


@st.composite
def masked_softmax_cases(draw) -> MaskedSoftmaxCase:
    """Strategy: x ([n] or [rows, n], f32/f64) with -inf entries, the handout's masked rows:
    the first row's first block (at least) is all -inf and the second row is all -inf (one
    row: either); other rows have a -inf prefix, scattered -inf, only -inf or none."""
    rows = draw(st.one_of(st.none(), st.integers(1, 4)))
    block = draw(st.integers(1, 6))
    n = draw(st.integers(block + 1, block + 14))
    low, high = draw(st.sampled_from(SCALES))
    dtype = draw(st.sampled_from([F32, F64]))
    seed = draw(seeds)
    x = make_array((n,) if rows is None else (rows, n), dtype, seed, low=low, high=high)
    flat = x.reshape(-1, n)
    # Both masked kinds of the contract in every draw with two rows or more.
    mask_rows(draw, flat, block, seed)
    return MaskedSoftmaxCase(x, block)


@check(A, "4.1", 3, "masked rows (-inf entries): probability 0 at -inf, the empty state "
                    "m = -inf, l = 0 in the trace while a row has shown only -inf, "
                    "probabilities 0 for a row of only -inf (the handout's contract)")
def online_softmax_masked(s: Session) -> None:
    """Task 4.1: masked rows (-inf entries): probability 0 at -inf, the empty state m = -inf,
    l = 0 in the trace while a row has shown only -inf, probabilities 0 for a row of only -inf
    (the handout's contract).
    """
    def body(case: MaskedSoftmaxCase) -> None:
        x, block = case.args
        probs, got = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        want_probs, want_trace = ref.online_softmax(x, block)
        try:
            _compare_trace(got, list(want_trace), x, block)
            assert_close(probs, want_probs, 1e-4, 1e-7, what="probs")
        except CheckFailure as failure:
            if failure.diagnosis is None:
                failure.diagnosis = diagnose_masked(np.asarray(probs), got, case)
            raise
    run_property(masked_softmax_cases(), body, max_examples=15)
