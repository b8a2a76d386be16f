"""``pltpu.emit_pipeline``: a blocked loop over refs, run inside a kernel.

The common form of JAX's pipelining guide and TPU quickstart::

    def kernel(x_hbm, o_hbm):                       # refs in HBM (pl.ANY / pl.kernel)
        def body(x_vmem, o_vmem):                   # one (8, 128) block of each
            o_vmem[...] = x_vmem[...] * 2
        pltpu.emit_pipeline(
            body, grid=(x_hbm.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
            out_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
        )(x_hbm, o_hbm)

It has pallas_call's semantics one level down (:mod:`pallas_sim._src.operands`): the grid runs
in row-major order; an input block is copied into a VMEM buffer when its index changes;
an output block starts poisoned when its index changes and is copied back when it
changes again and after the last step; inside ``body``, ``pl.program_id`` and
``pl.num_programs`` are the pipeline's, as in JAX. Unlike pallas_call, an output block may
be revisited (JAX's pipeline checks nothing; each visit writes its block back).

The copies count as the kernel's manual DMAs in the trace (``manual_dma_count``,
``manual_dma_bytes``); the block buffers (2 per operand by default, ``pl.Buffered(n)``,
1 for a whole-array block with a constant index map) count as scoped VMEM while the
pipeline runs. ``core_axis_name``/``core_axis`` partition the grid across cores in JAX;
with one core nothing is partitioned.

Not modelled (refused with :class:`~pallas_sim.UnsupportedJaxUsageError`): blocks
that do not divide the array (JAX rounds the last block to the (8, 128) tiling), Element
padding, ``pl.BoundedSlice``, ``allocations=`` and ``body_prologue=``.

Source: ``jax._src.pallas.mosaic.pipeline.emit_pipeline`` (JAX 0.10.x), run in TPU
interpret mode.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import block_dims, memory
from .context import require_kernel
from .errors import UnsupportedJaxUsageError
from .memory_spaces import HBM_SPACES
from .operands import Operand, allocate_buffers, vectorized_grid
from .pytrees import flatten
from .refs import Ref
from .scoped import allocated
from .values import concrete


def emit_pipeline(body: Callable[..., Any], *, grid: Sequence[Any], in_specs: Any = (),
                  out_specs: Any = (), tiling: Any = None, core_axis: Any = None,
                  core_axis_name: Any = None, dimension_semantics: Any = None,
                  trace_scopes: bool = True, no_pipelining: bool = False,
                  _explicit_indices: bool = False) -> Callable[..., None]:
    """``pltpu.emit_pipeline(body, *, grid, in_specs=(), out_specs=(), ...)``.

    Args:
      body: called once per step as ``body(*block_refs, *scratches)``, the block refs in
        the tree of the refs the pipeline is called with (``body(indices, ...)`` first
        with ``_explicit_indices=True``); its return value is ignored, as in JAX.
      grid: steps per axis (positive ints, or int kernel values such as a loaded size).
      in_specs, out_specs: a BlockSpec or a sequence of them, one per input / output ref;
        index maps take the pipeline's grid indices.
      tiling, trace_scopes, no_pipelining, dimension_semantics: accepted (no effect on
        the result here).
      core_axis, core_axis_name: partition the grid across cores; with one core, nothing
        to partition.

    Returns:
      ``pipeline(*refs, scratches=None, allocations=None, body_prologue=None)``: run the
      loop over ``refs`` (inputs first, then outputs: HBM or VMEM refs, or ``ref.at[...]``
      views), inside a running kernel.

    Raises:
      ValueError: a grid entry that is not positive (JAX's message), both ``core_axis`` and
        ``core_axis_name``; when run: refs that do not match the specs, the errors of
        BlockSpecs and index maps (BlockIndexError for a block outside its ref).
      OutsideKernelError: run outside a kernel.
      UnsupportedJaxUsageError: see the module docstring.
    """
    if any(isinstance(g, int) and g <= 0 for g in grid):
        raise ValueError(f"All elements in the grid must be strictly positive, but got "
                         f"grid={tuple(grid)}")
    if core_axis is not None and core_axis_name is not None:
        raise ValueError("core_axis and core_axis_name cannot both be provided.")
    in_flat = flatten(_normalize(in_specs), is_leaf=lambda x: x is None)[0]
    out_flat = flatten(_normalize(out_specs), is_leaf=lambda x: x is None)[0]

    def pipeline(*refs: Any, scratches: Any = None, allocations: Any = None,
                 body_prologue: Any = None) -> None:
        ctx = require_kernel("pltpu.emit_pipeline")
        if allocations is not None or body_prologue is not None:
            raise UnsupportedJaxUsageError(
                "emit_pipeline(...)(allocations=..., body_prologue=...) is not modelled; "
                "call the pipeline with its refs (and scratches=) only")
        _check_cores(ctx, core_axis, core_axis_name)
        sizes = tuple(int(np.asarray(concrete(g))) for g in grid)
        if any(g <= 0 for g in sizes):
            raise ValueError(f"All elements in the grid must be strictly positive, but got "
                             f"grid={sizes}")
        ref_leaves, ref_def = flatten(refs)
        if len(ref_leaves) != len(in_flat) + len(out_flat):
            raise ValueError(
                f"emit_pipeline has {len(in_flat)} in_specs and {len(out_flat)} out_specs but "
                f"was called with {len(ref_leaves)} refs (inputs first, then outputs)")
        for r in ref_leaves:
            if not isinstance(r, Ref):
                raise TypeError(f"emit_pipeline runs over refs (kernel arguments or "
                                f"ref.at[...] views), got {type(r).__name__}")
        steps = list(itertools.product(*(range(g) for g in sizes)))
        names = _names(body, ref_def, len(ref_leaves))
        ops = [_operand("in" if k < len(in_flat) else "out", names[k], ref,
                        (in_flat + out_flat)[k], steps)
               for k, ref in enumerate(ref_leaves)]
        grid_idx = vectorized_grid(steps)
        for op in ops:
            op.set_indices(steps, [], grid_idx, where="pipeline step")
            allocate_buffers(op, op.name)
            if op.space in HBM_SPACES:
                op.ref = ref_leaves[ops.index(op)]
        plan_in: list[list] = [[] for _ in steps]
        plan_fresh: list[list] = [[] for _ in steps]
        plan_out: list[list] = [[] for _ in steps]
        for op in ops:
            op.plan(steps, plan_in, plan_fresh, plan_out, check_revisits=None)
        block_refs = ref_def.unflatten([op.ref for op in ops])
        extra = tuple(scratches or ())
        buffers = [op.allocation() for op in ops if op.space not in HBM_SPACES]
        buffers = [memory.Allocation(a.name, "pipeline", a.memory_space, a.nbytes, a.buffers,
                                     a.what) for a in buffers]
        with allocated(ctx, buffers):
            saved = ctx.grid, ctx.program_ids
            ctx.grid = sizes
            try:
                for s, pid in enumerate(steps):
                    ctx.program_ids = pid
                    for buf, view, key in plan_in[s]:
                        np.copyto(buf, view[key])
                    for buf, value in plan_fresh[s]:
                        buf.fill(value)
                    if _explicit_indices:
                        body(tuple(np.int32(i) for i in pid), *block_refs, *extra)
                    else:
                        body(*block_refs, *extra)
                    for view, key, buf in plan_out[s]:
                        view[key] = buf
            finally:
                ctx.grid, ctx.program_ids = saved
        ctx.manual_dmas += sum(op.dma_count for op in ops)
        ctx.manual_dma_bytes += sum(op.hbm_bytes for op in ops)

    return pipeline


def _normalize(specs: Any) -> tuple[Any, ...]:
    """A BlockSpec (or None) alone as a one-element tuple; a list as a tuple (JAX's
    ``_normalize_specs``)."""
    if not isinstance(specs, list | tuple):
        return (specs,)
    return tuple(specs)


def _check_cores(ctx: Any, core_axis: Any, core_axis_name: Any) -> None:
    """With one core there is nothing to partition; the axis must exist, as in JAX."""
    if core_axis_name is not None:
        from .lax_axes import axis_size

        axis_size(core_axis_name)
    if core_axis is not None:
        grid = ctx.grid or ()
        if not -len(grid) <= int(core_axis) < len(grid) or grid[int(core_axis)] != 1:
            raise UnsupportedJaxUsageError(
                f"emit_pipeline(core_axis={core_axis}) partitions the pipeline's grid across "
                f"the steps of the outer grid's axis {core_axis} (grid {ctx.grid}); pallas_sim "
                "models this only for an axis of size 1")


def _operand(role: str, name: str, ref: Ref, spec: Any, steps: list[tuple[int, ...]]
             ) -> Operand:
    """The pipeline operand over ``ref``: its blocks come from and go to ``ref``'s buffer.

    Raises:
      UnsupportedJaxUsageError: ragged blocks, Element padding or BoundedSlice.
    """
    if spec is not None and spec.block_shape is not None:
        for d in spec.block_shape:
            if isinstance(d, block_dims.BoundedSlice):
                raise UnsupportedJaxUsageError(
                    f"pl.BoundedSlice in emit_pipeline ({role}put {name!r}) is not modelled; "
                    "use whole blocks")
    op = Operand(role, name, tuple(ref.shape), ref.dtype, spec, len(steps),
                 buffer_default=lambda n, count: 2 if count is None else int(count))
    if op.ragged or any(p != (0, 0) for p in op.pads):
        raise UnsupportedJaxUsageError(
            f"emit_pipeline over {role}put {name!r} of shape {op.shape} with blocks "
            f"{op.trace_block_shape}: blocks that do not divide the ref (JAX rounds the last "
            "one to the (8, 128) tiling) and pl.Element padding are not modelled; choose "
            "blocks that divide the ref")
    op.hbm = ref._buf
    if op.space not in HBM_SPACES and _trivial(op, spec) and (
            spec is None or spec.pipeline_mode is None):
        op.buffers = 1
    return op


def _trivial(op: Operand, spec: Any) -> bool:
    """JAX's ``_spec_has_trivial_windowing``: the block is the whole ref (no squeezed or
    Element dims) and the index map is constant, so one buffer does."""
    if spec is None or spec.block_shape is None:
        return True
    if any(not isinstance(d, block_dims.Blocked) for d in op.dims):
        return False
    return op.sizes == op.shape


def _names(body: Callable[..., Any], ref_def: Any, count: int) -> list[str]:
    """The body's parameter names for the block refs (``block{k}`` where there are none)."""
    from .pallas_call import _kernel_params

    params = _kernel_params(body) or []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                        p.POSITIONAL_OR_KEYWORD)]
    if len(ref_def.children()) == count and len(positional) >= count:
        return positional[:count]
    return [f"block{k}" for k in range(count)]

