"""``pl.kernel`` on a TensorCore mesh, and ``pltpu.create_tensorcore_mesh``.

The newest Pallas TPU style (JAX 0.10.x) writes a kernel for one TensorCore::

    mesh = pltpu.create_tensorcore_mesh("core")

    @functools.partial(pl.kernel, out_type=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                       mesh=mesh, scratch_types=[pltpu.VMEM((8, 128), jnp.float32)])
    def kernel(x_hbm, o_hbm, buf):
        pltpu.sync_copy(x_hbm, buf)
        buf[...] = buf[...] * 2
        pltpu.sync_copy(buf, o_hbm)

    y = kernel(x)

The body runs once per core (here: once), with every input and output as a ref in HBM
(memory space "any": DMA only, loads refused as in TPU interpret mode) and the scratch
buffers after them (a dict of scratch types arrives as keyword arguments). It has no
grid: ``pl.program_id`` fails (an assertion in JAX); ``jax.lax.axis_index("core")`` is
the core's index (0) and ``jax.lax.axis_size("core")`` the mesh's size (1). Outputs start
poisoned. Grids over blocks come from ``pltpu.emit_pipeline`` inside the body. The call
is recorded in the trace like a pallas_call with ``kind="kernel"`` and no grid.

pallas_sim simulates one TensorCore, so a mesh has one core: ``num_cores`` must be 1 and
defaults to 1 (JAX reads it from the device: 1 on single-core chips such as v5e and v6e;
on a CPU, ``create_tensorcore_mesh`` without ``num_cores`` fails in JAX because a CPU
device has no ``num_cores``).

Source: ``jax._src.pallas.helpers.kernel``, ``jax._src.pallas.mpmd`` and
``jax._src.pallas.mosaic.core.create_tensorcore_mesh`` (JAX 0.10.x).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import UnsupportedJaxUsageError
from .memory_spaces import ANY
from .specs import CompilerParams


@dataclasses.dataclass(frozen=True)
class TensorCore:
    """One TensorCore of a mesh (JAX's ``pltpu`` ``TensorCore``)."""

    id: int


class TensorCoreMesh:
    """A mesh of TensorCores along one named axis (JAX ``TensorCoreMesh``); what
    :func:`create_tensorcore_mesh` returns.

    Attributes:
      devices: object array of :class:`TensorCore`, one per core.
      axis_names: the axis names (one).
      shape: ``OrderedDict(axis name -> size)``.
      default_memory_space: ``pl.ANY``, where a ``pl.kernel``'s operands live.
    """

    __slots__ = ("_devices", "_axis_names")

    def __init__(self, devices: np.ndarray, axis_names: Sequence[str]) -> None:
        devices = np.array(devices, dtype=object)
        devices.setflags(write=False)
        self._devices = devices
        self._axis_names = tuple(axis_names)

    @property
    def devices(self) -> np.ndarray:
        return self._devices

    @property
    def axis_names(self) -> tuple[str, ...]:
        return self._axis_names

    @property
    def shape(self) -> collections.OrderedDict[str, int]:
        return collections.OrderedDict(zip(self._axis_names, self._devices.shape, strict=True))

    @property
    def size(self) -> int:
        """How many cores the mesh has."""
        return int(self._devices.size)

    @property
    def default_memory_space(self) -> object:
        return ANY

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorCoreMesh) and other._axis_names == self._axis_names
                and other._devices.shape == self._devices.shape)

    def __hash__(self) -> int:
        return hash((self._devices.shape, self._axis_names))

    def __repr__(self) -> str:
        cores = ", ".join(f"TensorCore(id={c.id})" for c in self._devices.ravel())
        return (f"TensorCoreMesh(devices=array([{cores}], dtype=object), "
                f"axis_names={self._axis_names!r})")


def create_tensorcore_mesh(axis_name: str, devices: Sequence[Any] | None = None,
                           num_cores: int | None = None) -> TensorCoreMesh:
    """``pltpu.create_tensorcore_mesh(axis_name, devices=None, num_cores=None)``: a mesh of
    the chip's TensorCores along ``axis_name``.

    Args:
      axis_name: the name ``jax.lax.axis_index`` takes inside the kernel (e.g. "core").
      devices: devices whose ``num_cores`` gives the mesh's size (default
        ``jax.devices()[0]``, the simulated core: 1).
      num_cores: the mesh's size; must be 1 here.

    Raises:
      ValueError: both ``devices`` and ``num_cores`` given (JAX's message).
      UnsupportedJaxUsageError: more than one core.
    """
    if devices is not None and num_cores is not None:
        raise ValueError("cannot specify both devices and num_cores")
    if num_cores is None:
        if devices is None:
            from .devices import devices as all_devices

            devices = all_devices()
        num_cores = int(getattr(devices[0], "num_cores", 1))
    if num_cores != 1:
        raise UnsupportedJaxUsageError(
            f"create_tensorcore_mesh(num_cores={num_cores}): pallas_sim simulates one "
            "TensorCore, so a mesh has one core (num_cores=1, the default here); write the "
            "kernel for one core's share of the data")
    return TensorCoreMesh(np.array([TensorCore(i) for i in range(num_cores)], dtype=object),
                          [axis_name])


