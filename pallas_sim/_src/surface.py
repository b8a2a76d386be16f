"""The JAX surface pallas_sim mirrors, and the refusal of the rest.

Each namespace module (``jax``, ``jax.numpy``, ``jax.lax``, ``jax.nn``,
``jax.random``, ``jax.tree``, ``jax.tree_util``, ``pl``, ``pltpu``) defines
``__getattr__ = surface.refuse_missing("<its JAX name>", __name__)``. Python
calls it only for a name the module lacks, so it costs nothing on the names
that exist. It raises :class:`~pallas_sim.UnsupportedJaxAPIError`
saying whether JAX 0.10.2 has the name (the lists in :mod:`pallas_sim._src.jax_names`)
and what to write instead, never a bare ``AttributeError``.
"""

from __future__ import annotations

import difflib
import dis
import importlib
import sys
import types
from collections.abc import Callable
from typing import NoReturn

from .errors import UnsupportedJaxAPIError, UnsupportedJaxImportError
from .jax_names import JAX_VERSION, NAMES
from .refused_dtypes import REFUSED_NAMES

#: How code spells the Pallas namespaces.
_SHORT = {"jax.experimental.pallas": "pl", "jax.experimental.pallas.tpu": "pltpu"}

#: Where a name missing from one namespace may live instead, in the order they are tried:
#: (JAX namespace, how code spells it, the pallas_sim module that mirrors it). A name is
#: suggested there when JAX 0.10.2 has it there (:data:`~pallas_sim._src.jax_names.NAMES`)
#: and that module offers it (its ``__all__``): ``pl.make_async_copy`` is
#: ``pltpu.make_async_copy``, ``jnp.dot_general`` is ``jax.lax.dot_general``,
#: ``pltpu.program_id`` is ``pl.program_id``.
HOMES: tuple[tuple[str, str, str], ...] = (
    ("jax.experimental.pallas", "pl", "pallas_sim.pl"),
    ("jax.experimental.pallas.tpu", "pltpu", "pallas_sim.pltpu"),
    ("jax.numpy", "jnp", "pallas_sim.jnp"),
    ("jax.lax", "jax.lax", "pallas_sim.lax"),
    ("jax.nn", "jax.nn", "pallas_sim.nn"),
    ("jax", "jax", "pallas_sim.jax"),
    ("jax.random", "jax.random", "pallas_sim.random"),
    ("jax.tree", "jax.tree", "pallas_sim.tree"),
    ("jax.tree_util", "jax.tree_util", "pallas_sim.tree_util"),
)
_SPELLING = {namespace: spelled for namespace, spelled, _ in HOMES}

_NO_AUTODIFF = ("pallas_sim runs kernels forward only, with no automatic differentiation; "
                "test a backward pass by calling its kernels directly (jax.custom_vjp is "
                "accepted and runs the forward function)")
_ONE_CORE = ("pallas_sim simulates a single TPU core, with no devices, meshes, sharding or "
             "collectives; write the kernel for one device's block of the data")
_NO_TRACING = ("pallas_sim runs functions eagerly on NumPy and never traces them; call the "
               "function and read .shape / .dtype of its result")
_NO_REGISTRY = ("pallas_sim keeps no registry of pytree node types (it would be state shared "
                "with the grader); carry values in a tuple, list, dict or NamedTuple")

_DTYPES = ("pallas_sim models the dtypes bool, int4, int8, int16, int32, uint4, uint8, uint16, "
           "uint32, bfloat16, float16 and float32 (a float64, int64 or uint64 request becomes "
           "32-bit, as JAX's with x64 off) and refuses {0} by every spelling: jnp.{0}, the "
           "string '{0}', np.dtype('{0}') or an array of that dtype")

