"""Op accounting: what each grid step asks of the TPU's compute units.

A TensorCore has three kinds of compute unit (lecture §2.3, §5.3; Google Cloud TPU
system architecture docs): the MXU (systolic matrix unit: ``jnp.dot``, ``@``,
``lax.dot_general``, ``jnp.einsum``), the VPU (vector unit: elementwise arithmetic,
comparisons, selects, sublane reductions) and the EUP (transcendental unit: ``exp``,
``exp2``, ``log``, ``tanh``, ``rsqrt``, ...). Reductions over the last (lane) axis
additionally need cross-lane work (the XLU), and casts between dtypes cost a VPU pass.

The counters live where pallas_sim dispatches an op (the operators and methods of a
kernel value, the ``jnp``/``lax`` functions), so a real run and an abstract run
(:func:`pallas_sim.estimate`) count exactly the same things. Only ops executed inside
a running kernel are counted, per grid step.

Counted keys (all per step, int64):

- ``mxu_flops_<dtype>``: 2 * (output elements) * (contracted size) per product, keyed
  by the MXU input dtype (``bf16``, ``f32``, ``int8``, ``fp8``, ...): the dtype both
  operands share, else the wider one.
- ``vpu_ops``: elements produced by elementwise ops on arrays (one op per element)
  plus elements consumed by reductions.
- ``eup_ops``: elements produced by transcendental ops.
- ``xlane_elements``: elements fed to reductions that include the last (lane) axis
  (``x.max(axis=-1)``, ``x.sum(-1)``, ``lax.reduce_max(x, (1,))`` on 2-d ``x``).
- ``cast_elements``: elements converted to another dtype (``astype``,
  ``lax.convert_element_type``), and float32 operands of a product, which the MXU takes
  rounded to bfloat16 (default precision: one bf16 pass).
- ``vector_ops``: how many vector ops (elementwise, transcendental, cast, reduction
  results on arrays) ran, whatever their size: each is a loop over the operands' vector
  registers with its own issue and pipeline fill (the timeline's per-op cost).
- ``scalar_ops``: ops on 0-d values (grid-index arithmetic, SMEM scalars): the scalar
  unit's work.
- ``manual_dma_bytes``: bytes moved by the kernel's own DMAs whose ``wait()`` ran in the
  step; ``manual_dma_exposed_bytes``: the part of those whose copy had no compute counted
  between its ``start()`` and its ``wait()`` (``copy.start(); copy.wait()``: nothing to
  overlap with, lecture §3.2), and ``manual_dma_exposed_count`` how many such copies;
  ``manual_dma_strided_bytes`` and ``manual_dma_exposed_strided_bytes``: the bytes of
  those copies whose source or destination is a strided view (``Ref.strided``: a tile
  narrower than its array, many short runs).

Beside the per-step keys, one number per call: ``largest_intermediate``, the elements of
the largest array a counted op produced inside the kernel body (an elementwise,
transcendental or cast result, or a product's output; ref loads, constructors and
layout changes such as ``broadcast_to`` are not intermediates of the computation). It
is what stays live in vector registers or spills to VMEM: a Flash kernel that scores a
whole ``[block_q, block_kv]`` tile at once has ``block_q * block_kv``, a micro-tiled one
``block_q * bkv_compute`` (lecture §5.3).
"""

from __future__ import annotations

import numpy as np

#: MXU input dtype names by NumPy dtype name.
_SHORT = {"bfloat16": "bf16", "float32": "f32", "float16": "f16", "int8": "int8",
          "uint8": "int8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "int32": "int32",
          "int4": "int4"}

#: ``jnp``/``lax``/method names that run on the EUP.
EUP = frozenset({"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "tanh", "logistic",
                 "sigmoid", "sqrt", "rsqrt", "cbrt", "sin", "cos", "tan", "erf", "arctan",
                 "cosh", "sinh", "power", "pow", "float_power", "reciprocal", "softplus",
                 "gelu", "silu", "swish", "log_sigmoid", "hypot", "atan2"})
