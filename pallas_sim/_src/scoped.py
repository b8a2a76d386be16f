"""``pl.run_scoped``: buffers that exist while one function runs inside a kernel.

::

    def body(buf, sem):                      # buf: VMEM f32[8, 128], sem: a DMA semaphore
        pltpu.async_copy(x_hbm.at[pl.ds(i * 8, 8)], buf, sem).wait()
        ...
    pl.run_scoped(body, pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA)

As in JAX 0.10.x TPU interpret mode: every entry allocates fresh buffers, poisoned
(NaN for floats, as scratch); the function's return value is ``run_scoped``'s; HBM
buffers are refused ("Cannot allocate HBM in `run_scoped`."). The buffers count in the
call's VMEM (or SMEM) on top of its operands and scratch while they live: an entry that
takes the total over the limit raises :class:`~pallas_sim.VmemOOMError`, and the
trace records the most scoped bytes live at once (``CallTrace.scoped_vmem_bytes``). A
copy started on a scoped semaphore must be waited before the function returns
(:class:`~pallas_sim.UnwaitedDMAError`, as at the end of a call).

Source: ``jax._src.pallas.primitives.run_scoped`` and TPU interpret mode's allocation of
``run_scoped`` buffers (JAX 0.10.x).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from . import abstract, context, dma, memory
from .abstract import AbstractArray
from .config import OPTIONS
from .dtypes import fill_value
from .memory_spaces import HBM_SPACES, ScratchShape
from .pytrees import flatten
from .refs import Ref, make_ref


def run_scoped(f: Callable[..., Any], *types: Any,
               collective_axes: Hashable | tuple[Hashable, ...] = (),
               **kw_types: Any) -> Any:
    """Call ``f`` with fresh buffers of the given types and return what it returns (JAX
    ``pl.run_scoped``).

    Args:
      f: called as ``f(*refs, **named_refs)``, one ref (or semaphore ref) per type, in the
        types' tree structure.
      types: ``pltpu.VMEM(shape, dtype)``, ``pltpu.SMEM(shape, dtype)``,
        ``pltpu.SemaphoreType.DMA`` or ``pltpu.SemaphoreType.DMA((n,))`` (or pytrees of
        them).
      collective_axes: accepted; with one core every program shares the allocation anyway.
      kw_types: named types, passed to ``f`` as keyword arguments.

    Returns:
      ``f``'s result, which must hold no refs (they die with the scope).

    Raises:
      OutsideKernelError: outside a running kernel.
      TypeError: a type that is not a memory-space buffer (JAX fails with an
        AttributeError, "object has no attribute 'get_ref_aval'").
      ValueError: an HBM buffer (JAX's TPU interpret mode's message), or a result that
        holds a ref.
      VmemOOMError: the call's VMEM with these buffers exceeds the limit.
      UnwaitedDMAError: a copy started on a scoped semaphore was not waited.
    """
    ctx = context.require_kernel("pl.run_scoped")
    leaves, tree = flatten((types, kw_types))
    for t in leaves:
        if not isinstance(t, ScratchShape):
            raise TypeError(
                f"pl.run_scoped allocates memory-space buffers (pltpu.VMEM(shape, dtype), "
                f"pltpu.SMEM(...), pltpu.SemaphoreType.DMA), got {t!r} (JAX: object has no "
                "attribute 'get_ref_aval')")
        if t.memory_space in HBM_SPACES:
            raise ValueError("Cannot allocate HBM in `run_scoped`. (a kernel's temporary "
                             "buffers live in VMEM, SMEM or semaphore memory; pass HBM arrays "
                             "as inputs or outputs)")
    names = _names(f, types, kw_types, len(leaves))
    refs: list[Any] = []
    allocations: list[memory.Allocation] = []
    mode = OPTIONS.uninitialized
    for t, name in zip(leaves, names, strict=True):
        if t.memory_space == dma.SEMAPHORE_SPACE:
            refs.append(dma.SemaphoreRef.allocate(t.shape, name))
            continue
        buf = (AbstractArray(t.shape, t.dtype) if abstract.ACTIVE[0] and t.memory_space != "smem"
               else np.full(t.shape, fill_value(t.dtype, mode), t.dtype))
        refs.append(make_ref(buf, name, t.memory_space))
        allocations.append(memory.Allocation(
            name, "scoped", t.memory_space, t.nbytes, 1,
            f"{t.dtype.name}{list(t.shape)} run_scoped"))
    pos, kw = tree.unflatten(refs)
    with allocated(ctx, allocations):
        result = f(*pos, **kw)
    sems = [r for r in refs if isinstance(r, dma.SemaphoreRef)]
    if sems:
        dma.check_drained(sems, ctx.call_name, where="a pl.run_scoped body in",
                          end="the run_scoped body returns")
    if any(isinstance(x, Ref | dma.SemaphoreRef) for x in flatten(result)[0]):
        raise ValueError("pl.run_scoped: the function returned a ref to a scoped buffer, "
                         "which dies with the scope; return values loaded from it instead")
    return result


class allocated:  # noqa: N801 - used as a context manager, like a function
    """``with allocated(ctx, allocations):`` counts ``allocations`` (VMEM/SMEM buffers) as
    live in the running kernel for the block's duration: checks the VMEM limit with them on
    top of the call's own buffers and updates the trace's peak scoped bytes.

    Raises (on entry):
      VmemOOMError: the real compiler's message, with every live buffer listed.
    """

    def __init__(self, ctx: context.KernelContext,
                 allocations: list[memory.Allocation]) -> None:
        self._ctx, self._allocations = ctx, allocations

    def __enter__(self) -> None:
        ctx = self._ctx
        ctx.scoped.extend(self._allocations)
        try:
            memory.check_vmem(ctx.call_name, ctx.static_allocations + ctx.scoped,
                              ctx.vmem_limit)
        except BaseException:
            del ctx.scoped[len(ctx.scoped) - len(self._allocations):]
            raise
        vmem, smem = memory.totals(ctx.scoped)
        ctx.peak_scoped_vmem = max(ctx.peak_scoped_vmem, vmem)
        ctx.peak_scoped_smem = max(ctx.peak_scoped_smem, smem)

    def __exit__(self, *exc: object) -> None:
        ctx = self._ctx
        del ctx.scoped[len(ctx.scoped) - len(self._allocations):]


def _names(f: Callable[..., Any], types: tuple[Any, ...], kw_types: dict[str, Any],
           count: int) -> list[str]:
    """A name per allocated leaf, for errors and the VMEM table: ``f``'s parameter names
    (keyword names for named types), with the key path inside a pytree type."""
    from .call_args import leaf_paths
    from .pallas_call import _kernel_params

    params = _kernel_params(f) or []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                        p.POSITIONAL_OR_KEYWORD)]
    names: list[str] = []
    for i, t in enumerate(types):
        base = positional[i] if i < len(positional) else f"scoped{i}"
        names += [base + p for p in leaf_paths(t)]
    for key in flatten({k: k for k in kw_types})[0]:
        names += [key + p for p in leaf_paths(kw_types[key])]
    return names if len(names) == count else [f"scoped{i}" for i in range(count)]