#: What to write instead, by full JAX name (checked first) or by namespace.
HINTS: dict[str, str] = {
    **{f"jax.numpy.{name}": _DTYPES.format(name) for name in REFUSED_NAMES},
    **dict.fromkeys(
        ["jax.grad", "jax.value_and_grad", "jax.vjp", "jax.jvp", "jax.linearize", "jax.jacfwd",
         "jax.jacrev", "jax.jacobian", "jax.hessian", "jax.checkpoint", "jax.remat",
         "jax.custom_gradient", "jax.linear_transpose", "jax.closure_convert",
         "jax.fwd_and_bwd", "jax.checkpoint_policies"], _NO_AUTODIFF),
    **dict.fromkeys(
        ["jax.pmap", "jax.shard_map", "jax.make_mesh", "jax.set_mesh",
         "jax.NamedSharding", "jax.P", "jax.Shard", "jax.distributed", "jax.device_get",
         "jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin", "jax.lax.all_gather",
         "jax.lax.all_to_all", "jax.lax.ppermute", "jax.lax.pshuffle", "jax.lax.psum_scatter",
         "jax.lax.pbroadcast", "jax.sharding.NamedSharding", "jax.sharding.Mesh",
         "jax.sharding.SingleDeviceSharding", "jax.sharding.PositionalSharding",
         "jax.sharding.AbstractMesh", "jax.sharding.AxisType"], _ONE_CORE),
    "jax.sharding": _ONE_CORE,
    "jax.ad_checkpoint": _NO_AUTODIFF,
    **dict.fromkeys(["jax.make_jaxpr", "jax.eval_shape", "jax.core", "jax.interpreters",
                     "jax.export", "jax.stages"], _NO_TRACING),
    **dict.fromkeys(["jax.tree_util.register_pytree_node",
                     "jax.tree_util.register_pytree_node_class",
                     "jax.tree_util.register_pytree_with_keys",
                     "jax.tree_util.register_pytree_with_keys_class",
                     "jax.tree_util.register_dataclass", "jax.tree_util.register_static",
                     "jax.tree.static"], _NO_REGISTRY),
    "jax.debug": ("a kernel value prints as a JAX tracer does (shape and dtype, no data); to "
                  "see values, store them in an output or scratch ref and print() it after "
                  "the call (on real Pallas use pl.debug_print)"),
    "jax.config": ("pallas_sim follows JAX's defaults (jax_enable_x64 off) and has no jax.config; "
                   "its own switches are pallas_sim.config(...)"),
    "jax.typing": "annotate arrays with jax.Array",
    "jax.numpy.rsqrt": "JAX has it as jax.lax.rsqrt(x)",
    "jax.experimental.pallas.tpu.ANY": "JAX has it as pl.ANY (BlockSpec(memory_space=pl.ANY))",
    "jax.experimental.pallas.tpu.TPUCompilerParams": "JAX 0.10.2 calls it pltpu.CompilerParams",
    "jax.experimental.pallas.tpu.TensorCoreMesh": (
        "JAX 0.10.2 makes the mesh with pltpu.create_tensorcore_mesh('core') (newer JAX "
        "spells it pltpu.TensorCoreMesh(axis_name='core'))"),
    "jax.experimental.pallas.tpu.get_tpu_info": (
        "pallas_sim simulates one TensorCore (num_cores 1); write sizes out, or use "
        "jax.lax.axis_size('core') inside a pl.kernel body"),
    "jax.numpy": ("pallas_sim's jax.numpy has the functions kernels and their wrappers commonly "
                  "use (docs/fidelity.md, 'The JAX surface'); write it with those"),
    "jax.lax": ("write it with the jax.lax and jax.numpy functions pallas_sim has "
                "(docs/fidelity.md, 'The JAX surface')"),
    "jax.nn": ("write it with jax.numpy (exp, max, sum, where) or the jax.nn functions "
               "pallas_sim has"),
    "jax.random": ("draw with key/split/fold_in and normal, uniform, bernoulli, randint, ... "
                   "(docs/fidelity.md, 'The JAX surface') and transform the numbers"),
    "jax.tree": "jax.tree has map, leaves, structure, flatten, unflatten, all and reduce here",
    "jax.tree_util": ("jax.tree_util has tree_map, tree_leaves, tree_structure, tree_flatten, "
                      "tree_unflatten, tree_all and tree_reduce here"),
    "jax.experimental.pallas": ("pallas_sim models the Pallas TPU API listed in "
                                "docs/fidelity.md"),
    "jax.experimental.pallas.tpu": ("pallas_sim models the Pallas TPU API listed in "
                                    "docs/fidelity.md"),
    "jax": ("pallas_sim mirrors the part of JAX that Pallas kernels and their wrappers use "
            "(docs/fidelity.md, 'The JAX surface')"),
}