#: Composite ``jax.nn`` functions: counted as the ops they are made of (``composite``), as
#: XLA and Mosaic lower them (``jax.nn.softmax``: max, subtract, exp, sum, divide).
COMPOSITE = frozenset({"softmax", "log_softmax", "logsumexp"})
#: Reductions (the reduced operand's elements are counted).
REDUCE = frozenset({"sum", "max", "min", "mean", "prod", "any", "all", "argmax", "argmin",
                    "amax", "amin", "std", "var", "reduce_max", "reduce_min", "reduce_sum",
                    "reduce_prod", "reduce_and", "reduce_or", "reduce_xor", "cumsum",
                    "cumprod", "cummax", "cummin", "cumlogsumexp"})
#: Layout changes, constructors and queries: no compute counted.
FREE = frozenset({"reshape", "transpose", "swapaxes", "squeeze", "ravel", "flatten",
                  "expand_dims", "broadcast_to", "broadcast_in_dim", "broadcast", "tile", "zeros",
                  "ones", "full", "full_like", "zeros_like", "ones_like", "empty", "arange",
                  "linspace", "eye", "iota", "broadcasted_iota", "ndim", "shape", "size",
                  "copy", "view", "slice", "slice_in_dim", "index_in_dim",
                  "dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
                  "dynamic_update_slice", "dynamic_update_slice_in_dim", "stop_gradient",
                  "optimization_barrier", "bitcast_convert_type", "array_equal", "allclose",
                  "asarray", "array", "flip", "repeat", "nonzero",
                  "isclose", "axis_index", "axis_size", "dot", "dot_general", "matmul",
                  "einsum", "cond", "switch", "fori_loop", "while_loop", "scan", "map"})
#: Dtype conversions.
CASTS = frozenset({"astype", "convert_element_type"})


class OpCounter:
    """Per-step op counts of one pallas_call (or ``pl.kernel``) while it runs.

    Attributes:
      steps: one dict per grid step, key -> count (see the module docstring).
      work: a running count of compute ops (MXU flops + VPU/EUP/cast elements), used to
        tell whether a manual DMA had compute to overlap with.
      peak: elements of the largest op result so far (``largest_intermediate``).
    """

    __slots__ = ("steps", "cur", "work", "peak", "_started")

    def __init__(self, num_steps: int) -> None:
        self.steps: list[dict[str, int]] = [{} for _ in range(max(num_steps, 1))]
        self.cur = self.steps[0]
        self.work = 0
        self.peak = 0
        self._started: dict[int, int] = {}

    def step(self, s: int) -> None:
        """Count the following ops in grid step ``s`` (0-based, in visiting order)."""
        self.cur = self.steps[s]

    def add(self, key: str, n: int) -> None:
        """Add ``n`` to ``key`` in the current step."""
        cur = self.cur
        cur[key] = cur.get(key, 0) + n
        if key != "scalar_ops":
            self.work += n

    def produced(self, key: str, n: int) -> None:
        """Add ``n`` to ``key`` for an op whose result has ``n`` elements (n >= 1, not a
        scalar): the result is also a candidate for the largest intermediate."""
        cur = self.cur
        cur[key] = cur.get(key, 0) + n
        cur["vector_ops"] = cur.get("vector_ops", 0) + 1
        self.work += n
        if n > self.peak:
            self.peak = n

    def result(self) -> OpCounts:
        """The counts as :class:`OpCounts` (one int64 array per key)."""
        keys = sorted({k for row in self.steps for k in row})
        return OpCounts({k: np.array([row.get(k, 0) for row in self.steps], np.int64)
                         for k in keys}, len(self.steps), largest_intermediate=self.peak)


