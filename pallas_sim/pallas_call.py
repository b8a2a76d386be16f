"""``pl.pallas_call``: the grid loop with the automatic HBM <-> VMEM pipeline.

Semantics (pallas-sim.md, "Execution"; lecture §2.2):

1. Grid steps run in row-major order, last axis fastest.
2. An input block is copied HBM→VMEM at the first step and whenever its block
   index differs from the previous step's.
3. An output block stays in VMEM while its index stays the same and is written
   back when the next step's index differs, and after the last step.  It is
   never filled from HBM.  Coming back to a block already written back raises
   :class:`RevisitedOutputBlockError`.
4. Fresh output blocks, scratch buffers and ragged padding are poisoned.
5. Index maps return block indices; out-of-range ones raise
   :class:`BlockIndexError`.

Everything that does not depend on the kernel (index-map results, which steps
copy what, the VMEM total) is computed before the first step, so the per-step
loop only copies blocks and calls the kernel.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence

import numpy as np

from . import context, dma, grid_order, memory, tracing
from .config import OPTIONS
from .dtypes import fill_value
from .errors import (
    BlockIndexError,
    GridSemanticsError,
    KernelSignatureError,
    RevisitedOutputBlockError,
    TracerConversionError,
)
from .refs import Ref
from .specs import ANY, SMEM, BlockSpec, CompilerParams, GridSpec, ScratchShape, ShapeDtypeStruct
from .values import KernelValue, concrete

_SEMANTICS = {"parallel": "parallel", "arbitrary": "arbitrary",
              "core_parallel": "parallel"}


_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, cached (NumPy recomputes the name on every access)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


def cdiv(a: int, b: int) -> int:
    """Ceiling division ``-(-a // b)`` (JAX ``pl.cdiv``), for grid sizes."""
    return -(-int(a) // int(b))


def pallas_call(kernel: Callable[..., None], out_shape: object, *,
                grid_spec: GridSpec | None = None,
                grid: int | Sequence[int] | None = None,
                in_specs: object = None, out_specs: object = None,
                scratch_shapes: Sequence[ScratchShape] | None = None,
                input_output_aliases: dict[int, int] | None = None,
                compiler_params: CompilerParams | None = None,
                interpret: object = False, name: str | None = None,
                debug: bool = False, cost_estimate: object = None,
                **_ignored: object) -> Callable[..., object]:
    """Wrap ``kernel`` into a function over whole arrays (JAX ``pl.pallas_call``).

    Args:
      kernel: called once per grid step with
        ``(*scalar_prefetch_refs, *input_refs, *output_refs, *scratch_refs)``;
        must return None.
      out_shape: a :class:`ShapeDtypeStruct` (or anything with ``shape`` and
        ``dtype``), or a tuple/list of them.
      grid_spec: a ``pl.GridSpec`` / ``pltpu.PrefetchScalarGridSpec``; exclusive
        with ``grid``/``in_specs``/``out_specs``/``scratch_shapes``.
      grid: number of steps per axis (an int is one axis); default one step.
      in_specs, out_specs: a BlockSpec per input / output (``None`` or no
        specs: the whole array is one block).
      scratch_shapes: ``pltpu.VMEM(shape, dtype)`` / ``pltpu.SMEM(...)`` buffers.
      input_output_aliases: ``{input index: output index}``; input indices
        count the scalar-prefetch arguments, as in JAX.
      compiler_params: ``pltpu.CompilerParams(dimension_semantics=...,
        vmem_limit_bytes=...)``.
      interpret, debug, cost_estimate: accepted and ignored, so real-Pallas
        code runs unchanged.
      name: the call's name in the trace (default: the kernel's name).

    Returns:
      A function of the call's arguments (NumPy arrays) returning the output
      array, or a tuple of arrays for a tuple ``out_shape``.

    Raises (when the returned function is called):
      VmemOOMError, BlockIndexError, RevisitedOutputBlockError,
      GridSemanticsError, KernelSignatureError, ValueError (bad aliasing or
      arguments); whatever the kernel raises propagates unchanged.
    """
    if grid_spec is not None:
        if grid is not None or in_specs is not None or out_specs is not None or scratch_shapes:
            raise ValueError("pass either grid_spec or grid/in_specs/out_specs/scratch_shapes, "
                             "not both")
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes, n_prefetch = grid_spec.scratch_shapes, grid_spec.num_scalar_prefetch
    else:
        n_prefetch = 0
    call = _Call(kernel, out_shape, _as_grid(grid), in_specs, out_specs,
                 tuple(scratch_shapes or ()), dict(input_output_aliases or {}),
                 compiler_params or CompilerParams(), name or _kernel_name(kernel), n_prefetch)

    @functools.wraps(kernel)
    def run(*args: object) -> object:
        return call(args)

    return run


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


def _kernel_param_names(kernel: Callable[..., None], count: int) -> list[str]:
    params = _kernel_params(kernel)
    if params is None:
        return [f"ref{i}" for i in range(count)]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                        p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    required = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty]
    if len(required) > count or (len(positional) < count and not varargs):
        raise KernelSignatureError(
            f"kernel {_kernel_name(kernel)}({', '.join(positional)}) takes "
            f"{len(positional)} refs but pallas_call passes {count} "
            "(scalar-prefetch refs, then inputs, then outputs, then scratch)")
    names = positional[:count]
    names += [f"ref{i}" for i in range(len(names), count)]
    return names


class _Operand:
    """One array operand of a call: its HBM array, blocks and DMA plan."""

    __slots__ = ("role", "name", "shape", "dtype", "spec_shape", "blocks", "space", "buffers",
                 "index_map", "idx", "changed", "hbm", "buf", "ref", "dma_count", "hbm_bytes",
                 "ragged", "whole")

    def __init__(self, role: str, name: str, shape: tuple[int, ...], dtype: np.dtype,
                 spec: BlockSpec | None, num_steps: int) -> None:
        self.role, self.name, self.shape, self.dtype = role, name, shape, dtype
        self.whole = spec is None or spec.block_shape is None
        self.index_map = None if spec is None else spec.index_map
        if spec is not None and spec.block_shape is not None:
            if len(spec.block_shape) != len(shape):
                raise KernelSignatureError(
                    f"BlockSpec for {role}put {name!r} has block shape {spec.block_shape} "
                    f"with {len(spec.block_shape)} dims but the array has shape {shape}")
            for b in spec.block_shape:
                if b is not None and b <= 0:
                    raise ValueError(f"block shape {spec.block_shape} of {name!r} has a "
                                     "non-positive entry")
            self.spec_shape = spec.block_shape
        else:
            self.spec_shape = shape
        self.blocks = tuple(1 if b is None else b for b in self.spec_shape)
        space = spec.memory_space if spec is not None else None
        self.space = "any" if space == ANY else "smem" if space == SMEM else "vmem"
        count = spec.pipeline_mode.buffer_count if spec is not None and spec.pipeline_mode else None
        self.buffers = 0 if self.space == "any" else memory.default_buffers(num_steps, count)
        self.ragged = any(d % b for d, b in zip(shape, self.blocks, strict=True))
        self.dma_count = 0
        self.hbm_bytes = 0

    @property
    def kernel_shape(self) -> tuple[int, ...]:
        return tuple(b for b in self.spec_shape if b is not None)

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return tuple(cdiv(d, b) * b for d, b in zip(self.shape, self.blocks, strict=True))

    @property
    def nblocks(self) -> tuple[int, ...]:
        return tuple(cdiv(d, b) for d, b in zip(self.shape, self.blocks, strict=True))

    def allocation(self) -> memory.Allocation:
        nbytes = math.prod(self.kernel_shape) * self.dtype.itemsize
        what = f"{_dtype_name(self.dtype)}{list(self.kernel_shape)} block"
        return memory.Allocation(self.name, self.role, self.space, nbytes, self.buffers, what)

    def blocked_view(self) -> np.ndarray:
        """A view of the (padded, C-contiguous) HBM array indexed by block index.

        ``view[block_index]`` is the block as the kernel sees it: squeezed
        (``None``) dims dropped.  Built once per call by reshape + transpose,
        so each DMA is one NumPy copy with no per-step slicing.
        """
        shape: list[int] = []
        block_axes: list[int] = []
        inner_axes: list[int] = []
        for n, b, spec_b in zip(self.nblocks, self.blocks, self.spec_shape, strict=True):
            block_axes.append(len(shape))
            shape.append(n)
            if spec_b is not None:
                inner_axes.append(len(shape))
                shape.append(b)
        return self.hbm.reshape(shape).transpose(block_axes + inner_axes)

    def valid_bytes(self) -> np.ndarray:
        """int64 [steps]: bytes of each step's block inside the logical shape."""
        if not self.shape:
            return np.full(len(self.idx), self.dtype.itemsize, np.int64)
        starts = self.idx.astype(np.int64) * np.asarray(self.blocks, np.int64)
        ext = np.clip(np.asarray(self.shape, np.int64) - starts, 0,
                      np.asarray(self.blocks, np.int64))
        return ext.prod(axis=1) * self.dtype.itemsize

    def to_trace(self, reads: np.ndarray | None = None) -> tracing.OperandTrace:
        return tracing.OperandTrace(
            role=self.role, name=self.name, shape=self.shape, dtype=_dtype_name(self.dtype),
            block_shape=tuple(self.spec_shape), memory_space=self.space, buffers=self.buffers,
            dma_count=self.dma_count, hbm_bytes=self.hbm_bytes,
            block_indices=self.idx.astype(np.int32),
            kernel_reads=np.zeros(0, np.int32) if reads is None else reads)


class _Call:
    """A configured pallas_call; ``__call__`` runs it on arguments."""

    def __init__(self, kernel, out_shape, grid, in_specs, out_specs, scratch_shapes,
                 aliases, params, name, n_prefetch) -> None:
        for g in grid:
            if g < 0:
                raise ValueError(f"grid {grid} has a negative size")
        self.kernel, self.grid, self.name, self.n_prefetch = kernel, grid, name, n_prefetch
        self.single_out = not isinstance(out_shape, (tuple, list))
        outs = [out_shape] if self.single_out else list(out_shape)
        self.out_structs = [ShapeDtypeStruct(o.shape, o.dtype) for o in outs]
        self.in_specs, self.out_specs = in_specs, out_specs
        self.scratch = scratch_shapes
        self.aliases = {int(k): int(v) for k, v in aliases.items()}
        self.semantics = _semantics(params.dimension_semantics, grid)
        self.vmem_limit = memory.scoped_limit(params.vmem_limit_bytes)

    def __call__(self, args: tuple[object, ...]) -> object:
        n_pre = self.n_prefetch
        if len(args) < n_pre:
            raise ValueError(f"{self.name}: {n_pre} scalar-prefetch arguments expected, "
                             f"got {len(args)} arguments in all")
        prefetch = [np.array(a) for a in args[:n_pre]]
        arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in args[n_pre:]]
        in_specs = _spec_list(self.in_specs, len(arrays), "in_specs")
        out_specs = _spec_list(self.out_specs, len(self.out_structs), "out_specs")
        steps = grid_order.grid_steps(self.grid, self.semantics,
                                      shuffle=OPTIONS.shuffle_parallel, seed=OPTIONS.shuffle_seed)
        num_steps = len(steps)
        names = _kernel_param_names(self.kernel, n_pre + len(arrays) + len(self.out_structs)
                                    + len(self.scratch))
        pre_names = names[:n_pre]
        in_names = names[n_pre:n_pre + len(arrays)]
        out_names = names[n_pre + len(arrays):n_pre + len(arrays) + len(self.out_structs)]
        scratch_names = names[n_pre + len(arrays) + len(self.out_structs):]

        ins = [_Operand("in", nm, a.shape, a.dtype, s, num_steps)
               for nm, a, s in zip(in_names, arrays, in_specs, strict=True)]
        outs = [_Operand("out", nm, o.shape, o.dtype, s, num_steps)
                for nm, o, s in zip(out_names, self.out_structs, out_specs, strict=True)]
        aliases = self._check_aliases(ins, outs)

        pre_refs = [Ref(p, nm, "smem") for p, nm in zip(prefetch, pre_names, strict=True)]
        grid_idx = (np.asarray(steps, dtype=np.int32).T
                    if len(steps) >= _MIN_VECTORIZED_STEPS and steps[0] else None)
        for op in ins + outs:
            op.idx = _block_indices(op, steps, pre_refs, grid_idx)

        allocations = [op.allocation() for op in ins + outs]
        allocations += [memory.Allocation(nm, "prefetch", "smem", p.nbytes, 1,
                                          f"{_dtype_name(p.dtype)}{list(p.shape)}")
                        for nm, p in zip(pre_names, prefetch, strict=True)]
        allocations += [memory.Allocation(nm, "scratch", s.memory_space,
                                          math.prod(s.shape) * s.dtype.itemsize, 1,
                                          f"{_dtype_name(s.dtype)}{list(s.shape)} scratch")
                        for nm, s in zip(scratch_names, self.scratch, strict=True)]
        vmem = memory.check_vmem(self.name, allocations, self.vmem_limit)
        _, smem = memory.totals(allocations)

        mode = OPTIONS.uninitialized
        aliased_inputs = set(aliases.values())
        for i, op in enumerate(ins):
            if op.ragged:
                hbm = np.full(op.padded_shape, fill_value(op.dtype, mode), op.dtype)
                hbm[tuple(slice(0, d) for d in op.shape)] = arrays[i]
                op.hbm = hbm
            elif i in aliased_inputs:
                # The output reuses this input's HBM buffer, but JAX arrays are immutable:
                # the caller's array never changes, so the call works on its own copy.
                op.hbm = np.array(arrays[i], order="C", copy=True)
            else:
                op.hbm = np.ascontiguousarray(arrays[i])
        for o, op in enumerate(outs):
            if o in aliases:
                op.hbm = ins[aliases[o]].hbm
            else:
                op.hbm = np.full(op.padded_shape, fill_value(op.dtype, mode), op.dtype)

        for op in ins + outs:
            if op.space == "any":
                op.buf = op.hbm
            else:
                op.buf = np.full(op.kernel_shape, fill_value(op.dtype, mode), op.dtype)
            op.ref = Ref(op.buf, op.name, op.space)
        plan_in, plan_fresh, plan_out = self._plan(ins, outs, num_steps, steps, set(aliases))
        scratch_refs = [dma.SemaphoreRef.allocate(s.shape, nm)
                        if s.memory_space == dma.SEMAPHORE_SPACE else
                        Ref(np.full(s.shape, fill_value(s.dtype, mode), s.dtype), nm,
                            s.memory_space)
                        for s, nm in zip(self.scratch, scratch_names, strict=True)]
        sem_refs = [r for r in scratch_refs if isinstance(r, dma.SemaphoreRef)]
        refs = (*pre_refs, *(op.ref for op in ins), *(op.ref for op in outs), *scratch_refs)

        ctx = context.KernelContext(self.grid)
        kernel = self.kernel
        in_refs = [op.ref for op in ins]
        reads = np.zeros((len(ins), num_steps), np.int32)
        context._STACK.append(ctx)
        try:
            for s in range(num_steps):
                ctx.program_ids = steps[s]
                for buf, view, key in plan_in[s]:
                    np.copyto(buf, view[key])
                for buf, value in plan_fresh[s]:
                    buf.fill(value)
                if kernel(*refs) is not None:
                    raise KernelSignatureError(
                        f"kernel {self.name} returned a value; a Pallas kernel must return "
                        "None and write its results into the output refs")
                for j, ref in enumerate(in_refs):
                    if ref._reads:
                        reads[j, s] = ref._reads
                        ref._reads = 0
                for view, key, buf in plan_out[s]:
                    view[key] = buf
        finally:
            context._STACK.pop()
        if sem_refs:
            dma.check_drained(sem_refs, self.name)

        results = []
        for op in outs:
            logical = op.hbm[tuple(slice(0, d) for d in op.shape)] if op.ragged else op.hbm
            results.append(np.ascontiguousarray(logical) if op.ragged else logical)

        operand_traces = [
            tracing.OperandTrace("prefetch", nm, p.shape, _dtype_name(p.dtype), p.shape, "smem",
                                 1, 0, 0, np.zeros((0, 0), np.int32))
            for nm, p in zip(pre_names, prefetch, strict=True)]
        operand_traces += [op.to_trace(reads[j]) for j, op in enumerate(ins)]
        operand_traces += [op.to_trace() for op in outs]
        operand_traces += [
            tracing.OperandTrace("scratch", nm, s.shape, _dtype_name(s.dtype), s.shape,
                                 s.memory_space, 1, 0, 0, np.zeros((0, 0), np.int32))
            for nm, s in zip(scratch_names, self.scratch, strict=True)]
        tracing.record(tracing.CallTrace(
            name=self.name, grid=self.grid, dimension_semantics=self.semantics,
            num_steps=num_steps, vmem_bytes=vmem, smem_bytes=smem,
            vmem_limit_bytes=self.vmem_limit, operands=tuple(operand_traces),
            when_bodies_run=ctx.when_bodies_run,
            manual_dma_count=dma.manual_dma_count(sem_refs),
            input_output_aliases=tuple(sorted(self.aliases.items()))),
            tuple(results), self.kernel)
        return results[0] if self.single_out else tuple(results)

    def _check_aliases(self, ins: list[_Operand], outs: list[_Operand]) -> dict[int, int]:
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

    def _plan(self, ins: list[_Operand], outs: list[_Operand], num_steps: int,
              steps: list[tuple[int, ...]], aliased: set[int]
              ) -> tuple[list[list], list[list], list[list]]:
        """Per step: input copies ``(buffer, blocked HBM view, block index)``,
        output buffers to poison ``(buffer, value)`` and output write-backs
        ``(blocked HBM view, block index, buffer)``.

        ``aliased`` holds the indices of outputs aliased to an input: as in TPU
        interpret mode (JAX 0.10.x), those may revisit a block, and a revisit
        reads back through the input what the earlier visit wrote."""
        plan_in: list[list] = [[] for _ in range(num_steps)]
        plan_fresh: list[list] = [[] for _ in range(num_steps)]
        plan_out: list[list] = [[] for _ in range(num_steps)]
        mode = OPTIONS.uninitialized
        for op in ins + outs:
            if op.space == "any":
                continue
            changed = np.ones(num_steps, bool)
            if num_steps > 1:
                changed[1:] = (np.any(op.idx[1:] != op.idx[:-1], axis=1)
                               if op.idx.shape[1] else False)
            valid = op.valid_bytes()
            view = op.blocked_view()
            keys = [tuple(r) for r in op.idx.tolist()]
            if op.role == "in":
                op.dma_count = int(changed.sum())
                op.hbm_bytes = int(valid[changed].sum())
                for s in np.flatnonzero(changed).tolist():
                    plan_in[s].append((op.buf, view, keys[s]))
                continue
            if outs.index(op) not in aliased:
                _check_revisits(op, changed, self.name, steps)
            writeback = np.ones(num_steps, bool)
            writeback[:-1] = changed[1:]
            op.dma_count = int(writeback.sum())
            op.hbm_bytes = int(valid[writeback].sum())
            poison = fill_value(op.dtype, mode)
            for s in np.flatnonzero(changed).tolist():
                plan_fresh[s].append((op.buf, poison))
            for s in np.flatnonzero(writeback).tolist():
                plan_out[s].append((view, keys[s], op.buf))
        return plan_in, plan_fresh, plan_out