def _spelled(namespace: str, name: str) -> str:
    short = _SHORT.get(namespace)
    full = f"`{namespace}.{name}`"
    return f"{full} (`{short}.{name}`)" if short else full


def home_of(namespace: str, name: str) -> str | None:
    """``name`` as spelled in the first namespace of :data:`HOMES` other than
    ``namespace`` where JAX 0.10.2 has it and pallas_sim offers it (``"pltpu.VMEM"``
    for ``("jax.experimental.pallas", "VMEM")``), else None.

    Source: the names of the installed JAX's namespaces (``jax_names.NAMES``, checked
    against JAX by ``tests/fidelity/test_surface_jax.py``) and the modules' ``__all__``.
    """
    for other, spelled, module in HOMES:
        if other == namespace or name not in NAMES.get(other, ()):
            continue
        if name in getattr(importlib.import_module(module), "__all__", ()):
            return f"{spelled}.{name}"
    return None


def elsewhere(namespace: str, name: str) -> str | None:
    """What to write for ``name``, which JAX's ``namespace`` lacks, when another namespace
    has it (:func:`home_of`): "pl.make_async_copy is pltpu.make_async_copy in Pallas TPU",
    "jnp.dot_general is jax.lax.dot_general in JAX"; else None."""
    home = home_of(namespace, name)
    if home is None:
        return None
    pallas = home.startswith(("pl.", "pltpu."))
    return (f"{_SPELLING.get(namespace, namespace)}.{name} is {home} in "
            f"{'Pallas TPU' if pallas else 'JAX'}")


def message(namespace: str, name: str) -> str:
    """Why ``namespace.name`` is missing here, and what to write instead: a hint of
    :data:`HINTS`, else the namespace where JAX has the name (:func:`elsewhere`), else
    JAX's names that are spelled alike."""
    qualified = f"{namespace}.{name}"
    hint = HINTS.get(qualified)
    if name in NAMES.get(namespace, ()):
        if hint is None:
            home = home_of(namespace, name)
            if home is not None:  # pl.CompilerParams, JAX's base class of pltpu's
                hint = f"write {home}, which pallas_sim has, as JAX does"
        return (f"{_spelled(namespace, name)} is not supported by pallas_sim: "
                f"{hint or HINTS.get(namespace, HINTS['jax'])}")
    text = (f"{_spelled(namespace, name)} does not exist in JAX {JAX_VERSION}, so pallas_sim "
            f"does not offer it either")
    if hint:
        return f"{text}: {hint}"
    home = elsewhere(namespace, name)
    if home:
        return f"{text}: {home}"
    close = difflib.get_close_matches(name, sorted(NAMES.get(namespace, ())), n=3)
    if close:
        return f"{text}; did you mean {', '.join(f'{namespace}.{c}' for c in close)}?"
    return text


def refuse_missing(namespace: str, module_name: str) -> Callable[[str], NoReturn]:
    """The module ``__getattr__`` of the pallas_sim module ``module_name`` that mirrors the
    JAX namespace ``namespace`` (e.g. ``"jax.numpy"``).

    Private names (``_x``, ``__path__``) raise a plain ``AttributeError``, as any
    module does; public ones raise :class:`UnsupportedJaxAPIError` with :func:`message`.
    """
    def __getattr__(name: str) -> NoReturn:
        if name.startswith("_"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        if _importing_from(sys._getframe(1)):
            raise UnsupportedJaxImportError(message(namespace, name))
        raise UnsupportedJaxAPIError(message(namespace, name))

    return __getattr__


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _importing_from(frame: types.FrameType | None) -> bool:
    """Whether ``frame`` is executing ``from <module> import <name>``. Python turns an
    ``AttributeError`` raised there into a bare "cannot import name" and drops its
    message, so :func:`refuse_missing` raises an ``ImportError`` of its own instead
    (:class:`~pallas_sim.UnsupportedJaxImportError`), which Python lets through."""
    if frame is None or frame.f_lasti < 0:
        return False
    code = frame.f_code.co_code
    return frame.f_lasti < len(code) and code[frame.f_lasti] == _IMPORT_FROM