class OpCounts:
    """Per-step op counts recorded on a :class:`~pallas_sim.CallTrace` (``call.ops``).

    ``ops[key]`` is an int64 array with one entry per grid step (visiting order); a key
    never counted reads as zeros. Keys: see :mod:`pallas_sim._src.op_accounting`.
    ``largest_intermediate``: elements of the largest array an op produced in the kernel
    body over the whole call (0 when nothing was computed; module docstring).
    """

    __slots__ = ("counts", "num_steps", "largest_intermediate")

    def __init__(self, counts: dict[str, np.ndarray], num_steps: int | None = None, *,
                 largest_intermediate: int = 0) -> None:
        self.counts = counts
        self.num_steps = (num_steps if num_steps is not None else
                          len(next(iter(counts.values()))) if counts else 0)
        self.largest_intermediate = int(largest_intermediate)

    def __getitem__(self, key: str) -> np.ndarray:
        got = self.counts.get(key)
        if got is not None:
            return got
        return np.zeros(self.num_steps, np.int64)

    def keys(self) -> list[str]:
        """The keys counted at least once."""
        return sorted(self.counts)

    def total(self, key: str) -> int:
        """``key`` summed over all steps."""
        return int(self[key].sum())

    def mxu_flops(self) -> np.ndarray:
        """MXU flops per step, all input dtypes together."""
        out = None
        for k, v in self.counts.items():
            if k.startswith("mxu_flops_"):
                out = v.copy() if out is None else out + v
        return out if out is not None else np.zeros(self.num_steps, np.int64)

    def to_dict(self) -> dict[str, list[int] | int]:
        """Plain JSON: key -> list of per-step ints, ``"num_steps"`` and
        ``"largest_intermediate"``."""
        out: dict[str, list[int] | int] = {k: [int(x) for x in v]
                                           for k, v in sorted(self.counts.items())}
        out["num_steps"] = self.num_steps
        out["largest_intermediate"] = self.largest_intermediate
        return out

    @classmethod
    def from_dict(cls, d: dict[str, list[int] | int]) -> OpCounts:
        """Inverse of :meth:`to_dict`."""
        n = d.get("num_steps")
        return cls({str(k): np.asarray(v, np.int64) for k, v in d.items()
                    if k not in _CALL_KEYS}, None if n is None else int(n),  # type: ignore
                   largest_intermediate=int(d.get("largest_intermediate", 0)))  # type: ignore

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpCounts):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "OpCounts(" + ", ".join(
            [f"{k}={int(v.sum())}" for k, v in sorted(self.counts.items())]
            + [f"largest_intermediate={self.largest_intermediate}"]) + ")"


#: The keys of :meth:`OpCounts.to_dict` that are one number per call, not per step.
_CALL_KEYS = frozenset({"num_steps", "largest_intermediate"})


#: The counters of the calls running now (innermost last).
_STACK: list[OpCounter] = []


def begin(num_steps: int) -> OpCounter:
    """Start counting a call of ``num_steps`` grid steps (pallas_call does this)."""
    c = OpCounter(num_steps)
    _STACK.append(c)
    return c


def end(counter: OpCounter) -> OpCounts:
    """Stop counting ``counter``'s call and return its counts."""
    if _STACK and _STACK[-1] is counter:
        _STACK.pop()
    elif counter in _STACK:
        _STACK.remove(counter)
    return counter.result()


def _size(x: object) -> int:
    shape = getattr(x, "shape", None)
    if shape is None:
        return 1
    n = 1
    for d in shape:
        n *= d
    return n


def _ndim(x: object) -> int:
    shape = getattr(x, "shape", None)
    return 0 if shape is None else len(shape)


def elementwise(name: str, result: object) -> None:
    """Count an elementwise op named ``name`` (a ``jnp``/``lax`` function or operator)
    that produced ``result``."""
    if not _STACK or name in FREE:
        return
    a = getattr(result, "_a", result)  # a kernel value's array
    shape = getattr(a, "shape", None)
    if shape is None:
        if isinstance(result, tuple):
            for r in result:
                elementwise(name, r)
        return
    c = _STACK[-1]
    if not shape:
        c.add("scalar_ops", 1)
    else:
        c.produced("eup_ops" if name in EUP else "vpu_ops", a.size)


def reduction(operand: object, axis: object) -> None:
    """Count a reduction of ``operand`` over ``axis`` (None: all axes; an int or a tuple,
    negative allowed)."""
    if not _STACK:
        return
    a = getattr(operand, "_a", operand)
    shape = getattr(a, "shape", ())
    nd = len(shape)
    c = _STACK[-1]
    if nd == 0:
        c.add("scalar_ops", 1)
        return
    n = a.size
    c.add("vpu_ops", n)
    c.add("vector_ops", 1)
    if axis is None:
        lane = True
    elif type(axis) is int:
        lane = axis % nd == nd - 1
    else:
        lane = any(int(x) % nd == nd - 1 for x in axis)  # type: ignore[union-attr]
    if lane:
        c.add("xlane_elements", n)


def category(name: str) -> str:
    """How an op named ``name`` is counted: "free", "cast", "reduce", "composite_<name>",
    "eup" or "vpu" (``concatenate``, ``take``, ``sort`` and ``argsort`` are vector ops of their
    result's size: they move or compare every element on the VPU)."""
    if name in FREE:
        return "free"
    if name in COMPOSITE:
        return "composite_" + name
    if name in CASTS:
        return "cast"
    if name in REDUCE:
        return "reduce"
    return "eup" if name in EUP else "vpu"