def _spec_list(specs: object, n: int, what: str) -> list[BlockSpec | None]:
    if specs is None:
        return [None] * n
    if isinstance(specs, BlockSpec):
        if n != 1:
            raise KernelSignatureError(f"{what} is a single BlockSpec but the call has {n} "
                                       "operands; pass a list with one BlockSpec each")
        return [specs]
    specs = list(specs)  # type: ignore[call-overload]
    if len(specs) != n:
        raise KernelSignatureError(f"{what} has {len(specs)} BlockSpecs but the call has "
                                   f"{n} operands")
    for s in specs:
        if s is not None and not isinstance(s, BlockSpec):
            raise KernelSignatureError(f"{what} entries must be pl.BlockSpec, got {s!r}")
    return specs


def _semantics(given: tuple[str, ...] | None, grid: tuple[int, ...]) -> tuple[str, ...]:
    if given is None:
        return ("arbitrary",) * len(grid)
    if len(given) != len(grid):
        raise GridSemanticsError(
            f"dimension_semantics={tuple(given)} has {len(given)} entries but the grid "
            f"{grid} has {len(grid)} axes; give one entry per grid axis")
    out = []
    for s in given:
        key = str(s).lower().rsplit(".", 1)[-1]
        if key not in _SEMANTICS:
            raise GridSemanticsError(f"unknown dimension semantics {s!r}; use 'parallel' or "
                                     "'arbitrary'")
        out.append(_SEMANTICS[key])
    first_arbitrary = out.index("arbitrary") if "arbitrary" in out else len(out)
    if "parallel" in out[first_arbitrary:]:
        raise GridSemanticsError(
            "Dimensions with parallel semantics must form a prefix of the grid. "
            f"Got dimension_semantics={tuple(given)}.")
    return tuple(out)


