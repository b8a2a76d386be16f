"""``pl.pallas_call``: the grid loop with the automatic HBM <-> VMEM pipeline.

Semantics (docs/pallas-sim.md, "Execution rules"; lecture §2.2):

1. Grid steps run in row-major order, last axis fastest.
2. An input block is copied HBM→VMEM at the first step and whenever its block
   index differs from the previous step's.
3. An output block stays in VMEM while its index stays the same and is written
   back when the next step's index differs, and after the last step.  It is
   never filled from HBM.  Coming back to a block already written back raises
   :class:`RevisitedOutputBlockError`.
4. Fresh output blocks, scratch buffers and ragged padding are poisoned.
5. Index maps return block indices (element offsets for ``pl.Element`` dimensions);
   out-of-range ones raise :class:`BlockIndexError`.

Arguments, specs, ``out_shape`` and scratch shapes are pytrees as in JAX
(:mod:`pallas_sim._src.call_args`). The same machinery runs ``pl.kernel``
(:mod:`pallas_sim._src.mesh`): one invocation, no grid, every operand in HBM.

Everything that does not depend on the kernel (index-map results, which steps
copy what, the VMEM total) is computed before the first step, so the per-step
loop only copies blocks and calls the kernel (:mod:`pallas_sim._src.operands`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import (
    abstract,
    abstract_loop,
    context,
    direct_outputs,
    dma,
    grid_order,
    memory,
    op_accounting,
    tracing,
)
from .abstract import AbstractArray
from .call_args import (
    check_in_specs,
    kernel_out_args,
    leaf_paths,
    match_specs,
    no_block_spec,
    top_level_tuple,
)
from .config import OPTIONS
from .dtypes import fill_value
from .errors import GridSemanticsError, KernelSignatureError, UnsupportedJaxUsageError
from .memory_spaces import HBM_SPACES, ScratchShape, SpaceName
from .operands import Operand, allocate_buffers, dtype_name, vectorized_grid
from .pytrees import flatten
from .refs import make_ref
from .specs import CompilerParams, CostEstimate, GridDimensionSemantics, GridSpec, ShapeDtypeStruct
from .values import canonical_dtype, concrete

#: The dimension semantics pallas_sim accepts, by their JAX string.
_SEMANTICS = ("parallel", "arbitrary", "core_parallel")


def cdiv(a: Any, b: Any) -> Any:
    """Ceiling division (JAX ``pl.cdiv``), for grid sizes and loop counts.

    Python ints: ``(a + b - 1) // b``, JAX's formula for static sizes (for a negative
    ``b`` it is not the mathematical ceiling, as in JAX). Kernel values or arrays:
    ``(a + (b - 1)) / b`` rounded toward zero, as JAX's ``lax.div``; the result is a kernel
    value when an argument is one.
    """
    if isinstance(a, int | np.integer) and isinstance(b, int | np.integer):
        return (int(a) + int(b) - 1) // int(b)
    from .lax_elementwise import div

    return div(a + (b - 1), b)


def pallas_call(kernel: Callable[..., None], out_shape: object, *,
                grid_spec: GridSpec | None = None,
                grid: int | Sequence[int] | None = (),
                in_specs: object = no_block_spec, out_specs: object = no_block_spec,
                scratch_shapes: object = (),
                input_output_aliases: dict[int, int] | None = None,
                compiler_params: CompilerParams | None = None,
                interpret: object = False, name: str | None = None,
                debug: bool = False, cost_estimate: CostEstimate | None = None,
                metadata: dict[str, str] | None = None,
                **_ignored: object) -> Callable[..., object]:
    """Wrap ``kernel`` into a function over whole arrays (JAX ``pl.pallas_call``).

    Args:
      kernel: called once per grid step with
        ``(*scalar_prefetch_refs, *input_refs, *output_refs, *scratch_refs)`` (each input
        argument and ``out_shape`` entry as the same tree of refs; dict scratch shapes as
        keyword arguments); must return None.
      out_shape: a pytree of :class:`ShapeDtypeStruct` (or anything with ``shape`` and
        ``dtype``); ``None`` entries make no output.
      grid_spec: a ``pl.GridSpec`` / ``pltpu.PrefetchScalarGridSpec``; exclusive
        with ``grid``/``in_specs``/``out_specs``/``scratch_shapes``.
      grid: number of steps per axis (an int is one axis); default one step.
      in_specs: a tuple or list of BlockSpecs matching the arguments' pytree; left out,
        every input is one whole-array block.
      out_specs: BlockSpecs matching ``out_shape``'s pytree; left out, whole arrays.
      scratch_shapes: a pytree of ``pltpu.VMEM(shape, dtype)`` / ``pltpu.SMEM(...)`` /
        ``pltpu.SemaphoreType.DMA`` buffers (allocated once, poisoned, persisting across
        steps).
      input_output_aliases: ``{input index: output index}`` over the flattened inputs
        (scalar-prefetch arguments included) and outputs, as in JAX.
      compiler_params: ``pltpu.CompilerParams(dimension_semantics=...,
        vmem_limit_bytes=...)``.
      cost_estimate: a ``pl.CostEstimate``, recorded on the call's trace.
      interpret, debug, metadata: accepted and ignored, so real-Pallas code runs
        unchanged.
      name: the call's name in the trace (default: the kernel's name).

    Returns:
      A function of the call's arguments (NumPy arrays) returning ``out_shape``'s tree of
      arrays (a top-level list becomes a tuple, as in JAX).

    Raises (when the returned function is called):
      VmemOOMError, BlockIndexError, RevisitedOutputBlockError,
      GridSemanticsError, KernelSignatureError, ValueError (bad aliasing, arguments, or
      specs that do not match them, with JAX's messages); whatever the kernel raises
      propagates unchanged.
    Raises (at once):
      ValueError: ``grid_spec`` together with ``grid``/``in_specs``/..., or ``in_specs``
        that is not a tuple or list.
      TypeError: ``cost_estimate`` that is not a ``pl.CostEstimate``.
    """
    if grid_spec is not None:
        if grid or in_specs is not no_block_spec or out_specs is not no_block_spec \
                or scratch_shapes:
            raise ValueError("pass either grid_spec or grid/in_specs/out_specs/scratch_shapes, "
                             "not both (JAX: If `grid_spec` is specified, then `grid`, "
                             "`in_specs`, `out_specs` and `scratch_shapes` must not be)")
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes, n_prefetch = grid_spec.scratch_shapes, grid_spec.num_scalar_prefetch
    else:
        in_specs = check_in_specs(in_specs)
        n_prefetch = 0
    call = _Call(kernel, out_shape, _as_grid(grid), in_specs, out_specs, scratch_shapes,
                 dict(input_output_aliases or {}), compiler_params or CompilerParams(),
                 name or _kernel_name(kernel), n_prefetch, _cost(cost_estimate))

    @functools.wraps(kernel)
    def run(*args: object) -> object:
        return call(args)

    return run


def _cost(cost_estimate: object) -> dict[str, int] | None:
    """The estimate as the trace records it.

    Raises:
      TypeError: not None and not a ``pl.CostEstimate`` (JAX refuses an unhashable one,
        "unhashable type: 'dict'", and ignores other values; pallas_sim refuses them all).
    """
    if cost_estimate is None:
        return None
    if not isinstance(cost_estimate, CostEstimate):
        try:
            hash(cost_estimate)
        except TypeError as exc:
            raise TypeError(f"{exc} (cost_estimate must be a pl.CostEstimate(flops=..., "
                            "transcendentals=..., bytes_accessed=...))") from None
        raise TypeError(f"cost_estimate must be a pl.CostEstimate(flops=..., "
                        f"transcendentals=..., bytes_accessed=...), got {cost_estimate!r}")
    return {"flops": cost_estimate.flops, "transcendentals": cost_estimate.transcendentals,
            "bytes_accessed": cost_estimate.bytes_accessed,
            "remote_bytes_transferred": cost_estimate.remote_bytes_transferred}


def _as_grid(grid: object) -> tuple[int, ...]:
    if grid is None:
        return ()
    if isinstance(grid, (int, np.integer)):
        return (int(grid),)
    return tuple(int(g) for g in grid)  # type: ignore[union-attr]


def _kernel_name(kernel: Callable[..., None]) -> str:
    while isinstance(kernel, functools.partial):
        kernel = kernel.func
    return getattr(kernel, "__name__", "kernel")


_SIGNATURES: dict[tuple, list[inspect.Parameter] | None] = {}


def _signature_key(kernel: Callable[..., object]) -> tuple | None:
    """A key under which the kernel's signature can be cached, or None.

    Wrappers usually build ``functools.partial(kernel, **static)`` afresh on
    every call, and ``inspect.signature`` of a partial costs ~0.2 ms; what the
    signature depends on (the code object, the defaults, what the partials
    bind) is stable, so it keys the cache.
    """
    bound_args, bound_kw = 0, []
    while isinstance(kernel, functools.partial):
        bound_args += len(kernel.args)
        bound_kw.extend(kernel.keywords)
        kernel = kernel.func
    code = getattr(kernel, "__code__", None)
    if code is None:
        return None
    return (code, bound_args, tuple(sorted(bound_kw)), len(kernel.__defaults__ or ()),
            tuple(sorted(kernel.__kwdefaults__ or ())))


def _kernel_params(kernel: Callable[..., object]) -> list[inspect.Parameter] | None:
    key = _signature_key(kernel)
    if key is not None and key in _SIGNATURES:
        return _SIGNATURES[key]
    try:
        params = list(inspect.signature(kernel).parameters.values())
    except (TypeError, ValueError):
        params = None
    if key is not None:
        if len(_SIGNATURES) > 4096:
            _SIGNATURES.clear()
        _SIGNATURES[key] = params
    return params


def _kernel_param_names(kernel: Callable[..., None], count: int, mesh: bool = False,
                        keywords: frozenset[str] = frozenset()) -> list[str]:
    """The names of the kernel's first ``count`` positional parameters (``ref{i}`` where
    it has none).

    Raises:
      KernelSignatureError: the kernel takes fewer positional refs than the call passes,
        or requires more.
    """
    key = _signature_key(kernel)
    cache_key = None if key is None else (key, count, mesh, keywords)
    if cache_key is not None and cache_key in _PARAM_NAMES:
        return _PARAM_NAMES[cache_key]
    names = _param_names(kernel, count, mesh, keywords)
    if cache_key is not None:
        if len(_PARAM_NAMES) > 4096:
            _PARAM_NAMES.clear()
        _PARAM_NAMES[cache_key] = names
    return names


_PARAM_NAMES: dict[tuple, list[str]] = {}


def _param_names(kernel: Callable[..., None], count: int, mesh: bool,
                 keywords: frozenset[str]) -> list[str]:
    params = _kernel_params(kernel)
    if params is None:
        return [f"ref{i}" for i in range(count)]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                        p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    required = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty and p.name not in keywords]
    if len(required) > count or (len(positional) < count and not varargs):
        raise KernelSignatureError(
            f"kernel {_kernel_name(kernel)}({', '.join(positional)}) takes "
            f"{len(positional)} refs but {'pl.kernel' if mesh else 'pallas_call'} passes "
            f"{count} (scalar-prefetch refs, then inputs, then outputs, then scratch)")
    names = positional[:count]
    names += [f"ref{i}" for i in range(len(names), count)]
    return names


class _Call:
    """A configured pallas_call (or ``pl.kernel``, with ``mesh_axes``); ``__call__`` runs it
    on arguments."""

    def __init__(self, kernel: Callable[..., None], out_shape: object, grid: tuple[int, ...],
                 in_specs: object, out_specs: object, scratch_shapes: object,
                 aliases: dict[int, int], params: CompilerParams, name: str, n_prefetch: int,
                 cost: dict[str, int] | None, *,
                 mesh_axes: dict[str, tuple[int, int]] | None = None) -> None:
        for g in grid:
            if g < 0:
                raise ValueError(f"grid {grid} has a negative size")
        self.kernel, self.grid, self.name, self.n_prefetch = kernel, grid, name, n_prefetch
        self.cost, self.mesh_axes = cost, mesh_axes
        self.out_shape = top_level_tuple(out_shape)
        out_leaves, self.out_def = flatten(self.out_shape)
        self.out_structs = [ShapeDtypeStruct(o.shape, o.dtype) for o in out_leaves]
        self.in_specs, self.out_specs = in_specs, top_level_tuple(out_specs)
        if isinstance(scratch_shapes, ScratchShape):
            raise TypeError("scratch_shapes must be a sequence (or dict) of scratch shapes, "
                            f"e.g. [pltpu.VMEM(...)], got {scratch_shapes!r}")
        self.scratch_tree = scratch_shapes
        self.scratch, self.scratch_def = flatten(scratch_shapes)
        for s in self.scratch:
            if not isinstance(s, ScratchShape):
                raise TypeError(f"scratch shapes must be pltpu.VMEM(...), pltpu.SMEM(...) or "
                                f"pltpu.SemaphoreType.DMA, got {s!r}")
            if s.memory_space in HBM_SPACES:
                raise ValueError(
                    f"Cannot allocate HBM in scratch shapes ({s.memory_space} "
                    f"{dtype_name(s.dtype)}{list(s.shape)}): a kernel's scratch lives in "
                    "VMEM, SMEM or semaphore memory (JAX's TPU interpret mode fails here); "
                    "pass an HBM buffer as an input or output with memory_space=pl.ANY")
        self.aliases = {int(k): int(v) for k, v in aliases.items()}
        self.semantics = () if mesh_axes is not None else _semantics(
            params.dimension_semantics, grid)
        self.vmem_request = params.vmem_limit_bytes
        self.vmem_limit = 0  # set when the call runs: the chip is known then (estimate)

    def _names(self, rest: tuple[Any, ...]) -> tuple[list[str], list[str], list[str],
                                                      list[str]]:
        """Names of the prefetch refs, input leaves, output leaves and scratch leaves: the
        kernel's parameter names, with the key path inside a pytree argument."""
        n_pre = self.n_prefetch
        out_args = list(self.out_shape) if isinstance(self.out_shape, tuple) else [
            self.out_shape]
        scratch_kw = isinstance(self.scratch_tree, dict)
        scratch_pos = [] if scratch_kw else list(self.scratch_tree)  # type: ignore[call-overload]
        params = _kernel_param_names(
            self.kernel, n_pre + len(rest) + len(out_args) + len(scratch_pos),
            self.mesh_axes is not None,
            frozenset(self.scratch_tree) if scratch_kw else frozenset())  # type: ignore[arg-type]
        pre = params[:n_pre]
        ins = _leaf_names(params[n_pre:n_pre + len(rest)], rest)
        base = n_pre + len(rest)
        outs = _leaf_names(params[base:base + len(out_args)], out_args)
        if scratch_kw:
            keys = list(self.scratch_tree)  # type: ignore[call-overload]
            leaf_order = flatten({k: k for k in keys})[0]
            scratch = _leaf_names(leaf_order, [self.scratch_tree[k]  # type: ignore[index]
                                               for k in leaf_order])
        else:
            scratch = _leaf_names(params[base + len(out_args):], scratch_pos)
        return pre, ins, outs, scratch

    def __call__(self, args: tuple[object, ...]) -> object:
        self.vmem_limit = memory.scoped_limit(self.vmem_request, self.name)
        n_pre = self.n_prefetch
        if len(args) < n_pre:
            raise ValueError(f"{self.name}: {n_pre} scalar-prefetch arguments expected, "
                             f"got {len(args)} arguments in all")
        # each scalar-prefetch argument is a pytree, as in JAX (a tuple of tables, None)
        pre_leaves, pre_def = flatten(tuple(args[:n_pre]))
        prefetch = [_on_device(a, copy=True) for a in pre_leaves]
        rest = tuple(args[n_pre:])
        leaves, in_def = flatten(rest)
        arrays = [_on_device(a) for a in leaves]
        in_specs = match_specs(self.in_specs, rest, len(arrays), "`in_specs`", "`inputs`")
        out_specs = match_specs(self.out_specs, self.out_shape, len(self.out_structs),
                                "`out_specs`", "`out_shape`")
        steps = grid_order.grid_steps(self.grid, self.semantics,
                                      shuffle=OPTIONS.shuffle_parallel, seed=OPTIONS.shuffle_seed)
        num_steps = len(steps)
        pre_names, in_names, out_names, scratch_names = self._names(rest)
        space = "any" if self.mesh_axes is not None else "vmem"
        ins = [Operand("in", nm, a.shape, a.dtype, s, num_steps, default_space=space)
               for nm, a, s in zip(in_names, arrays, in_specs, strict=True)]
        outs = [Operand("out", nm, o.shape, o.dtype, s, num_steps, default_space=space)
                for nm, o, s in zip(out_names, self.out_structs, out_specs, strict=True)]
        aliases = self._check_aliases(ins, outs)

        pre_names = _leaf_names(pre_names, list(args[:n_pre]))
        pre_refs = list(pre_def.unflatten(
            [make_ref(p, nm, "smem") for p, nm in zip(prefetch, pre_names, strict=True)]))
        grid_idx = vectorized_grid(steps)
        for op in ins + outs:
            op.set_indices(steps, pre_refs, grid_idx)

        allocations = [op.allocation() for op in ins + outs]
        allocations += [memory.Allocation(nm, "prefetch", "smem", p.nbytes, 1,
                                          f"{dtype_name(p.dtype)}{list(p.shape)}")
                        for nm, p in zip(pre_names, prefetch, strict=True)]
        allocations += [memory.Allocation(nm, "scratch", s.memory_space, s.nbytes, 1,
                                          f"{dtype_name(s.dtype)}{list(s.shape)} scratch")
                        for nm, s in zip(scratch_names, self.scratch, strict=True)]
        vmem = memory.check_vmem(self.name, allocations, self.vmem_limit)
        _, smem = memory.totals(allocations)

        self._fill_hbm(ins, outs, arrays, aliases)
        for op in ins + outs:
            allocate_buffers(op)
        for o, op in enumerate(ins + outs):
            revisits = None if op.role == "in" or (o - len(ins)) in aliases else self.name
            op.account(steps, check_revisits=revisits)
        smem_blocks = any(op.space == "smem" for op in ins + outs)
        concrete_steps = not abstract.ACTIVE[0] or smem_blocks
        plan_in: list[list] = [[] for _ in range(num_steps)]
        plan_fresh: list[list] = [[] for _ in range(num_steps)]
        plan_out: list[list] = [[] for _ in range(num_steps)]
        plan_bind: list[list] = [[] for _ in range(num_steps)]
        every_step: list[tuple] = []  # inputs copied at every step: (buffer, view, keys)
        # outputs written where they live when nothing reads HBM meanwhile (direct_outputs.py)
        in_place = direct_outputs.can_write_in_place(ins, outs, bool(aliases))
        if concrete_steps:
            for op in ins + outs:
                op.schedule(plan_in, plan_fresh, plan_out, plan_bind if in_place else None,
                            every_step)
        mode = OPTIONS.uninitialized
        scratch_refs = [dma.SemaphoreRef.allocate(s.shape, nm)
                        if s.memory_space == dma.SEMAPHORE_SPACE else
                        make_ref(AbstractArray(s.shape, s.dtype)
                                 if abstract.ACTIVE[0] and s.memory_space != "smem" else
                                 np.full(s.shape, fill_value(s.dtype, mode), s.dtype), nm,
                                 s.memory_space)
                        for s, nm in zip(self.scratch, scratch_names, strict=True)]
        sem_refs = [r for r in scratch_refs if isinstance(r, dma.SemaphoreRef)]
        scratch_tree = self.scratch_def.unflatten(scratch_refs)
        refs: tuple[Any, ...] = (*pre_refs, *in_def.unflatten([op.ref for op in ins]),
                                 *kernel_out_args(self.out_def, [op.ref for op in outs]))
        kernel = self.kernel
        if isinstance(scratch_tree, dict):
            kernel = functools.partial(kernel, **scratch_tree)
        else:
            refs = (*refs, *scratch_tree)

        ctx = context.KernelContext(
            None if self.mesh_axes is not None else self.grid,
            kind="pallas_call" if self.mesh_axes is None else "mpmd_map",
            axes=self.mesh_axes, call_name=self.name, vmem_limit=self.vmem_limit,
            static_allocations=allocations)
        in_refs = [op.ref for op in ins]
        reads = np.zeros((len(ins), num_steps), np.int32)
        counter = op_accounting.begin(num_steps)
        context._STACK.append(ctx)
        try:
            if abstract.ACTIVE[0] and not smem_blocks:  # shape-only: no data to move
                abstract_loop.run_steps(
                    kernel, refs, steps, self.grid if self.mesh_axes is None else None, ctx,
                    counter, in_refs, reads, sem_refs, returned_error=self._returned_error,
                    replicable=self.mesh_axes is None and not OPTIONS.shuffle_parallel and
                    not any(s.memory_space == "smem" for s in self.scratch))
            # the per-step loop: every name it uses is a local (this is the hot path)
            counted, numbered_ins = counter.steps, list(enumerate(in_refs))
            for s in range(0 if concrete_steps else num_steps, num_steps):
                ctx.program_ids = steps[s]
                counter.cur = counted[s]  # counter.step(s)
                for ref, view, key in plan_bind[s]:
                    ref._buf = view[key]
                for buf, view, keys in every_step:  # buf[...] = is faster than np.copyto
                    buf[...] = view[keys[s]]
                for buf, view, key in plan_in[s]:
                    buf[...] = view[key]
                for buf, value in plan_fresh[s]:
                    buf.fill(value)
                returned = kernel(*refs)
                if returned is not None:
                    raise self._returned_error(returned)
                for j, ref in numbered_ins:
                    if ref._reads:
                        reads[j, s] = ref._reads
                        ref._reads = 0
                for view, key, buf in plan_out[s]:
                    view[key] = buf
        finally:
            context._STACK.pop()
            ops = op_accounting.end(counter)
        if sem_refs:
            dma.check_drained(sem_refs, self.name)

        results = []
        for op in outs:
            logical = op.hbm[op.logical] if op.needs_padding else op.hbm
            results.append(np.ascontiguousarray(logical) if op.needs_padding and not
                           isinstance(logical, AbstractArray) else logical)

        self._record(pre_names, prefetch, ins, outs, reads, scratch_names, ctx, vmem, smem,
                     num_steps, tuple(results), ops)
        return self.out_def.unflatten(results)

    def _fill_hbm(self, ins: list[Operand], outs: list[Operand], arrays: list[np.ndarray],
                  aliases: dict[int, int]) -> None:
        """Give every operand its HBM array: inputs padded with poison where blocks are
        ragged or Element dims are padded; outputs poisoned, or the aliased input's.

        Raises:
          UnsupportedJaxUsageError: an aliased operand whose blocks pad the array (Element
            padding, or different ragged paddings of input and output).
        """
        mode = OPTIONS.uninitialized
        aliased_inputs = set(aliases.values())
        shapes_only = abstract.ACTIVE[0]
        for i, (op, array) in enumerate(zip(ins, arrays, strict=True)):
            if shapes_only and (op.needs_padding or isinstance(array, AbstractArray)):
                op.hbm = AbstractArray(op.padded_shape, op.dtype)
            elif op.needs_padding:
                hbm = np.full(op.padded_shape, fill_value(op.dtype, mode), op.dtype)
                hbm[op.logical] = array
                op.hbm = hbm
            elif i in aliased_inputs:
                # The output reuses this input's HBM buffer, but JAX arrays are immutable:
                # the caller's array never changes, so the call works on its own copy.
                op.hbm = np.array(array, order="C", copy=True)
            else:
                op.hbm = np.ascontiguousarray(array)
        for o, op in enumerate(outs):
            if o in aliases:
                source = ins[aliases[o]]
                if any(p != (0, 0) for p in op.pads + source.pads) or \
                        source.hbm.shape != op.padded_shape:
                    raise UnsupportedJaxUsageError(
                        f"output {op.name!r} is aliased to input {source.name!r} but their "
                        "blocks pad the array differently (pl.Element padding, or ragged "
                        "blocks of different sizes); JAX's HLO interpreter refuses this too "
                        "(Padding with aliasing not supported.). Alias operands with the "
                        "same block shape and no Element padding")
                op.hbm = source.hbm
            elif shapes_only:
                op.hbm = AbstractArray(op.padded_shape, op.dtype)
            else:
                op.hbm = np.full(op.padded_shape, fill_value(op.dtype, mode), op.dtype)

    def _returned_error(self, returned: object) -> Exception:
        if self.mesh_axes is None:
            return KernelSignatureError(
                f"kernel {self.name} returned a value; a Pallas kernel must return None and "
                "write its results into the output refs")
        return ValueError(
            f"The kernel function in mpmd_map {self.name}{_where(self.kernel)} should return "
            f"None. It returns a PyTree: {flatten(returned)[1]}. (pl.kernel bodies write "
            "their results into the output refs, with pltpu.sync_copy from VMEM)")

    def _record(self, pre_names: list[str], prefetch: list[np.ndarray], ins: list[Operand],
                outs: list[Operand], reads: np.ndarray, scratch_names: list[str],
                ctx: context.KernelContext, vmem: int, smem: int, num_steps: int,
                results: tuple[np.ndarray, ...],
                ops: op_accounting.OpCounts | None = None) -> None:
        operand_traces = [
            tracing.OperandTrace(role=tracing.Role.PREFETCH, name=nm, shape=p.shape,
                                 dtype=dtype_name(p.dtype), block_shape=p.shape,
                                 memory_space=SpaceName.SMEM, buffers=1, dma_count=0,
                                 hbm_bytes=0, block_indices=np.zeros((0, 0), np.int32))
            for nm, p in zip(pre_names, prefetch, strict=True)]
        operand_traces += [_operand_trace(op, reads[j]) for j, op in enumerate(ins)]
        operand_traces += [_operand_trace(op) for op in outs]
        operand_traces += [
            tracing.OperandTrace(role=tracing.Role.SCRATCH, name=nm, shape=s.shape,
                                 dtype=dtype_name(s.dtype), block_shape=s.shape,
                                 memory_space=s.memory_space, buffers=1, dma_count=0,
                                 hbm_bytes=0, block_indices=np.zeros((0, 0), np.int32))
            for nm, s in zip(scratch_names, self.scratch, strict=True)]
        tracing.record(tracing.CallTrace(
            name=self.name, grid=self.grid, dimension_semantics=self.semantics,
            num_steps=num_steps, vmem_bytes=vmem + ctx.peak_scoped_vmem,
            smem_bytes=smem + ctx.peak_scoped_smem, vmem_limit_bytes=self.vmem_limit,
            operands=tuple(operand_traces), when_bodies_run=ctx.when_bodies_run,
            manual_dma_count=ctx.manual_dmas, manual_dma_bytes=ctx.manual_dma_bytes,
            scoped_vmem_bytes=ctx.peak_scoped_vmem, scoped_smem_bytes=ctx.peak_scoped_smem,
            kind="pallas_call" if self.mesh_axes is None else "kernel",
            cost_estimate=self.cost,
            input_output_aliases=tuple(sorted(self.aliases.items())), ops=ops),
            results, self.kernel)

    def _check_aliases(self, ins: list[Operand], outs: list[Operand]) -> dict[int, int]:
        """Return {output index: input index}.

        Raises:
          ValueError: an index out of range, or shape/dtype mismatch.
        """
        by_out: dict[int, int] = {}
        for i_arg, o in self.aliases.items():
            i = i_arg - self.n_prefetch
            if not 0 <= i < len(ins) or not 0 <= o < len(outs):
                raise ValueError(
                    f"input_output_aliases={{{i_arg}: {o}}}: the call has "
                    f"{len(ins) + self.n_prefetch} inputs (counting scalar prefetch) and "
                    f"{len(outs)} outputs")
            a, b = ins[i], outs[o]
            if a.shape != b.shape or a.dtype != b.dtype:
                raise ValueError(
                    f"input_output_aliases={{{i_arg}: {o}}}: input {a.name!r} is "
                    f"{a.dtype.name}{list(a.shape)} but output {b.name!r} is "
                    f"{b.dtype.name}{list(b.shape)}; aliased buffers must match in shape "
                    "and dtype")
            if o in by_out:
                raise ValueError(f"output {o} is aliased to two inputs")
            by_out[o] = i
        return by_out