def count(kind: str, args: tuple, kwargs: dict, result: object) -> None:
    """Count one call of a ``jnp``/``lax`` function of category ``kind`` (see
    :func:`category`) with ``args``/``kwargs`` that gave ``result``."""
    if kind == "free" or not _STACK:
        return
    if kind.startswith("composite_"):
        if args:
            _composite(kind[len("composite_"):], args[0], args, kwargs, result)
        return
    if kind == "vpu" or kind == "eup":
        a = getattr(result, "_a", result)
        shape = getattr(a, "shape", None)
        if shape is None:
            if type(result) is tuple:
                for r in result:
                    count(kind, args, kwargs, r)
            return
        if shape:
            _STACK[-1].produced("eup_ops" if kind == "eup" else "vpu_ops", a.size)
        else:
            _STACK[-1].add("scalar_ops", 1)
    elif kind == "cast":
        if args:
            cast(args[0], result)
    elif args:  # a reduction
        axis = kwargs.get("axis", kwargs.get("axes"))
        if axis is None and len(args) > 1 and type(args[1]) in (int, tuple, list):
            axis = args[1]
        reduction(args[0], axis)


def _composite(name: str, operand: object, args: tuple, kwargs: dict,
               result: object) -> None:
    """Count ``jax.nn.softmax`` / ``log_softmax`` / ``logsumexp`` (``name``) of ``operand``
    as the ops they are made of: a max reduction over the axis, the subtraction of the max,
    the exp, a sum reduction, then the division (softmax), the subtraction of the log of
    the sum (log_softmax: a log per row too) or the log of the sum and the add-back of the
    max (logsumexp, per row). The axis defaults as in JAX (-1 for the first two, all axes
    for logsumexp)."""
    x = getattr(operand, "_a", operand)
    shape = getattr(x, "shape", None)
    c = _STACK[-1]
    if not shape:
        c.add("scalar_ops", 5)
        return
    default = None if name == "logsumexp" else -1
    axis = kwargs.get("axis", args[1] if len(args) > 1 and type(args[1]) in (int, tuple)
                      else default)
    size = int(np.prod(shape))
    if axis is None:
        rows = 1
    else:
        axes = (axis,) if type(axis) is int else tuple(axis)
        reduced = 1
        for ax in axes:
            reduced *= shape[int(ax) % len(shape)]
        rows = size // max(1, reduced)
    reduction(x, axis)             # the max
    c.produced("vpu_ops", size)    # x - max
    c.produced("eup_ops", size)    # exp
    reduction(x, axis)             # the sum
    if name == "softmax":
        c.produced("vpu_ops", size)    # / sum
    elif name == "log_softmax":
        c.produced("eup_ops", rows)    # log(sum)
        c.produced("vpu_ops", size)    # x - max - log(sum)
    else:
        c.produced("eup_ops", rows)    # log(sum)
        c.produced("vpu_ops", rows)    # + max


def dispatch(name: str, args: tuple, kwargs: dict, result: object) -> None:
    """Count a ``jnp``/``lax`` function call by its name (products are counted by
    :func:`product` instead)."""
    if _STACK:
        count(category(name), args, kwargs, result)


def cast(source: object, result: object) -> None:
    """Count a dtype conversion from ``source`` to ``result`` (nothing when the dtype
    stays)."""
    if not _STACK:
        return
    if getattr(source, "dtype", None) == getattr(result, "dtype", None):
        return
    if _ndim(result) == 0:
        _STACK[-1].add("scalar_ops", 1)
    else:
        _STACK[-1].produced("cast_elements", _size(result))


#: ``mxu_dtype``'s answers by the operands' dtypes (a dtype's ``name`` is computed in
#: Python by NumPy on every access: the hot path of every product looks it up once).
_MXU_NAMES: dict[tuple[np.dtype, np.dtype], str] = {}
_F32 = np.dtype(np.float32)


