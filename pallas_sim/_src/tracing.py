"""The trace: what each pallas_call did, for students and graders to read.

``with pallas_sim.trace() as t:`` records one :class:`CallTrace` per
``pallas_call`` that runs inside the block (nested traces all record).  A trace
entry is plain data: ``to_dict()`` gives JSON values plus NumPy int arrays,
``CallTrace.from_dict`` rebuilds it, so a trace crosses a process boundary
without pickling (docs/pallas-sim.md, "The trace").
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .memory_spaces import SpaceName
from .op_accounting import OpCounts

MiB = 1 << 20


class Role(enum.StrEnum):
    """The role of an operand in a call's trace (``OperandTrace.role``); members are the
    strings themselves (``Role.IN == "in"``), so ``to_dict`` and JSON are unchanged."""

    IN = "in"
    OUT = "out"
    PREFETCH = "prefetch"
    SCRATCH = "scratch"


@dataclasses.dataclass(frozen=True, kw_only=True)
class OperandTrace:
    """What one operand of a pallas_call did.  Shapes in elements, bytes in B.

    Built by keyword only (twelve fields). A plain string for ``role`` or
    ``memory_space`` becomes its :class:`Role` / ``SpaceName`` member (a ``ValueError``
    for an unknown one).

    Attributes:
      role: "in", "out", "prefetch" or "scratch" (:class:`Role`).
      name: the kernel parameter's name.
      shape: the whole array's shape (scratch: the buffer's shape).
      dtype: dtype name, e.g. "float32", "bfloat16".
      block_shape: one entry per array dim (``None`` = squeezed), or the
        buffer shape for scratch and whole-array operands.
      memory_space: "vmem", "smem" or "any" (``SpaceName``; scratch may also be
        "semaphore").
      buffers: buffers allocated (0 for "any").
      dma_count: automatic copies (inputs: HBM→VMEM; outputs: VMEM→HBM).
      hbm_bytes: bytes those copies moved (only the valid part of edge blocks).
      block_indices: int32 [steps, ndim], the block index at every grid step
        (empty [0, 0] for scratch and prefetch operands).
      kernel_reads: int32 [steps] for inputs: how many times the kernel read
        the ref (``ref[...]``, ``ref[i:j]``, ``np.asarray(ref)``) at each grid
        step; empty [0] for other roles.  A step whose work was skipped (e.g. a
        fully masked causal block behind ``pl.when``, lecture §5.3) reads
        nothing, so skipped work is visible per step.
      element_dims: the dimensions whose ``block_shape`` entry is a ``pl.Element``: their
        ``block_indices`` column holds element offsets (into the dimension padded by the
        Element's padding), not block indices.
    """

    role: Role
    name: str
    shape: tuple[int, ...]
    dtype: str
    block_shape: tuple[int | None, ...]
    memory_space: SpaceName
    buffers: int
    dma_count: int
    hbm_bytes: int
    block_indices: np.ndarray
    kernel_reads: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int32))
    element_dims: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        # A trace is evidence: its arrays are private read-only copies, so code that holds
        # a CallTrace (a submission's own ``trace()`` shares them) cannot rewrite them.
        for field in ("block_indices", "kernel_reads"):
            array = np.array(getattr(self, field), dtype=np.int32)
            array.setflags(write=False)
            object.__setattr__(self, field, array)
        object.__setattr__(self, "element_dims", tuple(int(d) for d in self.element_dims))
        object.__setattr__(self, "role", Role(self.role))
        object.__setattr__(self, "memory_space", SpaceName(self.memory_space))

    @property
    def vmem_bytes(self) -> int:
        """Bytes this operand takes in VMEM (block bytes × buffers)."""
        if self.memory_space != "vmem":
            return 0
        return self.block_bytes * self.buffers

    @property
    def block_bytes(self) -> int:
        """Bytes of one block (squeezed dims count as 1)."""
        n = 1
        for d in self.block_shape:
            n *= 1 if d is None else d
        return n * np.dtype(_dtype(self.dtype)).itemsize

    def __repr__(self) -> str:
        """The fields as the dataclass shows them, but each per-step array as its dtype and
        shape (``block_indices=int32[4096, 2]``): a large grid's record prints in a line or
        two, not kilobytes of indices."""
        shown = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                shown.append(f"{f.name}={value.dtype.name}{list(value.shape)}")
            else:
                shown.append(f"{f.name}={value!r}")
        return f"OperandTrace({', '.join(shown)})"

    def to_dict(self) -> dict:
        """Plain values plus the ``block_indices`` array."""
        d = dataclasses.asdict(self)
        d["role"], d["memory_space"] = str(self.role), str(self.memory_space)
        d["shape"] = list(self.shape)
        d["block_shape"] = list(self.block_shape)
        d["block_indices"] = np.asarray(self.block_indices, dtype=np.int32)
        d["kernel_reads"] = np.asarray(self.kernel_reads, dtype=np.int32).reshape(-1)
        d["element_dims"] = list(self.element_dims)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> OperandTrace:
        """Inverse of :meth:`to_dict`; accepts lists for ``block_indices``.

        Raises:
          KeyError, TypeError, ValueError: ``d`` is not an operand record.
        """
        bi = np.asarray(d["block_indices"], dtype=np.int32)
        if bi.ndim != 2:
            bi = bi.reshape(len(bi), -1) if bi.size else np.zeros((0, 0), np.int32)
        return cls(
            role=str(d["role"]), name=str(d["name"]),
            shape=tuple(int(x) for x in d["shape"]), dtype=str(d["dtype"]),
            block_shape=tuple(None if x is None else int(x) for x in d["block_shape"]),
            memory_space=str(d["memory_space"]), buffers=int(d["buffers"]),
            dma_count=int(d["dma_count"]), hbm_bytes=int(d["hbm_bytes"]),
            block_indices=bi,
            kernel_reads=np.asarray(d.get("kernel_reads", ()), dtype=np.int32).reshape(-1),
            element_dims=tuple(int(x) for x in d.get("element_dims", ())))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OperandTrace):
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        ia, ib = a.pop("block_indices"), b.pop("block_indices")
        ra, rb = a.pop("kernel_reads"), b.pop("kernel_reads")
        return a == b and np.array_equal(ia, ib) and np.array_equal(ra, rb)

    __hash__ = None  # type: ignore[assignment]


@dataclasses.dataclass(frozen=True, eq=False)
class CallTrace:
    """One pallas_call: its grid, memory use, data movement and work.

    Attributes:
      name: the call's name (``name=`` or the kernel's ``__name__``).
      grid: the grid (() for a single step).
      dimension_semantics: "parallel"/"arbitrary" per axis.
      num_steps: grid steps run (product of the grid).
      vmem_bytes, smem_bytes: bytes allocated in VMEM and SMEM.
      vmem_limit_bytes: the scoped limit in force.
      operands: per operand, in kernel order (prefetch, in, out, scratch).
      when_bodies_run: how many ``pl.when`` bodies executed over all steps.
      manual_dma_count: copies the kernel started itself over the whole call
        (``pltpu.make_async_copy(...).start()``, ``pltpu.async_copy``,
        ``pltpu.sync_copy``, and the copies of ``pltpu.emit_pipeline``; docs/pallas-sim.md
        rule 7).
      manual_dma_bytes: bytes those copies moved (counted when a copy lands).
      scoped_vmem_bytes, scoped_smem_bytes: the most ``pl.run_scoped`` bytes (and
        ``pltpu.emit_pipeline`` buffers) live at once; ``vmem_bytes``/``smem_bytes``
        include them.
      kind: "pallas_call", or "kernel" for ``pl.kernel`` (a mesh kernel: no grid, every
        operand in HBM).
      cost_estimate: the ``pl.CostEstimate`` given to the call, as a dict (``flops``,
        ``transcendentals``, ``bytes_accessed``, ``remote_bytes_transferred``), or None.
      input_output_aliases: the call's ``input_output_aliases`` as sorted
        ``(input index, output index)`` pairs (input indices count the
        scalar-prefetch arguments, as in JAX); () without aliasing.
      ops: per-step op counts (:class:`~pallas_sim._src.op_accounting.OpCounts`: MXU flops
        by input dtype, VPU and EUP ops, cross-lane reduction and cast elements, manual
        DMA bytes), or None for a record made elsewhere.
    """

    name: str
    grid: tuple[int, ...]
    dimension_semantics: tuple[str, ...]
    num_steps: int
    vmem_bytes: int
    smem_bytes: int
    vmem_limit_bytes: int
    operands: tuple[OperandTrace, ...]
    when_bodies_run: int = 0
    manual_dma_count: int = 0
    manual_dma_bytes: int = 0
    scoped_vmem_bytes: int = 0
    scoped_smem_bytes: int = 0
    kind: str = "pallas_call"
    cost_estimate: dict[str, int] | None = None
    input_output_aliases: tuple[tuple[int, int], ...] = ()
    ops: OpCounts | None = None

    def operand(self, name: str) -> OperandTrace:
        """The operand with this kernel parameter name.

        Raises:
          KeyError: no operand has that name.
        """
        for op in self.operands:
            if op.name == name:
                return op
        raise KeyError(f"{self.name} has no operand {name!r}; it has "
                       f"{[op.name for op in self.operands]}")

    def role(self, role: str) -> tuple[OperandTrace, ...]:
        """Operands of one role ("in", "out", "scratch", "prefetch"), in order."""
        return tuple(op for op in self.operands if op.role == role)

    @property
    def dma_count(self) -> int:
        """Automatic DMAs: input copies plus output write-backs."""
        return sum(op.dma_count for op in self.operands if op.role in ("in", "out"))

    @property
    def hbm_bytes_read(self) -> int:
        """Bytes copied HBM→VMEM by the automatic pipeline."""
        return sum(op.hbm_bytes for op in self.operands if op.role == "in")

    @property
    def hbm_bytes_written(self) -> int:
        """Bytes copied VMEM→HBM by the automatic pipeline."""
        return sum(op.hbm_bytes for op in self.operands if op.role == "out")

    @property
    def largest_intermediate(self) -> int:
        """Elements of the largest array an op produced inside the kernel body over the
        whole call (``ops.largest_intermediate``; 0 without op counts).

        Ref loads, constructors and layout changes (``broadcast_to``, ``reshape``) are
        not counted; elementwise, transcendental and cast results and product outputs
        are. A Flash kernel that scores a whole KV block has ``block_q * block_kv``; one
        that scores ``bkv_compute`` columns at a time ``block_q * bkv_compute``, when the
        head dims do not exceed ``bkv_compute`` (lecture §5.3).
        """
        return 0 if self.ops is None else self.ops.largest_intermediate

    @property
    def elements_computed(self) -> int:
        """Output elements produced, counting padded edge blocks in full.

        Each write-back of an output block counts the whole block (lecture
        §2.3: f32[1000,1000] with 256 blocks computes 1,048,576 elements).
        """
        return sum(op.dma_count * _block_elems(op.block_shape)
                   for op in self.operands if op.role == "out")

    @property
    def elements_valid(self) -> int:
        """Output elements written back inside the arrays' logical shapes."""
        return sum(op.hbm_bytes // np.dtype(_dtype(op.dtype)).itemsize
                   for op in self.operands if op.role == "out")

    def to_dict(self) -> dict:
        """JSON values plus int32 ``block_indices`` arrays (no pickling needed)."""
        return {
            "name": self.name, "grid": list(self.grid),
            "dimension_semantics": list(self.dimension_semantics),
            "num_steps": self.num_steps, "vmem_bytes": self.vmem_bytes,
            "smem_bytes": self.smem_bytes, "vmem_limit_bytes": self.vmem_limit_bytes,
            "when_bodies_run": self.when_bodies_run,
            "manual_dma_count": self.manual_dma_count,
            "manual_dma_bytes": self.manual_dma_bytes,
            "scoped_vmem_bytes": self.scoped_vmem_bytes,
            "scoped_smem_bytes": self.scoped_smem_bytes,
            "kind": self.kind,
            "cost_estimate": None if self.cost_estimate is None else dict(self.cost_estimate),
            "input_output_aliases": [list(p) for p in self.input_output_aliases],
            "operands": [op.to_dict() for op in self.operands],
            "ops": None if self.ops is None else self.ops.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> CallTrace:
        """Inverse of :meth:`to_dict`.

        Raises:
          KeyError, TypeError, ValueError: ``d`` is not a call record.
        """
        return cls(
            name=str(d["name"]), grid=tuple(int(g) for g in d["grid"]),
            dimension_semantics=tuple(str(s) for s in d["dimension_semantics"]),
            num_steps=int(d["num_steps"]), vmem_bytes=int(d["vmem_bytes"]),
            smem_bytes=int(d["smem_bytes"]), vmem_limit_bytes=int(d["vmem_limit_bytes"]),
            when_bodies_run=int(d.get("when_bodies_run", 0)),
            manual_dma_count=int(d.get("manual_dma_count", 0)),
            manual_dma_bytes=int(d.get("manual_dma_bytes", 0)),
            scoped_vmem_bytes=int(d.get("scoped_vmem_bytes", 0)),
            scoped_smem_bytes=int(d.get("scoped_smem_bytes", 0)),
            kind=str(d.get("kind", "pallas_call")),
            cost_estimate=_cost(d.get("cost_estimate")),
            input_output_aliases=tuple((int(i), int(o))
                                       for i, o in d.get("input_output_aliases", ())),
            operands=tuple(OperandTrace.from_dict(o) for o in d["operands"]),
            ops=None if d.get("ops") is None else OpCounts.from_dict(d["ops"]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallTrace):
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        oa, ob = a.pop("operands"), b.pop("operands")
        a.pop("ops"), b.pop("ops")  # what the kernel computes is compared apart (call.ops)
        return a == b and self.operands == other.operands and len(oa) == len(ob)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        entry = "pallas_call" if self.kind == "pallas_call" else "pl.kernel"
        head = (f"{entry} {self.name}: grid {self.grid} "
                f"({', '.join(self.dimension_semantics) or 'no axes'}), {self.num_steps} steps, "
                f"VMEM {_mib(self.vmem_bytes)} of {_mib(self.vmem_limit_bytes)}, "
                f"SMEM {self.smem_bytes} B, DMAs {self.dma_count}, "
                f"HBM read {_mib(self.hbm_bytes_read)} written {_mib(self.hbm_bytes_written)}"
                + (f", manual DMAs {self.manual_dma_count} ({_mib(self.manual_dma_bytes)})"
                   if self.manual_dma_count else ""))
        rows = [("role", "name", "array", "block", "space", "bufs", "DMAs", "HBM bytes")]
        for op in self.operands:
            rows.append((op.role, op.name, f"{op.dtype}{list(op.shape)}",
                         str(tuple(op.block_shape)), op.memory_space, str(op.buffers),
                         str(op.dma_count), str(op.hbm_bytes)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                 for r in rows]
        return "\n".join([head, *lines])


_COST_FIELDS = ("flops", "transcendentals", "bytes_accessed", "remote_bytes_transferred")


def _cost(d: object) -> dict[str, int] | None:
    """A recorded cost estimate (a dict of the four ints), or None.

    Raises:
      TypeError, ValueError: not such a dict.
    """
    if d is None:
        return None
    if not isinstance(d, dict):
        raise TypeError(f"cost_estimate record must be a dict, got {type(d).__name__}")
    return {k: int(d[k]) for k in _COST_FIELDS}


def _dtype(name: str) -> object:
    from .dtypes import as_dtype
    return as_dtype(name)


def _block_elems(block_shape: tuple[int | None, ...]) -> int:
    n = 1
    for d in block_shape:
        n *= 1 if d is None else d
    return n


def _mib(n: int) -> str:
    return f"{n / MiB:.2f} MiB"


class Trace:
    """The record of every pallas_call run inside a ``trace()`` block.

    Attributes:
      calls: list of :class:`CallTrace`, in call order.
    """

    def __init__(self) -> None:
        self.calls: list[CallTrace] = []
        #: Per call, copies of the arrays it returned (taken as it returned them) and the
        #: kernel it ran, kept only when ``_keep_results`` is set: not part of the record;
        #: the grader's worker uses them to tie a wrapper's result to its pallas_call.
        self._results: list[tuple[tuple[np.ndarray, ...], object]] = []
        self._keep_results = False

    @property
    def last(self) -> CallTrace:
        """The most recent call.

        Raises:
          IndexError: no pallas_call ran inside the block.
        """
        if not self.calls:
            raise IndexError("no pallas_call ran inside this trace")
        return self.calls[-1]

    @property
    def dma_count(self) -> int:
        """Automatic DMAs over all calls."""
        return sum(c.dma_count for c in self.calls)

    @property
    def hbm_bytes_read(self) -> int:
        """HBM bytes read over all calls."""
        return sum(c.hbm_bytes_read for c in self.calls)

    @property
    def hbm_bytes_written(self) -> int:
        """HBM bytes written over all calls."""
        return sum(c.hbm_bytes_written for c in self.calls)

    def to_list(self) -> list[dict]:
        """Every call as :meth:`CallTrace.to_dict`."""
        return [c.to_dict() for c in self.calls]

    def __str__(self) -> str:
        return "\n\n".join(str(c) for c in self.calls) or "(no pallas_call)"


_ACTIVE: list[Trace] = []


@contextmanager
def trace() -> Iterator[Trace]:
    """Record every pallas_call run inside the ``with`` block.

    Yields:
      A :class:`Trace` whose ``calls`` fill as calls finish.
    """
    t = Trace()
    _ACTIVE.append(t)
    try:
        yield t
    finally:
        _ACTIVE.remove(t)


@contextmanager
def _untraced() -> Iterator[None]:
    """Run a ``with`` block without recording its pallas_calls in any active trace (the
    grader's harnesses run a student's kernel beside the student's wrapper this way, so
    the run is not counted as the wrapper's)."""
    saved = _ACTIVE[:]
    _ACTIVE.clear()
    try:
        yield
    finally:
        _ACTIVE[:] = saved


def record(call: CallTrace, outputs: tuple[np.ndarray, ...] = (), kernel: object = None) -> None:
    """Append ``call`` to every active trace (called by pallas_call); a trace that keeps
    results also gets copies of the arrays the call returned, and its kernel."""
    snapshot: tuple[np.ndarray, ...] | None = None
    for t in _ACTIVE:
        t.calls.append(call)
        if t._keep_results:
            if snapshot is None:
                snapshot = tuple(np.array(out, copy=True) for out in outputs)
            t._results.append((snapshot, kernel))