class _NotSpecified:
    def __repr__(self) -> str:
        return "NotSpecified"


_NOT_SPECIFIED: Any = _NotSpecified()


def kernel(body: Callable[..., None] | Sequence[Callable[..., None]] = _NOT_SPECIFIED,
           out_type: object = (), *, mesh: TensorCoreMesh | Sequence[TensorCoreMesh],
           scratch_types: object = (), compiler_params: CompilerParams | None = None,
           interpret: object = False, cost_estimate: object = None, debug: bool = False,
           name: str | None = None, metadata: dict[str, str] | None = None) -> Any:
    """``pl.kernel``: run ``body`` once per core of ``mesh`` on HBM refs (JAX 0.10.x).

    Used as ``pl.kernel(body, out_type=..., mesh=...)`` or as the decorator
    ``@pl.kernel(out_type=..., mesh=...)``.

    Args:
      body: the kernel, called as ``body(*input_refs, *output_refs, *scratch_refs)`` (each
        argument and ``out_type`` entry as the same tree of refs; a sequence ``out_type``
        spread, anything else one argument; dict ``scratch_types`` as keyword arguments).
      out_type: a pytree of ``jax.ShapeDtypeStruct`` (default ``()``: no outputs).
      mesh: a :class:`TensorCoreMesh` (``pltpu.create_tensorcore_mesh``).
      scratch_types: a pytree of ``pltpu.VMEM(...)``, ``pltpu.SMEM(...)``,
        ``pltpu.SemaphoreType.DMA`` buffers (poisoned, as pallas_call's scratch).
      compiler_params: ``pltpu.CompilerParams`` (its ``vmem_limit_bytes`` counts).
      cost_estimate: a ``pl.CostEstimate``, recorded on the trace.
      interpret, debug, metadata: accepted and ignored.
      name: the call's name in the trace (default: the body's name).

    Returns:
      A function of the arrays (pytrees of arrays) returning ``out_type``'s tree of arrays;
      or, without ``body``, a decorator that makes one.

    Raises:
      ValueError: a sequence of meshes with a single body or in decorator mode (JAX's
        messages); when called: a body that returns a value ("The kernel function in
        mpmd_map ... should return None"), HBM scratch, or the errors of ``pallas_call``.
      UnsupportedJaxUsageError: several bodies and meshes (an MPMD kernel).
      TypeError: ``mesh`` is not a TensorCore mesh.
    """
    def make(fn: Callable[..., None], one_mesh: Any) -> Callable[..., Any]:
        return _mesh_call(fn, one_mesh, out_type, scratch_types, compiler_params,
                          cost_estimate, name)

    if body is _NOT_SPECIFIED:
        if isinstance(mesh, Sequence):
            raise ValueError("mesh cannot be a sequence when using pl.kernel as a decorator.")
        return lambda fn: make(fn, mesh)
    if isinstance(body, Sequence):
        if not isinstance(mesh, Sequence):
            raise ValueError("mesh must be a sequence when body is a sequence of callables.")
        if len(body) != len(mesh):
            raise ValueError("body and mesh sequences must have the same length.")
        raise UnsupportedJaxUsageError(
            "pl.kernel with several bodies and meshes (an MPMD kernel, e.g. TensorCore and "
            "SparseCore together) is not modelled: pallas_sim simulates one TensorCore; pass "
            "one body and one pltpu.create_tensorcore_mesh")
    if isinstance(mesh, Sequence):
        raise ValueError("mesh cannot be a sequence when body is a single callable.")
    return make(body, mesh)


def _mesh_call(body: Callable[..., None], mesh: Any, out_type: object, scratch_types: object,
               compiler_params: CompilerParams | None, cost_estimate: object,
               name: str | None) -> Callable[..., Any]:
    from .call_args import no_block_spec
    from .pallas_call import _Call, _cost, _kernel_name

    if not isinstance(mesh, TensorCoreMesh):
        raise TypeError(f"pl.kernel(mesh=...) takes a TensorCore mesh "
                        f"(pltpu.create_tensorcore_mesh('core')), got {mesh!r}")
    axes = {axis: (0, size) for axis, size in mesh.shape.items()}
    call = _Call(body, out_type, (), no_block_spec, no_block_spec, scratch_types, {},
                 compiler_params or CompilerParams(), name or _kernel_name(body), 0,
                 _cost(cost_estimate), mesh_axes=axes)
    as_list = isinstance(out_type, list)

    def run(*args: object) -> object:
        result = call(args)
        return list(result) if as_list else result  # type: ignore[call-overload]

    run.__name__ = run.__qualname__ = _kernel_name(body)
    run.__doc__ = getattr(body, "__doc__", None)
    return run