def _on_device(a: object, copy: bool = False) -> np.ndarray:
    """An argument as JAX would hold it on the device: a NumPy array in JAX's 32-bit dtype
    (float64 → float32, int64 → int32, ...; JAX converts NumPy arguments silently with
    64-bit types off, its default)."""
    if isinstance(a, AbstractArray):  # an abstract run's shape-only argument
        dt = canonical_dtype(a.dtype)
        return a if dt == a.dtype else a.astype(dt)
    array = a if isinstance(a, np.ndarray) else np.asarray(concrete(a))
    dtype = canonical_dtype(array.dtype)
    if dtype != array.dtype:
        return array.astype(dtype)
    return np.array(array) if copy else array


def _where(kernel: Callable[..., Any]) -> str:
    """`` at file:line`` of the kernel's definition, as JAX's messages name it."""
    while isinstance(kernel, functools.partial):
        kernel = kernel.func
    code = getattr(kernel, "__code__", None)
    return "" if code is None else f" at {code.co_filename}:{code.co_firstlineno}"


def _leaf_names(params: Sequence[str], trees: Sequence[Any]) -> list[str]:
    """``param + key path`` for every leaf of each tree (a leaf argument keeps its name)."""
    return [param + path for param, tree in zip(params, trees, strict=True)
            for path in ([""] if type(tree) in _LEAF_TYPES else leaf_paths(tree))]