def mxu_dtype(a: object, b: object) -> str:
    """The MXU input dtype name of a product of ``a`` and ``b`` (their shared dtype, else
    the wider one)."""
    da, db = getattr(a, "dtype", _F32), getattr(b, "dtype", _F32)
    try:
        return _MXU_NAMES[da, db]
    except (KeyError, TypeError):
        pass
    key = (da, db)
    da, db = np.dtype(da), np.dtype(db)
    d = da if da == db or da.itemsize >= db.itemsize else db
    name = _SHORT.get(d.name, d.name)
    try:
        _MXU_NAMES[key] = name
    except TypeError:  # an unhashable dtype-like: answered, not remembered
        pass
    return name


def product(a: object, b: object, out_elements: int, contracted: int) -> None:
    """Count an MXU product of ``a`` and ``b`` giving ``out_elements`` elements, each a sum
    of ``contracted`` products: 2 * out_elements * contracted flops.

    A float32 operand is rounded to bfloat16 before it enters the MXU (JAX's default
    precision on TPU is one bf16 pass, which the timeline assumes): that rounding is
    vector work on every element of the operand, counted as cast elements as an explicit
    ``p.astype(jnp.bfloat16)`` before the product is. It runs in the loop that feeds
    the MXU, so it is not a vector op of its own (``vector_ops``)."""
    if not _STACK:
        return
    c = _STACK[-1]
    c.add("mxu_flops_" + mxu_dtype(a, b), 2 * int(out_elements) * int(contracted))
    for operand in (a, b):
        if getattr(operand, "dtype", None) == _F32 and _ndim(operand):
            c.add("cast_elements", _size(operand))
    if out_elements > c.peak:
        c.peak = int(out_elements)


#: ``einsum_contracted``'s answers by (subscripts, operand shapes): a kernel repeats the
#: same product at every grid step.
_CONTRACTED: dict[tuple[object, ...], int] = {}


def einsum_contracted(subscripts: str, operands: tuple) -> int:
    """The number of products summed per output element of ``jnp.einsum(subscripts,
    *operands)``: the product of the sizes of the summed-over indices."""
    key = (subscripts, *(getattr(op, "shape", ()) for op in operands))
    try:
        return _CONTRACTED[key]
    except (KeyError, TypeError):
        pass
    n = _contracted(subscripts, operands)
    if len(_CONTRACTED) < 4096:  # bounded: a kernel has a handful of distinct products
        try:
            _CONTRACTED[key] = n
        except TypeError:
            pass
    return n


def _contracted(subscripts: str, operands: tuple) -> int:
    spec = subscripts.replace(" ", "")
    inputs, _, out = spec.partition("->")
    terms = inputs.split(",")
    sizes: dict[str, int] = {}
    for term, op in zip(terms, operands, strict=False):
        shape = getattr(op, "shape", ())
        letters = [ch for ch in term if ch.isalpha()]
        for ch, d in zip(letters[-len(shape):] if shape else [], shape, strict=False):
            sizes[ch] = d
    if not _:
        counts: dict[str, int] = {}
        for ch in inputs.replace(",", ""):
            counts[ch] = counts.get(ch, 0) + 1
        out = "".join(sorted(ch for ch, n in counts.items() if n == 1 and ch.isalpha()))
    n = 1
    for ch, d in sizes.items():
        if ch not in out:
            n *= d
    return n


def dma_started(copy: object) -> None:
    """Note that a manual DMA ``copy`` started (``pltpu.make_async_copy(...).start()``)."""
    if _STACK:
        c = _STACK[-1]
        c._started[id(copy)] = c.work


def dma_waited(copy: object, nbytes: int) -> None:
    """Count the ``nbytes`` of a manual DMA whose ``wait()`` ran now; exposed when no
    compute was counted since its ``start()``."""
    if not _STACK:
        return
    c = _STACK[-1]
    began = c._started.pop(id(copy), None)
    cur = c.cur
    cur["manual_dma_bytes"] = cur.get("manual_dma_bytes", 0) + nbytes
    strided = getattr(copy, "strided", False)
    if strided:
        cur["manual_dma_strided_bytes"] = cur.get("manual_dma_strided_bytes", 0) + nbytes
    if began is None or began == c.work:
        cur["manual_dma_exposed_bytes"] = cur.get("manual_dma_exposed_bytes", 0) + nbytes
        cur["manual_dma_exposed_count"] = cur.get("manual_dma_exposed_count", 0) + 1
        if strided:
            cur["manual_dma_exposed_strided_bytes"] = (
                cur.get("manual_dma_exposed_strided_bytes", 0) + nbytes)