def _block_indices(op: _Operand, steps: list[tuple[int, ...]], pre_refs: list[Ref],
                   grid_idx: np.ndarray | None) -> np.ndarray:
    """Evaluate the index map at every step → int64 [steps, ndim], bounds-checked."""
    ndim = len(op.shape)
    out = np.zeros((len(steps), ndim), np.int64)
    spec_map = op.index_map
    if spec_map is None:
        return out
    vectorized = (None if grid_idx is None
                  else _vectorized_indices(spec_map, grid_idx, pre_refs, ndim))
    if vectorized is not None:
        out[...] = vectorized
    else:
        for s, pid in enumerate(steps):
            try:
                r = spec_map(*(KernelValue(np.asarray(i, np.int32)) for i in pid), *pre_refs)
            except TracerConversionError:
                raise
            except TypeError as exc:
                raise KernelSignatureError(
                    f"index_map of {op.role}put {op.name!r} failed at grid step {pid}: {exc}. "
                    f"An index map takes one argument per grid axis ({len(pid)}), then the "
                    f"scalar-prefetch refs ({len(pre_refs)}), and returns block indices") from exc
            if not isinstance(r, tuple):
                r = tuple(r) if isinstance(r, list) else (r,)
            if len(r) != ndim:
                raise KernelSignatureError(
                    f"index_map of {op.role}put {op.name!r} returned {len(r)} indices {r} at "
                    f"grid step {pid} but the array has {ndim} dims (shape {op.shape})")
            out[s] = concrete(r)
    nblocks = np.asarray(op.nblocks, np.int64)
    bad = np.any((out < 0) | (out >= nblocks), axis=1)
    if bad.any():
        s = int(np.argmax(bad))
        role = "input" if op.role == "in" else "output"
        raise BlockIndexError(
            f"Out-of-bounds block index {tuple(int(i) for i in out[s])} for {role} "
            f"{op.name!r} at grid step {steps[s]}: the array has shape {op.shape} and block "
            f"shape {tuple(op.spec_shape)} (valid block indices are 0 .. n-1 with n = "
            f"{tuple(int(n) for n in nblocks)})")
    return out


