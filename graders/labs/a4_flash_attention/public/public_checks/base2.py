"""Task 4.4 use_base2_exp."""

from __future__ import annotations

from graders.student.public import Api, Mismatch, arrays, assert_close, public_check

from .attention import HARNESS, TOL, _kernel_options, attention_cases, dense_attention
from .common import A


@public_check(A, "4.4", "flash_attention(..., use_base2_exp=True) accepts the option and still "
                        "equals dense softmax attention (lecture §6.6)")
def flash_attention_base2(api: Api) -> None:
    """Task 4.4: flash_attention(..., use_base2_exp=True) accepts the option and still equals
    dense softmax attention (lecture §6.6).
    """
    def body(case: dict) -> None:
        got = api.call("flash_attention", case["q"], case["k"], case["v"],
                       **_kernel_options(case), use_base2_exp=True).value
        rtol, atol = TOL[case["q"].dtype.name]
        assert_close(got, dense_attention(case), rtol=rtol, atol=atol,
                     what="the attention output with use_base2_exp=True")
    api.run_property(attention_cases(), body, max_examples=2)


@public_check(A, "4.4", "flash_attention passes use_base2_exp on to flash_attention_kernel "
                        "unchanged (True and False; the values alone cannot show it, base 2 "
                        "gives the same softmax; lecture §6.6)")
def flash_attention_forwards_base2(api: Api) -> None:
    """Task 4.4: flash_attention passes use_base2_exp on to flash_attention_kernel unchanged,
    as the handout asks of soft_cap, max_logit_const and use_base2_exp (lecture §6.6). The
    values cannot show it (base 2 gives the same softmax), so ``public_harness``'s
    ``flash_attention`` runs the wrapper with a spy in the kernel's place that records the
    options of the first step (the student's kernel does not run: a Task 4.3 mistake cannot
    fail this check). A wrapper that never calls ``flash_attention_kernel`` by that name
    leaves nothing to observe and passes here.
    """
    q, k, v = arrays((2, 32, 8), 1), arrays((1, 32, 8), 2), arrays((1, 32, 8), 3)
    for flag in (True, False):
        label = (f"q = f32[2, 32, 8], k = v = f32[1, 32, 8], causal = True, block_q = "
                 f"block_kv = 16, use_base2_exp = {flag}")
        seen = api.kernel(HARNESS, "flash_attention", q, k, v, causal=True, block_q=16,
                          block_kv=16, use_base2_exp=flag)
        if not isinstance(seen, dict) or not seen.get("reached"):
            return
        if bool(seen.get("value")) != flag:
            got = (f"use_base2_exp={seen.get('value')}" if seen.get("given")
                   else "no use_base2_exp keyword (its default, False)")
            raise Mismatch("use_base2_exp does not reach the kernel: flash_attention must "
                           "pass it on to flash_attention_kernel unchanged", input=label,
                           expected=f"flash_attention_kernel(..., use_base2_exp={flag})",
                           got=f"flash_attention_kernel called with {got}")