_LEAF_TYPES = frozenset({np.ndarray, ShapeDtypeStruct, ScratchShape})


def _operand_trace(op: Operand, reads: np.ndarray | None = None) -> tracing.OperandTrace:
    return tracing.OperandTrace(
        role=op.role, name=op.name, shape=op.shape, dtype=dtype_name(op.dtype),
        block_shape=op.trace_block_shape, memory_space=op.space, buffers=op.buffers,
        dma_count=op.dma_count, hbm_bytes=op.hbm_bytes,
        block_indices=op.idx.astype(np.int32),
        kernel_reads=np.zeros(0, np.int32) if reads is None else reads,
        element_dims=op.element_dims)


def _semantics(given: tuple[object, ...] | None, grid: tuple[int, ...]) -> tuple[str, ...]:
    """The dimension semantics as strings ("parallel", "arbitrary", "core_parallel").

    Raises:
      GridSemanticsError: the wrong number of entries, an unknown one, or "parallel" axes
        that do not lead the grid (JAX's message; "core_parallel" is not "parallel" for
        this rule, as in JAX's TPU interpret mode).
    """
    if given is None:
        return ("arbitrary",) * len(grid)
    if len(given) != len(grid):
        raise GridSemanticsError(
            f"dimension_semantics={tuple(given)} has {len(given)} entries but the grid "
            f"{grid} has {len(grid)} axes; give one entry per grid axis")
    out = []
    for s in given:
        key = s.value if isinstance(s, GridDimensionSemantics) else s
        if not isinstance(key, str) or key not in _SEMANTICS:
            raise GridSemanticsError(
                f"unknown dimension semantics {s!r}; use pltpu.PARALLEL, pltpu.ARBITRARY or "
                "pltpu.CORE_PARALLEL, or their strings 'parallel', 'arbitrary', "
                "'core_parallel'")
        out.append(key)
    seen_other = False
    for key in out:
        if key != "parallel":
            seen_other = True
        elif seen_other:
            raise GridSemanticsError(
                "Dimensions with parallel semantics must form a prefix of the grid. "
                f"Got dimension_semantics={tuple(given)}.")
    return tuple(out)