_MIN_VECTORIZED_STEPS = 8


def _vectorized_indices(index_map: Callable[..., object], grid_idx: np.ndarray,
                        pre_refs: list[Ref], ndim: int) -> np.ndarray | None:
    """Evaluate ``index_map`` once on int arrays of all grid indices.

    ``grid_idx`` is int64 [grid ndim, steps], built once per call.  Index maps
    are usually affine (``lambda i, j: (i, 0)``), so one call on arrays gives
    every step's block index.  Anything that does not come back as ``ndim``
    integer arrays of one value per step (Python branching on an index raises
    on arrays, for example) returns None, and the caller falls back to one call
    per step: the result is the same either way.
    """
    n_steps = grid_idx.shape[1]
    try:
        r = index_map(*(KernelValue(g) for g in grid_idx), *pre_refs)
    except Exception:  # noqa: BLE001 - any failure means "evaluate step by step"
        return None
    if not isinstance(r, (tuple, list)) or len(r) != ndim:
        return None
    cols = []
    for entry in r:
        a = np.asarray(concrete(entry))
        if a.dtype.kind not in "iu" or a.ndim > 1 or (a.ndim == 1 and len(a) != n_steps):
            return None
        cols.append(np.broadcast_to(a, (n_steps,)))
    return np.stack(cols, axis=1) if cols else np.zeros((n_steps, 0), np.int64)


