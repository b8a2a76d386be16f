"""Task 3.1 matmul_kernel."""

from __future__ import annotations

from graders.checking.framework import Session, check, run_property
from graders.checking.strategies import BF16, F32, Case

from .common import BF16_RESULT, F32_ACCUMULATION, A, _assert_matmul, _kernel_run, matmul_cases

# --- Task 3.1 matmul_kernel ----------------------------------------------------------------

@check(A, "3.1", 12, "matmul_kernel, run in the grader's 3D-grid pallas_call, accumulates "
                     "x @ y over the k steps (f32 inputs; fresh output buffers are poisoned, so "
                     "z_ref must be zeroed at k == 0)")
def kernel_accumulates(s: Session) -> None:
    """Task 3.1: matmul_kernel, run in the grader's 3D-grid pallas_call, accumulates x @ y over
    the k steps (f32 inputs; fresh output buffers are poisoned, so z_ref must be zeroed at k
    == 0).
    """
    def body(case: Case) -> None:
        _assert_matmul(_kernel_run(s, case, "poison"), case, F32_ACCUMULATION, "the output",
                       memory="poison")
    run_property(matmul_cases(dtypes=(F32,), activations=(None,)), body, max_examples=12)


@check(A, "3.1", 6, "matmul_kernel multiplies bf16 blocks and accumulates in float32 "
                    "(preferred_element_type=jnp.float32): error within float32 rounding")
def kernel_bf16_in_f32(s: Session) -> None:
    """Task 3.1: matmul_kernel multiplies bf16 blocks and accumulates in float32
    (preferred_element_type=jnp.float32): error within float32 rounding.
    """
    def body(case: Case) -> None:
        _assert_matmul(_kernel_run(s, case, "poison"), case, F32_ACCUMULATION, "the output",
                       memory="poison")
    run_property(matmul_cases(dtypes=(BF16,), activations=(None,)), body, max_examples=8)


@check(A, "3.1", 12, "with activation='relu' the kernel applies ReLU once, to the complete "
                     "sum after the last k step (run with zero-filled buffers, so this checks "
                     "the activation alone)")
def kernel_relu(s: Session) -> None:
    """Task 3.1: with activation='relu' the kernel applies ReLU once, to the complete sum after
    the last k step (run with zero-filled buffers, so this checks the activation alone).
    """
    def body(case: Case) -> None:
        _assert_matmul(_kernel_run(s, case, "zero"), case, BF16_RESULT, "the output",
                       memory="zero")
    run_property(matmul_cases(activations=("relu",)), body, max_examples=12)
