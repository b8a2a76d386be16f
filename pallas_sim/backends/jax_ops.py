"""Load JAX's own Pallas TPU kernels (``jax.experimental.pallas.ops.tpu``) on pallas_sim.

The kernel files are read from the *installed* ``jax`` package; nothing is copied into
this repository. :func:`load_op` executes one of them as a new module with only its
import lines rewritten (:func:`rewrite_imports`):

* backend ``"sim"``: ``import jax``, ``from jax import lax``, ``jax.numpy``, ``pl`` and
  ``pltpu`` come from pallas_sim;
* backend ``"jax"``: everything stays JAX's, except ``pl``, which is
  :mod:`pallas_sim.backends.real_jax`'s (``pallas_call`` forced into interpret mode, so the
  kernel runs on a CPU).

Imports between the kernel files (``from jax.experimental.pallas.ops.tpu.megablox import
common``) are redirected to the same backend's copies, which live in ``sys.modules``
under :data:`PREFIX` ``+ backend`` (``_jax_ops_sim.megablox.gmm``). Reading the files
needs no JAX; running the ``"jax"`` backend needs the ``pallas-lab[jax]`` extra.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pallas_sim._src.errors import UnsupportedJaxAPIError

Backend = Literal["sim", "jax"]
BACKENDS: tuple[Backend, ...] = ("sim", "jax")

#: The package of JAX's TPU kernels, and the prefix of the loaded copies' module names.
OPS_PACKAGE = "jax.experimental.pallas.ops.tpu"
PREFIX = "_jax_ops_"

_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<stmt>(?:import|from)[ \t]+jax\b[^\n]*)$",
                   re.MULTILINE)

#: Import statements rewritten for pallas_sim: (pattern of the whole statement, template).
_SIM_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern + r"[ \t]*(?:#.*)?$"), template) for pattern, template in (
        (r"import jax", "from pallas_sim import jax"),
        (r"import jax\.numpy as (?P<a>\w+)", "from pallas_sim import jnp as {a}"),
        (r"from jax import numpy as (?P<a>\w+)", "from pallas_sim import jnp as {a}"),
        (r"from jax\.experimental import pallas as (?P<a>\w+)", "from pallas_sim import pl as {a}"),
        (r"from jax\.experimental\.pallas import tpu as (?P<a>\w+)",
         "from pallas_sim import pltpu as {a}"),
        (r"from jax\._src import (?P<n>\w+) as (?P<a>\w+)",
         "from pallas_sim.backends.jax_ops import jax_private as {a}"),
        (r"from jax import (?P<names>[\w, ]+)", "from pallas_sim.jax import {names}"),
    ))

#: The same for JAX: only ``pl`` changes, to the interpret-mode one.
_JAX_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"from jax\.experimental import pallas as (?P<a>\w+)[ \t]*(?:#.*)?$"),
     "from pallas_sim.backends.real_jax import pl as {a}"),
)

_OPS_IMPORT = re.compile(r"(from[ \t]+)" + re.escape(OPS_PACKAGE) + r"\b")


def ops_dir() -> Path:
    """The directory of the installed ``jax/experimental/pallas/ops/tpu``.

    Raises:
      ModuleNotFoundError: jax is not installed.
    """
    spec = importlib.util.find_spec("jax")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("jax is not installed: pip install -e '.[jax]'")
    return Path(spec.origin).parent / "experimental" / "pallas" / "ops" / "tpu"


def rewrite_imports(source: str, backend: Backend) -> str:
    """``source`` (a kernel file of :data:`OPS_PACKAGE`) with its JAX import lines
    rewritten for ``backend``; every other line is left as it is.

    Raises:
      ValueError: an unknown backend, or an import of JAX this loader has no rule for
        (the line is named).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {BACKENDS}")
    rules = _SIM_RULES if backend == "sim" else _JAX_RULES

    def one(match: re.Match[str]) -> str:
        indent, stmt = match["indent"], match["stmt"].rstrip()
        if _OPS_IMPORT.match(stmt):
            return indent + _OPS_IMPORT.sub(rf"\g<1>{PREFIX}{backend}", stmt, count=1)
        for pattern, template in rules:
            found = pattern.fullmatch(stmt)
            if found:
                return indent + template.format(**found.groupdict())
        if backend == "jax":
            return indent + stmt
        raise ValueError(f"no pallas_sim spelling for the import line {stmt!r}")

    return _LINE.sub(one, source)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``_jax_ops_<backend>.<path>`` in :func:`ops_dir` and executes it rewritten."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        head, _, rest = fullname.partition(".")
        backend = head[len(PREFIX):]
        if not head.startswith(PREFIX) or backend not in BACKENDS:
            return None
        base = ops_dir().joinpath(*rest.split(".")) if rest else ops_dir()
        if base.is_dir():
            file = base / "__init__.py"
            spec = importlib.machinery.ModuleSpec(fullname, self, origin=str(file),
                                                  is_package=True)
            spec.submodule_search_locations = [str(base)]
        elif base.with_suffix(".py").is_file():
            file = base.with_suffix(".py")
            spec = importlib.machinery.ModuleSpec(fullname, self, origin=str(file))
        else:
            return None
        spec.has_location = True
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None and spec.origin is not None
        origin = Path(spec.origin)
        module.__file__ = str(origin)
        backend: Backend = spec.name.partition(".")[0][len(PREFIX):]  # type: ignore[assignment]
        source = rewrite_imports(origin.read_text(encoding="utf-8"), backend)
        exec(compile(source, str(origin), "exec"), module.__dict__)  # noqa: S102 - the point


_FINDER = _Finder()


def load_op(name: str, backend: Backend) -> types.ModuleType:
    """The kernel module ``name`` of :data:`OPS_PACKAGE` (``"flash_attention"``,
    ``"megablox.gmm"``, ``"paged_attention.paged_attention_kernel"``), executed with its
    imports rewritten for ``backend`` (:func:`rewrite_imports`). Loaded once per backend;
    later calls return the same module.

    Raises:
      ValueError: an unknown backend, or an import line with no rule.
      ModuleNotFoundError: no such kernel file, or jax is not installed.
      Exception: whatever executing the file raises (an ``UnsupportedJaxAPIError`` names
        a JAX API pallas_sim lacks).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {BACKENDS}")
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)  # before PathFinder, which loads them unchanged
    return importlib.import_module(f"{PREFIX}{backend}.{name}")


class _Private(types.ModuleType):
    """Stands for a module of ``jax._src`` (JAX's private code) in a kernel loaded on
    pallas_sim: importing it works (kernels use it in annotations only), any attribute
    raises :class:`~pallas_sim.UnsupportedJaxAPIError`."""

    def __getattr__(self, name: str) -> types.ModuleType:
        if name.startswith("__"):
            raise AttributeError(name)
        raise UnsupportedJaxAPIError(
            f"`jax._src...{name}` is JAX's private code, which pallas_sim does not mirror")


jax_private = _Private("jax_private", _Private.__doc__)

__all__ = ["BACKENDS", "OPS_PACKAGE", "PREFIX", "Backend", "jax_private", "load_op", "ops_dir",
           "rewrite_imports"]