def _check_revisits(op: _Operand, changed: np.ndarray, call_name: str,
                    steps: list[tuple[int, ...]]) -> None:
    """Raise if an output block is entered again after its write-back.

    Raises:
      RevisitedOutputBlockError: naming the operand, the block index and the
        two grid steps (write-back, revisit).
    """
    entries = np.flatnonzero(changed)
    rows = op.idx[entries]
    if len(rows) < 2:
        return
    if rows.shape[1] == 0:  # a 0-d output: every entry is the same block
        n, first = 1, 0
    else:
        _, first_of, inverse = np.unique(rows, axis=0, return_index=True,
                                         return_inverse=True)
        if len(first_of) == len(rows):
            return
        first_visit = first_of[inverse.reshape(-1)]
        n = int(np.flatnonzero(first_visit != np.arange(len(rows)))[0])
        first = int(first_visit[n])
    s = int(entries[n])
    key = tuple(int(i) for i in rows[n])
    written_at = int(entries[first + 1] - 1)
    raise RevisitedOutputBlockError(
        f"output {op.name!r} of pallas_call {call_name!r} returns to block index "
        f"{key} at grid step {steps[s]} after writing it back to HBM at grid step "
        f"{steps[written_at]}; the second visit would start from an uninitialized "
        "VMEM buffer and overwrite the first result. Put the reduction axis last in "
        "the grid so each output block is visited in consecutive steps.")
